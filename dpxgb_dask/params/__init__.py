"""Training parameters: :class:`~dpxgb_dask.params.TrainParams`, how a fit's are resolved
from a preset or the default and the user's own (:func:`~dpxgb_dask.params.resolve_params`),
and their validation.

The papers' presets are in :mod:`~dpxgb_dask.params.presets`, the default's ε schedule in
:mod:`~dpxgb_dask.params.defaults`. Every parameter is public: it is saved with the model.
"""
from dataclasses import asdict, dataclass, fields, replace
import numbers

import numpy as np

from ..objective import OBJECTIVES, UNKNOWN_LABEL_RULES, metric_names
from .defaults import (DEFAULT_REGRESSION_OVERRIDES, SPLIT_METHOD_DEFAULTS,
                       carried_leaf_regime, default_schedule_overrides, split_method_defaults)
from .bounds import check_feature_bounds, check_label_bounds
from .checks import check_choice as _check_choice, check_number as _check_number
from .names import canonical_names
from .presets import PRESETS, preset_overrides
from .silos import check_cross_silo, cross_silo_defaults

__all__ = ["PRESETS", "TrainParams", "check_feature_bounds", "check_label_bounds",
           "resolve_params", "validate", "with_overrides"]

SPLIT_METHODS = ("random", "exponential", "noisy_histogram", "partially_random")
FILTER_SPENDINGS = ("pace", "exclude")
FEATURE_SELECTIONS = ("random", "cyclic", "mixed", "staged")
INTERACTION_THRESHOLDS = ("uniform", "quantile")
SPLIT_CANDIDATES = ("uniform", "dp_sketch", "dp_sketch_per_tree", "iterative_hessian")
LEAF_METHODS = ("gaussian", "laplace", "noisy_average")
LEAF_CLIPPINGS = ("constant", "geometric")
GRADIENT_RULES = ("clip", "filter")
INIT_SCORES = ("zero", "dp_mean")
ACCOUNTANTS = ("pld", "rdp", "basic")
GAIN_SENSITIVITIES = ("dp-xgboost", "dpboost")
GAIN_ESTIMATES = ("significant", "noise_aware", "plain")

#: Deepest tree supported (heap node ids must fit in int32).
MAX_DEPTH_LIMIT = 20


