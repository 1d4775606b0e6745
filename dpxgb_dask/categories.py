"""Categorical features with public category lists: which features are categorical, their
codes, bins, bounds and cut points (public facts only; no Dask).

A categorical feature's list of categories is public, like the feature bounds: it comes
from ``categories=`` (by column name, or one entry per feature) or from a pandas
``category`` dtype, whose categories are then taken as declared (build the dtype from the
public list, ``pd.CategoricalDtype(list)``, not from the values present: categories read
off the data would reveal which values occur). A value is encoded as its index in the list;
a missing value, or one outside the list, is missing (NaN), so that nothing depends on
which private values occur. Code ``c`` falls in bin ``c`` (cut points ``k + 0.5``), and a
split on the feature sends a set of categories left and the rest right (:mod:`~dpxgb_dask.boosting.splits`).
"""
import warnings

import numpy as np

from .privacy.validation import PrivacyLeakWarning

#: Most categories of one feature: its bins must lie below the missing bin (<= 255).
MAX_CATEGORIES = 255


def is_frame(X):
    """A pandas or dask DataFrame (a dask Series also answers to ``.columns``)."""
    return hasattr(X, "columns") and getattr(X, "ndim", 2) == 2


def _dtype_categories(dtype, name):
    if str(dtype) != "category":
        return None
    if dtype.categories is None or "__UNKNOWN_CATEGORIES__" in list(dtype.categories):
        raise ValueError(f"column {name!r} is a dask category column with unknown "
                         "categories: give its public list as categories= (or "
                         ".cat.set_categories(public_list))")
    return list(dtype.categories)


def resolve(categories, X, feature_names, n_features):
    """The public category list of every feature, or None when no feature is categorical.

    Parameters
    ----------
    categories : dict, list or None
        ``{column name or index: list}``, or one entry (a list, or None for a numerical
        feature) per feature.
    X : array-like or dask collection
        Only its dtypes are read: pandas ``category`` columns without an entry in
        ``categories`` take their dtype's categories.
    feature_names : list of str or None
    n_features : int

    Returns
    -------
    list of (list or None), length n_features; or None

    Raises
    ------
    ValueError
        Naming ``categories``: unknown columns, a wrong length, fewer than 2 or repeated
        categories, more than 255.
    """
    resolved, from_dtype = _declared(categories, X, feature_names, n_features)
    if from_dtype:
        names = feature_names or list(range(n_features))
        warnings.warn(f"the category lists of columns {[names[f] for f in sorted(from_dtype)]} "
                      "come from their pandas category dtype and are published with the "
                      "model: they are public only if the dtype was built from a public "
                      "list (pd.CategoricalDtype(list)); astype('category') or categorize() "
                      "reads them off the values present. Give categories= to say so.",
                      PrivacyLeakWarning, stacklevel=3)
    return _checked(resolved, X, feature_names)


def dtype_columns(categories, X):
    """The columns of a frame X whose category lists :func:`resolve` takes from their pandas
    ``category`` dtype (not DP unless the dtype was built from a public list).

    Returns
    -------
    list of str
    """
    if not is_frame(X):
        return []
    names = [str(c) for c in X.columns]
    _, from_dtype = _declared(categories, X, names, len(names))
    return [names[f] for f in sorted(from_dtype)]


def _declared(categories, X, feature_names, n_features):
    """Each feature's list as given, else its pandas ``category`` dtype's; and the features
    whose lists come from a dtype (listed with a ``PrivacyLeakWarning``)."""
    resolved = [None] * n_features
    from_dtype = set()
    if is_frame(X):
        for f, (name, dtype) in enumerate(zip(X.columns, X.dtypes)):
            resolved[f] = _dtype_categories(dtype, name)
            if resolved[f] is not None:
                from_dtype.add(f)
    if isinstance(categories, dict):
        names = list(feature_names or [])
        for key, values in categories.items():
            if str(key) in names:
                resolved[names.index(str(key))] = values
                from_dtype.discard(names.index(str(key)))
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) \
                    and 0 <= key < n_features:
                resolved[int(key)] = values
                from_dtype.discard(int(key))
            else:
                raise ValueError(f"categories names {key!r}, which is not a column of X "
                                 f"(columns: {names or list(range(n_features))})")
    elif categories is not None:
        if isinstance(categories, (str, bytes)) or len(categories) != n_features:
            raise ValueError("categories must be a dict {column: [categories]} or have one "
                             f"entry (a list or None) per feature ({n_features})")
        from_dtype = {f for f in from_dtype if categories[f] is None}
        resolved = [c if c is not None else resolved[f] for f, c in enumerate(categories)]
    return resolved, from_dtype


