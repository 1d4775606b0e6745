"""The fields of a fit's parameters: :class:`~dpxgb_dask.params.fields.TrainParams` (every
one public: it is saved with the model) and the choices each field allows.
"""
from dataclasses import asdict, dataclass, fields

import numpy as np

__all__ = ["TrainParams", "TRAIN_PARAMETERS"]

SPLIT_METHODS = ("random", "exponential", "noisy_histogram", "partially_random")
FILTER_SPENDINGS = ("pace", "exclude")
FEATURE_SELECTIONS = ("random", "cyclic", "mixed", "staged")
INTERACTION_THRESHOLDS = ("uniform", "quantile")
MAIN_EFFECT_FEATURES = ("in_turn", "by_released_gain")
SPLIT_CANDIDATES = ("uniform", "dp_sketch", "dp_sketch_per_tree", "iterative_hessian")
LEAF_METHODS = ("gaussian", "laplace", "noisy_average")
LEAF_SHRINKAGES = ("none", "james_stein")
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
        of the rounds;
        :meth:`~dpxgb_dask.boosting.feature_schedule.FeatureSchedule.one_feature`).
    interaction_thresholds : {"uniform", "quantile"}
        Where the random splits of a node that draws its own feature put their threshold:
        uniformly among the node's candidates, or at a random quantile of the feature's
        mass as the one-feature trees' released leaf denominators spread it over the bins
        (post-processing: no budget;
        :class:`~dpxgb_dask.boosting.released_mass.ReleasedMass`; with Gaussian leaves,
        whose release includes the denominators; otherwise uniform). One-feature trees
        always draw uniformly.
    main_effect_features : {"in_turn", "by_released_gain"}
        Which feature each one-feature tree of the main-effect stage of
        ``feature_selection="staged"`` splits on: the features in turn, or, after one pass
        over every feature in turn, a feature drawn with probability
        ``0.2/m + 0.8 · gain_j / Σ gain`` from the gain each feature's latest tree
        released (post-processing: no budget;
        :meth:`~dpxgb_dask.boosting.feature_schedule.FeatureSchedule.one_feature`), so
        that a wide table spends its rounds on the features that carry signal. With
        "by_released_gain" the main-effect stage is the pass plus half of the remaining
        rounds (``m + ceil((n_estimators - m) / 2)`` rounds; half of the rounds, as in
        turn, when ``n_estimators <= m``: give a wide table more trees than features).
    main_effect_test_level : float in [0, 1)
        With ``main_effect_features="by_released_gain"``, the level of the test that ends
        the main-effect stage with the first pass when no tree of the pass released a gain
        above its noise (:func:`~dpxgb_dask.boosting.leaves.released_gain_evidence` below
        the normal quantile ``1 - level / m``, Bonferroni over the m features; a table
        whose features act only together then gets its interaction trees). Post-processing
        of the leaf releases: no budget. 0: no test, the stage's length is fixed.
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
    leaf_shrinkage : {"none", "james_stein"}
        "james_stein": each tree's Gaussian leaf release is shrunk towards 0 by the
        positive-part James-Stein factor of its released gradient sums, so that a tree
        whose leaves the noise dominates adds little
        (:func:`~dpxgb_dask.boosting.leaves.james_stein_factor`; post-processing: no
        budget). Needs the Gaussian leaf release (``leaf_method="gaussian"``, a split method
        other than ``partially_random``).
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
        sums (:class:`~dpxgb_dask.boosting.gains.ReleasedNoise`): "significant"
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
    main_effect_features: str = "in_turn"
    main_effect_test_level: float = 0.0
    split_candidates: str = "iterative_hessian"
    leaf_method: str = "gaussian"
    leaf_shrinkage: str = "none"
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
    def gaussian_leaf_release(self):
        """Whether each tree's leaves are one Gaussian release of their (G, H), which
        ``leaf_shrinkage`` and quantile thresholds read: Gaussian leaves, and a split method
        that does not read its leaves off the splits' release (``partially_random``)."""
        return self.leaf_method == "gaussian" and self.split_method != "partially_random"

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
        if out["leaf_shrinkage"] == "none":
            del out["leaf_shrinkage"]
        if out["main_effect_features"] == "in_turn":  # (files as before this field)
            del out["main_effect_features"]
        if not out["main_effect_test_level"]:  # (and before this one)
            del out["main_effect_test_level"]
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