@dataclass(frozen=True)
class TrainParams:
    """Every parameter of a fit. All are public: they are saved with the model.

    Parameters
    ----------
    objective : {"reg:squarederror", "binary:logistic", "multi:softprob"}
    num_class : int, optional
        Number of classes K >= 3 of ``multi:softprob`` (public), None otherwise.
    n_estimators : int
        Number of boosting rounds: trees, or K trees (one per class) per round for
        ``multi:softprob``.
    max_depth : int
        Depth of every tree (trees are grown level by level to this depth).
    learning_rate : float
        Shrinkage applied to every leaf value. Not given, the binary default carries its
        schedule point's η to the fit's number of trees
        (:func:`~dpxgb_dask.params.defaults.tree_count_learning_rate`); a fit that names
        another ``split_method`` takes that method's defaults instead
        (:data:`~dpxgb_dask.params.defaults.SPLIT_METHOD_DEFAULTS`).
    reg_lambda : float
        L2 regularisation λ of leaf values and gains. Not given, the binary default
        carries its schedule point's λ to the fit's ε and number of trees
        (:func:`~dpxgb_dask.params.defaults.noise_following_lambda`), unless the fit
        names another ``split_method`` (as for ``learning_rate``).
    subsample : float in (0, 1]
        Poisson subsampling rate γ: each row joins each tree independently with this
        probability (privacy amplification by subsampling).
    min_child_weight : float
        Floor on the leaf denominator: leaf values are ``-G / (max(H, min_child_weight) + λ)``.
        A floor, not an eligibility check: checking exact counts would leak (see README).
    weight_bound : float, optional
        The public upper bound W of the rows' ``sample_weight`` (needed with weights; rows
        given no weight weigh 1). A row enters every sum with its share ``min(w, W) / W``
        in [0, 1] (a negative or NaN weight: 0; never refused), which keeps every
        sensitivity at its unweighted value:
        the released sums are the weighted sums divided by W, so λ and
        ``min_child_weight`` are in units of W; without Newton steps, the counts of the
        denominators are the sums of the shares. Weights need Gaussian leaves (the
        sensitivities of Laplace leaves hold for whole rows).
    max_bin : int in [2, 255]
        Number of non-missing bins per feature (``max_bin - 1`` split candidates).
    epsilon : float, optional
        Total privacy budget of the fit; the noise is calibrated to spend exactly this.
    delta : float
        δ of (ε, δ)-DP (Gaussian mechanisms and the tight accountants).
    dp_epsilon_per_tree : float, optional
        DP-XGBoost's budget per tree (instead of ``epsilon``); the total is reported.
    feature_bounds : array of shape (n_features, 2), optional
        Public per-feature (lo, hi). Without them, ``bounds_epsilon`` must be given.
    label_bounds : tuple, optional
        Public (lo, hi) of the label (regression).
    unknown_labels : {"raise", "missing"}, default "raise"
        A classification label outside its classes (the class indices, or the public
        ``classes`` that map labels to them) is refused with a ``ValueError`` in the
        process that sent the rows, or ("missing") its row is left out of the fit as
        unlabelled; never moved into a class
        (:meth:`~dpxgb_dask.objective.Objective.labels_in_domain`). A silo leaves such
        rows out whatever the fit says.
    categories : dict or list, optional
        Public category lists of the categorical features: ``{column: [categories]}`` or one
        entry (a list, or None) per feature (``categories.py``); pandas ``category`` columns
        take their dtype's list. Their splits send a set of categories left, the rest right
        (:mod:`~dpxgb_dask.boosting.splits`: a random subset, the best prefix of the categories
        sorted by noisy G/(H + λ), or one category with the exponential mechanism); a value
        outside the list is missing.
    bounds_epsilon : float, optional
        Budget spent on a DP estimate of missing feature bounds.
    split_method : {"random", "exponential", "noisy_histogram", "partially_random"}
        Without a preset, a method other than "random" brings its own defaults for the
        parameters the user does not give
        (:data:`~dpxgb_dask.params.defaults.SPLIT_METHOD_DEFAULTS`).
        "random": totally random splits (no budget); "exponential": the exponential
        mechanism on exact gains; "noisy_histogram": the best split of Gaussian-noised
        histograms; "partially_random" (Maddock et al.'s PR): at each node every feature
        draws one random threshold, the level's left/right/missing sums at them are
        released with Gaussian noise and the best noisy gain wins; the leaves are read off
        the last level's release (no leaf release, so ``leaf_noise_ratio`` does not apply).
    feature_selection : {"random", "cyclic", "mixed", "staged"}
        For random splits: a random feature per node, feature ``t mod m`` in tree ``t``
        (one-feature trees: an additive model), or both: in turn ("mixed": one-feature trees
        in the even rounds, a random feature per node in the odd ones, which can model
        interactions) or one after the other ("staged": one-feature trees in the first half
        of the rounds; :meth:`~dpxgb_dask.boosting.splits.RandomSplits.one_feature`).
    interaction_thresholds : {"uniform", "quantile"}
        Where the random splits of a node that draws its own feature put their threshold:
        uniformly among the node's candidates, or at a random quantile of the feature's
        mass as the one-feature trees' released leaf denominators spread it over the bins
        (post-processing: no budget;
        :class:`~dpxgb_dask.boosting.released_mass.ReleasedMass`; with Gaussian leaves,
        whose release includes the denominators; otherwise uniform). One-feature trees
        always draw uniformly.
    split_candidates : {"uniform", "dp_sketch", "dp_sketch_per_tree", "iterative_hessian"}
        "uniform": equal-width cuts over the public bounds (no budget); "dp_sketch": one
        DP sketch (Laplace histogram of ``n_sketch_bins`` equal-width bins, then weighted
        quantiles) of every row, once per fit; "dp_sketch_per_tree": DP-XGBoost's sketch of
        each tree's own rows (its subsample) weighted by their clipped hessians (1 with
        counts), before the tree grows; "iterative_hessian": Maddock et al.'s refreshes
        from the root hessian histograms of the first ``iterative_hessian_rounds`` trees.
    leaf_method : {"gaussian", "laplace", "noisy_average"}
        "gaussian": Gaussian noise on each leaf's (G, H) (S-BDT, Maddock); "laplace":
        Laplace noise on the leaf value (DP-XGBoost, DPBoost); "noisy_average": Laplace
        noise on each leaf's gradient sum and row count (DP-XGBoost's NoisyAverage).
    leaf_noise_ratio : float in (0, 1)
        Share r of the leaf budget given to the denominator (S-BDT's leaf-balanced noise;
        Gaussian: share of ρ, 0.5 is spherical noise; noisy_average: share of ε).
    newton : bool
        Use hessians (Newton step) in gains and leaf denominators; False uses row counts.
    gradient_bound : float
        g*: gradients are clipped (or rows filtered) to ``|g| <= g*``.
    hessian_bound : float
        h*: hessians are clipped to [0, h*] (Newton only).
    gradient_rule : {"clip", "filter"}
    leaf_bound : float
        Leaf values (before shrinkage) are clipped to [-leaf_bound, leaf_bound].
    leaf_clipping : {"constant", "geometric"}
        "geometric": DPBoost's geometric leaf clipping g*(1-η)^t.
    gain_sensitivity : {"dp-xgboost", "dpboost"}
        ΔG = 3g*² (DP-XGBoost) or (3λ+2)/((λ+1)(λ+2))·g*² (DPBoost, Lemma 1).
    gain_estimate : {"significant", "noise_aware", "plain"}
        How ``noisy_histogram`` and ``partially_random`` score a split from the released
        sums (:meth:`~dpxgb_dask.boosting.gains.ReleasedNoise.child_term`): "significant"
        (default) counts each child's G̃² beyond z² times its noise variance (z = 3 and 2)
        and draws a node's split at random among equal best gains; "noise_aware" (z = 1)
        debiases it; both floor H̃ at two noise standard deviations; "plain" computes
        G̃²/(max(H̃, 0) + λ) as Maddock et al.'s code does (the ``maddock`` preset).
    budget_shares : dict or "equal_noise"
        Relative weights of the budget of the releases: keys among "sketch", "split",
        "leaf", "init", "eval". A release the method makes but the dict omits keeps its
        default weight (sketch 0.1 with iterative-Hessian candidates or 1 with the DP
        sketch, split 1, leaf 0.9 with random splits or 1, init 0.05, eval 0.1 per round);
        the weights are then normalised to sum to 1. Sketch, init and eval weights are per
        fit, split and leaf weights per tree (:class:`~dpxgb_dask.boosting.plan.ReleasePlan`).
        "equal_noise" (Maddock et al.): every Gaussian query (one feature's histogram in a
        release, one tree's leaves, an evaluation set) gets the same noise multiplier; needs
        Gaussian leaves, random, noisy-histogram or partially random splits, uniform or
        iterative-Hessian candidates and ``init_score="zero"``.
    init_score : {"zero", "dp_mean"}
    n_sketch_bins : int
        Equal-width bins of the DP histogram that feeds the quantile sketch.
    iterative_hessian_rounds : int
        Trees after which iterative-Hessian candidates are refreshed.
    batch_size : int
        Maddock's batched updates: trees fitted to the same gradients, then averaged.
    ensemble_size : int, optional
        DPBoost's ensemble of ensembles: trees of one ensemble use disjoint rows.
    accountant : {"pld", "rdp", "basic"}
        Accountant that calibrates the noise; every accountant's total is reported.
    filter_rounds : int
        S-BDT's individual Rényi filter: after the ``n_estimators`` rounds the noise is
        calibrated on, this many extra rounds train on the rows whose own Rényi divergence
        (at one order α, from their clipped gradients) is still within what a worst-case
        row spends in the calibrated rounds; a row stays out of every tree it cannot
        afford (``privacy/filter.py``). The fit's ε is unchanged (RDP accountant at α). Needs
        ``accountant="rdp"``, Gaussian leaves and random or noisy-histogram splits;
        binary or regression. 0 (default): no filter.
    filter_spending : {"pace", "exclude"}
        How a row spends what it has left in the extra rounds. "exclude" is S-BDT's rule:
        a row takes part in full in every tree it can afford, which leaves the hard rows
        (large gradients, the first to run out) out of the extra trees and biases them.
        "pace" (default): in each extra round a row scales its gradient (and hessian)
        down so that its charge is at most what it has left divided by the rounds left,
        so every row keeps pulling its way with a weight its budget affords.
    random_state : int, optional
        Seed of the public, data-independent random choices (the features and thresholds
        of random trees). The DP noise and the secret row subsamples (``subsample``,
        ``ensemble_size``) are keyed by a secret drawn fresh for every fit, so two fits
        never share noise, unless ``reproducible_noise``.
    budget : str, optional
        Name of a privacy budget on the scheduler (``create_budget``): the fit is checked
        against it before it reads any row, refused if its releases would exceed it, and
        charged with the releases it made when it ends.
    reproducible_noise : bool
        Key the noise and the row subsamples by ``random_state`` too (needs it), so that a
        fit can be reproduced exactly. Warns with a ``PrivacyLeakWarning``: two such fits on
        neighbouring datasets have identical noise, which cancels in their difference.
    n_threads : int
        Threads of the kernels in each task; -1 (XGBoost's and scikit-learn's
        ``n_jobs=-1``): every CPU the worker's process may run on.
    private_eval_sets : int
        Evaluation sets of private rows scored after the fit, each with one DP release of
        its metrics' per-row loss sums at every round and its row count (``train(evals=)``
        sets it; :class:`~dpxgb_dask.boosting.scores.EvaluationScores`), under the budget
        share "eval". 0: none.
    cross_silo : {None, "local", "secure"}
        Who adds the noise: the coordinator (not on a SiloTable); each silo; each silo a share.
    eval_metric : tuple of str, optional
        The metrics of the private evaluation sets (XGBoost's names, among
        :data:`~dpxgb_dask.objective.PRIVATE_METRICS`; default the objective's first).
    """

    # The field values are the plain default (no preset): data-independent random splits on
    # one feature per tree (t mod m, as S-BDT), iterative-Hessian candidates (Maddock),
    # Newton leaves from one Gaussian release of (G, H) per tree with Maddock's noise split
    # r = h*²/(g*² + h*²), a DP initial score, and PLD accounting; a fit without a preset
    # then takes the overrides of params.defaults.DEFAULT_SCHEDULE at its ε.
    objective: str = "binary:logistic"
    num_class: int | None = None
    n_estimators: int = 100
    max_depth: int = 6
    learning_rate: float = 0.3
    reg_lambda: float = 1.0
    subsample: float = 1.0
    min_child_weight: float = 0.0
    max_bin: int = 64
    epsilon: float | None = 1.0
    delta: float = 1e-6
    dp_epsilon_per_tree: float | None = None
    feature_bounds: object = None
    label_bounds: object = None
    unknown_labels: str = "raise"
    weight_bound: float | None = None
    categories: object = None
    bounds_epsilon: float | None = None
    split_method: str = "random"
    feature_selection: str = "cyclic"
    interaction_thresholds: str = "uniform"
    split_candidates: str = "iterative_hessian"
    leaf_method: str = "gaussian"
    leaf_noise_ratio: float = 1.0 / 17.0
    newton: bool = True
    gradient_bound: float = 1.0
    hessian_bound: float = 0.25
    gradient_rule: str = "clip"
    leaf_bound: float = 2.0
    leaf_clipping: str = "constant"
    gain_sensitivity: str = "dp-xgboost"
    gain_estimate: str = "significant"
    budget_shares: object = None
    init_score: str = "dp_mean"
    n_sketch_bins: int = 1024
    iterative_hessian_rounds: int = 5
    batch_size: int = 1
    ensemble_size: int | None = None
    accountant: str = "pld"
    filter_rounds: int = 0
    filter_spending: str = "pace"
    random_state: int | None = None
    reproducible_noise: bool = False
    budget: str | None = None
    n_threads: int = 1
    private_eval_sets: int = 0
    eval_metric: tuple | None = None
    cross_silo: str | None = None

    @property
    def hessian_denominators(self):
        """Whether the released denominators are the histograms' hessian field: hessian sums
        (``newton``), or with ``weight_bound`` weight shares (weighted counts); else counts."""
        return self.newton or self.weight_bound is not None

    def to_dict(self):
        """JSON-ready dict of the public parameters (bounds as nested lists).

        ``random_state`` is replaced by ``seeded`` (True/False): with
        ``reproducible_noise`` the seed keys all the DP noise, so whoever holds it can
        subtract the noise; it never travels with the model.
        """
        out = asdict(self)
        out["seeded"] = out.pop("random_state") is not None
        for name in ("weight_bound", "cross_silo"):  # (files as before these fields)
            if out[name] is None:
                del out[name]
        if not out["private_eval_sets"]:  # (and those without private evaluation sets)
            del out["private_eval_sets"], out["eval_metric"]
        else:
            out["eval_metric"] = list(out["eval_metric"])
        for name in ("feature_bounds", "label_bounds"):
            if out[name] is not None and not isinstance(out[name], str):
                out[name] = np.asarray(out[name], dtype=float).tolist()
        return out


