"""The release plan: every DP release of a fit, its budget share, sensitivity, noise and
ledger event, computed once per fit from public parameters only.

:func:`~dpxgb_dask.boosting.calibration.make_plan` calibrates the plan's budget scale to the
fit's total (ε, δ) under its accountant (or takes DP-XGBoost's ε per tree) and returns a
:class:`ReleasePlan`; the coordinator reads every release's noise parameters and ledger
fields from it. Nothing here reads data or knows about Dask, so the client computes the
plan before (and while) the data is loaded, and calibrations of identical public
parameters are cached.

Vocabulary (the same in the ledger, the report, the coordinator and the tests; the
documentation's glossary page defines the rest):

* **release**: one application of a DP mechanism to exact aggregates (a level's
  histograms, a tree's leaves, the sketch, the initial score), recorded as one ledger event
  (:class:`~dpxgb_dask.privacy.ledger.PrivacyEvent`); a :class:`Release` here is the noise
  recipe of one kind of release.
* **sensitivity** Δ: the L1 (Laplace), L2 (Gaussian) or utility (exponential) sensitivity
  of the released quantity to adding or removing one row (``privacy/sensitivity.py``).
* **noise scale**: the Laplace scale b = Δ/ε or the Gaussian σ = z·Δ of a release
  (:attr:`~dpxgb_dask.privacy.ledger.PrivacyEvent.noise_scale`); z is the **noise multiplier**.
* **budget scale** s: the one number the whole plan is a function of, calibrated so that
  the fit spends its ε (:func:`~dpxgb_dask.boosting.calibration.calibrate_budget_scale`).
"""
from dataclasses import dataclass
import math

from ..privacy.filter import RowFilter, choose_filter, filter_term, tree_divergences
from ..privacy.ledger import Ledger
from ..privacy.mechanisms import GaussianMechanism, histogram_mechanism
from ..privacy.sensitivity import (dpboost_gain_sensitivity, dpxgboost_gain_sensitivity,
                                  gradient_histogram_l1_sensitivity,
                                  gradient_histogram_l2_sensitivity, leaf_balanced_sigmas,
                                  row_contribution_bounds)

#: The ledger name of a fit's individual Rényi filter (``filter_rounds``).
FILTER_NAME = "rows"

#: log2-magnitude range of the DP bounds estimate: ``|x|`` from 2**-20 to 2**44.
BOUNDS_MIN_EXPONENT = -20
BOUNDS_N_EXPONENTS = 64
#: The default weight of the private evaluation sets' releases per boosting round: about
#: 5% of the budget next to the default per-tree weights (split or sketch, and leaf).
EVAL_WEIGHT_PER_ROUND = 0.1


def _default_shares(p):
    shares = {}
    if p.split_candidates in ("dp_sketch", "dp_sketch_per_tree"):
        shares["sketch"] = 1.0
    elif p.split_candidates == "iterative_hessian" and p.iterative_hessian_rounds > 0:
        shares["sketch"] = 0.1
    if p.split_method != "random":
        shares["split"] = 1.0
    if p.split_method != "partially_random":  # its leaves are read off the splits' release
        shares["leaf"] = 1.0 if p.split_method != "random" else 0.9
    if p.init_score == "dp_mean":
        shares["init"] = 0.05
    if p.private_eval_sets:
        shares["eval"] = EVAL_WEIGHT_PER_ROUND * (p.n_estimators + p.filter_rounds)
    return shares


