"""The coordinator: the only place that sequences a fit's releases, trees and depths.

It runs next to the data, inside the cluster (in the scheduler process, see
:mod:`~dpxgb_dask.cluster.scheduler`), and talks to the partitions through a backend
(:class:`~dpxgb_dask.boosting.protocol.PartitionBackend`): every call is ONE message round
to all partitions, whose exact results come back summed. It is the only code that holds
exact aggregates: each one goes straight into the release object built for it once per
fit (bounds and candidates, initial score, splits, leaves), with the noise and ledger event
the release plan fixed before the fit, and is dropped. What it returns and publishes as
progress is public or a DP release.

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
               are one joint release, recorded once (``plan.FitLedger``).
    evaluation each private evaluation set's loss sums of every round -> ONE release per
               set (``scores.EvaluationScores``), after the last tree.
"""
import asyncio
from dataclasses import replace
from functools import partial
import time

import numpy as np

from .. import categories
from ..model.booster import Booster
from ..model.certificate import continued_summary, privacy_summary
from ..objective import Objective, to_label_units, to_training_units
from .candidates import CandidateReleases, data_bounds, uniform_cuts
from .central import CentralReleases
from .leaves import InitialScore, make_leaf_method
from .level_noise import LevelNoise
from .plan import BOUNDS_MIN_EXPONENT, BOUNDS_N_EXPONENTS
from ..partition.messages import Prepare, Round, TreeEnd
from .sampling import TreeRows
from .scores import EvaluationScores
from .silo_plan import SiloPlan
from .splits import make_split_method
from .streams import FitStreams
from .tree import CutTable, HeapTree, Tree, child_ranges, children

#: Releases of at most this many values run on the event loop (about 1 ms of sampling).
INLINE_RELEASE_VALUES = 4096
#: Event-loop turns that let a round's messages reach the workers before the coordinator
#: draws the next random tree (the calls go out through a few nested coroutines).
_YIELDS_TO_SEND = 4


def _done(finish):
    """Run a pending tree's bookkeeping (:meth:`Coordinator._finish_tree`), if any; None."""
    if finish is not None:
        finish()


