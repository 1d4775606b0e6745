"""The coordinator: the only place that sequences a fit's releases, trees and depths.

It runs next to the data, inside the cluster (in the scheduler process, see
``training.py``), and talks to the partitions through a backend (``backends.py``): every
call is ONE message round to all partitions, whose exact results come back summed. It is
the only code that holds exact aggregates: each one goes straight into a DP mechanism
(``decisions.py``) with the noise and ledger event the release plan (``plan.py``) fixed
before the fit, and is dropped. What it returns and publishes as progress is public or a
DP release.

One fit::

    bounds     public, or a DP estimate (Laplace on log-magnitude histograms)
    init score zero, or a DP mean of the labels
    candidates uniform over the bounds, or a DP sketch (Laplace histogram -> quantile sketch),
               or iterative-Hessian refreshes during the first trees
    prepare    every partition binned, margins at the initial score (one round)
    per tree   data-dependent splits: one round per level -- the previous tree's leaves
               added to the margins (first level only), rows sampled and gradients clipped
               (first level only), the previous level's splits applied, the new nodes'
               histograms -> ONE release for the level (parallel over nodes); the leaves'
               sums are read off the last level's histograms -> ONE release of all leaves.
               Data-independent (random) splits: the whole tree is drawn first and one
               round returns every leaf's sums -> ONE release of all leaves.
    multiclass each round grows one tree per class, at the round's starting margins; with
               Gaussian releases the class trees' releases of a depth (and their leaves)
               are one joint release, recorded once (``plan.ReleasePlan``).
"""
import asyncio
from dataclasses import replace
import math
import time
import warnings

import numpy as np

from . import categories, decisions, ops
from .model import Booster, Tree
from .objective import Objective, to_label_units, to_training_units
from .plan import (BOUNDS_MIN_EXPONENT, BOUNDS_N_EXPONENTS, continued_model,
                   privacy_summary)
from .privacy.ledger import Ledger
from .privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from .privacy.randomness import NoiseSource
from .privacy.validation import PrivacyLeakWarning
from .privacy.sensitivity import (geometric_leaf_clip_threshold, leaf_balanced_sigmas,
                                  leaf_value_sensitivity)


#: Releases of at most this many values run on the event loop (about 1 ms of sampling).
INLINE_RELEASE_VALUES = 4096
#: Event-loop turns that let a round's messages reach the workers before the coordinator
#: draws the next random tree (the calls go out through a few nested coroutines).
_YIELDS_TO_SEND = 4


#: Said at every fit with ``reproducible_noise=True``.
REPRODUCIBLE_NOISE_WARNING = (
    "reproducible_noise=True keys the DP noise by random_state: two fits with the same "
    "random_state on neighbouring datasets (clone, GridSearchCV, a refit after one row "
    "changed) draw identical noise, and their difference is noise-free. Use it only to "
    "reproduce a fit, keep random_state as secret as the data, and give it to no other "
    "fit.")


class DPBoundsWarning(UserWarning):
    """The DP feature-bounds estimate fell back to a public default for some features."""