def _checked(resolved, X, feature_names):
    """The lists checked (public facts only: the lists and the columns' dtypes); None when
    no feature is categorical."""
    numeric_columns = set()
    if is_frame(X):
        from pandas.api.types import is_numeric_dtype

        numeric_columns = {f for f, dtype in enumerate(X.dtypes)
                           if str(dtype) != "category" and is_numeric_dtype(dtype)}
    out = []
    for f, values in enumerate(resolved):
        if values is None:
            out.append(None)
            continue
        if f in numeric_columns and values and all(isinstance(v, str) for v in values):
            # (public facts: the column's dtype and the list) every value would be missing
            raise ValueError(f"feature {feature_names[f] if feature_names else f!r} holds "
                             f"numbers but its categories are strings ({values[:3]}...): "
                             "give the categories as the numbers the column holds")
        if isinstance(values, (str, bytes)):
            raise ValueError(f"categories of feature {f} must be a list, got {values!r}")
        values = [v.item() if isinstance(v, np.generic) else v for v in values]
        if len(values) < 2 or len(set(values)) != len(values):
            raise ValueError(f"categories of feature {f} must hold 2 or more distinct values, "
                             f"got {values!r}")
        if len(values) > MAX_CATEGORIES:
            raise ValueError(f"categories of feature {f} has {len(values)} values; at most "
                             f"{MAX_CATEGORIES} fit in the bins")
        out.append(values)
    return out if any(c is not None for c in out) else None


def is_categorical(categories, n_features):
    """ndarray of bool, shape (n_features,): the categorical features."""
    if categories is None:
        return np.zeros(n_features, dtype=bool)
    return np.array([c is not None for c in categories], dtype=bool)


def missing_bin(categories, max_bin):
    """The bin of missing values: ``max_bin``, or more when a feature has more categories
    (each category needs its own bin below it)."""
    largest = max((len(c) for c in categories or [] if c is not None), default=0)
    return max(int(max_bin), largest)


def cuts_and_bounds(categories, cuts, bounds):
    """Cut points and bounds with every categorical feature's own: cuts ``k + 0.5`` for
    ``k < C - 1`` (code c in bin c), bounds ``(-0.5, C - 0.5)``.

    Parameters
    ----------
    categories : list or None
    cuts : list of ndarray of float64
    bounds : ndarray of float64, shape (n_features, 2)

    Returns
    -------
    (list of ndarray, ndarray): copies
    """
    cuts = [np.asarray(c, dtype=np.float64) for c in cuts]
    bounds = np.array(bounds, dtype=np.float64)
    for f, values in enumerate(categories or []):
        if values is not None:
            cuts[f] = np.arange(len(values) - 1, dtype=np.float64) + 0.5
            bounds[f] = (-0.5, len(values) - 0.5)
    return cuts, bounds


def _codes(values, categories):
    """Index of each value in ``categories``, NaN for a missing or unlisted value (no
    warning or error depends on which values occur)."""
    import pandas as pd

    index = pd.Index(list(categories), dtype=object)
    codes = index.get_indexer(pd.Index(np.asarray(values, dtype=object), dtype=object))
    return np.where(codes < 0, np.nan, codes).astype(np.float64)


def _numbers(values, f):
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        # (names the column, never the value: it is private)
        raise ValueError(f"X has non-numeric values in feature {f}, which has no category "
                         "list: give it one in categories=, or encode it as numbers") from None


def encode(X, categories):
    """X with every categorical feature replaced by its codes (float64, NaN for missing or
    unknown values); numerical features unchanged. Lazy for dask collections.

    Parameters
    ----------
    X : ndarray, pandas DataFrame, dask array or dask DataFrame
    categories : list of (list or None)

    Returns
    -------
    Of the kind of X: a float64 ndarray, a frame of the same columns, or a dask collection
    """
    if categories is None:
        return X
    if is_frame(X) and hasattr(X, "map_partitions"):
        import pandas as pd

        meta = X._meta.copy()
        for f, values in enumerate(categories):
            if values is not None:
                meta[X.columns[f]] = pd.Series(dtype=np.float64)
        return X.map_partitions(encode, categories, meta=meta)
    if is_frame(X):
        X = X.copy()
        for f, values in enumerate(categories):
            if values is not None:
                column = X.columns[f]
                X[column] = _codes(X[column].astype(object).where(X[column].notna(), None),
                                   values)
        return X
    if hasattr(X, "map_blocks") and hasattr(X, "__dask_graph__"):
        return X.rechunk({1: -1}).map_blocks(encode, categories, dtype=np.float64)
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != len(categories):
        raise ValueError(f"X must have shape (n_samples, {len(categories)}), got {X.shape}")
    out = np.empty(X.shape, dtype=np.float64)
    for f, values in enumerate(categories):
        out[:, f] = _numbers(X[:, f], f) if values is None else _codes(X[:, f], values)
    return out
