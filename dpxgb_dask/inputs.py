"""What the user's X and y must be: checks of their metadata (shapes where they are known,
dtypes, column names), for every input type: NumPy, pandas (NumPy, nullable and pyarrow
dtypes), scipy sparse matrices, dask arrays and dataframes; their values as float rows;
labels as class indices; bounds given by column name.

The checks read no value. The conversions (:func:`float_values`, :func:`weight_shares`,
:func:`with_weights`, the label encodings) run where the values are: in the user's process
for in-memory inputs, lazily on the workers for dask collections. Value checks (lengths of
dask partitions, label sets, infinities) run on the workers, inside
:func:`~dpxgb_dask.boosting.partition.make_part`, and surface as a ``ValueError`` naming
the argument.
"""
import numpy as np

from .categories import is_frame


def is_dask_collection(obj):
    """Whether ``obj`` is a dask collection (array, dataframe, series)."""
    return hasattr(obj, "__dask_graph__") and obj.__dask_graph__() is not None


def is_sparse(obj):
    """Whether ``obj`` is a scipy sparse matrix or array."""
    return hasattr(obj, "toarray") and hasattr(obj, "nnz") and hasattr(obj, "tocsr")


def float_values(values, name):
    """``values`` (rows or labels) as a float NumPy array, NaN for every missing value.

    pandas frames and series of nullable (``Float64``, ``Int64``, ``boolean``) and pyarrow
    dtypes give NaN for their NA; a scipy sparse matrix becomes dense with its absent
    entries 0 (scikit-learn's meaning: a one-hot column is 0 where it is absent); float32
    frames and arrays stay float32.

    Parameters
    ----------
    values : array-like, pandas object or scipy sparse matrix
    name : str
        The argument's name, for the error.

    Returns
    -------
    ndarray of float32 or float64

    Raises
    ------
    ValueError
        Naming ``name`` when a value is not a number (never the value: it is private).
    """
    import pandas as pd

    try:
        if is_sparse(values):
            out = values.toarray()
        elif isinstance(values, (pd.DataFrame, pd.Series)):
            dtypes = list(values.dtypes) if values.ndim == 2 else [values.dtype]
            dtype = np.float32 if all(d == np.float32 for d in dtypes) else np.float64
            return values.to_numpy(dtype=dtype, na_value=np.nan)
        else:
            out = np.asarray(values)
        return out if out.dtype in (np.float32, np.float64) else out.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers only: {type(exc).__name__}") from None


