"""What the user's X and y must be: checks of their metadata (shapes where they are known,
dtypes, column names), for every input type: NumPy, pandas (NumPy, nullable and pyarrow
dtypes), scipy sparse matrices, dask arrays and dataframes, silo tables; their values as
float rows; labels as class indices; bounds given by column name; a silo's own rows, read
from its file on its worker (:func:`~dpxgb_dask.inputs.read_silo_rows`).

The checks read no value. The conversions (:func:`float_values`, :func:`weight_shares`,
:class:`Targets`, the label encodings) run where the values are: in the user's process
for in-memory inputs, lazily on the workers for dask collections. Value checks (lengths of
dask partitions, label sets, infinities) run on the workers, inside
:func:`~dpxgb_dask.partition.state.make_part`, and surface as a ``ValueError`` naming
the argument.
"""
import dataclasses
from dataclasses import dataclass

import numpy as np

from .categories import encode as encode_categories
from .categories import is_frame
from .objective import UNKNOWN_LABEL
from .silo_table import SiloTable


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


def feature_names_of(X):
    """The feature names of X from its metadata: a pandas or dask DataFrame's columns (as
    strings), a :class:`~dpxgb_dask.silo_table.SiloTable`'s features; None for arrays.

    Returns
    -------
    list of str or None
    """
    if isinstance(X, SiloTable):
        return list(X.features)
    return [str(c) for c in X.columns] if is_frame(X) else None


def count_features(X):
    """X's column count from its shape alone, before its columns are checked
    (:func:`describe_features` checks them); None when X has no 2-D shape.

    Returns
    -------
    int or None
    """
    if is_frame(X):
        return len(X.columns)
    if isinstance(X, SiloTable):
        return len(X.features)
    try:
        shape = X.shape if hasattr(X, "shape") else np.shape(X)
    except (TypeError, ValueError):  # (a ragged list: describe_features says what is wrong)
        return None
    return int(shape[1]) if len(shape) == 2 else None


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
        names = feature_names_of(X)
        check_numeric_dtypes(list(X.dtypes), names)
        return names, len(names)
    if isinstance(X, SiloTable):  # (its columns' dtypes are checked on the silos)
        return feature_names_of(X), len(X.features)
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


def label_array(y):
    """``y`` as one column: a one-column frame becomes its series."""
    if is_frame(y):
        if len(y.columns) != 1:
            raise ValueError(f"y must be one column, got {len(y.columns)}")
        y = y[y.columns[0]]
    return y


def read_silo_rows(path, file_format, features, label, classes=None, categories=None):
    """A silo's own rows, read on its worker from its own storage
    (:class:`~dpxgb_dask.silo_table.SiloTable`): the feature and label columns of a
    Parquet file or directory, or of a CSV file; only those columns are read.

    Parameters
    ----------
    path : str
    file_format : {"parquet", "csv"}
    features : list of str
    label : str
    classes : list, optional
        The public label set: the labels become their index in it (:func:`encode_labels`;
        a missing label stays NaN).
    categories : list of (list or None), optional
        The fit's public category lists, one entry per feature: those features become
        their codes (:func:`~dpxgb_dask.categories.encode`).

    Returns
    -------
    X : pandas.DataFrame, shape (n_rows, n_features)
        The features, in the order of ``features``.
    y : pandas.Series or ndarray of float64, shape (n_rows,)

    Raises
    ------
    ValueError
        Naming ``path`` and the columns it lacks, or its non-numeric feature columns.
    OSError
        Naming ``path``, which cannot be read.
    """
    columns = list(features) + [label]
    present = set(_read_source(path, file_format, columns=False))
    missing = [c for c in columns if c not in present]
    if missing:
        raise ValueError(f"{path} has no column {missing[0]!r} (the silo table's features "
                         f"and label must be columns of every silo's file; missing: "
                         f"{missing})")
    frame = _read_source(path, file_format, columns)
    X, y = frame[list(features)], frame[label]
    if categories is not None:
        X = encode_categories(X, categories)
    numerical = [c for c, values in zip(features, categories or [None] * len(features))
                 if values is None]
    check_numeric_dtypes([X[c].dtype for c in numerical], [f"{c} (in {path})"
                                                             for c in numerical])
    if classes is not None:
        y = encode_labels(y.to_numpy(), np.asarray(classes, dtype=object))
    return X, y