def _equal_noise_shares(p, n_features):
    """Weights that give every Gaussian query the same noise multiplier (Maddock et al.'s
    allocation: their code calibrates one σ, in units of each query's sensitivity, from
    RDP over the count of queries).

    A query is one feature's histogram in a release (``F`` per iterative-Hessian refresh,
    ``F`` per level of histogram or partially random splits) or one tree's leaves. In the
    per-tree convention of :class:`ReleasePlan` (sketch weights are per fit, split and leaf
    weights per tree) the weights are the query counts: sketch ``s·F`` (``s`` refreshes),
    split ``D·F``, leaf 1. A release of ``F`` queries at one noise multiplier ``z`` each is
    the one Gaussian release of the ``F`` histograms with multiplier ``z/sqrt(F)`` on their
    joint sensitivity: ρ = F/(2z²) either way.
    """
    shares = {}
    ih_rounds = (min(p.iterative_hessian_rounds, p.n_estimators)
                 if p.split_candidates == "iterative_hessian" else 0)
    if ih_rounds:
        shares["sketch"] = float(ih_rounds * n_features)
    if p.split_method != "random":
        shares["split"] = float(p.max_depth * n_features)
    if p.split_method != "partially_random":
        shares["leaf"] = 1.0
    if p.private_eval_sets:  # one query per set
        shares["eval"] = float(p.private_eval_sets)
    return shares


def release_shares(p, n_features):
    """Normalised budget shares of the releases the method makes (dict purpose -> share).

    ``params.budget_shares`` overrides the default weights of the releases it names;
    releases it omits keep their default weight, and names of releases this method does
    not make are ignored. ``budget_shares="equal_noise"`` gives every query the same noise
    multiplier (``_equal_noise_shares``; ``n_features`` is public).
    """
    if p.budget_shares == "equal_noise":
        wanted = _equal_noise_shares(p, n_features)
    else:
        wanted = _default_shares(p)
        if p.budget_shares:
            wanted.update({k: float(v) for k, v in p.budget_shares.items() if k in wanted})
    total = sum(wanted.values())
    return {k: v / total for k, v in wanted.items()}


@dataclass(frozen=True)
class Release:
    """Noise parameters of one kind of release (public)."""

    purpose: str
    mechanism: str
    sensitivity: float
    epsilon: float = None
    noise_multiplier: float = None


