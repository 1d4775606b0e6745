"""The validation of a fit's parameters: each field within its allowed values, then how the
fields combine; a ValueError names the first bad one and what it may be.
"""
import numbers

import numpy as np

from ..objective import OBJECTIVES, UNKNOWN_LABEL_RULES, metric_names
from .bounds import check_label_bounds
from .checks import check_choice as _check_choice, check_number as _check_number
from .fields import (ACCOUNTANTS, FEATURE_SELECTIONS, FILTER_SPENDINGS, GAIN_ESTIMATES,
                     GAIN_SENSITIVITIES, GRADIENT_RULES, INIT_SCORES, INTERACTION_THRESHOLDS,
                     LEAF_CLIPPINGS, LEAF_METHODS, LEAF_SHRINKAGES, MAIN_EFFECT_FEATURES,
                     MAX_DEPTH_LIMIT, SPLIT_CANDIDATES, SPLIT_METHODS)
from .silos import check_cross_silo

__all__ = ["validate"]


def validate(p):
    """Check every field of :class:`~dpxgb_dask.params.fields.TrainParams`, then how they
    combine; raise ValueError naming the first bad one and its allowed values.

    Parameters
    ----------
    p : dpxgb_dask.params.fields.TrainParams
    """
    _check_sizes_and_budget(p)
    _check_methods(p)
    _check_combinations(p)
    check_cross_silo(p)


def _check_sizes_and_budget(p):
    """The objective, the trees' sizes and the privacy budget's fields."""
    _check_choice("objective", p.objective, OBJECTIVES)
    if p.objective == "multi:softprob":
        if p.num_class is None:
            raise ValueError("num_class is required with objective='multi:softprob': give the "
                             "public number of classes (>= 3)")
        _check_number("num_class", p.num_class, lo=3, integer=True)
    elif p.num_class is not None:
        raise ValueError(f"num_class applies to objective='multi:softprob' only, not "
                         f"{p.objective!r}; leave it out")
    _check_number("n_estimators", p.n_estimators, lo=1, integer=True)
    _check_number("max_depth", p.max_depth, lo=1, hi=MAX_DEPTH_LIMIT, integer=True)
    _check_number("learning_rate", p.learning_rate, lo=0, lo_open=True)
    _check_number("reg_lambda", p.reg_lambda, lo=0)
    _check_number("subsample", p.subsample, lo=0, hi=1, lo_open=True)
    _check_number("min_child_weight", p.min_child_weight, lo=0)
    _check_number("max_bin", p.max_bin, lo=2, hi=255, integer=True)
    if p.epsilon is None and p.dp_epsilon_per_tree is None:
        raise ValueError("epsilon must be a positive number (or give dp_epsilon_per_tree)")
    if p.epsilon is not None:
        _check_number("epsilon", p.epsilon, lo=0, lo_open=True)
    if p.dp_epsilon_per_tree is not None:
        _check_number("dp_epsilon_per_tree", p.dp_epsilon_per_tree, lo=0, lo_open=True)
    _check_number("delta", p.delta, lo=0, hi=1, hi_open=True)
    if p.bounds_epsilon is not None:
        _check_number("bounds_epsilon", p.bounds_epsilon, lo=0, lo_open=True)
    if p.categories is not None and (isinstance(p.categories, (str, bytes)) or
                                     not isinstance(p.categories, (dict, list, tuple))):
        raise ValueError("categories must be a dict {column: [categories]} or a list with "
                         f"one entry (a list or None) per feature, got {p.categories!r}")
    if p.label_bounds is not None:
        check_label_bounds(p.label_bounds)
    if p.weight_bound is not None:
        _check_number("weight_bound", p.weight_bound, lo=0, lo_open=True)
    _check_number("private_eval_sets", p.private_eval_sets, lo=0, integer=True)
    if p.private_eval_sets and tuple(metric_names(p.objective, p.eval_metric,
                                                   private=True)) != p.eval_metric:
        raise ValueError("eval_metric must be a tuple of metric names with private_eval_sets "
                         f"(resolve_params makes it one), got {p.eval_metric!r}")


