"""The split methods: how one level's split decisions are made from the level's exact
histograms, and what that releases.

A method is an object built once per fit (:func:`make_split_method`) from the release plan,
which holds every per-fit constant (λ, the row bounds, the noise multiplier or ε, the
categorical features); a call decides the splits of one level and takes per-level
arguments only. Every decision is a DP release, its post-processing, or data independent.

=====================  =============================================  =====================
method                 decision                                       release per level
=====================  =============================================  =====================
random                 a random feature and threshold per node        none (data independent)
exponential            the exponential mechanism on exact gains       ε per level
noisy_histogram        the best gain on Gaussian-noised histograms    one Gaussian release
partially_random       one random threshold per feature, the best     one Gaussian release
                       noisy gain                                     of three cells/feature
=====================  =============================================  =====================
"""
import abc
from typing import NamedTuple

import numpy as np

from .. import categories
from .._core.random_tree import draw_random_tree
from ..privacy.exponential import ExponentialMechanism
from ..privacy.mechanisms import histogram_mechanism
from .feature_schedule import FeatureSchedule
from .gains import (ReleasedNoise, argmax_random_ties, candidate_mask, category_order,
                    collapse_at_thresholds, decode_candidates, random_category_subset,
                    reachable_bins, split_gains, threshold_ranges)
from .released_mass import UNIFORM_SHARE, WEIGHT_BITS, ReleasedMass
from .tree import child_totals, level_splits, node_totals


class LevelChoice(NamedTuple):
    """One level's decisions and what they release.

    Attributes
    ----------
    splits : LevelSplits
    event : dict or None
        The ledger fields of the level's release (None: nothing was released).
    closed_sums : ndarray of float64, shape (n_closed, 3) or (n_closed, 2)
        The sums of the nodes that did not split (they become leaves): exact (G, H, count)
        for the leaf release, or the released (G, H) when the leaves are read off the splits'
        release (partially random).
    child_sums : ndarray of float64, shape (2 * n_split, 3) or (2 * n_split, 2)
        The same for the children of the split nodes, in the order of
        :func:`~dpxgb_dask.boosting.tree.children`.
    """

    splits: object
    event: dict
    closed_sums: np.ndarray
    child_sums: np.ndarray


#: No released mass: the random thresholds are uniform.
_NO_MASS = np.zeros((0, 0))


class SplitMethod:
    """What every split method of a fit holds: its plan, streams and per-fit constants.

    Parameters
    ----------
    plan : ReleasePlan
        The fit's calibrated plan; its ``params`` give λ, the denominators and the public
        category lists.
    streams : FitStreams
        The fit's noise and structure streams.

    Attributes
    ----------
    categorical : ndarray of bool, shape (n_features,) or None
        The categorical features (None: there are none).
    missing_bin : int
        The histograms' missing-value bin (bins per feature: ``missing_bin + 1``).

    Notes
    -----
    A data-dependent method (:class:`LevelSplitMethod`) decides each level from its
    histograms; a data-independent one draws a whole tree before any row is read
    (:meth:`RandomSplits.draw_tree`).
    """

    #: The method reads the rows: one message round and one release per level.
    data_dependent = False
    #: The method reads each tree's leaf release (:meth:`observe_leaves`).
    observes_leaves = False
    #: The random trees it draws keep their leaves' bin ranges (for :meth:`observe_leaves`).
    keeps_leaf_ranges = False

    def __init__(self, plan, streams):
        p = plan.params
        self.plan, self.streams = plan, streams
        self.n_features = plan.n_features
        categorical = categories.is_categorical(p.categories, self.n_features)
        self.categorical = categorical if categorical.any() else None
        self.missing_bin = categories.missing_bin(p.categories, p.max_bin)
        self.reg_lambda = p.reg_lambda
        self.hessian_denominators = p.hessian_denominators

    def new_candidates(self, n_cuts):
        """The cuts are new (the fit's first, or a refresh); nothing to do by default."""

    def observe_leaves(self, tree, leaf_ranges, released):
        """A tree's released leaves; nothing to do by default (:class:`RandomSplits`)."""


