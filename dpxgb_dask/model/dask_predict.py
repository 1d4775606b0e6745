"""Lazy predictions of dask collections where their blocks are: the model travels with the
tasks (``map_blocks`` / ``map_partitions``); nothing is computed here."""
import numpy as np


def _predict_block(block, margins, booster, output_margin):
    return booster.predict(block, output_margin=output_margin, base_margin=margins)


def _predict_partition(df, booster, output_margin, margins=None):
    import pandas as pd

    margins = None if margins is None else margins.to_numpy()
    prediction = booster.predict(df, output_margin=output_margin, base_margin=margins)
    if prediction.ndim == 2:  # one column per class
        return pd.DataFrame(prediction, index=df.index, columns=range(prediction.shape[1]))
    return pd.Series(prediction, index=df.index)


def predict_dask(booster, X, output_margin=False, base_margin=None):
    """Lazy prediction of a dask array (``map_blocks``) or dataframe (``map_partitions``):
    a dask array (series) of shape (n,), or (n, K) (a frame of K columns) for multiclass;
    ``base_margin`` (XGBoost's) a dask collection of the same kind, partitioned as X."""
    if hasattr(X, "map_partitions") and getattr(X, "ndim", 2) == 2 and hasattr(X, "columns"):
        import pandas as pd

        meta = (pd.Series(dtype=np.float64) if booster.n_classes is None else
                pd.DataFrame({k: pd.Series(dtype=np.float64) for k in range(booster.n_classes)}))
        if base_margin is not None and not hasattr(base_margin, "map_partitions"):
            raise ValueError("base_margin of a dask DataFrame X must be a dask Series or "
                             "DataFrame with its partitions")
        return X.map_partitions(_predict_partition, booster, output_margin, base_margin,
                                meta=meta)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    import dask.array as da

    X = X.rechunk({1: -1})
    margins = None
    if base_margin is not None:
        if not hasattr(base_margin, "chunks"):
            raise ValueError("base_margin of a dask array X must be a dask array")
        margins = (base_margin[:, None] if base_margin.ndim == 1 else base_margin)
        known = not any(np.isnan(c) for c in X.chunks[0] + margins.chunks[0])
        margins = margins.rechunk((X.chunks[0], -1) if known else {1: -1})
    if booster.n_classes is not None:
        return da.map_blocks(_predict_block, X, margins, booster, output_margin,
                             dtype=np.float64, chunks=(X.chunks[0], (booster.n_classes,)))
    return da.map_blocks(_predict_block, X, margins, booster, output_margin, drop_axis=1,
                         dtype=np.float64)


def _explain_block(block, booster, kind):
    return booster.predict(block, pred_leaf=kind == "leaf", pred_contribs=kind == "contribs")


def explain_dask(booster, X, kind):
    """Lazy leaf ids (``kind="leaf"``: shape (n, n_trees), int32) or TreeSHAP contributions
    (``"contribs"``: (n, n_features + 1), or (n, K, n_features + 1) for multi:softprob) of a
    dask array or dataframe, as a dask array (XGBoost's ``xgboost.dask.predict`` gives
    arrays too); a dataframe's training columns are taken by name."""
    if hasattr(X, "map_partitions") and getattr(X, "ndim", 2) == 2:
        X = booster.training_columns(X).to_dask_array()
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    X = X.rechunk({1: -1})
    if kind == "leaf":
        return X.map_blocks(_explain_block, booster, kind, dtype=np.int32,
                            chunks=(X.chunks[0], (booster.n_trees,)))
    width = (booster.n_features + 1,)
    if booster.n_classes is None:
        return X.map_blocks(_explain_block, booster, kind, dtype=np.float64,
                            chunks=(X.chunks[0], width))
    return X.map_blocks(_explain_block, booster, kind, dtype=np.float64, new_axis=2,
                        chunks=(X.chunks[0], (booster.n_classes,), width))


def gathered(*collections):
    """Dask collections (or None) of one column each, computed together as 1-D NumPy
    arrays: only these values reach the caller (e.g. predictions and labels to score)."""
    import dask

    def flat(values):
        if values is None:
            return None
        if getattr(values, "ndim", 1) == 2 and hasattr(values, "columns"):
            if len(values.columns) != 1:
                raise ValueError(f"y must have one column, got {len(values.columns)}")
            values = values.iloc[:, 0]  # a one-column frame: its column
        values = values.to_dask_array() if hasattr(values, "to_dask_array") else values
        # (1-D as it is: a dask array of unknown chunk sizes cannot be reshaped)
        return values.reshape(-1) if getattr(values, "ndim", 1) != 1 else values

    return [None if v is None else np.asarray(v)
            for v in dask.compute(*(flat(c) for c in collections))]


def binary_proba(margin):
    """The probabilities of both classes from binary margins (log-odds of the second).

    Parameters
    ----------
    margin : ndarray of float64, shape (n_rows,)

    Returns
    -------
    ndarray of float64, shape (n_rows, 2)
        (P(classes_[0]), P(classes_[1])) per row.
    """
    p1 = 1.0 / (1.0 + np.exp(-margin))
    return np.stack([1.0 - p1, p1], axis=1)


def as_dask_array(margin):
    """A dask series or frame of predictions as a dask array; anything else as it is."""
    return margin.to_dask_array() if hasattr(margin, "to_dask_array") else margin