def _check_methods(p):
    """The split, candidate, leaf and accounting methods and their numbers, one by one."""
    _check_choice("split_method", p.split_method, SPLIT_METHODS)
    _check_choice("feature_selection", p.feature_selection, FEATURE_SELECTIONS)
    _check_choice("interaction_thresholds", p.interaction_thresholds, INTERACTION_THRESHOLDS)
    _check_choice("main_effect_features", p.main_effect_features, MAIN_EFFECT_FEATURES)
    _check_number("main_effect_test_level", p.main_effect_test_level, lo=0, hi=1, hi_open=True)
    _check_choice("split_candidates", p.split_candidates, SPLIT_CANDIDATES)
    _check_choice("leaf_method", p.leaf_method, LEAF_METHODS)
    _check_choice("leaf_shrinkage", p.leaf_shrinkage, LEAF_SHRINKAGES)
    _check_number("leaf_noise_ratio", p.leaf_noise_ratio, lo=0, hi=1, lo_open=True, hi_open=True)
    if not isinstance(p.newton, (bool, np.bool_)):
        raise ValueError(f"newton must be True or False, got {p.newton!r}")
    # <= 16: quantised gradients stay exact in float32 (partition.state.MAX_VALUE_BOUND)
    _check_number("gradient_bound", p.gradient_bound, lo=0, hi=16.0, lo_open=True)
    _check_number("hessian_bound", p.hessian_bound, lo=0, hi=16.0, lo_open=True)
    _check_choice("gradient_rule", p.gradient_rule, GRADIENT_RULES)
    _check_number("leaf_bound", p.leaf_bound, lo=0, lo_open=True)
    _check_choice("leaf_clipping", p.leaf_clipping, LEAF_CLIPPINGS)
    _check_choice("gain_sensitivity", p.gain_sensitivity, GAIN_SENSITIVITIES)
    _check_choice("gain_estimate", p.gain_estimate, GAIN_ESTIMATES)
    _check_choice("unknown_labels", p.unknown_labels, UNKNOWN_LABEL_RULES)
    _check_choice("init_score", p.init_score, INIT_SCORES)
    _check_number("n_sketch_bins", p.n_sketch_bins, lo=2, integer=True)
    _check_number("iterative_hessian_rounds", p.iterative_hessian_rounds, lo=0, integer=True)
    _check_number("batch_size", p.batch_size, lo=1, integer=True)
    if p.ensemble_size is not None:
        _check_number("ensemble_size", p.ensemble_size, lo=1, integer=True)
    _check_choice("accountant", p.accountant, ACCOUNTANTS)
    if p.random_state is not None:
        _check_number("random_state", p.random_state, lo=0, integer=True)
    if not isinstance(p.reproducible_noise, (bool, np.bool_)):
        raise ValueError(f"reproducible_noise must be True or False, got {p.reproducible_noise!r}")
    if p.budget is not None and (not isinstance(p.budget, str) or not p.budget.strip()):
        raise ValueError(f"budget must be the name (a non-empty str) of a budget created "
                         f"on the scheduler, got {p.budget!r}")
    if p.reproducible_noise and p.budget is not None:
        raise ValueError("budget= cannot be combined with reproducible_noise=True: fits keyed "
                         "by the same random_state share their noise and samples, which a "
                         "budget's composition of independent fits would undercount")
    if p.reproducible_noise and p.random_state is None:
        raise ValueError("reproducible_noise=True needs random_state: the noise is then keyed "
                         "by it")
    if isinstance(p.n_threads, bool) or not isinstance(p.n_threads, numbers.Integral) \
            or not (p.n_threads == -1 or p.n_threads >= 1):
        raise ValueError("n_threads (XGBoost's n_jobs) must be -1 (every CPU of each worker) "
                         f"or an integer >= 1, got {p.n_threads!r}")
    if p.budget_shares == "equal_noise":
        _check_equal_noise(p)
    elif p.budget_shares is not None:
        if not isinstance(p.budget_shares, dict) or not p.budget_shares:
            raise ValueError("budget_shares must be a non-empty dict of release -> share, "
                             "or 'equal_noise'")
        for key, share in p.budget_shares.items():
            _check_choice("budget_shares key", key, ("sketch", "split", "leaf", "init",
                                                     "eval"))
            _check_number(f"budget_shares[{key!r}]", share, lo=0, lo_open=True)