class LevelSplitMethod(SplitMethod, abc.ABC):
    """A method that decides each level from the level's exact reduced histograms, which
    its release reads (:meth:`~dpxgb_dask.boosting.splits.LevelSplitMethod.choose`)."""

    data_dependent = True

    def noise_size(self, n_nodes):
        """Values of noise per (G, H) release of a level of ``n_nodes`` nodes that can be
        drawn before the histograms arrive (0: none)."""
        return 0

    def draw_noise(self, tree, depth, n_nodes):
        """The noise of level ``depth``'s release, drawn ahead (None for this method)."""
        return None

    @abc.abstractmethod
    def choose(self, tree, depth, nodes, histograms, n_cuts, ranges, *, noise=None):
        """Decide the splits of one level.

        Parameters
        ----------
        tree, depth : int
        nodes : ndarray of int64, shape (n_nodes,)
            Heap ids of the level's nodes.
        histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
            Exact reduced sums of the level (they stay in the coordinator).
        n_cuts : ndarray of int, shape (n_features,)
            Cuts of each feature in the tree's candidates.
        ranges : ndarray of int, shape (n_nodes, n_features, 2)
            Bin range of each feature still reachable at each node.
        noise : tuple of two ndarray of int64, optional
            :meth:`draw_noise`'s result for this level.

        Returns
        -------
        LevelChoice
        """

    def _denominators(self, histograms):
        """The H of the gains: hessian sums, or counts without Newton steps (weighted
        counts, in the hessian field, with weights)."""
        return (histograms["sum_hessians"] if self.hessian_denominators
                else histograms["count"].astype(np.float64))

    def _with_exact_sums(self, splits, event, histograms):
        """A choice whose leaves are released later from the exact sums of the nodes."""
        closed = ~splits.is_split
        return LevelChoice(splits, event, node_totals(histograms[closed]),
                           child_totals(histograms, splits))


