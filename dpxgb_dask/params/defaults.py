"""The default (no preset): its ε schedule, the leaf regime carried to a fit's ε and tree
count, and the defaults of the split methods the default does not use.

Every point of :data:`DEFAULT_SCHEDULE` was selected on training data only, never on a test
set (``benchmarks/tune_default.py``); which round chose which point, with the candidates'
validation scores, is in ``benchmarks/results/tuning/README.md``. Parameters the user gives
explicitly win over the schedule.
"""
import math
import numbers

from .fields import TrainParams
from .schedules import nearest, nearest_overrides

#: The binary default's trees from ε 0.02: one-feature trees over the features in turn in
#: the first half of the rounds (an additive model's fine steps), then a feature per node
#: (interactions, on what the main effects leave), whose thresholds lie at random quantiles
#: of the mass the one-feature trees' leaves released. Chosen by the worst case over data
#: shapes, each real table allowed a small loss (``benchmarks/default_suite.py``,
#: results/default_suite_shrinkage.md, docs/presets.md).
_STAGED_TREES = dict(feature_selection="staged", interaction_thresholds="quantile")

#: The regression default's trees at ε <= 0.5: one-feature trees and trees with a feature
#: per node in turn, with the same quantile thresholds (results/tuning/
#: abalone-interactions-ablation.md).
_MIXED_TREES = dict(feature_selection="mixed", interaction_thresholds="quantile")

#: S-BDT's small-ε leaf regime (their best Adult rows at ε <= 0.1), which most binary points
#: use, with the binary default's trees.
_SBDT_LEAVES = dict(_STAGED_TREES, learning_rate=0.1, reg_lambda=10.0,
                    gradient_bound=0.3, hessian_bound=0.1, leaf_noise_ratio=0.04)

#: The default's multiclass trees: Maddock et al.'s (a random feature per node).
_MULTICLASS_TREES = dict(n_estimators=100, max_depth=4, learning_rate=0.3, reg_lambda=1.0,
                         subsample=1.0, max_bin=33, feature_selection="random",
                         gradient_bound=1.0, hessian_bound=0.25, leaf_noise_ratio=1.0 / 17.0)

#: Regression variant of the default: squared error has h = 1, so Newton and gradient steps
#: coincide, and count denominators (bound 1) avoid clipping h to ``hessian_bound``. Depth,
#: λ, g* and η are S-BDT's published Abalone configuration (labels scaled to [-1, 1]).
DEFAULT_REGRESSION_OVERRIDES = dict(newton=False, leaf_noise_ratio=0.5, max_depth=2,
                                    reg_lambda=15.0, gradient_bound=0.3, learning_rate=0.1)

