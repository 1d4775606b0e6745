"""Lazy predictions of dask collections where their blocks are: the model travels with the
tasks (``map_blocks`` / ``map_partitions``); nothing is computed here."""
import numpy as np


def _predict_block(block, booster, output_margin):
    return booster.predict(block, output_margin=output_margin)


def _predict_partition(df, booster, output_margin):
    import pandas as pd

    prediction = booster.predict(df, output_margin=output_margin)
    if prediction.ndim == 2:  # one column per class
        return pd.DataFrame(prediction, index=df.index, columns=range(prediction.shape[1]))
    return pd.Series(prediction, index=df.index)


def predict_dask(booster, X, output_margin=False):
    """Lazy prediction of a dask array (``map_blocks``) or dataframe (``map_partitions``):
    a dask array (series) of shape (n,), or (n, K) (a frame of K columns) for multiclass."""
    if hasattr(X, "map_partitions") and getattr(X, "ndim", 2) == 2 and hasattr(X, "columns"):
        import pandas as pd

        meta = (pd.Series(dtype=np.float64) if booster.n_classes is None else
                pd.DataFrame({k: pd.Series(dtype=np.float64) for k in range(booster.n_classes)}))
        return X.map_partitions(_predict_partition, booster, output_margin, meta=meta)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    X = X.rechunk({1: -1})
    if booster.n_classes is not None:
        return X.map_blocks(_predict_block, booster, output_margin, dtype=np.float64,
                            chunks=(X.chunks[0], (booster.n_classes,)))
    return X.map_blocks(_predict_block, booster, output_margin, drop_axis=1, dtype=np.float64)


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
