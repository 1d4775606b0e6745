"""Which parameters a cross-silo fit allows (:mod:`~dpxgb_dask.boosting.silos`).

A silo can release only what it can compute on its own rows: additive noise on sums of
rows. Exponential-mechanism splits, leaves released as noisy ratios, DP bounds and sketches
over every row, private evaluation sets and the Rényi filter read exact aggregates at the
coordinator, so a cross-silo fit refuses them.
"""

#: ``cross_silo`` values: None (central: the coordinator adds the noise), ``"local"``
#: (each silo adds the noise to its own sums).
CROSS_SILO_MODES = (None, "local")
#: Parameter -> the values a cross-silo fit allows.
CROSS_SILO_PARAMS = {
    "split_method": ("random",),
    "leaf_method": ("gaussian",),
    "split_candidates": ("uniform", "iterative_hessian"),
    "init_score": ("zero", "dp_mean"),
    "filter_rounds": (0,),
    "private_eval_sets": (0,),
}


def check_cross_silo(p):
    """Check ``p.cross_silo`` and, for a cross-silo fit, the parameters it allows.

    Parameters
    ----------
    p : TrainParams

    Raises
    ------
    ValueError
        Naming the parameter and its allowed values.
    """
    if p.cross_silo not in CROSS_SILO_MODES:
        raise ValueError(f"cross_silo must be one of {list(CROSS_SILO_MODES)}, got "
                         f"{p.cross_silo!r}")
    if p.cross_silo is None:
        return
    for name, allowed in CROSS_SILO_PARAMS.items():
        if getattr(p, name) not in allowed:
            raise ValueError(f"{name} must be one of {list(allowed)} with "
                             f"cross_silo={p.cross_silo!r} (a silo releases only noisy sums "
                             f"of its own rows), got {getattr(p, name)!r}")
    if p.feature_bounds is None or isinstance(p.feature_bounds, str):
        raise ValueError(f"feature_bounds must be given (public bounds) with "
                         f"cross_silo={p.cross_silo!r}: DP bounds read every silo's rows at "
                         f"once, got {p.feature_bounds!r}")