#: The default's ε schedule per objective (:mod:`~dpxgb_dask.params.schedules`). Binary:
#: few trees on small samples from a zero score at the smallest ε, 400 subsampled depth-4
#: trees with a heavier DP initial score up to ε 0.1, all rows from ε 0.5, and 255
#: equal-width candidates (no sketch), James-Stein leaves and main effects by released
#: gain (400 + m trees for m features) from ε ≈ 0.7. Regression: few
#: shallow subsampled mixed trees at small ε (James-Stein leaves at ε ≈ 0.07-0.17), deeper
#: trees with a random feature per node from ε 1.
#: Multiclass:
#: Maddock et al.'s trees with the default's budget. The binary points' λ and η are then
#: carried to the fit (:func:`carried_leaf_regime`).
DEFAULT_SCHEDULE = {
    "binary:logistic": (
        # one-feature trees alone at the smallest ε: 25 of its 50 trees for the main
        # effects lose Adult 0.025 validation AUC (benchmarks/results/default_suite_tiny.md)
        (0.01, dict(_SBDT_LEAVES, n_estimators=50, max_depth=5, subsample=0.01,
                    gradient_bound=0.5, init_score="zero", split_candidates="uniform",
                    feature_selection="cyclic", interaction_thresholds="uniform")),
        (0.02, dict(_SBDT_LEAVES, n_estimators=100, max_depth=5, subsample=0.02,
                    gradient_bound=0.5, init_score="zero", split_candidates="uniform",
                    max_bin=255)),
        (0.03, dict(_SBDT_LEAVES, n_estimators=400, max_depth=4, subsample=0.1,
                    budget_shares={"init": 0.4})),
        (0.1, dict(_SBDT_LEAVES, n_estimators=400, max_depth=4, subsample=0.1,
                   budget_shares={"init": 0.4})),
        (0.5, dict(_SBDT_LEAVES, n_estimators=400, max_depth=4, subsample=1.0)),
        # from ε ≈ 0.7 each tree's leaves are shrunk by their James-Stein factor, which
        # lets a larger step through where the leaves stand out of the noise
        # (benchmarks/results/default_suite_shrinkage.md); their released gains then
        # tell which features carry signal: after a pass over every feature (one more
        # tree per feature), the main-effect rounds are drawn by released gain, whatever
        # the columns' order (results/default_suite_gain.md, results/wide_tables.md);
        # and when no tree of that pass released a gain above its noise (a table whose
        # features act only together), the interaction trees start after the pass
        # (results/default_suite_stage.md)
        (1.0, dict(_SBDT_LEAVES, n_estimators=400, max_depth=6, subsample=1.0,
                   learning_rate=0.3, max_bin=255, split_candidates="uniform",
                   leaf_shrinkage="james_stein", main_effect_features="by_released_gain",
                   main_effect_test_level=0.3)),
    ),
    "reg:squarederror": (
        # mixed trees at ε 0.05-0.5: 0.02-0.12 validation RMSE better than one-feature
        # trees at every ε there (results/tuning/abalone-interactions-ablation.md); a
        # random feature per node from ε 1
        (0.05, dict(_MIXED_TREES, n_estimators=200, max_depth=2, subsample=0.1,
                    gradient_bound=0.1, budget_shares={"init": 0.2}, leaf_noise_ratio=0.3,
                    reg_lambda=40.0, split_candidates="uniform")),
        # James-Stein leaves with η 0.2 at the ε = 0.1 point: 0.028 ± 0.015 and
        # 0.020 ± 0.009 validation RMSE better at ε 0.1 and 0.15 (80 repetitions),
        # worse at the neighbouring points (results/tuning/abalone-leaves-*.md)
        (0.1, dict(_MIXED_TREES, n_estimators=200, max_depth=2, subsample=0.1,
                   gradient_bound=0.1, budget_shares={"init": 0.2}, leaf_noise_ratio=0.3,
                   reg_lambda=40.0, leaf_shrinkage="james_stein", learning_rate=0.2)),
        (0.3, dict(_MIXED_TREES, n_estimators=100, max_depth=2, subsample=0.1,
                   gradient_bound=0.3, leaf_noise_ratio=0.3, split_candidates="uniform")),
        (0.5, dict(_MIXED_TREES, n_estimators=100, max_depth=2, subsample=0.1,
                   gradient_bound=0.3, leaf_noise_ratio=0.3, learning_rate=0.2)),
        (1.0, dict(n_estimators=200, max_depth=4, subsample=0.1, gradient_bound=0.3,
                   feature_selection="random")),
        (4.0, dict(n_estimators=200, max_depth=4, subsample=0.1, gradient_bound=0.3,
                   feature_selection="random")),
        (10.0, dict(n_estimators=200, max_depth=3, subsample=1.0, gradient_bound=0.3,
                    feature_selection="random")),
    ),
    "multi:softprob": tuple((at, dict(_MULTICLASS_TREES)) for at in (1.0, 4.0, 10.0)),
}

#: The smallest λ :func:`noise_following_lambda` gives (XGBoost's default λ).
MIN_CARRIED_LAMBDA = 1.0

#: The largest η :func:`tree_count_learning_rate` gives (a full Newton step).
MAX_CARRIED_LEARNING_RATE = 1.0


