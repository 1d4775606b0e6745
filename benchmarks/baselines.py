"""The other DP system the benchmarks run next to dpxgb_dask: DP-EBM (interpret's
differentially private Explainable Boosting Machines, Nori et al. 2021), given the same
public feature bounds (and label bounds) and the same (ε, δ)."""
import numpy as np

#: δ of every DP-EBM fit of the benchmarks.
DP_EBM_DELTA = 1e-6


def dp_ebm(objective, epsilon, feature_bounds, label_bounds=None, random_state=None):
    """An unfitted DP-EBM for ``objective``.

    Parameters
    ----------
    objective : {"binary:logistic", "multi:softprob", "reg:squarederror"}
    epsilon : float
    feature_bounds : array of shape (n_features, 2)
        The public bounds dpxgb_dask gets (``privacy_bounds``).
    label_bounds : tuple of float, optional
        Regression: the public label range (``privacy_target_min/max``).
    random_state : int, optional

    Returns
    -------
    interpret.privacy.DPExplainableBoostingClassifier or ...Regressor

    Raises
    ------
    ImportError
        When interpret is not installed.
    """
    from interpret.privacy import DPExplainableBoostingClassifier, DPExplainableBoostingRegressor

    common = dict(epsilon=epsilon, delta=DP_EBM_DELTA,
                  privacy_bounds=np.asarray(feature_bounds, dtype=float),
                  random_state=random_state, n_jobs=1)
    if objective == "reg:squarederror":
        lo, hi = label_bounds
        return DPExplainableBoostingRegressor(privacy_target_min=lo, privacy_target_max=hi,
                                              **common)
    return DPExplainableBoostingClassifier(**common)
