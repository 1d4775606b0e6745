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
