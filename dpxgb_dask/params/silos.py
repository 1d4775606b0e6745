"""Which parameters a cross-silo fit allows (:mod:`~dpxgb_dask.boosting.silos`).

A silo can release only what it can compute on its own rows: additive noise on sums of
rows; with secure aggregation, Gaussian noise only. Exponential-mechanism splits, leaves released as noisy ratios, DP bounds and sketches
over every row, private evaluation sets and the Rényi filter read exact aggregates at the
coordinator, so a cross-silo fit refuses them.
"""

#: ``cross_silo`` values: None (central: the coordinator adds the noise), ``"local"``
#: (each silo adds the noise to its own sums), ``"secure"`` (each silo adds a share of the
#: noise to its masked sums: the coordinator sees only their total).
CROSS_SILO_MODES = (None, "local", "secure")
#: Parameter -> the values a cross-silo fit allows.
CROSS_SILO_PARAMS = {
    "split_method": ("random",),
    "leaf_method": ("gaussian",),
    "split_candidates": ("uniform", "iterative_hessian", "dp_sketch"),
    "init_score": ("zero", "dp_mean"),
    "filter_rounds": (0,),
    "private_eval_sets": (0,),
    # the rows of a tree's sample are keyed by the coordinator's streams: against the
    # coordinator the sample is no secret, so no amplification may be claimed
    "subsample": (1.0,),
    "ensemble_size": (None,),
}
#: What ``cross_silo="secure"`` allows beyond that: Gaussian releases only (the sum of the
#: silos' discrete Gaussian shares is a known mechanism; the sum of Laplace shares is not),
#: and the accountant that describes it (its guarantee is concentrated DP).
SECURE_PARAMS = {"init_score": ("zero",), "accountant": ("rdp",),
                 "split_candidates": ("uniform", "iterative_hessian")}


def cross_silo_defaults(given):
    """The defaults a cross-silo fit changes unless given: ``subsample=1.0`` (the
    coordinator keys the samples), and with secure aggregation ``init_score="zero"`` and
    ``accountant="rdp"`` (:data:`SECURE_PARAMS`).

    Parameters
    ----------
    given : dict
        The user's own parameters.

    Returns
    -------
    dict
    """
    if given.get("cross_silo") is None:
        return {}
    names = ("subsample", "init_score", "accountant") if given["cross_silo"] == "secure" \
        else ("subsample",)
    allowed = dict(CROSS_SILO_PARAMS, **SECURE_PARAMS)
    return {name: allowed[name][0] for name in names if name not in given}


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
    reasons = [(CROSS_SILO_PARAMS, "a silo releases only noisy sums of its own rows, with "
                                   "no secret the coordinator holds")]
    if p.cross_silo == "secure":
        reasons.append((SECURE_PARAMS, "the silos' noise shares add up to a Gaussian, which "
                                       "the RDP accountant describes"))
    for table, reason in reasons:
        for name, allowed in table.items():
            if getattr(p, name) not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)} with "
                                 f"cross_silo={p.cross_silo!r} ({reason}), got "
                                 f"{getattr(p, name)!r}")
    if p.feature_bounds is None or isinstance(p.feature_bounds, str):
        raise ValueError(f"feature_bounds must be given (public bounds) with "
                         f"cross_silo={p.cross_silo!r}: DP bounds read every silo's rows at "
                         f"once, got {p.feature_bounds!r}")
