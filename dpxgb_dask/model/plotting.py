"""Plots of a fitted model (matplotlib, imported on use)."""
import numpy as np


def plot_importance(model, importance_type="leaf_spread", max_features=20, ax=None):
    """Horizontal bar chart of the features' importance, largest on top.

    Parameters
    ----------
    model : Booster, DPXGBClassifier or DPXGBRegressor
    importance_type : {"leaf_spread", "weight", "gain", "total_gain", "cover", "total_cover"}
        See :meth:`~dpxgb_dask.model.booster.Booster.feature_importance` (public values only).
    max_features : int
        Show at most this many features.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    booster = getattr(model, "booster_", model)
    importance = booster.feature_importance(importance_type)
    names = booster.feature_names or [f"f{i}" for i in range(booster.n_features)]
    if not isinstance(max_features, int) or max_features < 1:
        raise ValueError(f"max_features must be an int >= 1, got {max_features!r}")
    order = np.argsort(importance, kind="stable")[::-1][:max_features][::-1]
    if ax is None:
        ax = plt.subplots(figsize=(6, 0.3 * len(order) + 1))[1]
    ax.barh([names[i] for i in order], importance[order])
    ax.set_xlabel(f"importance ({importance_type}, public values only)")
    ax.set_title("Feature importance")
    return ax