def noise_following_lambda(point_lambda, point_epsilon, point_trees, epsilon, n_estimators):
    """λ of a schedule point carried to a fit's total ε and tree count (public).

    λ shrinks every leaf value -G̃/(H̃ + λ) towards 0 against the Gaussian noise on its
    released (G, H), whose scale is the noise multiplier z of one tree's leaf release. T
    such releases composing to ε have zCDP ρ = T/(2z²) with ε ≈ sqrt(2ρ ln(1/δ)), so z
    grows about as sqrt(T)/ε, and a λ chosen at the point's (ε_p, T_p) is carried along:

        λ = max(1, λ_p · (ε_p / ε) · sqrt(T / T_p)).

    The floor is XGBoost's default λ: no smaller λ was scored, and with greedy splits
    (``noisy_histogram``) λ also sits in the gains' noisy denominators, where a small λ
    lets noise pick the splits.

    Parameters
    ----------
    point_lambda, point_epsilon : float
        The point's λ and the ε it was selected at.
    point_trees : int
        The point's number of trees.
    epsilon : float
        The fit's total ε (> 0).
    n_estimators : int
        The fit's number of trees (> 0).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``epsilon``, when it is so small that λ overflows.
    """
    carried = point_lambda * (point_epsilon / epsilon) * math.sqrt(n_estimators / point_trees)
    if not math.isfinite(carried):
        # (the user gave ε, not λ: the error names what they sent)
        raise ValueError(f"epsilon={epsilon!r} is too small: the default's reg_lambda grows "
                         "as 1/epsilon and is no finite number here; give a larger epsilon "
                         "(or reg_lambda)")
    return float(max(MIN_CARRIED_LAMBDA, carried))


def tree_count_learning_rate(point_rate, point_trees, n_estimators):
    """η of a schedule point carried to a fit's number of trees (public).

    A point's η was chosen with its T_p trees; a fit that asks for T trees keeps the
    ensemble's total step T·η, up to a full Newton step, so that a user's few trees do not
    leave the margins near the initial score:

        η = min(1, η_p · T_p / T).

    Parameters
    ----------
    point_rate : float
        The point's η.
    point_trees : int
        The point's number of trees.
    n_estimators : int
        The fit's number of trees (> 0).

    Returns
    -------
    float
    """
    return float(min(MAX_CARRIED_LEARNING_RATE, point_rate * point_trees / n_estimators))


def default_schedule_overrides(objective, epsilon):
    """Overrides of the default (no preset) for a fit of total budget ``epsilon``.

    Parameters
    ----------
    objective : {"reg:squarederror", "binary:logistic", "multi:softprob"}
    epsilon : float or None
        Total ε of the fit; None (a per-tree budget) takes no schedule.

    Returns
    -------
    dict
        The overrides of the :data:`DEFAULT_SCHEDULE` point nearest to ``epsilon`` in
        log ε, or ``{}``.
    """
    return nearest_overrides(DEFAULT_SCHEDULE[objective], epsilon)


def trees_with_a_pass(values, given, n_features):
    """The default's tree count for a table of ``n_features`` features (public).

    Where the default's main effects are drawn by released gain
    (``main_effect_features="by_released_gain"``), its one-feature trees first make a pass
    over every feature; one more tree per feature keeps that pass from taking the rounds the
    schedule point was chosen with (results/default_suite_gain.md). The user's own
    ``n_estimators`` wins.

    Parameters
    ----------
    values : dict
        The resolved fields so far (the schedule point's and the user's).
    given : dict
        The fields the user gave.
    n_features : int or None
        None (unknown): the point's own count.

    Returns
    -------
    dict
        ``{"n_estimators": ...}``, or ``{}``.
    """
    if not n_features or "n_estimators" in given \
            or values.get("main_effect_features") != "by_released_gain":
        return {}
    return {"n_estimators": values.get("n_estimators", TrainParams.n_estimators)
            + int(n_features)}


def carried_leaf_regime(objective, epsilon, n_estimators, given):
    """The binary default's λ and η carried from its schedule point to the fit
    (:func:`noise_following_lambda`, :func:`tree_count_learning_rate`), for the ones the
    user did not give.

    Parameters
    ----------
    objective : str
    epsilon : float or None
        The fit's total ε.
    n_estimators : object
        The fit's number of trees (validated later: anything but a positive int carries
        nothing).
    given : collection of str
        The parameters the user gave.

    Returns
    -------
    dict
        ``reg_lambda`` and ``learning_rate``, where they are carried.
    """
    point = nearest(DEFAULT_SCHEDULE[objective], epsilon) \
        if objective == "binary:logistic" else None
    if point is None or not isinstance(n_estimators, numbers.Integral) \
            or isinstance(n_estimators, bool) or n_estimators <= 0:
        return {}
    at, overrides = point
    carried = {}
    if "reg_lambda" not in given:
        carried["reg_lambda"] = noise_following_lambda(
            overrides["reg_lambda"], at, overrides["n_estimators"], epsilon, int(n_estimators))
    if "learning_rate" not in given:
        carried["learning_rate"] = tree_count_learning_rate(
            overrides["learning_rate"], overrides["n_estimators"], int(n_estimators))
    return carried