class ReleasePlan:
    """Every release of a fit and its noise, as a function of one budget scale ``s``.

    Built once per fit from public parameters
    (:func:`~dpxgb_dask.boosting.calibration.make_plan`) and read by the
    coordinator for each release's noise and ledger event.

    Pure-ε releases with share ``w`` occurring ``m`` times per tree get ε = s·w/m (so s is
    DP-XGBoost's ε per tree when the shares sum to one, §4.4); Gaussian releases get the
    noise multiplier z = sqrt(m/w)/s (zCDP ρ = s²w/(2m)). Everything is monotone in s,
    which :func:`~dpxgb_dask.boosting.calibration.calibrate_budget_scale` finds by a root
    search on the accountant's ε of :meth:`ledger`, the exact ledger the fit will record.

    Multiclass (``multi:softprob``, K classes): a round grows K trees at the same margins.
    With Gaussian releases (``joint_classes = K``) the K trees' releases of one depth, and
    their leaves, are ONE Gaussian release each: their queries depend only on the round's
    starting margins and on their own tree's earlier releases, so however the trees are
    interleaved the outputs are distributed as D + 1 adaptive releases of the stacked
    K-tree vector, whose L2 sensitivity uses the joint row bounds
    (``privacy.sensitivity.row_contribution_bounds``): per round the fit is charged

        ρ_round = Σ_d Δ_d²/(2σ_d²) + Δ_leaf²/(2σ_leaf²),  Δ_d = sqrt(F (G_K² + H_K²)),

    with ``G_K = min(sqrt(K) g*, sqrt 2)`` and ``H_K = min(sqrt(K) h*, 1/2)`` (counts:
    ``sqrt(K)``), the same as one binary tree with (g*, h*) replaced by (G_K, H_K), and the
    K trees share the round's row subsample. With pure-ε releases every class tree is a
    tree of its own (its own subsample and events): ε_round = Σ_k ε_tree, basic composition.

    Individual Rényi filter (``filter_rounds`` > 0, S-BDT): the fit grows
    ``n_estimators + filter_rounds`` trees, all of whose releases pass the filter
    :data:`FILTER_NAME` (``privacy/filter.py``). Its order α and budget B come from the
    ``n_estimators`` regular trees (:func:`~dpxgb_dask.privacy.filter.choose_filter`):
    B = Σ_t ρ_t(α) over them, the worst-case divergence of each tree's subsampled
    releases, so that the RDP accountant's ε at α is the regular trees' ε and the extra
    trees are paid for by the rows that spent less than the worst case.

    Parameters
    ----------
    params : TrainParams
    n_features : int
    budget_scale : float
    scored_rounds : int, optional
        The last rounds whose models a private evaluation scores (default: every round).
    """

    def __init__(self, params, n_features, budget_scale, scored_rounds=None):
        self.params = p = params
        self.n_features = n_features
        self.budget_scale = float(budget_scale)
        self.shares = shares = release_shares(p, n_features)
        s = self.budget_scale
        #: K when the K class trees of a round make joint Gaussian releases (see above)
        self.joint_classes = p.num_class if p.leaf_method == "gaussian" else None
        #: the trees grown per round
        self.trees_per_round = p.num_class or 1
        #: L2 bounds of one row in one (G, H) release (the workers clip to them)
        self.row_bounds = bounds = row_contribution_bounds(
            p.gradient_bound, p.hessian_bound, p.newton, self.joint_classes)
        if p.num_class and not self.joint_classes:
            # separate class trees; the iterative-Hessian sketch still sums the K classes
            bounds = self.row_bounds = bounds._replace(denominator_sum=row_contribution_bounds(
                p.gradient_bound, p.hessian_bound, p.newton, p.num_class).denominator_sum)
        self.ih_rounds = (min(p.iterative_hessian_rounds, p.n_estimators)
                          if p.split_candidates == "iterative_hessian" else 0)
        #: boosting rounds: the regular ones, then the individual filter's extra ones
        self.n_rounds = p.n_estimators + p.filter_rounds
        self.scored_rounds = self.n_rounds if scored_rounds is None else int(scored_rounds)
        #: rounds whose first tree draws new candidates from a release before it grows: the
        #: iterative-Hessian refreshes, or every round with a DP sketch per tree
        self.refresh_rounds = (self.n_rounds if p.split_candidates == "dp_sketch_per_tree"
                               else self.ih_rounds)
        self._filter = None
        self.releases = {}
        if "sketch" in shares and p.split_candidates == "dp_sketch":
            # One row adds its weight (<= 1 after clipping) to one bin of each feature.
            self.releases["sketch"] = Release(
                "sketch", "laplace", gradient_histogram_l1_sensitivity(1.0, n_features),
                epsilon=s * shares["sketch"])
        if "sketch" in shares and p.split_candidates == "dp_sketch_per_tree":
            # Per tree, on its rows: a row adds its clipped hessian (or 1) to one bin of each
            # feature; ε = s·w per tree (DP-XGBoost §4.4: ε/3 of the tree's budget).
            self.releases["sketch"] = Release(
                "sketch", "laplace",
                gradient_histogram_l1_sensitivity(bounds.denominator_sum, n_features),
                epsilon=s * shares["sketch"])
        if "sketch" in shares and self.ih_rounds:
            self.releases["sketch"] = Release(
                "sketch", "gaussian",
                gradient_histogram_l2_sensitivity(0.0, bounds.denominator_sum, n_features),
                noise_multiplier=math.sqrt(self.ih_rounds / shares["sketch"]) / s)
        if "split" in shares:
            if p.split_method == "exponential":
                g = p.gradient_bound
                sens = (dpboost_gain_sensitivity(g, p.reg_lambda)
                        if p.gain_sensitivity == "dpboost" else dpxgboost_gain_sensitivity(g))
                self.releases["split"] = Release("split", "exponential", float(sens),
                                                 epsilon=s * shares["split"] / p.max_depth)
            else:
                sens = gradient_histogram_l2_sensitivity(bounds.gradient, bounds.denominator,
                                                         n_features)
                self.releases["split"] = Release(
                    "split", "gaussian", sens,
                    noise_multiplier=math.sqrt(p.max_depth / shares["split"]) / s)
        # (partially random splits make no leaf release: their leaves are post-processing)
        if "leaf" in shares and p.leaf_method == "gaussian":
            self.releases["leaf"] = Release(
                "leaf", "gaussian", 1.0, noise_multiplier=math.sqrt(1.0 / shares["leaf"]) / s)
        elif "leaf" in shares and p.leaf_method == "laplace":
            self.releases["leaf"] = Release("leaf", "laplace", 1.0, epsilon=s * shares["leaf"])
        elif "leaf" in shares:
            # NoisyAverage: a noisy gradient sum (Δ = g*) and a noisy row count (Δ = 1),
            # the leaf's ε split (1 - r) / r between them.
            r = p.leaf_noise_ratio
            self.releases["leaf"] = Release("leaf_sum", "laplace", p.gradient_bound,
                                            epsilon=s * shares["leaf"] * (1.0 - r))
            self.releases["leaf_count"] = Release("leaf_count", "laplace", 1.0,
                                                  epsilon=s * shares["leaf"] * r)
        if "init" in shares:
            # A noisy sum and a noisy count of labels in [-1, 1] (or {0, 1}): Δ = 1 each;
            # multiclass: the K class counts, of which a row moves one by 1 (Δ₁ = 1).
            self.releases["init"] = Release("init_score", "laplace", 1.0,
                                            epsilon=s * shares["init"] / (1 if p.num_class
                                                                          else 2))
        if "eval" in shares:
            self.releases["eval"] = self._evaluation_release(shares["eval"])

    def _evaluation_release(self, share):
        """Per private evaluation set, one release of M metrics' loss sums after each of
        the T scored rounds (a row's losses in [0, 1]) and of its row count:
        Δ₂ = sqrt(MT + 1), Δ₁ = MT + 1 (``scores.py``); Gaussian, or Laplace when δ = 0."""
        p, s = self.params, self.budget_scale
        n_sets, n_values = p.private_eval_sets, len(p.eval_metric) * self.scored_rounds + 1
        if p.delta > 0:
            return Release("eval", "gaussian", math.sqrt(n_values),
                           noise_multiplier=math.sqrt(n_sets / share) / s)
        return Release("eval", "laplace", float(n_values), epsilon=s * share / n_sets)

    # ledger events of the plan --------------------------------------------------------------

    def round_of(self, tree):
        """The first tree of ``tree``'s round: the tree a joint release is recorded under."""
        return tree - tree % self.trees_per_round

    def tree_sampling(self, tree):
        """(sampling_rate, disjoint_group, disjoint_part) of a tree's rows."""
        p = self.params
        if p.ensemble_size:
            return 1.0, f"ensemble:{tree // p.ensemble_size}", tree % p.ensemble_size
        return p.subsample, None, None

    def tree_event(self, kind, tree, **fields):
        """:meth:`event` of a release of tree ``tree``; a joint multiclass release is
        recorded under its round's first tree."""
        if self.joint_classes:
            tree = self.round_of(tree)
        return self.event(kind, tree=tree, **fields)

    def event(self, kind, tree=None, depth=None, n_parallel=1, sensitivity=None, epsilon=None):
        """Keyword arguments of ``Ledger.record`` for one release of kind ``kind``."""
        r = self.releases[kind]
        fields = dict(purpose=r.purpose, mechanism=r.mechanism,
                      sensitivity=r.sensitivity if sensitivity is None else sensitivity)
        if r.mechanism == "gaussian":
            fields["noise_multiplier"] = r.noise_multiplier
        else:
            fields["epsilon"] = r.epsilon if epsilon is None else epsilon
        if tree is not None:
            rate, group, part = self.tree_sampling(tree)
            fields.update(tree=tree, sampling_rate=rate)
            if group is not None:
                fields.update(disjoint_group=group, disjoint_part=part)
        if depth is not None:
            fields["depth"] = depth
        if tree is not None and self.params.filter_rounds:
            fields["individual_filter"] = FILTER_NAME
        if tree is not None and self.joint_classes and kind in ("split", "leaf", "sketch"):
            k, b = self.joint_classes, self.row_bounds
            fields["note"] = (f"one joint release of the {k} class trees {tree}-{tree + k - 1} "
                              f"of a round: a row's L2 bounds G={b.gradient:.6g}, "
                              f"H={b.denominator:.6g}, sum of H={b.denominator_sum:.6g}")
        if kind == "split":
            fields.update(parallel_over=("nodes",), n_parallel=max(1, n_parallel))
        elif kind in ("leaf", "leaf_count"):
            fields.update(parallel_over=("leaves",), n_parallel=max(1, n_parallel))
        elif kind == "sketch":
            fields.update(parallel_over=("bins",), n_parallel=max(1, n_parallel))
        elif kind == "init" and not self.params.num_class:
            fields["count"] = 2
        elif kind == "init":
            fields["note"] = f"the {self.params.num_class} class counts (a row is in one class)"
        elif kind == "eval":
            fields.update(count=self.params.private_eval_sets, note=(
                f"each private eval set's {', '.join(self.params.eval_metric)} after each of "
                f"{self.scored_rounds} rounds (a row's losses in [0, 1]) and its row count; the "
                "scores, and early stopping on them, are post-processing"))
        return fields

    # the individual Rényi filter ---------------------------------------------------------

    def _filter_choice(self):
        """(α, B, worst-case divergence at α of each tree): see the class docstring."""
        if self._filter is None:
            order, budget = choose_filter(self._releases(self.params.n_estimators),
                                          self.params.delta)
            worst = tree_divergences(self._releases(self.n_rounds), order)
            self._filter = order, budget, worst
        return self._filter

    def filter_event(self):
        """Ledger fields of the fit's individual Rényi filter (``filter_rounds`` > 0)."""
        order, budget, _ = self._filter_choice()
        p = self.params
        return dict(purpose="individual_filter", mechanism="renyi_filter", sensitivity=1.0,
                    individual_filter=FILTER_NAME, rdp_order=order, rdp_budget=budget,
                    note=(f"S-BDT's individual Renyi filter: rows take part in the "
                          f"{self.n_rounds} rounds' releases while their own divergence at "
                          f"order {order:g} stays within {budget:.6g}, what a worst-case row "
                          f"spends in the {p.n_estimators} regular rounds"))

    def filter_terms(self, tree):
        """The Gaussian mechanisms of tree ``tree`` (numbered from 0 in the fit) as they
        weigh on a row (:class:`~dpxgb_dask.privacy.filter.FilterTerm`), built as the
        coordinator builds them (same σ, grid and rounding margin)."""
        p, bounds = self.params, self.row_bounds
        leaf = self.releases["leaf"]
        sigma_g, sigma_h = leaf_balanced_sigmas(leaf.noise_multiplier, bounds.gradient,
                                                bounds.denominator, p.leaf_noise_ratio)
        terms = [filter_term(GaussianMechanism(bounds.gradient, sigma=sigma_g,
                                               coords_per_row=1), 1, 0),
                 filter_term(GaussianMechanism(bounds.denominator, sigma=sigma_h,
                                               coords_per_row=1), 0, 1)]
        split = self.releases.get("split")
        if split is not None:
            terms.append(filter_term(histogram_mechanism(
                self.n_features, bounds.gradient, bounds.denominator, split.noise_multiplier),
                self.n_features, self.n_features, count=p.max_depth))
        if tree < self.ih_rounds:
            sketch = self.releases["sketch"]
            terms.append(filter_term(GaussianMechanism(
                sketch.sensitivity, noise_multiplier=sketch.noise_multiplier,
                coords_per_row=self.n_features), 0, self.n_features))
        return tuple(terms)

    def row_filter(self):
        """The :class:`~dpxgb_dask.privacy.filter.RowFilter` the workers apply."""
        order, budget, _ = self._filter_choice()
        rho_max = max(0.5 * sum(term.weight for term in self.filter_terms(t))
                      for t in {0, self.ih_rounds})
        return RowFilter.build(FILTER_NAME, order, budget, self.params.subsample, rho_max,
                               not self.params.newton)

    def tree_divergence(self, tree):
        """Tree ``tree``'s worst-case divergence at the filter's order (what no row pays
        more than)."""
        return self._filter_choice()[2][tree]

    def bounds_event(self):
        """Ledger fields of the DP feature-bounds estimate."""
        return bounds_event(self.params, self.n_features)

    def ledger(self):
        """The ledger of a fit that makes every planned release (the calibration target)."""
        ledger = self._releases(self.n_rounds)
        if self.params.filter_rounds:
            ledger.record(**self.filter_event())
        return ledger

    def _releases(self, n_rounds):
        """The ledger of the fit-level releases and those of the first ``n_rounds`` rounds."""
        p = self.params
        ledger = Ledger()
        if p.bounds_epsilon is not None and p.feature_bounds is None:
            ledger.record(**bounds_event(p, self.n_features))
        if "init" in self.releases:
            ledger.record(**self.event("init"))
        if p.split_candidates == "dp_sketch":
            ledger.record(**self.event("sketch", n_parallel=p.n_sketch_bins))
        n_leaves = 2**p.max_depth
        per_round = self.trees_per_round
        for r in range(n_rounds):
            first = r * per_round
            if r < self.ih_rounds:
                ledger.record(**self.event("sketch", tree=first, n_parallel=p.max_bin + 1))
            elif r < self.refresh_rounds:
                ledger.record(**self.event("sketch", tree=first, n_parallel=p.n_sketch_bins))
            # a joint release covers the round's trees; otherwise each tree makes its own
            for t in ([first] if self.joint_classes else range(first, first + per_round)):
                if "split" in self.releases:
                    for d in range(p.max_depth):
                        ledger.record(**self.event("split", tree=t, depth=d, n_parallel=2**d))
                if "leaf" in self.releases:
                    ledger.record(**self.event("leaf", tree=t, n_parallel=n_leaves))
                if "leaf_count" in self.releases:
                    ledger.record(**self.event("leaf_count", tree=t, n_parallel=n_leaves))
        if "eval" in self.releases and n_rounds == self.n_rounds:
            ledger.record(**self.event("eval"))
        return ledger