def check_numeric_dtypes(dtypes, names):
    """Refuse non-numeric and complex columns, naming them (``names`` beside ``dtypes``)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    bad = [str(name) for name, dtype in zip(names, dtypes)
           if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype))]
    if bad:
        raise ValueError(f"X has non-numeric columns {bad}: give their public category lists "
                         "as categories={column: [...]} (or a pandas category dtype), or "
                         "encode them as numbers")
    complex_ = [str(name) for name, dtype in zip(names, dtypes)
                if getattr(dtype, "kind", None) == "c"]
    if complex_:
        raise ValueError(f"X has complex columns {complex_}; features must be real numbers")


def describe_features(X):
    """Feature names and count of ``X`` from its metadata (no values are read).

    Returns
    -------
    feature_names : list of str or None
    n_features : int

    Raises
    ------
    ValueError
        If X is not 2-dimensional or has non-numeric or complex columns.
    TypeError
        If X is sparse, or not array-like.
    """
    if is_frame(X):
        names = [str(c) for c in X.columns]
        check_numeric_dtypes(list(X.dtypes), names)
        return names, len(names)
    if is_dask_collection(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
        check_numeric_dtypes([X.dtype], ["X"])
        return None, int(X.shape[1])
    if is_sparse(X):
        if len(X.shape) != 2:
            raise ValueError(f"X must be 2-dimensional, got {len(X.shape)} dimensions")
        check_numeric_dtypes([X.dtype], ["X"])
        return None, int(X.shape[1])
    if X is None or isinstance(X, (dict, str, bytes)) or np.isscalar(X):
        raise TypeError("X must be a 2-D array-like (NumPy array, pandas DataFrame, dask "
                        f"array or DataFrame), got {type(X).__name__}")
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    if X.dtype == object:
        try:
            X.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("X has non-numeric values; encode them as numbers first") from None
    else:
        check_numeric_dtypes([X.dtype], ["X"])
    return None, int(X.shape[1])


#: The columns of labels with their weight shares (:func:`with_weights`).
WEIGHTED_TARGET = ["label", "weight"]


def label_array(y):
    """``y`` as one column: a one-column frame becomes its series (labels with weight
    shares, :func:`with_weights`, stay as they are)."""
    if is_frame(y) and list(y.columns) == WEIGHTED_TARGET:
        return y
    if is_frame(y):
        if len(y.columns) != 1:
            raise ValueError(f"y must be one column, got {len(y.columns)}")
        y = y[y.columns[0]]
    return y


def _known_length(obj):
    if is_dask_collection(obj):
        if hasattr(obj, "chunks"):
            n = sum(obj.chunks[0])
            return None if np.isnan(n) else int(n)
        return None
    return int(obj.shape[0]) if is_sparse(obj) else len(obj)


def check_lengths(X, y):
    """Refuse X and y of different known lengths (dask lengths unknown here are checked on
    the workers)."""
    nx, ny = _known_length(X), _known_length(y)
    if nx is not None and ny is not None and nx != ny:
        raise ValueError(f"X and y must have the same number of rows, got {nx} and {ny}")
    if nx == 0:
        raise ValueError("X has no rows")


def encode_labels(y, classes):
    """Labels as float64 class indices into the sorted ``classes`` (binary: 1.0 for
    ``classes[1]``, else 0.0); NaN for a label outside ``classes`` (its row is left out)."""
    y = np.asarray(y)
    if len(classes) == 2:
        return (y == classes[1]).astype(np.float64)
    index = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
    return np.where(classes[index] == y, index, np.nan).astype(np.float64)


def encode_labels_lazily(y, classes):
    """:func:`encode_labels` on the blocks of a dask array or series, lazily."""
    if hasattr(y, "map_partitions"):
        import pandas as pd

        return y.map_partitions(lambda part: pd.Series(encode_labels(part.to_numpy(), classes),
                                                       index=part.index),
                                meta=pd.Series(dtype=np.float64))
    return y.map_blocks(encode_labels, classes, dtype=np.float64)


def bounds_by_name(bounds, feature_names, categorical_names=()):
    """``feature_bounds`` as given, or, for a dict ``{column: (lo, hi)}``, as an array in
    the order of the columns of X (every numerical column needs its bounds; a categorical
    column's are its codes', set by ``train``)."""
    if not isinstance(bounds, dict):
        return bounds
    if feature_names is None:
        raise ValueError("feature_bounds given as a dict needs X with column names (a "
                         "pandas or dask DataFrame); give an (n_features, 2) array otherwise")
    given = {str(k): v for k, v in bounds.items()}
    given.update({c: (0.0, 0.0) for c in categorical_names if c not in given})
    missing = [c for c in feature_names if c not in given]
    if missing:
        raise ValueError(f"feature_bounds has no bounds for the columns {missing}")
    unknown = sorted(set(given) - set(feature_names))
    if unknown:
        raise ValueError(f"feature_bounds names columns that X does not have: {unknown}")
    return np.array([given[c] for c in feature_names], dtype=np.float64)


def weight_shares(sample_weight, weight_bound):
    """Each row's share ``min(w, W) / W`` of the public weight bound W, in [0, 1]: a
    negative or NaN weight is 0, one above W is W (clipped, never refused: a refusal would
    tell that some row's weight exceeds the bound). Lazy for dask collections.

    Parameters
    ----------
    sample_weight : array-like or dask collection, shape (n_rows,)
    weight_bound : float
        W (public).

    Returns
    -------
    ndarray of float64, shape (n_rows,), or a dask collection
    """
    if is_dask_collection(sample_weight):
        if hasattr(sample_weight, "map_partitions"):
            return sample_weight.map_partitions(_shares_of_series, weight_bound,
                                                meta=(sample_weight.name, "f8"))
        return sample_weight.map_blocks(weight_shares, weight_bound, dtype=np.float64)
    w = np.asarray(float_values(sample_weight, "sample_weight"), dtype=np.float64)
    if w.ndim == 2 and 1 in w.shape:  # (a column or a row)
        w = w.reshape(-1)
    if w.ndim != 1:
        raise ValueError(f"sample_weight must have shape (n_rows,), got {w.shape}")
    return np.nan_to_num(np.clip(w / weight_bound, 0.0, 1.0), nan=0.0)


def _shares_of_series(part, weight_bound):
    import pandas as pd

    return pd.Series(weight_shares(part, weight_bound), index=part.index, name=part.name)


def with_weights(y, shares):
    """Labels and weight shares as one two-column target, ``(label, share)`` per row, so
    that both travel with the same rows (the row partitions of X).

    Parameters
    ----------
    y : array-like, pandas Series or dask collection, shape (n_rows,)
    shares : same kind, shape (n_rows,)
        From :func:`weight_shares`.

    Returns
    -------
    ndarray of float64 of shape (n_rows, 2), a pandas or dask DataFrame of two columns, or
    a dask array of shape (n_rows, 2)

    Raises
    ------
    ValueError
        When a dask ``sample_weight`` is not partitioned as ``y``.
    """
    if is_dask_collection(y) != is_dask_collection(shares):
        raise ValueError("sample_weight must be a dask collection exactly when y is one")
    if not is_dask_collection(y):
        labels = float_values(y, "y").reshape(-1)
        if labels.shape != shares.shape:
            raise ValueError(f"sample_weight has {shares.shape[0]} rows, y has "
                             f"{labels.shape[0]}")
        return np.column_stack([labels, shares])
    if getattr(y, "ndim", 1) != 1 or getattr(shares, "ndim", 1) != 1:
        raise ValueError("y and sample_weight must be one column each")
    if hasattr(y, "chunks") and hasattr(shares, "chunks"):  # dask arrays
        import dask.array as da

        if len(y.chunks[0]) != len(shares.chunks[0]):
            raise ValueError("sample_weight must have the partitions of y")
        if not any(np.isnan(c) for c in y.chunks[0] + shares.chunks[0]):
            shares = shares.rechunk((y.chunks[0],))
        return da.stack([y.astype(np.float64), shares], axis=1)
    if hasattr(y, "chunks") or hasattr(shares, "chunks"):
        raise ValueError("give y and sample_weight as the same kind of dask collection "
                         "(both arrays, or both series)")
    if y.npartitions != shares.npartitions or tuple(y.divisions) != tuple(shares.divisions):
        raise ValueError("sample_weight must have the partitions (and divisions) of y")
    return y.rename(WEIGHTED_TARGET[0]).to_frame().assign(**{WEIGHTED_TARGET[1]: shares})