def _check_combinations(p):
    """Methods that cannot be combined: each error says which, and what to use instead."""
    if p.leaf_method == "gaussian" and p.split_method == "exponential":
        raise ValueError("split_method='exponential' is a pure-ε mechanism used with "
                         "leaf_method='laplace' or 'noisy_average'; with Gaussian leaves use "
                         "'random', 'noisy_histogram' or 'partially_random'")
    if p.leaf_method != "gaussian" and p.split_method in ("noisy_histogram", "partially_random"):
        raise ValueError(f"split_method={p.split_method!r} makes Gaussian releases; use "
                         "leaf_method='gaussian' with it")
    if p.newton and (p.split_method == "exponential" or p.leaf_method != "gaussian"):
        raise ValueError("newton=True needs split_method in ('random', 'noisy_histogram', "
                         "'partially_random') and "
                         "leaf_method='gaussian': the exponential-mechanism gain and the "
                         "Laplace leaf sensitivities hold for row counts (newton=False) only")
    if p.leaf_shrinkage != "none" and not p.gaussian_leaf_release:
        raise ValueError(f"leaf_shrinkage={p.leaf_shrinkage!r} shrinks the Gaussian leaf "
                         f"release; leaf_method={p.leaf_method!r} with split_method="
                         f"{p.split_method!r} makes none: use leaf_method='gaussian' with a "
                         "split method other than 'partially_random', or "
                         "leaf_shrinkage='none'")
    if p.interaction_thresholds == "quantile" and p.split_method != "random":
        raise ValueError("interaction_thresholds='quantile' places random splits' thresholds; "
                         f"split_method={p.split_method!r} chooses its own: use "
                         "split_method='random' or interaction_thresholds='uniform'")
    if p.main_effect_features != "in_turn" and (p.split_method != "random"
                                               or p.feature_selection != "staged"):
        raise ValueError(f"main_effect_features={p.main_effect_features!r} chooses the "
                         "features of the main-effect stage of random staged trees; "
                         f"split_method={p.split_method!r} with feature_selection="
                         f"{p.feature_selection!r} has none: use split_method='random' and "
                         "feature_selection='staged', or main_effect_features='in_turn'")
    if p.main_effect_test_level and p.main_effect_features != "by_released_gain":
        raise ValueError(f"main_effect_test_level={p.main_effect_test_level!r} tests the "
                         "released gains of the main-effect pass of "
                         "main_effect_features='by_released_gain'; main_effect_features="
                         f"{p.main_effect_features!r} has none: use main_effect_features="
                         "'by_released_gain', or main_effect_test_level=0")
    if p.ensemble_size is not None and p.objective == "multi:softprob":
        raise ValueError("ensemble_size (DPBoost's ensembles of one tree per disjoint row "
                         "share) does not apply to multi:softprob; leave it out")
    if p.ensemble_size is not None and not p.learning_rate < 1.0:
        raise ValueError("ensemble_size needs learning_rate < 1: DPBoost's disjoint row shares "
                         "η(1-η)^k / (1-(1-η)^T) are defined for 0 < η < 1")
    if p.ensemble_size is not None and p.subsample < 1.0:
        raise ValueError("ensemble_size (disjoint rows per tree) and subsample < 1 cannot be "
                         "combined; set subsample=1.0")
    _check_number("filter_rounds", p.filter_rounds, lo=0, integer=True)
    _check_choice("filter_spending", p.filter_spending, FILTER_SPENDINGS)
    if p.filter_rounds:
        _check_filter(p)
    if p.split_candidates == "dp_sketch_per_tree" and p.leaf_method == "gaussian" \
            and p.subsample < 1.0:
        raise ValueError("split_candidates='dp_sketch_per_tree' is a Laplace release of each "
                         "tree's sample: next to Gaussian releases (leaf_method='gaussian') "
                         "the accountants cannot amplify a sample holding both, so "
                         "subsample < 1 would buy nothing; use split_candidates "
                         "'iterative_hessian' or 'dp_sketch', or subsample=1.0")
    if p.dp_epsilon_per_tree is not None and p.leaf_method == "gaussian":
        raise ValueError("dp_epsilon_per_tree applies to the pure-ε methods "
                         "(leaf_method='laplace' or 'noisy_average'); give epsilon instead")


def _check_equal_noise(p):
    """``budget_shares="equal_noise"`` weighs Gaussian queries: every release must be one."""
    needs = {"leaf_method": ("gaussian",), "split_method": ("random", "noisy_histogram",
                                                            "partially_random"),
             "split_candidates": ("uniform", "iterative_hessian"), "init_score": ("zero",)}
    for name, allowed in needs.items():
        if getattr(p, name) not in allowed:
            raise ValueError(f"budget_shares='equal_noise' gives every Gaussian query the same "
                             f"noise and needs {name} in {list(allowed)}, got "
                             f"{getattr(p, name)!r}")


def _check_filter(p):
    """The individual Rényi filter's requirements (public parameters only)."""
    needs = []
    if p.accountant != "rdp":
        needs.append(f"accountant='rdp' (not {p.accountant!r}): the filter bounds each row's "
                     "Rényi divergence at one order, which only the RDP accountant reads")
    if p.leaf_method != "gaussian":
        needs.append(f"leaf_method='gaussian' (not {p.leaf_method!r}): a row's divergence "
                     "is computed for Gaussian releases")
    if p.split_method not in ("random", "noisy_histogram"):
        needs.append(f"split_method 'random' or 'noisy_histogram' (not {p.split_method!r})")
    if p.split_candidates == "dp_sketch_per_tree":
        needs.append("split_candidates 'uniform', 'dp_sketch' or 'iterative_hessian' (not "
                     "'dp_sketch_per_tree': a per-tree Laplace sketch has no Rényi charge)")
    if p.objective == "multi:softprob":
        needs.append("objective 'binary:logistic' or 'reg:squarederror' (not "
                     "'multi:softprob')")
    if p.ensemble_size is not None:
        needs.append("ensemble_size=None")
    if p.gradient_rule != "clip":
        needs.append("gradient_rule='clip'")
    if needs:
        raise ValueError(f"filter_rounds={p.filter_rounds} needs " + "; ".join(needs))