class FitLedger:
    """The ledger of a fit's releases, recorded as they are made.

    The K class trees of a joint multiclass release (``ReleasePlan.joint_classes``)
    each reach its release; it is recorded once, by whichever comes first (a tree that
    stopped growing early has no release at that depth).

    Parameters
    ----------
    plan : ReleasePlan
    """

    def __init__(self, plan):
        self.joint = bool(plan.joint_classes)
        self.ledger = Ledger()
        self._recorded_joint = set()

    def record(self, fields):
        """Record one release (``fields``: the keyword arguments of ``Ledger.record``, as
        :meth:`ReleasePlan.event` gives them)."""
        if self.joint:
            key = (fields["purpose"], fields.get("tree"), fields.get("depth"))
            if key in self._recorded_joint:
                return
            self._recorded_joint.add(key)
        self.ledger.record(**fields)


def bounds_event(p, n_features):
    """Ledger fields of the DP feature-bounds estimate (Laplace on log2-magnitude counts)."""
    # One row adds 1 to one magnitude bin of each feature.
    return dict(purpose="bounds", mechanism="laplace",
                sensitivity=gradient_histogram_l1_sensitivity(1.0, n_features),
                epsilon=p.bounds_epsilon, parallel_over=("bins",),
                n_parallel=2 * BOUNDS_N_EXPONENTS + 1)