#: The defaults of a split method that a fit without a preset names (``split_method=``
#: other than the default's random splits). They replace the default's ε schedule and its
#: carried λ and η, which were selected for random one-feature trees; the parameters the
#: user gives still win. Every value was chosen on training folds only (Adult validation
#: splits of adult.data and generated tasks, ``benchmarks/ablate_greedy.py``, whose tables
#: are in ``benchmarks/results/greedy_ablation.md``):
#:
#: - the greedy methods (``noisy_histogram``, ``partially_random``) release every feature's
#:   cells at each level, so fewer, shallower trees with fewer cells each (depth 4, or 3
#:   for partially random trees, and 32 equal-width bins) spend the budget on fewer, less
#:   noisy releases;
#: - ``exponential`` is pure ε: count denominators (the only ones its gain sensitivity holds
#:   for), leaves from Laplace noise on each leaf's gradient sum and count (DP-XGBoost's
#:   NoisyAverage, far better than noise on the leaf value at these budgets) with
#:   DP-XGBoost's denominator floor ``min_child_weight``, and few candidates, since the
#:   exponential mechanism's error grows with the log of their number.
SPLIT_METHOD_DEFAULTS = {
    "noisy_histogram": dict(n_estimators=50, max_depth=4, learning_rate=0.3, reg_lambda=5.0,
                            max_bin=32, split_candidates="uniform", gradient_bound=0.3,
                            hessian_bound=0.1, leaf_noise_ratio=0.04),
    "partially_random": dict(n_estimators=50, max_depth=3, learning_rate=0.3, reg_lambda=5.0,
                             max_bin=32, split_candidates="uniform", gradient_bound=0.3,
                             hessian_bound=0.1),
    "exponential": dict(n_estimators=50, max_depth=4, learning_rate=0.3, reg_lambda=1.0,
                        max_bin=16, split_candidates="uniform", leaf_method="noisy_average",
                        newton=False, gradient_bound=1.0, min_child_weight=50.0,
                        accountant="pld"),
}

#: Regression variants of :data:`SPLIT_METHOD_DEFAULTS`: squared error has h = 1, so
#: count denominators (``newton=False``) with the default regression leaf regime.
SPLIT_METHOD_REGRESSION_OVERRIDES = dict(newton=False, leaf_noise_ratio=0.5)


def split_method_defaults(objective, split_method):
    """The defaults of ``split_method`` for a fit without a preset (public).

    Parameters
    ----------
    objective : {"reg:squarederror", "binary:logistic", "multi:softprob"}
    split_method : str
        A key of :data:`SPLIT_METHOD_DEFAULTS`.

    Returns
    -------
    dict
    """
    values = dict(SPLIT_METHOD_DEFAULTS[split_method])
    if objective == "reg:squarederror" and values.get("leaf_method", "gaussian") == "gaussian":
        values.update(SPLIT_METHOD_REGRESSION_OVERRIDES)
    return values


#: Named families of configurations for a private selection (``train(select="shapes")``,
#: ``boosting.selection``). "shapes": the tree shapes ``benchmarks/interactions.py``
#: compares: the default's staged trees (one-feature trees, then interaction trees with
#: quantile thresholds), one-feature trees alone (additive, the best shape on Adult), and a
#: random feature per node on iterative-Hessian cuts (best on the product and checkerboard
#: tasks).
SELECTION_FAMILIES = {
    "shapes": ({},
               {"feature_selection": "cyclic"},
               {"feature_selection": "random", "split_candidates": "iterative_hessian",
                "max_bin": 32}),
}
