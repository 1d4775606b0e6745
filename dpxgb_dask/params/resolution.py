"""How a fit's parameters are resolved, in this order of precedence (a later one wins):

1. :class:`~dpxgb_dask.params.fields.TrainParams`' own defaults;
2. the objective's defaults without a preset (regression's, then the default's ε schedule
   point, :mod:`~dpxgb_dask.params.defaults`), or a named split method's own defaults, or
   the preset's parameters (:mod:`~dpxgb_dask.params.presets`);
3. the parameters the user gives (by our names or XGBoost's), with the cross-silo
   defaults that follow from them;
4. for the default alone, one more tree per feature where its main effects are drawn by
   released gain and the user gave no tree count, then the λ and η carried from its
   schedule point to the fit's ε and tree count, where the user gave neither.

The result is validated (:func:`~dpxgb_dask.params.validation.validate`).
"""
from dataclasses import fields, replace

import numpy as np

from ..objective import OBJECTIVES, metric_names
from .checks import check_choice as _check_choice
from .defaults import (DEFAULT_REGRESSION_OVERRIDES, SPLIT_METHOD_DEFAULTS,
                       carried_leaf_regime, default_schedule_overrides, split_method_defaults,
                       trees_with_a_pass)
from .fields import TrainParams
from .names import canonical_names
from .presets import PRESETS, preset_overrides
from .silos import cross_silo_defaults
from .validation import validate

__all__ = ["resolve_params", "with_overrides"]


def _drop_what_does_not_apply(values, given):
    """Drop from ``values`` the schedule's fields that the fit's own choices leave without
    an object (the user's own fields stay, and validation names a conflict)."""
    if "leaf_shrinkage" not in given and not TrainParams(**values).gaussian_leaf_release:
        values.pop("leaf_shrinkage", None)  # (the schedule's, for a Gaussian leaf release)
    if "main_effect_features" not in given and not (
            values.get("feature_selection") == "staged"
            and values.get("split_method", "random") == "random"):
        values.pop("main_effect_features", None)  # (the schedule's, for random staged trees)
    if "main_effect_test_level" not in given and \
            values.get("main_effect_features") != "by_released_gain":
        values.pop("main_effect_test_level", None)  # (the schedule's, for its pass)


def resolve_params(objective, preset=None, *, n_features=None, **explicit):
    """Build validated :class:`~dpxgb_dask.params.fields.TrainParams` from a preset and
    explicit overrides.

    Parameters
    ----------
    objective : {"reg:squarederror", "binary:logistic"}
    preset : {"dp-xgboost", "dpboost", "maddock", "s-bdt"}, optional
    n_features : int, optional
        The table's feature count (public), which the default's tree count reads where its
        main effects are drawn by released gain
        (:func:`~dpxgb_dask.params.defaults.trees_with_a_pass`); every fit gives it.
        Without it the schedule point's own count holds.
    **explicit
        Parameters given by the user, by our names or XGBoost's
        (:data:`~dpxgb_dask.params.names.XGBOOST_ALIASES`);
        ``None`` values mean "not given" except for ``epsilon`` when
        ``dp_epsilon_per_tree`` is given.

    Returns
    -------
    dpxgb_dask.params.fields.TrainParams

    Raises
    ------
    ValueError
        Naming the parameter and its allowed values.
    """
    _check_choice("objective", objective, OBJECTIVES)
    explicit = canonical_names(explicit)  # (XGBoost's names of ours)
    known = {f.name for f in fields(TrainParams)}
    unknown = sorted(set(explicit) - known)
    if unknown:
        raise ValueError(f"unknown parameters {unknown}; allowed: {sorted(known)}")
    # the fit's total ε (public), which the ε schedules read; None with a per-tree budget
    epsilon = explicit.get("epsilon")
    if epsilon is None and explicit.get("dp_epsilon_per_tree") is None:
        epsilon = TrainParams.epsilon
    values = {"objective": objective}
    # a split method other than the default's takes its own defaults, not the schedule's
    own_method = preset is None and explicit.get("split_method") in SPLIT_METHOD_DEFAULTS
    if own_method:
        values.update(split_method_defaults(objective, explicit["split_method"]))
    elif preset is None:
        if objective == "reg:squarederror":
            values.update(DEFAULT_REGRESSION_OVERRIDES)
        values.update(default_schedule_overrides(objective, epsilon))
    else:
        _check_choice("preset", preset, PRESETS)
        values.update(preset_overrides(preset, objective, epsilon))
    # NumPy scalars (e.g. from a GridSearchCV grid over np.arange) as Python numbers
    given = {k: (v.item() if isinstance(v, np.generic) else v)
             for k, v in explicit.items() if v is not None}
    if "dp_epsilon_per_tree" in given and "epsilon" not in given:
        given["epsilon"] = None
    values.update(given, **cross_silo_defaults(given))  # (defaults: not in given)
    _drop_what_does_not_apply(values, given)
    if preset is None and not own_method:
        values.update(trees_with_a_pass(values, given, n_features))
        values.update(carried_leaf_regime(
            objective, epsilon, values.get("n_estimators", TrainParams.n_estimators), given))
    if values.get("private_eval_sets"):
        values["eval_metric"] = tuple(metric_names(objective, values.get("eval_metric"),
                                                   private=True))
    params = TrainParams(**values)
    validate(params)
    if params.dp_epsilon_per_tree is not None and params.epsilon is not None \
            and "epsilon" in given and given["epsilon"] is not None:
        raise ValueError("give either epsilon (a total) or dp_epsilon_per_tree, not both")
    if objective == "reg:squarederror" and params.label_bounds is None:
        raise ValueError("label_bounds is required for regression: give the public (lo, hi) "
                         "range of the label")
    return params


def with_overrides(params, **changes):
    """A validated copy of ``params`` with some fields changed."""
    new = replace(params, **changes)
    validate(new)
    return new