def _read_source(path, file_format, columns):
    """The ``columns`` of a silo's file as a pandas DataFrame, or (``columns=False``) the
    names of its columns, read from its schema or header line only.

    Raises
    ------
    OSError
        Naming ``path``: missing, unreadable, or not a file of ``file_format``.
    """
    import pandas as pd

    try:
        if file_format == "parquet":
            if columns is False:
                import pyarrow.dataset

                # (a directory's partition columns too, as read_parquet reads them)
                return pyarrow.dataset.dataset(path, format="parquet",
                                               partitioning="hive").schema.names
            return pd.read_parquet(path, columns=columns)
        if columns is False:
            return list(pd.read_csv(path, nrows=0).columns)
        return pd.read_csv(path, usecols=columns)
    except (OSError, ValueError) as exc:  # (pandas' and pyarrow's parse errors included)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise OSError(f"{path} cannot be read as {file_format}: {type(exc).__name__} "
                      f"{first}".rstrip()) from None


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
    """Labels as float64 indices into the public ``classes`` (binary: 1.0 for
    ``classes[1]``, 0.0 for ``classes[0]``).

    A missing label (NaN, None) stays NaN (its row is left out); a label outside
    ``classes`` becomes :data:`~dpxgb_dask.objective.UNKNOWN_LABEL`, in no class, which
    the fit refuses or leaves out (:meth:`~dpxgb_dask.objective.Objective.labels_in_domain`).
    Numbers match across types (1 and 1.0), booleans as 0 and 1, strings exactly.

    Parameters
    ----------
    y : array-like of shape (n_rows,)
    classes : array-like of shape (n_classes,)

    Returns
    -------
    ndarray of float64, shape (n_rows,)
    """
    import pandas as pd

    y = np.asarray(y)
    if y.dtype == bool:
        y = y.astype(np.int8)
    codes = pd.Index(np.asarray(classes)).get_indexer(y).astype(np.float64)
    codes[codes < 0] = UNKNOWN_LABEL
    codes[pd.isna(y)] = np.nan
    return codes


def parse_classes(text):
    """The public classes of a comma-separated list (the command line's ``--classes``):
    a value that reads as an integer or a number is that number, any other a string.

    Raises
    ------
    ValueError
        Fewer than 2 classes, or one listed twice.
    """
    def value(word):
        for kind in (int, float):
            try:
                return kind(word)
            except ValueError:
                pass
        return word

    classes = [value(word.strip()) for word in text.split(",") if word.strip()]
    if len(classes) < 2 or len(set(classes)) != len(classes):
        raise ValueError(f"--classes must list 2 or more distinct labels, comma-separated, "
                         f"got {text!r}")
    return classes


def table_labels(y, column, classes=None, n_classes=2, unknown_labels="raise"):
    """The class labels of a table held in the user's own process (the command line's
    DATA), as class indices, checked here so that the error names the column.

    Parameters
    ----------
    y : pandas.Series
        The label column.
    column : str
        Its name, for the messages.
    classes : list, optional
        The public classes (:func:`parse_classes`): labels are mapped to their index
        (:func:`encode_labels`). Without it the labels must be the class indices
        ``0 .. n_classes - 1``.
    n_classes : int
    unknown_labels : {"raise", "missing"}

    Returns
    -------
    ndarray of float64, shape (n_rows,)
        NaN for a missing label, and (``"missing"``) for one outside the classes.

    Raises
    ------
    ValueError
        With ``unknown_labels="raise"``, a label outside the classes: naming the column,
        the classes and a few such labels (the user's own file).
    """
    import pandas as pd

    if classes is not None:
        codes = encode_labels(y.to_numpy(), np.asarray(classes, dtype=object))
        allowed = list(classes)
    else:
        numbers = pd.to_numeric(y, errors="coerce").to_numpy(dtype=np.float64)
        known = np.isin(numbers, np.arange(n_classes)) | y.isna().to_numpy()
        codes = np.where(known, numbers, UNKNOWN_LABEL)
        allowed = list(range(n_classes))
    outside = codes == UNKNOWN_LABEL
    if outside.any() and unknown_labels == "raise":
        examples = sorted(set(y[outside].astype(str)))[:5]
        hint = ("" if classes is not None else
                "; give the label set as --classes A,B,... to map other labels")
        raise ValueError(f"--label {column}: labels outside the classes {allowed}, such as "
                         f"{examples}{hint}, or --unknown-labels missing to leave their "
                         "rows out")
    return np.where(outside, np.nan, codes)


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


def base_margin_rows(base_margin, n_rows, n_outputs):
    """In-memory base margins (XGBoost's ``base_margin``) checked against the rows.

    Parameters
    ----------
    base_margin : array-like, shape (n_rows,) or (n_rows, K)
    n_rows : int
    n_outputs : int
        K for multi:softprob, 1 otherwise.

    Returns
    -------
    ndarray of float64, shape (n_rows,) or (n_rows, K)
    """
    margins = np.asarray(float_values(base_margin, "base_margin"), dtype=np.float64)
    expected = (n_rows,) if n_outputs == 1 else (n_rows, n_outputs)
    if margins.shape not in [expected] + [(n_rows, 1)] * (n_outputs == 1):
        raise ValueError(f"base_margin must have shape {expected}, got {margins.shape}")
    return margins.reshape(expected)