class Coordinator:
    """Sequence one fit: bounds, candidates, trees and depths, every DP release and its ledger.

    Parameters
    ----------
    params : TrainParams
    plan : ReleasePlan
        The calibrated release plan of the fit (``plan.make_plan``).
    backend : PartitionBackend
    n_features : int
    feature_names : list of str or None
    publish : callable, optional
        ``publish(dict)`` receives progress events (public values only).
    init_model : Booster, optional
        A model this fit continues (``train(xgb_model=)``): its bounds, cuts and margins
        are the fit's start, and the returned model holds its trees, then the new ones.
    """

    def __init__(self, params, plan, backend, n_features, feature_names=None, publish=None,
                 init_model=None):
        self.params = params
        self.plan = plan
        self.init_model = init_model
        self.backend = backend
        self.n_features = n_features
        self.feature_names = feature_names
        self.objective = Objective.of(params)
        categorical = categories.is_categorical(params.categories, n_features)
        #: the categorical features (bool per feature), or None when there are none
        self.categorical = categorical if categorical.any() else None
        self.missing_bin = categories.missing_bin(params.categories, params.max_bin)
        self._publish_to = publish or (lambda event: None)
        #: (warning class, message) raised during the fit (public facts only), emitted in
        #: the user's process by ``training`` rather than on the scheduler
        self.warnings = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # The noise (and the secret row subsamples) are keyed by a fresh secret per fit,
            # so two fits never share noise, unless the user opts in; random_state alone
            # keys the public, data-independent choices (random trees' structure).
            if params.reproducible_noise:
                warnings.warn(REPRODUCIBLE_NOISE_WARNING, PrivacyLeakWarning)
                # one seed keys both (as the committed benchmark tables were made)
                self.noise = NoiseSource(params.random_state)  # warns about guessable seeds
                self.structure = NoiseSource(params.random_state)
            else:
                self.noise = NoiseSource()
                # a public domain: a published structure reveals no secret stream
                self.structure = NoiseSource(params.random_state, secret=False)
        self.warnings += list(dict.fromkeys((w.category, str(w.message)) for w in caught))
        self.ledger = Ledger()
        self.timings = {"level": [], "tree": [], "bytes_per_level": [], "release": 0.0,
                        "phases": {}}
        self._ensemble_keys = {}
        self._round_keys = {}
        self._joint_recorded = set()
        self._seq = 0
        self._published_releases = 0

    def _stream(self, purpose, tree=None, depth=None, index=0):
        return self.noise.stream(purpose=purpose, tree=tree, depth=depth, index=index)

    def _key128(self, purpose, tree=None):
        words = self._stream(purpose, tree=tree).uint64(2)
        return int(words[0]) | (int(words[1]) << 64)

    async def _cpu(self, fn, *args, n_values):
        """Run a release of ``n_values`` noisy values (a public size): a large one in a
        thread, because in the scheduler process the event loop also serves the cluster;
        a small one on the loop, where it costs less than the hop to a thread."""
        start = time.perf_counter()
        try:
            if n_values <= INLINE_RELEASE_VALUES:
                return fn(*args)
            return await asyncio.to_thread(fn, *args)
        finally:
            self.timings["release"] += time.perf_counter() - start

    async def _round(self, **fields):
        self._seq += 1
        return await self.backend.round(ops.Round(seq=self._seq, **fields))

    async def _round_while(self, work, **fields):
        """One round, with ``await work()`` (the coordinator's own work) done while the
        workers compute it.

        Returns
        -------
        (work's result, the round's result). If ``work`` fails or the fit is cancelled
        meanwhile, the round is cancelled too.
        """
        out = asyncio.ensure_future(self._round(**fields))
        try:
            for _ in range(_YIELDS_TO_SEND):  # the round's messages go out first
                await asyncio.sleep(0)
            done = await work()
            return done, await out
        finally:
            if not out.done():
                out.cancel()
            elif not out.cancelled():
                out.exception()  # retrieved: a failure here is reported by the raise above

    def _phase(self, name, since):
        self.timings["phases"][name] = self.timings["phases"].get(name, 0.0) + \
            time.perf_counter() - since

    async def fit(self):
        """Train and return the :class:`Booster` (public and DP values only)."""
        p = self.params
        be = self.backend
        self._publish({"event": "start", "n_trees": self.plan.n_rounds * self.plan.trees_per_round,
                       "epsilon": p.epsilon,
                       "accountant": p.accountant, "delta": p.delta,
                       "objective": p.objective})
        t0 = time.perf_counter()
        lengths = await be.collect("length")
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64).tolist()
        if self.init_model is None:
            bounds = await self._feature_bounds()
            base_score = await self._init_score()
            cuts = await self._candidates(bounds)
            # categorical features: public codes, one bin per category
            cuts, bounds = categories.cuts_and_bounds(p.categories, cuts, bounds)
            start = None
        else:  # public: the model's own bounds, cuts and margins
            bounds, cuts = self.init_model.feature_bounds, list(self.init_model.cuts)
            start = to_training_units(self.init_model, self.objective)
            base_score = start.base_score
        self._phase("candidates", t0)
        t0 = time.perf_counter()
        row_filter = None
        if p.filter_rounds:
            row_filter = self.plan.row_filter()
            self.ledger.record(**self.plan.filter_event())
        await be.prepare(ops.Prepare(bounds, cuts, self.missing_bin, base_score,
                                     dict(enumerate(offsets)), init_model=start,
                                     row_filter=row_filter))
        self._phase("binning", t0)
        booster = Booster(p.objective, base_score, cuts, bounds, p.to_dict(), None,
                          self.feature_names, p.label_bounds, n_classes=p.num_class,
                          categories=p.categories)
        n_cuts = np.array([len(c) for c in cuts])
        tree_end = None  # the previous tree, applied to the margins in the next round
        drawn = None     # the next random tree's structure, drawn while a round was out
        t_trees = time.perf_counter()
        # A continued fit numbers its trees after the model's: every stream key, sample and
        # ledger event of tree t is then distinct from the first part's.
        offset = self.init_model.n_trees if self.init_model is not None else 0
        per_round = self.plan.trees_per_round
        n_rounds = self.plan.n_rounds  # (with the individual filter's extra rounds)
        # boosting rounds, and in each the tree of every class (one tree unless multiclass)
        schedule = [(local, k) for local in range(n_rounds) for k in range(per_round)]
        for i, (local, k) in enumerate(schedule):
            t = offset + local * per_round + k
            t0 = time.perf_counter()
            batch_start = (local // p.batch_size) * p.batch_size
            batch_len = min(p.batch_size, n_rounds - batch_start)
            start = self._tree_start(t, k, local * per_round + k)
            first = dict(end_tree=tree_end, start_tree=start)
            if k == 0 and local < self.plan.refresh_rounds:
                # a multiclass round's sketch sums the hessians of its classes
                root_start = start if p.num_class is None else replace(start, output_class=-1)
                if p.split_candidates == "iterative_hessian":
                    root = await self._round(end_tree=tree_end, start_tree=root_start,
                                             histogram_nodes=np.array([0]))
                    cuts = await self._cpu(self._refresh_candidates, t, root, cuts, bounds,
                                           n_values=root.size)
                else:  # a DP sketch of the tree's rows (DP-XGBoost §4.1, per tree)
                    fine = await self._round(end_tree=tree_end, start_tree=root_start,
                                             fine_histogram=(p.n_sketch_bins, p.newton))
                    cuts = await self._cpu(self._tree_sketch, t, fine, bounds,
                                           n_values=fine.size)
                n_cuts = np.array([len(c) for c in cuts])
                first = dict(rebin_cuts=cuts)
                if p.num_class is not None:
                    first["start_tree"] = start
            # the cuts, hence the next structure, are fixed once the refreshes are over
            following = schedule[i + 1] if i + 1 < len(schedule) else None
            draw_next = following is not None and not (
                following[1] == 0 and following[0] < self.plan.refresh_rounds)
            tree, values, last_splits, drawn = await self._grow_tree(
                t, cuts, n_cuts, first, drawn, draw_next)
            shrink = p.learning_rate / batch_len
            values = values * shrink
            for node in tree.leaves:
                tree.leaves[node] *= shrink
            booster.append_tree(tree, start.output_class)
            batch_end = local == batch_start + batch_len - 1 and k == per_round - 1
            tree_end = ops.TreeEnd(last_splits, values, batch_end=batch_end,
                                   output_class=start.output_class)
            self.timings["tree"].append(time.perf_counter() - t0)
            self._publish({"event": "tree", "tree": i, "n_trees": len(schedule),
                           "n_leaves": len(tree.leaves)})
        self._phase("trees", t_trees)
        booster = to_label_units(booster, self.objective)
        booster.cuts = [np.asarray(c, dtype=np.float64) for c in cuts]
        if self.init_model is None:
            booster.ledger = privacy_summary(self.ledger, p, self.plan.budget_scale)
        else:
            booster = continued_model(self.init_model, booster, self.ledger, p,
                                      self.plan.budget_scale)
        self._publish({"event": "done", "epsilon": booster.ledger["epsilon"],
                       "accountant": p.accountant, "delta": p.delta})
        return booster

    def _publish(self, event):
        """Send a progress event, with the releases recorded since the last event."""
        self._publish_to(dict(event, releases=self.unpublished_releases()))

    def unpublished_releases(self):
        """The ledger events recorded since the last call, as dicts (public: what was
        released and with which noise, never the values)."""
        events = self.ledger.events[self._published_releases:]
        self._published_releases += len(events)
        return [e.to_dict() for e in events]

    # -- fit-level releases -----------------------------------------------------------------

    async def _feature_bounds(self):
        p = self.params
        if isinstance(p.feature_bounds, str) and p.feature_bounds == "data":
            # Forced by the user with a PrivacyLeakWarning (see training.py): exact extrema.
            return decisions.data_bounds(np.stack(await self.backend.collect("feature_min_max")))
        if p.feature_bounds is not None:
            return np.asarray(p.feature_bounds, dtype=np.float64)
        return await self._dp_bounds()

    async def _dp_bounds(self):
        """DP feature bounds: Laplace counts of rows by sign and binary magnitude; the
        outermost bins whose noisy count clears a threshold give the bounds."""
        p = self.params
        counts = await self.backend.reduce("log2_magnitude_histogram", BOUNDS_N_EXPONENTS,
                                           BOUNDS_MIN_EXPONENT)
        fields = self.plan.bounds_event()
        # One row adds 1 to one bin of each feature: L1 sensitivity F over F coordinates.
        mech = LaplaceMechanism(fields["sensitivity"], fields["epsilon"],
                                coords_per_row=self.n_features)
        noisy = mech.release(counts, self._stream("bounds"))
        del counts
        self.ledger.record(**fields)
        bounds, unresolved = decisions.bounds_from_magnitude_counts(
            noisy, fields["sensitivity"] / fields["epsilon"], BOUNDS_N_EXPONENTS,
            BOUNDS_MIN_EXPONENT)
        if unresolved:
            # Post-processing of the DP counts: nothing clears the noise (a feature that is
            # mostly missing, or too small a budget): a public default.
            self.warnings.append((DPBoundsWarning, (
                f"the DP bounds estimate found no magnitude above the noise for features "
                f"{unresolved}; they use the public default range "
                f"{decisions.DEFAULT_UNRESOLVED_BOUNDS}. Give feature_bounds or a larger "
                "bounds_epsilon.")))
        self._publish({"event": "bounds", "epsilon": p.bounds_epsilon})
        return bounds

    async def _init_score(self):
        if self.params.init_score == "zero":
            return np.zeros(self.params.num_class) if self.params.num_class else 0.0
        if self.objective.is_multiclass:
            # The K class counts: one row moves one of them by 1 (Δ₁ = 1), one release.
            counts = await self.backend.reduce("class_counts", self.params.num_class)
            fields = self.plan.event("init")
            mech = LaplaceMechanism(1.0, fields["epsilon"], coords_per_row=1)
            noisy = mech.release(counts, self._stream("init_score/classes"))
            self.ledger.record(**fields)
            return self.objective.initial_margin(np.maximum(noisy, 0.0) /
                                                 max(np.maximum(noisy, 0.0).sum(), 1.0))
        # Labels in {0, 1}, or regression labels scaled to [-1, 1]: one row moves the sum
        # and the count by at most 1 each.
        total = await self.backend.reduce("clipped_label_sum", self.objective)
        fields = self.plan.event("init")
        # Two releases (count=2 in the ledger): the sum and the count, Δ = 1 each.
        mech = LaplaceMechanism(1.0, fields["epsilon"], coords_per_row=1)
        noisy_sum = mech.release(total[:1], self._stream("init_score/sum"))[0]
        noisy_count = mech.release(total[1:], self._stream("init_score/count"))[0]
        self.ledger.record(**fields)
        return self.objective.initial_margin(noisy_sum / max(noisy_count, 1.0))

    async def _candidates(self, bounds):
        p = self.params
        if p.split_candidates != "dp_sketch":  # (a per-tree sketch replaces them at once)
            return decisions.uniform_cuts(bounds, p.max_bin)
        # Every row's weight is its hessian at the initial margin (1 for counts, 1/4 for the
        # logistic loss at p = 1/2): the sketch of DP-XGBoost §4.1.
        weight = self.objective.root_hessian if p.newton else 1.0
        hist = await self.backend.reduce("fine_histogram", bounds, p.n_sketch_bins, weight)
        fields = self.plan.event("sketch", n_parallel=p.n_sketch_bins,
                                 sensitivity=self.n_features * weight)
        mech = LaplaceMechanism(fields["sensitivity"], fields["epsilon"],
                                coords_per_row=self.n_features)
        noisy = mech.release(hist, self._stream("sketch"))
        del hist
        self.ledger.record(**fields)
        return decisions.sketch_cuts(noisy, bounds, p.max_bin)

    def _tree_sketch(self, t, fine, bounds):
        """DP-XGBoost's sketch of tree ``t``'s rows: Laplace noise on their fine histogram
        (:func:`ops.tree_fine_histogram`), then the weighted quantile cuts."""
        p = self.params
        fields = self._event("sketch", t, n_parallel=p.n_sketch_bins)
        mech = LaplaceMechanism(fields["sensitivity"], fields["epsilon"],
                                coords_per_row=self.n_features)
        noisy = mech.release(fine, self._stream("sketch", tree=t))
        del fine
        self._record(fields)
        cuts = decisions.sketch_cuts(noisy, bounds, p.max_bin)
        return categories.cuts_and_bounds(p.categories, cuts, bounds)[0]

    def _refresh_candidates(self, t, root, cuts, bounds):
        """Iterative Hessian: release the root Hessian histogram, refine the cuts."""
        p = self.params
        fields = self._event("sketch", t, n_parallel=self.missing_bin + 1)
        h_values = root[0]["sum_hessians"] if p.newton else root[0]["count"].astype(np.float64)
        mech = GaussianMechanism(fields["sensitivity"], noise_multiplier=fields["noise_multiplier"],
                                 coords_per_row=self.n_features)
        noisy = mech.release(h_values, self._stream("sketch", tree=t))
        del root, h_values
        self._record(fields)
        refined = decisions.hessian_refined_cuts(noisy, cuts, bounds, p.max_bin)
        return categories.cuts_and_bounds(p.categories, refined, bounds)[0]

    # -- trees ------------------------------------------------------------------------------

    def _tree_start(self, t, k, local=None):
        """The :class:`ops.TreeStart` of tree ``t`` (the fit's ``local``-th, by default
        ``t``: a fit that continues no model), of class ``k`` of its round."""
        p = self.params
        local = t if local is None else local
        output_class = vector_bounds = None
        if p.num_class is not None:
            output_class, b = k, self.plan.row_bounds
            joint = self.plan.joint_classes is not None
            vector_bounds = (b.gradient if joint else math.inf,
                             b.denominator if joint and p.newton else math.inf,
                             b.denominator_sum if p.newton else math.inf)
        key, interval = self._tree_rows(t)
        filter_terms = filter_worst = rounds_left = None
        if p.filter_rounds:
            filter_terms = self.plan.filter_terms(local)
            filter_worst = self.plan.tree_divergence(local)
            if p.filter_spending == "pace" and local >= p.n_estimators:
                rounds_left = self.plan.n_rounds - local
        return ops.TreeStart(key, interval, p.gradient_bound, p.gradient_rule,
                             p.hessian_bound if p.newton else 1.0, output_class, vector_bounds,
                             filter_terms, filter_worst, rounds_left)

    def _event(self, kind, t, **fields):
        """The plan's ledger fields of a release of tree ``t`` (a joint multiclass release
        under its round's first tree)."""
        if self.plan.joint_classes:
            t = self.plan.round_of(t)
        return self.plan.event(kind, tree=t, **fields)

    def _record(self, fields):
        """Record a release: once for the K class trees of a joint release (whichever
        reaches it first; a tree that stopped growing early has no release there)."""
        if self.plan.joint_classes:
            key = (fields["purpose"], fields.get("tree"), fields.get("depth"))
            if key in self._joint_recorded:
                return
            self._joint_recorded.add(key)
        self.ledger.record(**fields)

    def _tree_rows(self, t):
        """(key, [lo, hi)) of the rows of tree t (Poisson, DPBoost ensemble, or all); the
        K trees of a joint multiclass release share their round's sample."""
        p = self.params
        if p.ensemble_size:
            e, k = divmod(t, p.ensemble_size)
            size = min(p.ensemble_size, p.n_estimators - e * p.ensemble_size)
            eta = p.learning_rate
            total = 1.0 - (1.0 - eta) ** size
            lo = (1.0 - (1.0 - eta) ** k) / total
            hi = (1.0 - (1.0 - eta) ** (k + 1)) / total if k + 1 < size else 1.0
            if not (0.0 <= lo <= hi <= 1.0):
                raise AssertionError(f"ensemble row interval ({lo}, {hi}) of tree {t} is not "
                                     "inside [0, 1]: the trees would not be disjoint")
            if e not in self._ensemble_keys:
                # One key per ensemble: its trees take disjoint intervals of the same numbers.
                self._ensemble_keys[e] = self._key128("ensemble_rows", tree=e)
            return self._ensemble_keys[e], (lo, hi if k + 1 < size else 1.0 + 1e-9)
        if p.subsample < 1.0:
            if self.plan.joint_classes:
                # one key per round (a stream key is issued once): its trees share the sample
                first = self.plan.round_of(t)
                if first not in self._round_keys:
                    self._round_keys = {first: self._key128("subsample", tree=first)}
                return self._round_keys[first], (0.0, p.subsample)
            return self._key128("subsample", tree=t), (0.0, p.subsample)
        return 0, (0.0, 2.0)

    async def _grow_tree(self, t, cuts, n_cuts, first, drawn=None, draw_next=False):
        """Grow tree ``t``; ``first`` holds the fields of its first round (the previous
        tree's end, this tree's start, a re-binning).

        With random splits the whole structure is drawn before any row is read (``drawn``:
        drawn already while the previous tree's round was out), and ``draw_next`` draws
        tree ``t + 1`` while this tree's round is out.

        Returns
        -------
        tree : Tree
            With leaf values before shrinkage.
        values : ndarray of float64
            Leaf values by heap id (0 elsewhere), before shrinkage.
        last_splits : tuple of ndarray or None
            The last level's decisions, not yet applied to the rows (data-dependent trees).
        next_drawn : tuple or None
            Tree ``t + 1``'s structure when ``draw_next``.
        """
        next_drawn = None
        if self.params.split_method == "random":
            tree, levels, leaves = drawn if drawn is not None else \
                self._random_tree(t, cuts, n_cuts)

            async def draw_next_tree():
                return self._random_tree(t + 1, cuts, n_cuts) if draw_next else None

            next_drawn, sums = await self._round_while(
                draw_next_tree, **first, tree_levels=levels, leaf_nodes=leaves)
            last_splits = None
        else:
            tree, leaves, sums, last_splits = await self._grow_levels(t, cuts, n_cuts, first)
        order = np.argsort(leaves)
        leaves, sums = leaves[order], sums[order]
        if self.params.split_method == "partially_random":
            # the leaves' sums were released with their parents' splits: post-processing
            p = self.params
            values = decisions.leaf_values(sums[:, 0], sums[:, 1], p.min_child_weight,
                                           p.reg_lambda, p.leaf_bound)
        else:
            values = await self._cpu(self._release_leaves, t, sums, n_values=2 * sums.size)
        del sums
        by_heap = np.zeros(int(leaves.max()) + 1)
        by_heap[leaves] = values
        for node, value in zip(leaves, values):
            tree.add_leaf(node, value)
        return tree, by_heap, last_splits, next_drawn

    def _random_tree(self, t, cuts, n_cuts):
        """Draw tree ``t``'s totally random structure (data independent: no privacy spent).

        Returns
        -------
        tree : Tree
            Splits only.
        levels : list of tuple of ndarray
            Each level's decisions, heap-indexed (``LevelSplits.as_heap_arrays``).
        leaves : ndarray of int64
            Heap ids of the leaves.
        """
        p = self.params
        tree, open_nodes, ranges = self._root(cuts, n_cuts)
        closed_nodes, levels = [], []
        for d in range(p.max_depth):
            if open_nodes.size == 0:
                break
            t_level = time.perf_counter()
            # cyclic features follow the rounds: a round's class trees share one feature
            splits = decisions.random_splits(
                open_nodes, ranges, n_cuts, p.feature_selection, t // self.plan.trees_per_round,
                self.structure.stream(purpose="split", tree=t, depth=d), self.categorical)
            levels.append(splits.as_heap_arrays())
            self._add_splits(tree, open_nodes, splits)
            ranges = decisions.child_ranges(ranges, splits)
            closed_nodes.extend(open_nodes[~splits.is_split].tolist())
            open_nodes = decisions.children(splits)
            self.timings["level"].append(time.perf_counter() - t_level)
        leaves = np.array(closed_nodes + open_nodes.tolist(), dtype=np.int64)
        return tree, levels, leaves

    async def _grow_levels(self, t, cuts, n_cuts, first):
        """Grow tree ``t`` level by level from noisy statistics: one round and one release
        per level.

        Returns
        -------
        tree : Tree
            Splits only.
        leaves : ndarray of int64
        sums : ndarray of float64, shape (n_leaves, 3) or (n_leaves, 2)
            The leaves' exact (G, H, count), read off their levels' histograms, for the
            leaf release; with partially random splits their noisy (G, H) (denominators:
            hessian sums or counts), read off the levels' releases.
        last_splits : tuple of ndarray or None
        """
        p = self.params
        tree, open_nodes, ranges = self._root(cuts, n_cuts)
        closed_nodes, closed_sums = [], []
        last_splits = child_sums = None
        for d in range(p.max_depth):
            if open_nodes.size == 0:
                break
            t_level = time.perf_counter()
            bytes_before = self.backend.bytes_gathered

            async def draw_noise(t=t, d=d, n_nodes=open_nodes.size):
                # The noise depends only on its streams and the (public) number of values:
                # drawn while the workers build the histograms.
                if p.split_method not in ("noisy_histogram", "partially_random"):
                    return None
                cells = 3 if p.split_method == "partially_random" else self.missing_bin + 1
                size = n_nodes * self.n_features * cells
                return await self._cpu(self._histogram_noise, t, d, size, n_values=2 * size)

            noise, exact = await self._round_while(
                draw_noise, **first, splits=last_splits, histogram_nodes=open_nodes)
            first = {}
            self.timings["bytes_per_level"].append(self.backend.bytes_gathered - bytes_before)
            # with the noise drawn, what is left is post-processing of exact.size cells
            splits, released = await self._cpu(
                self._release_splits, t, d, open_nodes, exact, n_cuts, ranges, noise,
                n_values=exact.size if noise is not None else 2 * exact.size)
            closed = ~splits.is_split
            closed_nodes.extend(open_nodes[closed].tolist())
            if released is not None:  # partially random: the release holds the sums
                node_sums, child_sums = released
                closed_sums.append(node_sums[closed])
            else:
                closed_sums.append(decisions.node_totals(exact[closed]))
                child_sums = decisions.child_totals(exact, splits)
            del exact
            last_splits = splits.as_heap_arrays()
            self._add_splits(tree, open_nodes, splits)
            ranges = decisions.child_ranges(ranges, splits)
            open_nodes = decisions.children(splits)
            self.timings["level"].append(time.perf_counter() - t_level)
            self._publish({"event": "level", "tree": t, "depth": d,
                           "n_nodes": int(splits.is_split.size)})
        leaves = np.array(closed_nodes + open_nodes.tolist(), dtype=np.int64)
        return tree, leaves, np.concatenate(closed_sums + [child_sums]), last_splits

    def _root(self, cuts, n_cuts):
        """An empty tree, its open root and the root's reachable bin ranges (every bin)."""
        ranges = np.zeros((1, self.n_features, 2), dtype=np.int64)
        ranges[0, :, 1] = n_cuts
        return Tree(cuts), np.array([0], dtype=np.int64), ranges

    @staticmethod
    def _add_splits(tree, nodes, splits):
        for i, node in enumerate(nodes):
            if splits.is_split[i]:
                categorical = splits.categorical is not None and splits.categorical[i]
                tree.add_split(node, splits.feature[i], splits.bin_threshold[i],
                               splits.missing_left[i], categorical,
                               splits.category_set[i] if categorical else None)

    def _histogram_noise(self, t, d, size):
        """The noise of level d's (G, H) histogram release (see ``_release_splits``)."""
        fields = self._event("split", t, depth=d)
        bounds = self.plan.row_bounds
        mechanism = decisions.histogram_mechanism(self.n_features, bounds.gradient,
                                                  bounds.denominator, fields["noise_multiplier"],
                                                  self.plan.joint_classes or 1)
        return (mechanism.draw_noise(size, self._stream("split/grad", tree=t, depth=d)),
                mechanism.draw_noise(size, self._stream("split/hess", tree=t, depth=d)))

    def _release_splits(self, t, d, nodes, exact, n_cuts, ranges, noise=None):
        """Level ``d``'s split release and decisions.

        Returns
        -------
        splits : LevelSplits
        released : tuple of ndarray or None
            Partially random splits: the noisy (G, H) of the nodes and of the split nodes'
            children (``decisions.partially_random_splits``); None otherwise.
        """
        p = self.params
        fields = self._event("split", t, depth=d, n_parallel=len(nodes))
        released = None
        if p.split_method == "exponential":
            splits, _ = decisions.exponential_splits(
                nodes, exact, n_cuts, p.reg_lambda, p.newton, fields["sensitivity"],
                fields["epsilon"], self._stream("split", tree=t, depth=d), self.categorical)
        elif p.split_method == "partially_random":
            if noise is None:
                noise = self._histogram_noise(t, d, len(nodes) * self.n_features * 3)
            bounds = self.plan.row_bounds
            splits, _, node_sums, child_sums = decisions.partially_random_splits(
                nodes, exact, ranges, n_cuts, p.reg_lambda, p.newton, bounds.gradient,
                bounds.denominator, fields["noise_multiplier"],
                self.structure.stream(purpose="split", tree=t, depth=d), None, None, noise,
                self.plan.joint_classes or 1, self.categorical)
            released = node_sums, child_sums
        else:
            if noise is None:
                noise = self._histogram_noise(t, d, exact.size)
            bounds = self.plan.row_bounds
            splits, _, _, _ = decisions.noisy_histogram_splits(
                nodes, exact, n_cuts, p.reg_lambda, p.newton, bounds.gradient, bounds.denominator,
                fields["noise_multiplier"], None, None, noise, self.plan.joint_classes or 1,
                self.categorical)
        self._record(fields)
        return splits, released

    def _release_leaves(self, t, sums):
        p = self.params
        n_leaves = sums.shape[0]
        if p.leaf_method == "gaussian":
            fields = self._event("leaf", t, n_parallel=n_leaves)
            bounds = self.plan.row_bounds
            sigma_g, sigma_h = leaf_balanced_sigmas(
                fields["noise_multiplier"], bounds.gradient, bounds.denominator,
                p.leaf_noise_ratio)
            fields["note"] = "; ".join(filter(None, [fields.get("note"), (
                f"whitened pair: sigma_G={sigma_g:.6g} on the gradient sums, "
                f"sigma_H={sigma_h:.6g} on the {'hessian sums' if p.newton else 'counts'}")]))
            values, _, _ = decisions.gaussian_leaves(
                sums, p.newton, p.reg_lambda, p.min_child_weight, bounds.gradient,
                bounds.denominator, fields["noise_multiplier"], p.leaf_noise_ratio, p.leaf_bound,
                self._stream("leaf/grad", tree=t), self._stream("leaf/hess", tree=t),
                self.plan.joint_classes or 1)
        elif p.leaf_method == "noisy_average":
            fields = self.plan.event("leaf", tree=t, n_parallel=n_leaves)
            count_fields = self.plan.event("leaf_count", tree=t, n_parallel=n_leaves)
            values, _ = decisions.noisy_average_leaves(
                sums, p.reg_lambda, p.min_child_weight, p.gradient_bound, fields["epsilon"],
                count_fields["epsilon"], p.leaf_bound, self._stream("leaf/grad", tree=t),
                self._stream("leaf/count", tree=t))
            self.ledger.record(**count_fields)
        else:
            clip = p.leaf_bound
            if p.leaf_clipping == "geometric":
                # (the boosting round's index: a multiclass round's trees share it)
                t_in_ensemble = t % p.ensemble_size if p.ensemble_size else \
                    t // self.plan.trees_per_round
                clip = min(clip, geometric_leaf_clip_threshold(p.gradient_bound, p.learning_rate,
                                                               t_in_ensemble))
            sensitivity = leaf_value_sensitivity(p.gradient_bound, p.reg_lambda,
                                                 p.min_child_weight, clip)
            fields = self.plan.event("leaf", tree=t, n_parallel=n_leaves, sensitivity=sensitivity)
            values, _ = decisions.laplace_leaves(
                sums, p.reg_lambda, p.min_child_weight, clip, sensitivity, fields["epsilon"],
                self._stream("leaf", tree=t))
        self._record(fields)
        return values