#: The names of the training parameters (the fields of :class:`TrainParams`).
TRAIN_PARAMETERS = frozenset(f.name for f in fields(TrainParams))

def resolve_params(objective, preset=None, **explicit):
    """Build validated :class:`TrainParams` from a preset and explicit overrides.

    Parameters
    ----------
    objective : {"reg:squarederror", "binary:logistic"}
    preset : {"dp-xgboost", "dpboost", "maddock", "s-bdt"}, optional
    **explicit
        Parameters given by the user, by our names or XGBoost's
        (:data:`~dpxgb_dask.params.names.XGBOOST_ALIASES`);
        ``None`` values mean "not given" except for ``epsilon`` when
        ``dp_epsilon_per_tree`` is given.

    Returns
    -------
    TrainParams

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
    if preset is None and not own_method:
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


def validate(p):
    """Check every field of :class:`TrainParams`, then how they combine; raise ValueError
    naming the first bad one and its allowed values.

    Parameters
    ----------
    p : TrainParams
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
    _check_choice("split_candidates", p.split_candidates, SPLIT_CANDIDATES)
    _check_choice("leaf_method", p.leaf_method, LEAF_METHODS)
    _check_number("leaf_noise_ratio", p.leaf_noise_ratio, lo=0, hi=1, lo_open=True, hi_open=True)
    if not isinstance(p.newton, (bool, np.bool_)):
        raise ValueError(f"newton must be True or False, got {p.newton!r}")
    # <= 16: quantised gradients stay exact in float32 (boosting.partition.MAX_VALUE_BOUND)
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
    if p.interaction_thresholds == "quantile" and p.split_method != "random":
        raise ValueError("interaction_thresholds='quantile' places random splits' thresholds; "
                         f"split_method={p.split_method!r} chooses its own: use "
                         "split_method='random' or interaction_thresholds='uniform'")
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


def with_overrides(params, **changes):
    """A validated copy of ``params`` with some fields changed."""
    new = replace(params, **changes)
    validate(new)
    return new