@dataclass(frozen=True)
class Targets:
    """What a fit learns from each row, row-aligned with X: its label, its weight share and
    its base margins, named as xgboost.dask names the parts it sends (``label``,
    ``weight``, ``base_margin``).

    Each field is an in-memory array (NumPy, pandas) or a dask collection, all of one kind;
    inside a partition, NumPy blocks. Build a fit's targets with :meth:`checked`.

    Attributes
    ----------
    label : array-like, shape (n_rows,)
    weight : array-like of float, shape (n_rows,), or None
        Each row's weight share in [0, 1] (:func:`weight_shares`); None: an unweighted fit.
    margin : array-like of float, shape (n_rows,) or (n_rows, K), or None
        XGBoost's ``base_margin``, where the row's margins start; None: the fit's base score.
    """

    label: object
    weight: object = None
    margin: object = None

    @classmethod
    def checked(cls, label, weight=None, margin=None):
        """The targets of ``label`` with their weight shares and base margins, checked to
        travel with the same rows (the row partitions of X): in-memory fields as float64
        arrays of one length; dask fields partitioned as ``label`` (dask arrays rechunked
        to its chunks where they are known).

        Parameters
        ----------
        label : array-like, pandas Series or dask collection, shape (n_rows,)
        weight : same kind, shape (n_rows,), optional
            From :func:`weight_shares`.
        margin : same kind, shape (n_rows,) or (n_rows, K), optional
            XGBoost's ``base_margin`` (a dask series, or a dask frame of K columns, with a
            dask series ``label``).

        Returns
        -------
        Targets

        Raises
        ------
        ValueError
            Fields of different kinds or lengths, or dask fields not partitioned as
            ``label``.
        """
        extra = {k: v for k, v in {"sample_weight": weight, "base_margin": margin}.items()
                 if v is not None}
        for name, values in extra.items():
            if is_dask_collection(label) != is_dask_collection(values):
                raise ValueError(f"{name} must be a dask collection exactly when y is one")
        if not is_dask_collection(label):
            if not extra:
                return cls(label)
            labels = float_values(label, "y").reshape(-1)
            fields = {"weight": weight, "margin": margin}
            for field, values in fields.items():
                if values is not None:
                    fields[field] = np.asarray(float_values(values, "base_margin"
                                                            if field == "margin"
                                                            else "sample_weight"),
                                               dtype=np.float64)
                    if len(fields[field]) != len(labels):
                        raise ValueError(f"sample_weight and base_margin must have the "
                                         f"{len(labels)} rows of y")
            return cls(labels, **fields)
        if getattr(label, "ndim", 1) != 1 or getattr(weight, "ndim", 1) != 1:
            raise ValueError("y and sample_weight must be one column each")
        if hasattr(label, "chunks"):  # dask arrays
            if any(not hasattr(v, "chunks") for v in extra.values()):
                raise ValueError("give y, sample_weight and base_margin as the same kind of "
                                 "dask collection (arrays, or series and frames)")
            return cls(label, *(None if v is None else _rechunked_as(v, label)
                                for v in (weight, margin)))
        if any(hasattr(v, "chunks") for v in extra.values()):
            raise ValueError("give y, sample_weight and base_margin as the same kind of dask "
                             "collection (arrays, or series and frames)")
        for name, values in extra.items():
            if label.npartitions != values.npartitions or \
                    tuple(label.divisions) != tuple(values.divisions):
                raise ValueError(f"{name} must have the partitions (and divisions) of y")
        return cls(label, weight, margin)

    def fields(self):
        """``{name: values}`` of the fields given (``label`` always)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}

    def rows(self, index):
        """The targets of the rows ``index`` (a slice or integer array) of in-memory
        fields."""
        return Targets(*(None if v is None else v[index]
                         for v in (self.label, self.weight, self.margin)))


def _rechunked_as(values, label):
    """A dask array ``values`` (a weight or margin column, or K margin columns) chunked as
    the rows of the dask array ``label`` where both chunkings are known (one block of
    columns per row block)."""
    if len(values.chunks[0]) != len(label.chunks[0]):
        raise ValueError("sample_weight and base_margin must have the partitions of y")
    if any(np.isnan(c) for c in label.chunks[0]) or any(np.isnan(c) for c in values.chunks[0]):
        return values.astype(np.float64)
    chunks = {0: label.chunks[0], 1: -1} if values.ndim == 2 else {0: label.chunks[0]}
    return values.astype(np.float64).rechunk(chunks)