class RandomSplits(SplitMethod):
    """Totally random splits (Maddock et al. §4.3.2 "TR"; S-BDT): data independent.

    Each node picks a feature (uniformly among the features that can still be split at it,
    or the round's one feature, :meth:`FeatureSchedule.one_feature
    <dpxgb_dask.boosting.feature_schedule.FeatureSchedule.one_feature>`, so that a round's
    class trees share it), then a threshold uniformly in its reachable
    bin range (a categorical feature: a uniformly random non-empty proper subset of its
    categories), and a direction for missing values by a fair coin, from the fit's public
    structure stream. Nothing here reads the data: no privacy is spent, and the whole tree
    is drawn before its one round (:meth:`draw_tree`).

    With ``interaction_thresholds="quantile"`` a node that draws its own feature puts its
    threshold at a random quantile of the feature's mass that the one-feature trees' leaf
    releases tell (:class:`~dpxgb_dask.boosting.released_mass.ReleasedMass`, fed by
    :meth:`observe_leaves`): post-processing of those releases, still no budget.
    """

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        self.trees_per_round = plan.trees_per_round
        # (a Gaussian leaf release includes each leaf's denominator: the mass)
        self.quantile_thresholds = self.keeps_leaf_ranges = (
            plan.params.interaction_thresholds == "quantile"
            and plan.params.gaussian_leaf_release)
        #: the released mass over the current cuts (quantile thresholds only)
        self.released_mass = None
        #: the feature of each round (public, or post-processing of leaf releases)
        self.schedule = FeatureSchedule(plan.params, self.n_features, self.trees_per_round,
                                        streams)
        self.observes_leaves = self.quantile_thresholds or self.schedule.by_released_gain
        self.max_depth = plan.params.max_depth
        self._categorical_codes = np.zeros(self.n_features, dtype=np.uint8) \
            if self.categorical is None else self.categorical.astype(np.uint8)
        # words a tree reads: per split node at most three bounded draws (a second word
        # is rare) and twice a categorical subset's words on average
        set_words = 0 if self.categorical is None else 2 * -(-(int(plan.params.max_bin) + 1)
                                                          // 64)
        self._words_per_tree = 64 + (2**self.max_depth) * (4 + set_words)

    def new_candidates(self, n_cuts):
        """The cuts the thresholds index are new (the fit's first, or a refresh): the mass
        released over the old ones no longer applies."""
        if self.quantile_thresholds:
            self.released_mass = ReleasedMass(n_cuts)

    def observe_leaves(self, tree, leaf_ranges, released):
        """Tree ``tree``'s leaf release, for the quantile thresholds and the main-effect
        features and stage of later trees.

        Parameters
        ----------
        tree : int
        leaf_ranges : ndarray of int64, shape (n_leaves, n_features, 2), or None
            Each leaf's reachable bins, in the order of the leaves (quantile thresholds).
        released : ReleasedLeaves
            The leaves' released values before the learning rate, their covers (released
            denominators, or 1) and the release's evidence of signal: post-processing.
        """
        feature = self.schedule.observe(tree, released)
        if feature is not None and self.released_mass is not None:
            self.released_mass.add_tree(feature, leaf_ranges[:, feature, :], released.covers)

    def draw_tree(self, tree, n_cuts):
        """Draw tree ``tree``'s whole structure from its structure stream
        (``FitStreams.tree_structure_stream``), in one kernel call
        (``_core.random_tree.draw_random_tree``, whose notes give the order of the
        draws).

        Parameters
        ----------
        tree : int
        n_cuts : ndarray of int, shape (n_features,)

        Returns
        -------
        heap : tuple of ndarray
            ``(is_split, feature, split_bin, missing_left, category_set)`` by heap id, the
            layout of ``_core.partition.route_to_leaves``.
        leaves : ndarray of int64
            Heap ids of the leaves.
        leaf_ranges : ndarray of int64, shape (n_leaves, n_features, 2), or None
            Their reachable bins, in the order of ``leaves``, when the method keeps them
            (``keeps_leaf_ranges``).
        """
        n_cuts = np.ascontiguousarray(n_cuts, dtype=np.int64)
        one_feature = self.schedule.one_feature(tree // self.trees_per_round)
        mass = (self.released_mass.mass if one_feature is None
                and self.released_mass is not None else _NO_MASS)
        n_words, replay = self._words_per_tree, False
        while True:  # a longer buffer starts with the same words (public: no data read)
            words = self.streams.tree_structure_stream(tree, replay).uint64(n_words)
            drawn = draw_random_tree(n_cuts, self._categorical_codes,
                                     -1 if one_feature is None else one_feature,
                                     self.max_depth, mass, words, uniform_share=UNIFORM_SHARE,
                                     weight_bits=WEIGHT_BITS, keep_ranges=self.keeps_leaf_ranges)
            if drawn is not None:
                return drawn[1:]
            n_words, replay = 4 * n_words, True


class ExponentialSplits(LevelSplitMethod):
    """DP split choice by the exponential mechanism (DP-XGBoost §4.2; DPBoost Alg. 1).

    One selection per node, all at the level's ε (the nodes hold disjoint rows: parallel
    composition). Utility: :func:`~dpxgb_dask.boosting.gains.split_gains` on the EXACT
    histograms without the parent's term (the same for every candidate of a node, so it
    does not change the selection; left in, its rounding to the utility grid could move a
    utility by one step more than the sensitivity allows), with the plan's sensitivity of
    the children's terms (ΔG = 3g*², or DPBoost's Lemma 1 on request).
    No candidate is excluded on exact statistics (no min_child_weight check): that would
    leak. A categorical feature's candidates are its categories, one against the rest (the
    gain's sensitivity holds for any partition of a node's rows into two children).
    """

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        release = plan.releases["split"]
        self.mechanism = ExponentialMechanism(release.sensitivity, release.epsilon)

    def choose(self, tree, depth, nodes, histograms, n_cuts, ranges, *, noise=None):
        """:meth:`LevelSplitMethod.choose` by the exponential mechanism."""
        sum_g = histograms["sum_gradients"]
        sum_h = self._denominators(histograms)
        n_nodes, n_features, n_bins = sum_g.shape
        gains = split_gains(sum_g, sum_h, self.reg_lambda, self.categorical, parent_term=False)
        mask = np.broadcast_to(candidate_mask(n_cuts, n_bins, categorical=self.categorical)[
            None, :, :, None], gains.shape)
        choice = self.mechanism.select(gains.reshape(n_nodes, -1),
                                       mask=mask.reshape(n_nodes, -1),
                                       rng=self.streams.noise_stream("split", tree, depth))
        is_split = choice >= 0
        feature, threshold, missing_left = decode_candidates(np.maximum(choice, 0), n_features,
                                                             n_bins - 1)
        splits = level_splits(nodes, is_split, feature, threshold, missing_left,
                              self.categorical)
        event = self.plan.tree_event("split", tree, depth=depth, n_parallel=len(nodes))
        return self._with_exact_sums(splits, event, histograms)


class _GaussianHistogramSplits(LevelSplitMethod):
    """A method that releases the level's (G, H) sums with Gaussian noise
    (:func:`~dpxgb_dask.privacy.mechanisms.histogram_mechanism`, built once per fit), the noise
    drawn while the workers build the histograms."""

    #: Cells per feature and node in the release.
    _cells_per_feature = None
    #: z of ``gain_estimate="significant"``
    #: (:class:`~dpxgb_dask.boosting.gains.ReleasedNoise`).
    significance_sds = None

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        bounds = plan.row_bounds
        self.mechanism = histogram_mechanism(self.n_features, bounds.gradient,
                                             bounds.denominator,
                                             plan.releases["split"].noise_multiplier,
                                             plan.joint_classes or 1)
        estimate = plan.params.gain_estimate
        self.significance = (None if estimate == "plain" else
                             self.significance_sds if estimate == "significant" else 1.0)

    def released_noise(self, cells):
        """The :class:`~dpxgb_dask.boosting.gains.ReleasedNoise` the gains take into
        account (z = ``significance_sds`` for ``gain_estimate="significant"``, 1 for
        ``"noise_aware"``), or None for plain gains (``gain_estimate="plain"``)."""
        return None if self.significance is None else ReleasedNoise(
            cells, self.mechanism.sigma, self.significance)

    def noise_size(self, n_nodes):
        """:meth:`LevelSplitMethod.noise_size`: the release's cells."""
        return n_nodes * self.n_features * self._cells_per_feature

    def draw_noise(self, tree, depth, n_nodes):
        """The integer noise of level ``depth``'s G and H releases (it depends only on its
        streams and the public number of values)."""
        size = self.noise_size(n_nodes)
        return (self.mechanism.draw_noise(size, self.streams.noise_stream("split/grad", tree,
                                                                          depth)),
                self.mechanism.draw_noise(size, self.streams.noise_stream("split/hess", tree,
                                                                          depth)))

    def release(self, tree, depth, histograms, noise=None):
        """The Gaussian release of a level's (G, H) sums (H: hessian sums, or counts
        without Newton steps).

        Returns
        -------
        noisy_g, noisy_h : ndarray of float64, each of the histograms' shape
        """
        if noise is None:
            noise = self.draw_noise(tree, depth, histograms.shape[0])
        return (self.mechanism.release(histograms["sum_gradients"], noise=noise[0]),
                self.mechanism.release(self._denominators(histograms), noise=noise[1]))


class NoisyHistogramSplits(_GaussianHistogramSplits):
    """Greedy split on Gaussian-noised gradient histograms (Maddock et al. §4.3.1, "Hist").

    The level's (G, H) histograms of every node and feature are released at once with
    Gaussian noise: one row adds (g, h) to one bin of each of the ``F`` features, so the
    L2 sensitivity of the whole release is ``sqrt(F (g*² + h*²))`` (the nodes hold
    disjoint rows). The split maximising the gain computed on the noisy sums is taken:
    post-processing. A categorical feature's candidates are the prefixes of its categories
    sorted by the released G/(H + λ) (:func:`~dpxgb_dask.boosting.gains.category_order`).
    """

    #: A child sums many cells: the noisy tails outscore every split that carries no signal
    #: (no main effect, as a checkerboard's root) unless their noise is discounted by 3 sds
    #: (scored in ``benchmarks/results/greedy_ablation/significance.md``).
    significance_sds = 3.0

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        self._cells_per_feature = self.missing_bin + 1

    def choose(self, tree, depth, nodes, histograms, n_cuts, ranges, *, noise=None):
        """:meth:`LevelSplitMethod.choose` on the released histograms
        (:meth:`choose_released`)."""
        splits, _, _ = self.choose_released(tree, depth, nodes, histograms, n_cuts, ranges,
                                            noise=noise)
        event = self.plan.tree_event("split", tree, depth=depth, n_parallel=len(nodes))
        return self._with_exact_sums(splits, event, histograms)

    def choose_released(self, tree, depth, nodes, histograms, n_cuts, ranges, *, noise=None):
        """:meth:`choose`'s splits with the release they post-process.

        Cells that can hold no row of a node (bins its ancestors' splits cut off, or beyond
        a categorical feature's categories: public facts) have their noise dropped and
        offer no threshold; the gains are
        :func:`~dpxgb_dask.boosting.gains.split_gains` with the release's
        :class:`~dpxgb_dask.boosting.gains.ReleasedNoise` (plain gains with
        ``gain_estimate="plain"``). All of it is post-processing.

        Returns
        -------
        splits : LevelSplits
        noisy_g, noisy_h : ndarray of float64, shape (n_nodes, n_features, n_bins)
            The DP release, with the noise of the cells known to be empty dropped.
        """
        n_nodes, n_features, n_bins = histograms.shape
        categorical, reg_lambda = self.categorical, self.reg_lambda
        noisy_g, noisy_h = self.release(tree, depth, histograms, noise)
        reachable = reachable_bins(ranges, n_cuts, n_bins, categorical)
        noisy_g, noisy_h = np.where(reachable, noisy_g, 0.0), np.where(reachable, noisy_h, 0.0)
        # a categorical feature's candidates are the prefixes of its categories sorted by
        # their noisy G/(H + λ) (post-processing); a numerical feature's bins keep their order
        released = self.released_noise(reachable)
        order = None if categorical is None else category_order(
            noisy_g, np.maximum(noisy_h, 0.0) if released is None
            else released.floored(noisy_h), n_cuts, reg_lambda, categorical)
        in_order = (lambda a: a) if order is None else (
            lambda a: np.take_along_axis(a, order, axis=2))
        gains = split_gains(in_order(noisy_g), in_order(noisy_h), reg_lambda,
                            noise=self.released_noise(in_order(reachable)))
        mask = candidate_mask(n_cuts, n_bins, ranges)
        if categorical is not None:  # prefixes of 1..k_f categories (one category: itself)
            prefixes = (np.arange(n_bins - 1)[None, :]
                        < np.maximum(np.asarray(n_cuts), 1)[:, None])
            mask = np.where(np.asarray(categorical, dtype=bool)[None, :, None], prefixes, mask)
        flat = np.where(mask[..., None], gains, -np.inf).reshape(n_nodes, -1)
        choice = argmax_random_ties(flat, self.streams.structure_stream(tree, depth))
        is_split = np.isfinite(flat[np.arange(n_nodes), choice])
        feature, threshold, missing_left = decode_candidates(choice, n_features, n_bins - 1)
        left_codes = None if categorical is None else [
            order[i, f, :t + 1].tolist() for i, (f, t) in enumerate(zip(feature, threshold))]
        splits = level_splits(nodes, is_split, feature, threshold, missing_left, categorical,
                              left_codes=left_codes)
        return splits, noisy_g, noisy_h


class PartiallyRandomSplits(_GaussianHistogramSplits):
    """Partially random splits (Maddock et al. §4.3.2 "PR"): one random threshold per
    feature, the best of them on noisy gains.

    At each node every feature draws one threshold uniformly where it can still split
    (:func:`~dpxgb_dask.boosting.gains.threshold_ranges`; a categorical feature: a random
    subset of its categories; data independent, from the public structure stream). The
    node's rows are summed into the left child, the right child and the missing values of
    each feature's threshold (:func:`~dpxgb_dask.boosting.gains.collapse_at_thresholds`),
    and the level's sums are released at once with Gaussian noise: a row adds (g, h) to
    one of the three cells of each feature, so the L2 sensitivity is
    ``sqrt(F (g*² + h*²))``, as for the full histograms (the nodes hold disjoint rows). The
    split with the largest gain on the noisy sums is taken, missing values going the better
    way, and the children's sums are read off the same release: post-processing, so the
    leaves below the last level cost nothing more.

    Maddock et al.'s code releases the left child's sums and takes the right one as the
    parent's noisy total minus the left, with the root's total released once per tree;
    releasing the right cell too costs the same (a row is in one of the two), needs no root
    release, and keeps every child's noise at one σ instead of growing with the depth.
    """

    _cells_per_feature = 3
    #: A child is one cell: 2 sds (scored in
    #: ``benchmarks/results/greedy_ablation/significance.md``).
    significance_sds = 2.0

    def choose(self, tree, depth, nodes, histograms, n_cuts, ranges, *, noise=None):
        """:meth:`LevelSplitMethod.choose`; the choice's sums are the released (G, H)."""
        splits, node_sums, child_sums = self.choose_released(tree, depth, nodes, histograms,
                                                             n_cuts, ranges, noise=noise)
        event = self.plan.tree_event("split", tree, depth=depth, n_parallel=len(nodes))
        return LevelChoice(splits, event, node_sums[~splits.is_split], child_sums)

    def choose_released(self, tree, depth, nodes, histograms, n_cuts, ranges, *, noise=None):
        """:meth:`choose`'s splits with the sums read off the release.

        Returns
        -------
        splits : LevelSplits
        node_sums : ndarray of float64, shape (n_nodes, 2)
            Noisy (G, H) of each node: the mean over the features of their three cells.
        child_sums : ndarray of float64, shape (2 * n_split, 2)
            Noisy (G, H) of the children of the split nodes, in the order of
            :func:`~dpxgb_dask.boosting.tree.children`.
        """
        n_nodes, n_features = ranges.shape[:2]
        categorical = self.categorical
        rng = self.streams.structure_stream(tree, depth)
        start, width = threshold_ranges(ranges, n_cuts, categorical)
        splittable = ranges[:, :, 1] > ranges[:, :, 0]  # as RandomSplits
        thresholds = start + rng.uniform_below(np.maximum(width, 1)).reshape(width.shape)
        subsets = {}  # a categorical feature: a random subset of its categories
        if categorical is not None:
            for f in np.flatnonzero(categorical):
                for i in range(n_nodes):
                    subsets[i, f] = random_category_subset(int(n_cuts[f]) + 1, rng)
        noisy_g, noisy_h = self.release(
            tree, depth, collapse_at_thresholds(histograms, thresholds, categorical, subsets),
            noise)
        # threshold 0 of the 3-cell histogram is the drawn threshold: [..., missing right/left]
        # every cell may hold rows (the threshold lies in the node's reachable range)
        gains = split_gains(noisy_g, noisy_h, self.reg_lambda,
                            noise=self.released_noise(np.ones(noisy_g.shape)))[:, :, 0, :]
        flat = np.where(splittable[:, :, None], gains, -np.inf).reshape(n_nodes, -1)
        choice = argmax_random_ties(flat, rng)
        is_split = np.isfinite(flat[np.arange(n_nodes), choice])
        feature, missing_left = (choice // 2).astype(np.int32), (choice % 2).astype(bool)
        threshold = thresholds[np.arange(n_nodes), feature].astype(np.int32)
        splits = level_splits(nodes, is_split, feature, threshold, missing_left, categorical,
                              left_codes=[subsets.get((i, f)) for i, f in enumerate(feature)])
        node_sums = np.stack([noisy_g.sum(axis=2).mean(axis=1),
                              noisy_h.sum(axis=2).mean(axis=1)], axis=1)
        split = np.flatnonzero(is_split)
        cells = np.stack([noisy_g, noisy_h], axis=-1)[split, feature[split]]  # (n_split, 3, 2)
        left = cells[:, 0] + splits.missing_left[split, None] * cells[:, 2]
        right = cells[:, 1] + (~splits.missing_left[split])[:, None] * cells[:, 2]
        child_sums = np.stack([left, right], axis=1).reshape(-1, 2)
        return splits, node_sums, child_sums


#: ``split_method`` -> its class.
SPLIT_METHODS = {"random": RandomSplits, "exponential": ExponentialSplits,
                 "noisy_histogram": NoisyHistogramSplits,
                 "partially_random": PartiallyRandomSplits}


def make_split_method(plan, streams):
    """The fit's split method (``plan.params.split_method``), built once per fit.

    Parameters
    ----------
    plan : ReleasePlan
    streams : FitStreams

    Returns
    -------
    SplitMethod
    """
    return SPLIT_METHODS[plan.params.split_method](plan, streams)