class Coordinator:
    """Sequence one fit: bounds, candidates, trees and depths, every DP release and its ledger.

    Parameters
    ----------
    params : TrainParams
    plan : ReleasePlan
        The calibrated release plan of the fit
        (:func:`~dpxgb_dask.boosting.calibration.make_plan`).
    backend : PartitionBackend
    n_features : int
    feature_names : list of str or None
    publish : callable, optional
        ``publish(dict)`` receives progress events (public values only).
    init_model : Booster, optional
        A model this fit continues (``train(xgb_model=)``): its bounds, cuts and margins
        are the fit's start, and the returned model holds its trees, then the new ones.
    evaluations : sequence of PartitionBackend
        The partitions of each private evaluation set (``params.private_eval_sets`` of
        them), scored once the trees are grown.
    holdout : (bytes, float), optional
        A private selection's held-out rows (its secret key and fraction,
        :class:`~dpxgb_dask.boosting.selection.Selection`): the trees leave them out.

    Attributes
    ----------
    ledger : Ledger
        The releases made so far.
    warnings : list of (warning class, message)
        Raised during the fit (public facts only), emitted in the user's process rather
        than on the scheduler.
    timings : dict
        Wall-clock times of the phases, trees and levels, and the bytes gathered per level
        (not DP: they stay in the cluster unless a benchmark asks for them).
    scores : list of dict
        After the fit, each private evaluation set's DP metrics (``_evaluate``).
    score_estimates : list of dict
        ... and each set's unclipped mean row losses with their noise's standard
        deviation, for early stopping
        (:meth:`~dpxgb_dask.boosting.scores.EvaluationScores.estimates_of`).
    """

    def __init__(self, params, plan, backend, n_features, feature_names=None, publish=None, *,
                 init_model=None, evaluations=(), holdout=None):
        self.params = params
        self.plan = plan
        self.init_model = init_model
        self.holdout = holdout
        self.backend = backend
        self.n_features = n_features
        self.feature_names = feature_names
        self.objective = Objective.of(params)
        self.missing_bin = categories.missing_bin(params.categories, params.max_bin)
        self._publish_to = publish or (lambda event: None)
        self.streams, self.warnings = FitStreams.for_fit(params)
        self.candidates = CandidateReleases(plan, self.streams)
        self.initial_score = InitialScore(plan, self.streams, self.objective)
        self.splitter = make_split_method(plan, self.streams)
        self.leaf_method = make_leaf_method(plan, self.streams)
        # where the sums become releases: here, or at each silo (a ReleaseSite)
        self.site = CentralReleases() if params.cross_silo is None else SiloPlan(
            backend.n_silos, params.cross_silo == "secure", self.initial_score,
            self.candidates, self.leaf_method, params.hessian_denominators)
        self.releases = self.site.fit_ledger(plan)
        self.rows = TreeRows(plan, self.streams)
        self.evaluations = list(evaluations)
        if len(self.evaluations) != params.private_eval_sets:
            raise ValueError(f"the fit has {len(self.evaluations)} private eval sets, its "
                             f"params private_eval_sets={params.private_eval_sets}")
        self.scorer = EvaluationScores(plan, self.streams) if self.evaluations else None
        self.scores, self.score_estimates = [], []
        self.timings = {"level": [], "tree": [], "bytes_per_level": [], "release": 0.0,
                        "noise": 0.0, "noise_wait": 0.0, "phases": {}}
        self._seq = 0
        self._published_releases = 0
        self._cut_table = None  # the random trees' thresholds (CutTable of the current cuts)

    @property
    def ledger(self):
        return self.releases.ledger

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

    def _recorded(self, release, *args):
        """The result of ``release(*args)``, which returns ``(result, event)`` (or a list of
        events), its events recorded as soon as the noise is drawn (in the release's
        thread): a release is charged even if the fit is cancelled before its result is
        used."""
        result, events = release(*args)
        for event in (events if isinstance(events, list) else [events]):
            self.releases.record(event)
        return result

    async def _round(self, **fields):
        self._seq += 1
        return await self.backend.round(Round(seq=self._seq, **fields))

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
        """Train and return the :class:`~dpxgb_dask.model.booster.Booster` (public and DP
        values only)."""
        p = self.params
        self._publish({"event": "start",
                       "n_trees": self.plan.n_rounds * self.plan.trees_per_round,
                       "epsilon": p.epsilon, "accountant": p.accountant, "delta": p.delta,
                       "objective": p.objective})
        booster, cuts, bounds = await self._start()
        t_trees, cpu_trees = time.perf_counter(), time.process_time()
        cuts = await self._grow_forest(booster, cuts, bounds)
        self._phase("trees", t_trees)
        # (the scheduler process's CPU while the trees grow: the coordinator, its noise
        # threads and the scheduler's own work for the rounds)
        self.timings["trees_cpu"] = time.process_time() - cpu_trees
        booster = to_label_units(booster, self.objective)
        booster.cuts = [np.asarray(c, dtype=np.float64) for c in cuts]
        if self.init_model is not None:
            booster = self.init_model.continued_by(booster, p.to_dict(), None)
        self.scores = await self._evaluate(booster)
        if self.init_model is None:
            booster.ledger = privacy_summary(self.ledger, p, self.plan.budget_scale)
        else:
            booster.ledger = continued_summary(self.init_model.ledger, self.init_model.n_trees,
                                               self.ledger, p, self.plan.budget_scale)
        self._publish({"event": "done", "epsilon": booster.ledger["epsilon"],
                       "accountant": p.accountant, "delta": p.delta})
        return booster

    async def _start(self):
        """The fit-level releases and the prepared partitions.

        Returns
        -------
        booster : Booster
            Empty, on the training scale.
        cuts : list of ndarray of float64
        bounds : ndarray of float64, shape (n_features, 2)
        """
        p, be = self.params, self.backend
        t0 = time.perf_counter()
        offsets = await self.site.row_offsets(be)
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
            self.releases.record(self.plan.filter_event())
        await be.prepare(Prepare(bounds, cuts, self.missing_bin, base_score,
                                 offsets, init_model=start,
                                 row_filter=row_filter, holdout=self.holdout))
        self._phase("binning", t0)
        booster = Booster(p.objective, base_score, cuts, bounds, p.to_dict(),
                          feature_names=self.feature_names, label_bounds=p.label_bounds,
                          n_classes=p.num_class, categories=p.categories)
        return booster, cuts, bounds

    async def _grow_forest(self, booster, cuts, bounds):
        """Grow every tree into ``booster`` (leaf values shrunk by the learning rate).

        Returns
        -------
        list of ndarray of float64
            The cuts after the last refresh (those the trees' thresholds index).
        """
        p = self.params
        n_cuts = np.array([len(c) for c in cuts])
        self.splitter.new_candidates(n_cuts)
        tree_end = None  # the previous tree, applied to the margins in the next round
        drawn = None     # the next random tree's structure, sent ahead with the last round
        finish = None    # the previous tree's bookkeeping, done while the next round is out
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
            start = self.rows.start(t, k, local * per_round + k)
            first = dict(end_tree=tree_end, start_tree=start)
            if k == 0 and local < self.plan.refresh_rounds:
                finish = _done(finish)
                cuts = await self._refresh(t, start, tree_end, cuts, bounds)
                n_cuts = np.array([len(c) for c in cuts])
                self.splitter.new_candidates(n_cuts)
                first = dict(rebin_cuts=cuts)
                if p.num_class is not None:
                    first["start_tree"] = start
            # the cuts, hence the next structure, are fixed once the refreshes are over
            following = schedule[i + 1] if i + 1 < len(schedule) else None
            draw_next = following is not None and not (
                following[1] == 0 and following[0] < self.plan.refresh_rounds)
            tree, values, last_splits, drawn = await self._grow_tree(
                t, cuts, n_cuts, first, drawn, draw_next=draw_next, finish=finish)
            shrink = p.learning_rate / batch_len
            values = values * shrink
            batch_end = local == batch_start + batch_len - 1 and k == per_round - 1
            tree_end = TreeEnd(last_splits, values, batch_end=batch_end,
                               output_class=start.output_class)
            finish = partial(self._finish_tree, booster, tree, shrink, start.output_class,
                             (i, len(schedule)))
            self.timings["tree"].append(time.perf_counter() - t0)
        _done(finish)
        return cuts

    def _finish_tree(self, booster, tree, shrink, output_class, place):
        """Append a grown tree to ``booster``, its leaves shrunk by ``shrink``, and publish
        its progress event (``place``: the tree's index and the number of trees). Done while
        the next tree's round is out: the next round needs only the leaf values."""
        tree.scale_leaves(shrink)
        booster.append_tree(tree, output_class)
        index, n_trees = place
        self._publish({"event": "tree", "tree": index, "n_trees": n_trees,
                       "n_leaves": tree.n_leaves})

    async def _refresh(self, t, start, tree_end, cuts, bounds):
        """New candidates before tree ``t`` grows, from a release on its rows: an
        iterative-Hessian refresh, or DP-XGBoost's sketch of the tree's rows (§4.1). The
        round also ends the previous tree and starts this one.

        Returns
        -------
        list of ndarray of float64
        """
        p = self.params
        # a multiclass round's sketch sums the hessians of its classes
        root_start = start if p.num_class is None else replace(start, output_class=-1)
        if p.split_candidates == "iterative_hessian":
            root = await self._round(end_tree=tree_end, start_tree=root_start,
                                     histogram_nodes=np.array([0]),
                                     silo_release=self.site.refresh(t))
            cuts = await self._cpu(self._recorded, self.candidates.hessian_refresh, t, root,
                                   cuts, bounds, n_values=root.size)
        else:
            fine = await self._round(end_tree=tree_end, start_tree=root_start,
                                     fine_histogram=(p.n_sketch_bins,
                                                     p.hessian_denominators))
            cuts = await self._cpu(self._recorded, self.candidates.tree_sketch, t, fine,
                                   bounds, n_values=fine.size)
        return cuts

    async def _evaluate(self, booster):
        """Per private evaluation set, ``{metric: [score after round 1, ...]}``: the
        exact loss sums of the released ``booster`` (label units) on its rows, ONE release
        per set (:class:`~dpxgb_dask.boosting.scores.EvaluationScores`)."""
        if not self.evaluations:
            return []
        p, t0 = self.params, time.perf_counter()
        sums = [await backend.reduce("round_loss_sums", booster, p.eval_metric,
                                     self.plan.scored_rounds, p.label_bounds)
                for backend in self.evaluations]
        scores, self.score_estimates = await self._cpu(
            self._recorded, self.scorer.release, sums, n_values=sum(s.size for s in sums))
        self._phase("evaluation", t0)
        return scores

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
            # forced by the user with a PrivacyLeakWarning (training.check_bounds_policy)
            return data_bounds(np.stack(await self.backend.collect("feature_min_max")))
        if p.feature_bounds is not None:
            return np.asarray(p.feature_bounds, dtype=np.float64)
        counts = await self.backend.reduce("log2_magnitude_histogram", BOUNDS_N_EXPONENTS,
                                           BOUNDS_MIN_EXPONENT)
        bounds, event, warning = self.candidates.bounds(counts)
        del counts
        self.releases.record(event)
        if warning is not None:
            self.warnings.append(warning)
        self._publish({"event": "bounds", "epsilon": p.bounds_epsilon})
        return bounds

    async def _init_score(self):
        p = self.params
        if p.init_score == "zero":
            return np.zeros(p.num_class) if p.num_class else 0.0
        reduce = partial(self.site.reduce_init, self.backend)
        if self.objective.is_multiclass:
            counts = await reduce("class_counts", p.num_class)
            score, event = self.initial_score.from_class_counts(counts)
        else:
            total = await reduce("clipped_label_sum", self.objective)
            score, event = self.initial_score.from_label_sum(total)
        self.releases.record(event)
        return score

    async def _candidates(self, bounds):
        p = self.params
        if p.split_candidates != "dp_sketch":  # (a per-tree sketch replaces them at once)
            return uniform_cuts(bounds, p.max_bin)
        # Every row's weight is its hessian at the initial margin (1 for counts, 1/4 for the
        # logistic loss at p = 1/2): the sketch of DP-XGBoost §4.1.
        weight = self.objective.root_hessian if p.newton else 1.0
        cuts, event = await self.site.sketch_cuts(
            self.backend, self.candidates, bounds, n_sketch_bins=p.n_sketch_bins,
            max_bin=p.max_bin, weight=weight)
        self.releases.record(event)
        return cuts

    # -- trees ------------------------------------------------------------------------------

    async def _grow_tree(self, t, cuts, n_cuts, first, drawn=None, *, draw_next=False,
                         finish=None):
        """Grow tree ``t``; ``first`` holds the fields of its first round (the previous
        tree's end, this tree's start, a re-binning); ``finish``: the previous tree's
        bookkeeping (:meth:`_finish_tree`), or None.

        With random splits the whole structure is drawn before any row is read (``drawn``:
        drawn already, and sent ahead with the previous tree's round, so that the workers
        routed their rows to its leaves after answering that round). With ``draw_next``
        tree ``t + 1`` is drawn before this tree's round goes out (from the releases of
        the trees before ``t``, as it would be while the round is out), and sent ahead
        with it (``Round.next_tree_splits``). While the round is out the previous tree is
        finished and this tree's leaf noise drawn.

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
        next_drawn = last_splits = noise = None
        if not self.splitter.data_dependent:
            if drawn is None:  # (the first tree, or the first on new cuts)
                tree, route_now, leaves, leaf_ranges = self._random_tree(t, cuts, n_cuts)
            else:  # sent ahead: the rows sit at its leaves already
                (tree, _, leaves, leaf_ranges), route_now = drawn, None
            next_drawn = self._random_tree(t + 1, cuts, n_cuts) if draw_next else None
            ahead = None if next_drawn is None else next_drawn[1]

            async def while_out():
                _done(finish)
                return self.leaf_method.draw_noise(t, leaves.size) \
                    if self.site.draws_leaf_noise else None

            first = dict(first, silo_release=self.site.leaf(t))
            noise, sums = await self._round_while(
                while_out, **first, tree_splits=route_now, leaf_nodes=leaves,
                next_tree_splits=ahead)
        else:
            _done(finish)
            tree, leaves, sums, last_splits = await self._grow_levels(t, cuts, n_cuts, first)
        order = np.argsort(leaves)
        leaves, sums = leaves[order], sums[order]
        released = await self._cpu(self._recorded, self.leaf_method.release, t, sums, noise,
                                   n_values=2 * sums.size)
        del sums
        if self.splitter.observes_leaves:  # (random trees only: post-processing)
            self.splitter.observe_leaves(
                t, None if leaf_ranges is None else leaf_ranges[order], released)
        by_heap = np.zeros(int(leaves.max()) + 1)
        by_heap[leaves] = released.values
        tree.add_leaves(leaves, released.values, released.covers)
        return tree, by_heap, last_splits, next_drawn

    def _random_tree(self, t, cuts, n_cuts):
        """Draw tree ``t``'s totally random structure (data independent: no privacy spent).

        Returns
        -------
        tree : HeapTree
            Splits only.
        tree_splits : tuple of ndarray or None
            Its decisions, heap-indexed (``RandomSplits.draw_tree``; None for a lone leaf
            of a tree of depth 0): one message's few arrays, whatever the depth.
        leaves : ndarray of int64
            Heap ids of the leaves.
        leaf_ranges : ndarray of int64, shape (n_leaves, n_features, 2), or None
            Their reachable bins, in the order of ``leaves``; None unless the split
            method keeps them (``keeps_leaf_ranges``).
        """
        heap, leaves, leaf_ranges = self.splitter.draw_tree(t, n_cuts)
        if self._cut_table is None or self._cut_table.cuts is not cuts:
            self._cut_table = CutTable(cuts)  # (once per set of cuts: they change at refreshes)
        tree = HeapTree(self._cut_table, heap)
        return tree, (heap if heap[0].size else None), leaves, leaf_ranges

    async def _grow_levels(self, t, cuts, n_cuts, first):
        """Grow tree ``t`` level by level from noisy statistics: one round and one release
        per level.

        Returns
        -------
        tree : HeapTree
            Splits only.
        leaves : ndarray of int64
        sums : ndarray of float64, shape (n_leaves, 3) or (n_leaves, 2)
            The leaves' sums for the leaf method (``LevelChoice``).
        last_splits : tuple of ndarray or None
        """
        tree, open_nodes, ranges = self._root(cuts, n_cuts)
        closed_nodes, closed_sums = [], []
        last_splits = child_sums = None
        ahead = LevelNoise(self.splitter, t, max_depth=self.params.max_depth,
                           run_release=self._cpu, timings=self.timings)
        try:
            for d in range(self.params.max_depth):
                if open_nodes.size == 0:
                    break
                t_level = time.perf_counter()
                bytes_before = self.backend.bytes_gathered
                ahead.start(d, open_nodes.size)
                # the next level's noise is drawn during this level, for all the children
                ahead.start(d + 1, 2 * open_nodes.size)
                noise, exact = await self._round_while(
                    lambda d=d, n=open_nodes.size: ahead.take(d, n), **first,
                    splits=last_splits, histogram_nodes=open_nodes)
                first = {}
                self.timings["bytes_per_level"].append(self.backend.bytes_gathered - bytes_before)
                # with the noise drawn, what is left is post-processing of exact.size cells
                choice = await self._cpu(
                    self._choose_recorded, (t, d, open_nodes, exact, n_cuts, ranges), noise,
                    n_values=exact.size if noise is not None else 2 * exact.size)
                del exact
                splits = choice.splits
                closed_nodes.extend(open_nodes[~splits.is_split].tolist())
                closed_sums.append(choice.closed_sums)
                child_sums = choice.child_sums
                last_splits = splits.as_heap_arrays()
                self._add_splits(tree, open_nodes, splits)
                ranges = child_ranges(ranges, splits)
                open_nodes = children(splits)
                self.timings["level"].append(time.perf_counter() - t_level)
                self._publish({"event": "level", "tree": t, "depth": d,
                               "n_nodes": int(splits.is_split.size)})
        finally:
            ahead.cancel()
        leaves = np.array(closed_nodes + open_nodes.tolist(), dtype=np.int64)
        return tree, leaves, np.concatenate(closed_sums + [child_sums]), last_splits

    def _choose_recorded(self, level, noise):
        """The split method's choice of a level (``level``: its ``choose`` arguments before
        the noise), its release recorded (as :meth:`_recorded`)."""
        choice = self.splitter.choose(*level, noise=noise)
        self.releases.record(choice.event)
        return choice

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
