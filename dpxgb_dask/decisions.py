"""From exact reduced aggregates to public decisions: the DP releases of one level's splits
and of one tree's leaves.

The coordinator calls these functions with the exact histograms or sums it reduced from
the workers; each returns only DP releases (or data-independent choices) and the fields of
the ledger event that describes the release. Nothing here knows about Dask.

Split candidates of a feature ``f`` with ``k_f`` cuts are the thresholds ``t = 0..k_f-1``
("bin <= t goes left") times the direction of missing values (left, right). A categorical
feature (``categorical[f]``; its bins are the codes of its ``k_f + 1`` public categories)
sends a set of its categories left (``LevelSplits.category_set``): a random subset (random
and partially random splits), the best prefix of the categories sorted by their noisy
G/(H + λ) (noisy-histogram splits: post-processing of the release), or one category
against the rest (the exponential mechanism's candidates ``t = 0..k_f``, "bin == t").
"""
from dataclasses import dataclass
import math

import numpy as np

from ._core import CATEGORY_SET_WORDS, category_set_codes, category_sets
from ._core.sketch import make_summary, query_cuts
from .privacy.exponential import ExponentialMechanism
from .privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from .privacy.sensitivity import gradient_histogram_l2_sensitivity, leaf_balanced_sigmas


@dataclass
class LevelSplits:
    """Split decisions of the nodes of one level (public).

    Attributes
    ----------
    nodes : ndarray of int64, shape (n_nodes,)
        Heap ids of the nodes.
    is_split : ndarray of bool, shape (n_nodes,)
    feature : ndarray of int32, shape (n_nodes,)
    bin_threshold : ndarray of int32, shape (n_nodes,)
    missing_left : ndarray of bool, shape (n_nodes,)
    categorical : ndarray of bool, shape (n_nodes,), optional
        The node splits its feature's categories: those of ``category_set`` go left.
    category_set : ndarray of uint64, shape (n_nodes, CATEGORY_SET_WORDS), optional
        The left categories of the categorical nodes (bit sets, ``_core.category_sets``;
        zero elsewhere). ``bin_threshold`` of a categorical node is its smallest left code.
    """

    nodes: np.ndarray
    is_split: np.ndarray
    feature: np.ndarray
    bin_threshold: np.ndarray
    missing_left: np.ndarray
    categorical: np.ndarray = None
    category_set: np.ndarray = None

    def __post_init__(self):
        if self.categorical is not None and self.category_set is None:
            # one category, bin_threshold, against the rest
            self.category_set = category_sets([[t] if c else [] for t, c in
                                               zip(self.bin_threshold, self.categorical)])

    def as_heap_arrays(self):
        """Decision arrays indexed by heap id, the layout of ``partition.apply_splits``:
        ``(is_split, feature, split_bin, missing_left, category_set)`` (``is_split`` 1 for
        a numerical split, 2 for a categorical one)."""
        size = int(self.nodes.max()) + 1 if self.nodes.size else 0
        is_split = np.zeros(size, dtype=np.uint8)
        feature = np.zeros(size, dtype=np.int32)
        split_bin = np.zeros(size, dtype=np.uint8)
        missing_left = np.zeros(size, dtype=np.uint8)
        category_set = np.zeros((size, CATEGORY_SET_WORDS), dtype=np.uint64)
        kind = np.asarray(self.is_split, dtype=np.uint8)
        if self.categorical is not None:
            kind = kind * (1 + np.asarray(self.categorical, dtype=np.uint8))
            category_set[self.nodes] = self.category_set
        is_split[self.nodes] = kind
        feature[self.nodes] = self.feature
        split_bin[self.nodes] = self.bin_threshold
        missing_left[self.nodes] = self.missing_left
        return is_split, feature, split_bin, missing_left, category_set


def _ratio(numerator, denominator):
    """``numerator / denominator``, with 0 where the denominator is not positive (0/0 := 0,
    the limit the sensitivity bounds use for empty nodes when λ = 0)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


# -- split candidates and gains ---------------------------------------------------------------


def candidate_mask(n_cuts, n_bins, node_ranges=None, categorical=None):
    """Valid (feature, threshold) pairs.

    Parameters
    ----------
    n_cuts : ndarray of int, shape (n_features,)
        Number of cuts of each feature (its bins are ``0..n_cuts[f]``).
    n_bins : int
        Histogram bins per feature, missing bin included (thresholds ``0..n_bins-2``).
    node_ranges : ndarray of int, shape (n_nodes, n_features, 2), optional
        Bin range ``[lo, hi]`` still reachable at each node given its ancestors' splits on
        the same feature; a threshold must satisfy ``lo <= t < hi`` (numerical features).
    categorical : ndarray of bool, shape (n_features,), optional
        Categorical features: every category ``t <= n_cuts[f]`` is a candidate.

    Returns
    -------
    ndarray of bool, shape (n_features, n_bins - 1) or (n_nodes, n_features, n_bins - 1)
    """
    t = np.arange(n_bins - 1)
    n_candidates = np.asarray(n_cuts).copy()
    if categorical is not None:
        n_candidates = n_candidates + np.asarray(categorical, dtype=n_candidates.dtype)
    base = t[None, :] < n_candidates[:, None]
    if node_ranges is None:
        return base
    lo = node_ranges[:, :, 0][:, :, None]
    hi = node_ranges[:, :, 1][:, :, None]
    reachable = (t[None, None, :] >= lo) & (t[None, None, :] < hi)
    if categorical is not None:
        reachable = reachable | np.asarray(categorical)[None, :, None]
    return base[None] & reachable


def split_gains(sum_g, sum_h, reg_lambda, categorical=None):
    """Gain of every candidate: G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ).

    This is XGBoost's gain without its factor 1/2 (DP-XGBoost eq. (5); DPBoost eq. (3)
    with H = counts). Missing values (the last bin) go left or right. The left child of
    threshold ``t`` holds bins ``<= t``, or bin ``t`` alone for a categorical feature.

    Parameters
    ----------
    sum_g, sum_h : ndarray of float64, shape (n_nodes, n_features, n_bins)
        Per-bin sums (exact or noisy); the last bin holds missing values. With
        ``newton=False`` the caller passes counts as ``sum_h``.
    reg_lambda : float
    categorical : ndarray of bool, shape (n_features,), optional

    Returns
    -------
    ndarray of float64, shape (n_nodes, n_features, n_bins - 1, 2)
        ``[..., t, 0]``: missing values right; ``[..., t, 1]``: missing values left.
    """
    g_miss, h_miss = sum_g[..., -1:], sum_h[..., -1:]
    gl = np.cumsum(sum_g[..., :-1], axis=-1)
    hl = np.cumsum(sum_h[..., :-1], axis=-1)
    g_tot = gl[..., -1:] + g_miss
    h_tot = hl[..., -1:] + h_miss
    if categorical is not None and np.any(categorical):
        one = np.asarray(categorical)[:, None]  # one category against the rest
        gl = np.where(one, sum_g[..., :-1], gl)
        hl = np.where(one, sum_h[..., :-1], hl)
    parent = _ratio(g_tot**2, np.maximum(h_tot, 0.0) + reg_lambda)
    gains = np.empty(gl.shape + (2,))
    for missing_left in (0, 1):
        g_left = gl + missing_left * g_miss
        h_left = hl + missing_left * h_miss
        g_right, h_right = g_tot - g_left, h_tot - h_left
        gains[..., missing_left] = (
            _ratio(g_left**2, np.maximum(h_left, 0.0) + reg_lambda)
            + _ratio(g_right**2, np.maximum(h_right, 0.0) + reg_lambda)
            - parent
        )
    return gains


def _decode(choice, n_features, n_thresholds):
    """Flat candidate index -> (feature, threshold, missing_left)."""
    feature, rest = np.divmod(choice, n_thresholds * 2)
    threshold, missing_left = np.divmod(rest, 2)
    return feature.astype(np.int32), threshold.astype(np.int32), missing_left.astype(bool)


def exponential_splits(nodes, histograms, n_cuts, reg_lambda, newton, gain_sensitivity,
                       epsilon, rng, categorical=None):
    """DP split choice by the exponential mechanism (DP-XGBoost §4.2; DPBoost Alg. 1).

    One selection per node, all at this level's ε (the nodes hold disjoint rows: parallel
    composition). Utility: :func:`split_gains` on the EXACT histograms, with sensitivity
    ``gain_sensitivity`` (ΔG = 3g*² or DPBoost's Lemma 1). No candidate is excluded on
    exact statistics (no min_child_weight check): that would leak.

    Parameters
    ----------
    nodes : ndarray of int64, shape (n_nodes,)
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
        Exact reduced histograms (stay in the coordinator).
    n_cuts : ndarray of int, shape (n_features,)
    reg_lambda : float
    newton : bool
        Hessian sums (True) or counts (False) as H.
    gain_sensitivity : float
    epsilon : float
    rng : RandomStream
    categorical : ndarray of bool, shape (n_features,), optional
        One-against-the-rest candidates on these features (the gain's sensitivity holds
        for any partition of a node's rows into two children).

    Returns
    -------
    LevelSplits
        Public: the selected candidates.
    mechanism : ExponentialMechanism
        For the ledger.
    """
    sum_g = histograms["sum_gradients"]
    sum_h = histograms["sum_hessians"] if newton else histograms["count"].astype(np.float64)
    n_nodes, n_features, n_bins = sum_g.shape
    gains = split_gains(sum_g, sum_h, reg_lambda, categorical)
    mask = np.broadcast_to(candidate_mask(n_cuts, n_bins, categorical=categorical)[
        None, :, :, None], gains.shape)
    mechanism = ExponentialMechanism(gain_sensitivity, epsilon)
    choice = mechanism.select(gains.reshape(n_nodes, -1), mask=mask.reshape(n_nodes, -1), rng=rng)
    is_split = choice >= 0
    feature, threshold, missing_left = _decode(np.maximum(choice, 0), n_features, n_bins - 1)
    return _level_splits(nodes, is_split, feature, threshold, missing_left, categorical), \
        mechanism


def _level_splits(nodes, is_split, feature, threshold, missing_left, categorical,
                  left_codes=None):
    """LevelSplits of chosen candidates; a categorical feature's split is categorical, and
    sends ``left_codes[i]`` left (default: the one category ``threshold[i]``)."""
    if categorical is None:
        return LevelSplits(nodes, is_split, feature, threshold, missing_left & is_split)
    kind = np.asarray(categorical)[feature] & is_split
    if left_codes is None:
        left_codes = [[t] for t in threshold]
    codes = [left_codes[i] if kind[i] else [] for i in range(len(nodes))]
    threshold = np.array([min(c) if c else t for c, t in zip(codes, threshold)],
                         dtype=np.int32)
    return LevelSplits(nodes, is_split, feature, threshold, missing_left & is_split, kind,
                       category_sets(codes))


def random_category_subset(n_categories, rng):
    """A uniformly random non-empty proper subset of ``0..n_categories-1`` (data
    independent; a single category gives ``{0}``: present values left, missing by the
    split's direction).

    Parameters
    ----------
    n_categories : int
    rng : RandomStream

    Returns
    -------
    list of int
    """
    if n_categories <= 1:
        return [0]
    while True:
        bits = rng.uniform_below(2, size=n_categories)
        if 0 < bits.sum() < n_categories:
            return np.flatnonzero(bits).tolist()


def histogram_mechanism(n_features, gradient_bound, denominator_bound, noise_multiplier,
                        n_joint=1):
    """The Gaussian mechanism of one level's (G, H) histograms (see
    :func:`noisy_histogram_splits`): L2 sensitivity ``sqrt(F (g*² + h*²))`` over the 2F
    coordinates one row touches, one σ for G and H alike.

    Parameters
    ----------
    gradient_bound, denominator_bound : float
        A row's L2 bounds in the release (``ReleasePlan.row_bounds``: g* and h*, or 1 for
        counts; the joint bounds of a multiclass round).
    n_joint : int
        Trees whose histograms are released jointly (K of a multiclass round): a row
        changes ``2 F n_joint`` entries of the joint release, which sizes the margin of the
        integer rounding (``privacy/mechanisms.py``).

    Returns
    -------
    GaussianMechanism
    """
    sensitivity = gradient_histogram_l2_sensitivity(gradient_bound, denominator_bound,
                                                    n_features)
    return GaussianMechanism(sensitivity, noise_multiplier=noise_multiplier,
                             coords_per_row=2 * n_features * n_joint)


def _release_histograms(histograms, newton, gradient_bound, denominator_bound,
                        noise_multiplier, rng_g, rng_h, noise, n_joint):
    """The Gaussian release of a level's (G, H) histograms (:func:`histogram_mechanism`;
    H: hessian sums, or counts without ``newton``): (mechanism, noisy G, noisy H), each of
    the histograms' shape."""
    sum_g = histograms["sum_gradients"]
    sum_h = histograms["sum_hessians"] if newton else histograms["count"].astype(np.float64)
    mechanism = histogram_mechanism(histograms.shape[1], gradient_bound, denominator_bound,
                                    noise_multiplier, n_joint)
    noise_g, noise_h = noise if noise is not None else (None, None)
    return (mechanism, mechanism.release(sum_g, rng_g, noise=noise_g),
            mechanism.release(sum_h, rng_h, noise=noise_h))


def noisy_histogram_splits(nodes, histograms, n_cuts, reg_lambda, newton, gradient_bound,
                           denominator_bound, noise_multiplier, rng_g, rng_h, noise=None,
                           n_joint=1, categorical=None):
    """Greedy split on Gaussian-noised gradient histograms (Maddock et al. §4.3.1, "Hist").

    The level's (G, H) histograms of every node and feature are released at once with
    Gaussian noise: one row adds (g, h) to one bin of each of the ``F`` features, so the
    L2 sensitivity of the whole release is ``sqrt(F (g*² + h*²))`` (the nodes hold
    disjoint rows). The split maximising the gain computed on the noisy sums is taken:
    post-processing.

    Parameters
    ----------
    nodes : ndarray of int64, shape (n_nodes,)
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
        Exact sums of the level.
    n_cuts : ndarray of int, shape (n_features,)
    reg_lambda, noise_multiplier : float
    newton : bool
        The denominators are the hessian sums (True) or the counts.
    gradient_bound, denominator_bound : float
        A row's L2 bounds (:func:`histogram_mechanism`).
    rng_g, rng_h : RandomStream
        Streams of the G and H releases.
    noise : tuple of two ndarray of int64, shape (n_nodes * n_features * n_bins,), optional
        Their noise drawn beforehand (:meth:`GaussianMechanism.draw_noise` with the
        mechanism of :func:`histogram_mechanism` and the same streams).
    n_joint : int
        As in :func:`histogram_mechanism`.
    categorical : ndarray of bool, shape (n_features,), optional
        Their candidates are the prefixes of their categories sorted by the released
        G/(H + λ) (:func:`category_order`).

    Returns
    -------
    LevelSplits
    mechanism : GaussianMechanism
        For the ledger (sensitivity and σ of the whole release).
    noisy_g, noisy_h : ndarray of float64, shape (n_nodes, n_features, n_bins)
        The DP releases themselves.
    """
    n_nodes, n_features, n_bins = histograms.shape
    mechanism, noisy_g, noisy_h = _release_histograms(
        histograms, newton, gradient_bound, denominator_bound, noise_multiplier, rng_g, rng_h,
        noise, n_joint)
    if categorical is not None:
        # bins beyond a feature's own (it has fewer categories or cuts than the missing bin)
        # hold no row: a public fact, so their noise is dropped (post-processing)
        used = np.arange(n_bins - 1)[None, :] <= np.asarray(n_cuts)[:, None]  # 0..n_cuts
        empty = np.concatenate([~used, np.zeros((n_features, 1), dtype=bool)], axis=1)
        noisy_g = np.where(empty[None], 0.0, noisy_g)
        noisy_h = np.where(empty[None], 0.0, noisy_h)
    positive_h = np.maximum(noisy_h, 0.0)
    # a categorical feature's candidates are the prefixes of its categories sorted by their
    # noisy G/(H + λ) (post-processing); a numerical feature's bins keep their order
    if categorical is None:
        order, gains = None, split_gains(noisy_g, positive_h, reg_lambda)
    else:
        order = category_order(noisy_g, positive_h, n_cuts, reg_lambda, categorical)
        gains = split_gains(np.take_along_axis(noisy_g, order, axis=2),
                            np.take_along_axis(positive_h, order, axis=2), reg_lambda)
    mask = candidate_mask(n_cuts, n_bins)
    if categorical is not None:  # prefixes of 1..k_f categories (one category: itself)
        one = np.asarray(categorical, dtype=bool)
        prefixes = np.arange(n_bins - 1)[None, :] < np.maximum(np.asarray(n_cuts), 1)[:, None]
        mask = np.where(one[:, None], prefixes, mask)
    mask = np.broadcast_to(mask[None, :, :, None], gains.shape)
    flat = np.where(mask, gains, -np.inf).reshape(n_nodes, -1)
    choice = np.argmax(flat, axis=1)
    is_split = np.isfinite(flat[np.arange(n_nodes), choice])
    feature, threshold, missing_left = _decode(choice, n_features, n_bins - 1)
    left_codes = None if order is None else [order[i, f, :t + 1].tolist()
                                             for i, (f, t) in enumerate(zip(feature, threshold))]
    return (_level_splits(nodes, is_split, feature, threshold, missing_left, categorical,
                          left_codes), mechanism, noisy_g, noisy_h)


def category_order(sum_g, sum_h, n_cuts, reg_lambda, categorical=None):
    """Bin order per node and feature: a categorical feature's ``k_f + 1`` categories by
    increasing ``G/(H + λ)`` (its prefixes are then the candidate left sets, as in
    LightGBM's many-vs-many categorical splits), every other bin where it is.

    Parameters
    ----------
    sum_g, sum_h : ndarray of float64, shape (n_nodes, n_features, n_bins)
        Released (noisy) sums; ``sum_h`` non-negative.
    n_cuts : ndarray of int, shape (n_features,)
    reg_lambda : float
    categorical : ndarray of bool, shape (n_features,), optional

    Returns
    -------
    ndarray of int64, shape (n_nodes, n_features, n_bins)
        A permutation of the bins of each node and feature.
    """
    order = np.broadcast_to(np.arange(sum_g.shape[2]), sum_g.shape).copy()
    if categorical is None:
        return order
    for f in np.flatnonzero(categorical):
        c = int(n_cuts[f]) + 1
        ratio = _ratio(sum_g[:, f, :c], sum_h[:, f, :c] + reg_lambda)
        order[:, f, :c] = np.argsort(ratio, axis=1, kind="stable")
    return order


def random_splits(nodes, node_ranges, n_cuts, feature_selection, tree_index, rng,
                  categorical=None):
    """Totally random splits (Maddock et al. §4.3.2 "TR"; S-BDT): data independent.

    Each node picks a feature (uniformly among the features that can still be split at
    it, or feature ``tree_index mod m`` with ``feature_selection="cyclic"``), then a
    threshold uniformly in its reachable bin range (a categorical feature: a uniformly
    random non-empty proper subset of its categories, :func:`random_category_subset`), and
    a direction for missing values by a fair coin. Nothing
    here reads the data: no privacy is spent.

    Parameters
    ----------
    nodes : ndarray of int64, shape (n_nodes,)
    node_ranges : ndarray of int, shape (n_nodes, n_features, 2)
        Reachable bin range [lo, hi] of each feature at each node.
    n_cuts : ndarray of int, shape (n_features,)
    feature_selection : {"random", "cyclic"}
    tree_index : int
        The boosting round (the tree, unless a multiclass round grows one per class).
    rng : RandomStream
    categorical : ndarray of bool, shape (n_features,), optional

    Returns
    -------
    LevelSplits
    """
    n_nodes, n_features = node_ranges.shape[:2]
    start_all, width_all = threshold_ranges(node_ranges, n_cuts, categorical)
    splittable = node_ranges[:, :, 1] > node_ranges[:, :, 0]
    if feature_selection == "cyclic":
        cyclic = tree_index % n_features
        allowed = np.zeros_like(splittable)
        allowed[:, cyclic] = True
        splittable = splittable & allowed
    n_ok = splittable.sum(axis=1)
    is_split = n_ok > 0
    feature = np.zeros(n_nodes, dtype=np.int32)
    threshold = np.zeros(n_nodes, dtype=np.int32)
    missing_left = np.zeros(n_nodes, dtype=bool)
    rows = np.flatnonzero(is_split)
    if rows.size:
        # The k-th splittable feature of each node, k uniform in [0, n_ok).
        k = rng.uniform_below(n_ok[rows])
        rank = np.cumsum(splittable[rows], axis=1) - 1
        f = np.argmax(splittable[rows] & (rank == k[:, None]), axis=1)
        feature[rows] = f
        threshold[rows] = start_all[rows, f] + rng.uniform_below(width_all[rows, f])
        missing_left[rows] = rng.uniform_below(2, size=rows.size).astype(bool)
    left_codes = None
    if categorical is not None:  # a categorical feature: a random subset of its categories
        left_codes = [random_category_subset(int(n_cuts[feature[i]]) + 1, rng)
                      if is_split[i] and categorical[feature[i]] else None
                      for i in range(n_nodes)]
    return _level_splits(nodes, is_split, feature, threshold, missing_left, categorical,
                         left_codes)


def threshold_ranges(node_ranges, n_cuts, categorical=None):
    """Where a random split may put its threshold, per node and feature (public).

    A numerical feature's threshold lies in its reachable bin range ``[lo, hi)``; a
    categorical feature's is any of its ``n_cuts + 1`` categories (the callers then draw a
    set of categories, :func:`random_category_subset`).

    Parameters
    ----------
    node_ranges : ndarray of int, shape (n_nodes, n_features, 2)
    n_cuts : ndarray of int, shape (n_features,)
    categorical : ndarray of bool, shape (n_features,), optional

    Returns
    -------
    start, width : ndarray of int64, shape (n_nodes, n_features)
        Thresholds ``start .. start + width - 1``; ``width`` is 0 where a numerical
        feature cannot be split any more.
    """
    start = node_ranges[:, :, 0].astype(np.int64)
    width = np.maximum(node_ranges[:, :, 1] - node_ranges[:, :, 0], 0).astype(np.int64)
    if categorical is not None:
        one = np.asarray(categorical, dtype=bool)[None, :]
        start = np.where(one, 0, start)
        width = np.where(one, np.asarray(n_cuts, dtype=np.int64)[None, :] + 1, width)
    return start, width


def collapse_at_thresholds(histograms, thresholds, categorical=None, left_codes=None):
    """Each node's histogram of each feature summed into three bins at one threshold.

    Parameters
    ----------
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
        The last bin holds missing values.
    thresholds : ndarray of int, shape (n_nodes, n_features)
    categorical : ndarray of bool, shape (n_features,), optional
    left_codes : dict of (int, int) -> list of int, optional
        The left categories of node ``i`` on categorical feature ``f`` at key ``(i, f)``
        (default: the one category ``thresholds[i, f]``).

    Returns
    -------
    ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, 3)
        Bin 0: the left child (bins ``<= t``, or the left categories of a categorical
        feature); bin 1: the other non-missing bins; bin 2: missing values. A row lies in
        one of the three, as it lies in one bin of the full histogram.
    """
    n_bins = histograms.shape[-1]
    t = np.asarray(thresholds, dtype=np.int64)[..., None]
    b = np.arange(n_bins - 1)
    left = b <= t
    if categorical is not None and np.any(categorical):
        left = np.where(np.asarray(categorical, dtype=bool)[None, :, None], b == t, left)
        for (i, f), codes in (left_codes or {}).items():
            left[i, f] = np.isin(b, codes)
    out = np.zeros(histograms.shape[:2] + (3,), dtype=histograms.dtype)
    for name in histograms.dtype.names:
        cells = histograms[name][..., :-1]
        out[name][..., 0] = np.where(left, cells, 0).sum(axis=-1)
        out[name][..., 1] = np.where(left, 0, cells).sum(axis=-1)
        out[name][..., 2] = histograms[name][..., -1]
    return out


def partially_random_splits(nodes, histograms, node_ranges, n_cuts, reg_lambda, newton,
                            gradient_bound, denominator_bound, noise_multiplier, rng_structure,
                            rng_g, rng_h, noise=None, n_joint=1, categorical=None):
    """Partially random splits (Maddock et al. §4.3.2 "PR"): one random threshold per
    feature, the best of them on noisy gains.

    At each node every feature draws one threshold uniformly where it can still split
    (:func:`threshold_ranges`; a categorical feature: a random subset of its categories,
    :func:`random_category_subset`; data independent, from ``rng_structure``). The node's rows
    are summed into the left child, the right child and the missing values of each
    feature's threshold (:func:`collapse_at_thresholds`), and the level's sums are released
    at once with Gaussian noise: a row adds (g, h) to one of the three cells of each
    feature, so the L2 sensitivity is ``sqrt(F (g*² + h*²))``, as for the full histograms
    (:func:`histogram_mechanism`; the nodes hold disjoint rows). The split with the largest
    gain on the noisy sums is taken, missing values going the better way, and the children's
    sums are read off the same release: post-processing, so the leaves below the last level
    cost nothing more.

    Maddock et al.'s code releases the left child's sums and takes the right one as the
    parent's noisy total minus the left, with the root's total released once per tree;
    releasing the right cell too costs the same (a row is in one of the two), needs no root
    release, and keeps every child's noise at one σ instead of growing with the depth.

    Parameters
    ----------
    node_ranges : ndarray of int, shape (n_nodes, n_features, 2)
        Reachable bin range of each feature at each node.
    rng_structure : RandomStream
        The public stream of the thresholds.
    noise : tuple of two ndarray of int64, shape (n_nodes * n_features * 3,), optional
        The release's noise drawn beforehand.
    nodes, histograms, n_cuts, reg_lambda, newton, gradient_bound, denominator_bound
        As in :func:`noisy_histogram_splits`; so are ``noise_multiplier``, ``rng_g``,
        ``rng_h``, ``n_joint`` and ``categorical``.

    Returns
    -------
    LevelSplits
    mechanism : GaussianMechanism
    node_sums : ndarray of float64, shape (n_nodes, 2)
        Noisy (G, H) of each node: the mean over the features of their three cells.
    child_sums : ndarray of float64, shape (2 * n_split, 2)
        Noisy (G, H) of the children of the split nodes, in the order of :func:`children`.
    """
    n_nodes, n_features = node_ranges.shape[:2]
    start, width = threshold_ranges(node_ranges, n_cuts, categorical)
    splittable = node_ranges[:, :, 1] > node_ranges[:, :, 0]  # as random_splits
    thresholds = start + rng_structure.uniform_below(np.maximum(width, 1)).reshape(width.shape)
    subsets = {}  # a categorical feature: a random subset of its categories
    if categorical is not None:
        for f in np.flatnonzero(categorical):
            for i in range(n_nodes):
                subsets[i, f] = random_category_subset(int(n_cuts[f]) + 1, rng_structure)
    mechanism, noisy_g, noisy_h = _release_histograms(
        collapse_at_thresholds(histograms, thresholds, categorical, subsets), newton,
        gradient_bound, denominator_bound, noise_multiplier, rng_g, rng_h, noise, n_joint)
    # threshold 0 of the 3-cell histogram is the drawn threshold: [..., missing right/left]
    gains = split_gains(noisy_g, np.maximum(noisy_h, 0.0), reg_lambda)[:, :, 0, :]
    flat = np.where(splittable[:, :, None], gains, -np.inf).reshape(n_nodes, -1)
    choice = np.argmax(flat, axis=1)
    is_split = np.isfinite(flat[np.arange(n_nodes), choice])
    feature, missing_left = (choice // 2).astype(np.int32), (choice % 2).astype(bool)
    threshold = thresholds[np.arange(n_nodes), feature].astype(np.int32)
    splits = _level_splits(nodes, is_split, feature, threshold, missing_left, categorical,
                           [subsets.get((i, f)) for i, f in enumerate(feature)])
    node_sums = np.stack([noisy_g.sum(axis=2).mean(axis=1), noisy_h.sum(axis=2).mean(axis=1)],
                         axis=1)
    split = np.flatnonzero(is_split)
    cells = np.stack([noisy_g, noisy_h], axis=-1)[split, feature[split]]  # (n_split, 3, 2)
    left = cells[:, 0] + splits.missing_left[split, None] * cells[:, 2]
    right = cells[:, 1] + (~splits.missing_left[split])[:, None] * cells[:, 2]
    child_sums = np.stack([left, right], axis=1).reshape(-1, 2)
    return splits, mechanism, node_sums, child_sums


def child_ranges(node_ranges, splits):
    """Reachable bin ranges of the children of the split nodes.

    Returns
    -------
    ndarray of int64, shape (2 * n_split, n_features, 2)
        Ranges of children ``2p+1, 2p+2`` for the split nodes ``p`` in order.
    """
    numerical = np.asarray(splits.is_split, dtype=bool)
    if splits.categorical is not None:  # a category split leaves the bin ranges as they are
        numerical = numerical & ~np.asarray(splits.categorical, dtype=bool)
    split = np.flatnonzero(splits.is_split)
    both = np.repeat(node_ranges[split].astype(np.int64)[:, None], 2, axis=1)
    narrowed = numerical[split]
    f = np.asarray(splits.feature)[split][narrowed]
    t = np.asarray(splits.bin_threshold, dtype=np.int64)[split][narrowed]
    rows = np.flatnonzero(narrowed)
    both[rows, 0, f, 1] = np.minimum(both[rows, 0, f, 1], t)
    both[rows, 1, f, 0] = np.maximum(both[rows, 1, f, 0], t + 1)
    return both.reshape(-1, node_ranges.shape[1], 2)


def children(splits):
    """Heap ids ``2p + 1, 2p + 2`` of the children of the split nodes, in order.

    Returns
    -------
    ndarray of int64, shape (2 * n_split,)
    """
    parents = splits.nodes[splits.is_split].astype(np.int64)
    return np.stack([2 * parents + 1, 2 * parents + 2], axis=1).reshape(-1)


def node_totals(histograms):
    """Exact (G, H, count) of each node, summed over the bins of its first feature (every
    row lies in one bin of each feature, the missing bin included).

    Parameters
    ----------
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)

    Returns
    -------
    ndarray of float64, shape (n_nodes, 3)
    """
    first = histograms[:, 0, :]
    return np.stack([first["sum_gradients"].sum(axis=1), first["sum_hessians"].sum(axis=1),
                     first["count"].astype(np.float64).sum(axis=1)], axis=1)


def child_totals(histograms, splits):
    """Exact (G, H, count) of the children of the split nodes, from the parents' histograms:
    the left child holds bins ``<= t`` of the split feature (the bins of its left set for a
    categorical split; and the missing bin when missing values go left), the right child
    the rest.

    Parameters
    ----------
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
        Of ``splits.nodes``, in order.
    splits : LevelSplits

    Returns
    -------
    ndarray of float64, shape (2 * n_split, 3)
        Rows in the order of :func:`children`.
    """
    out = []
    for i in np.flatnonzero(splits.is_split):
        column = histograms[i, splits.feature[i]]
        cells = np.stack([column["sum_gradients"], column["sum_hessians"],
                          column["count"].astype(np.float64)], axis=1)
        total = cells.sum(axis=0)
        t = splits.bin_threshold[i]
        if splits.categorical is not None and splits.categorical[i]:
            left = cells[category_set_codes(splits.category_set[i])].sum(axis=0)
        else:
            left = cells[:t + 1].sum(axis=0)
        if splits.missing_left[i]:
            left = left + cells[-1]
        out.extend([left, total - left])
    return np.array(out, dtype=np.float64).reshape(-1, 3)


# -- leaves -----------------------------------------------------------------------------------


def leaf_denominator(noisy_h, min_child_weight, reg_lambda):
    """``max(H, min_child_weight) + λ``: the floor replaces an exact-count eligibility test."""
    return np.maximum(noisy_h, min_child_weight) + reg_lambda


def leaf_values(noisy_g, noisy_h, min_child_weight, reg_lambda, leaf_bound):
    """Leaf values from released sums (post-processing): ``V = -G̃ / (max(H̃, N) + λ)``, 0
    where H̃ < 0 (S-BDT's cut-off), clipped to ±leaf_bound.

    Parameters
    ----------
    noisy_g, noisy_h : ndarray of float64, shape (n_leaves,)
        Released gradient sums and denominators (hessian sums or counts).

    Returns
    -------
    ndarray of float64, shape (n_leaves,)
    """
    values = np.where(noisy_h < 0, 0.0,
                      _ratio(-noisy_g, leaf_denominator(noisy_h, min_child_weight, reg_lambda)))
    return np.clip(values, -leaf_bound, leaf_bound)


def laplace_leaves(sums, reg_lambda, min_child_weight, clip, sensitivity, epsilon, rng):
    """Leaf values with Laplace noise on the value (DP-XGBoost §4.3; DPBoost Alg. 1 l.14).

    ``V = clip(-G / (max(n, N) + λ), ±clip) + Lap(ΔV / ε)`` per leaf; leaves hold disjoint
    rows, so all leaves of a tree share one ε (parallel composition).

    Parameters
    ----------
    sums : ndarray of float64, shape (n_leaves, 3)
        Exact (G, H, count) per leaf.
    clip : float
        Bound of |V| before noise (constant g*, or DPBoost's geometric bound).
    sensitivity : float
        ΔV (see :func:`~dpxgb_dask.privacy.sensitivity.leaf_value_sensitivity`).

    Returns
    -------
    values : ndarray of float64, shape (n_leaves,)
    mechanism : LaplaceMechanism
    """
    exact = _ratio(-sums[:, 0], leaf_denominator(sums[:, 2], min_child_weight, reg_lambda))
    mechanism = LaplaceMechanism(sensitivity, epsilon, coords_per_row=1)  # a row is in one leaf
    return mechanism.release(np.clip(exact, -clip, clip), rng), mechanism


def gaussian_leaves(sums, newton, reg_lambda, min_child_weight, gradient_bound, denominator_bound,
                    noise_multiplier, ratio, leaf_bound, rng_g, rng_h, n_joint=1):
    """Leaf values from Gaussian releases of (G, H) with leaf-balanced noise (S-BDT;
    Maddock et al. §4.2 when ``ratio = h*²/(g*² + h*²)``).

    Numerator and denominator get independent noise with standard deviations
    ``σ_G = z g* / sqrt(1 - r)`` and ``σ_H = z h* / sqrt(r)``; a row's whitened sensitivity
    is ``sqrt(g²/σ_G² + h²/σ_H²) <= 1/z``, so the pair is one Gaussian mechanism with noise
    multiplier ``z`` (RDP α/(2z²)), for all leaves at once (disjoint rows). Then
    :func:`leaf_values`.

    Parameters
    ----------
    sums : ndarray of float64, shape (n_leaves, 3)
        Exact (G, H, count) per leaf.
    newton : bool
        H = hessian sums or counts.
    gradient_bound, denominator_bound : float
        A row's L2 bounds in the release (g* and h*, or 1 for counts; the joint bounds of
        a multiclass round, ``ReleasePlan.row_bounds``).
    noise_multiplier : float
        z of the pair.
    ratio : float in (0, 1)
        r, the denominator's share.
    n_joint : int
        Trees whose leaves are released jointly (K of a multiclass round): a row changes
        one leaf of each, which sizes the margin of the integer rounding.

    Returns
    -------
    values : ndarray of float64, shape (n_leaves,)
    noisy_g, noisy_h : ndarray of float64, shape (n_leaves,)
        The DP releases.
    """
    h_bound = denominator_bound
    denominator = sums[:, 1] if newton else sums[:, 2]
    sigma_g, sigma_h = leaf_balanced_sigmas(noise_multiplier, gradient_bound, h_bound, ratio)
    noisy_g = GaussianMechanism(gradient_bound, sigma=sigma_g, coords_per_row=n_joint).release(
        sums[:, 0], rng_g)
    noisy_h = GaussianMechanism(h_bound, sigma=sigma_h, coords_per_row=n_joint).release(
        denominator, rng_h)
    values = leaf_values(noisy_g, noisy_h, min_child_weight, reg_lambda, leaf_bound)
    return values, noisy_g, noisy_h


def noisy_average_leaves(sums, reg_lambda, min_child_weight, gradient_bound, epsilon_sum,
                         epsilon_count, leaf_bound, rng_g, rng_n):
    """Leaf values as a noisy gradient sum over a noisy row count (NoisyAverage,
    DP-XGBoost Alg. 1), both with Laplace noise: ``Lap(g*/ε_sum)`` and ``Lap(1/ε_count)``.

    Unlike the paper, the count is noised too: dividing by an exact count is not private
    under add/remove (it changes the ratio by (n+1+λ)/(n+λ)). Then :func:`leaf_values`
    with the count as denominator.

    Parameters
    ----------
    sums : ndarray of float64, shape (n_leaves, 3)
        Exact (G, H, count) per leaf.

    Returns
    -------
    values : ndarray of float64, shape (n_leaves,)
    mechanisms : tuple of LaplaceMechanism
    """
    mech_g = LaplaceMechanism(gradient_bound, epsilon_sum, coords_per_row=1)
    mech_n = LaplaceMechanism(1.0, epsilon_count, coords_per_row=1)
    noisy_g = mech_g.release(sums[:, 0], rng_g)
    noisy_n = mech_n.release(sums[:, 2], rng_n)
    values = leaf_values(noisy_g, noisy_n, min_child_weight, reg_lambda, leaf_bound)
    return values, (mech_g, mech_n)


# -- candidates and bounds (post-processing of releases) -------------------------------------


def uniform_cuts(feature_bounds, max_bin):
    """``max_bin - 1`` equal-width cuts per feature over the public bounds (public)."""
    return [np.linspace(lo, hi, max_bin + 1)[1:-1] for lo, hi in feature_bounds]


def sketch_cuts(noisy_weights, feature_bounds, max_bin):
    """Cut points from DP histograms of row weights (DP-XGBoost §4.1): the noisy bins,
    clipped at zero, are weighted points of the weighted quantile sketch (post-processing).

    Parameters
    ----------
    noisy_weights : ndarray of float64, shape (n_features, n_fine_bins)
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    n_fine = noisy_weights.shape[1]
    cuts = []
    for (lo, hi), weights in zip(feature_bounds, noisy_weights):
        centres = lo + (np.arange(n_fine) + 0.5) * (hi - lo) / n_fine
        summary = make_summary(centres, np.clip(weights, 0.0, None))
        c = query_cuts(summary, max_bin - 1)
        cuts.append(c[c < hi] if c.size else np.linspace(lo, hi, max_bin + 1)[1:-1])
    return cuts


def hessian_refined_cuts(noisy_hessians, cuts, feature_bounds, max_bin, uniform_share=0.1):
    """Iterative-Hessian candidates (Maddock et al. §4.5.2): new cuts at the quantiles of
    the Hessian mass released over the current bins (post-processing).

    The released mass of each current bin is spread uniformly over the bin (mixed with a
    ``uniform_share`` of the uniform density, so that empty regions keep some candidates),
    and the ``max_bin - 1`` quantiles of that density are the new cuts: bins where the
    Hessian mass is large are split finer.

    Parameters
    ----------
    noisy_hessians : ndarray of float64, shape (n_features, n_bins)
        Noisy Hessian sums per current bin (the last bin, missing values, is ignored).
    cuts : list of ndarray of float64
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    new = []
    targets = np.arange(1, max_bin) / max_bin
    for f, ((lo, hi), c) in enumerate(zip(feature_bounds, cuts)):
        edges = np.concatenate([[lo], c, [hi]])
        mass = np.clip(noisy_hessians[f, :edges.size - 1], 0.0, None)
        total = mass.sum()
        widths = np.diff(edges)
        density = (1.0 - uniform_share) * (mass / total if total > 0 else widths / (hi - lo)) \
            + uniform_share * widths / (hi - lo)
        cdf = np.concatenate([[0.0], np.cumsum(density)])
        cdf /= cdf[-1]
        refined = np.interp(targets, cdf, edges)
        refined = np.unique(refined[(refined > lo) & (refined < hi)])
        new.append(refined)
    return new


#: Probability that the DP bounds estimate is wider than needed because of noise alone.
BOUNDS_FAILURE_PROBABILITY = 0.01
#: Bounds of a feature whose DP estimate found nothing above the noise.
DEFAULT_UNRESOLVED_BOUNDS = (-1.0, 1.0)


def bounds_from_magnitude_counts(noisy, noise_scale, n_exponents, min_exponent):
    """Feature bounds from DP counts of rows by sign and binary magnitude (post-processing).

    The outermost bins whose noisy count clears ``noise_scale · log(size / 2β)`` (β =
    ``BOUNDS_FAILURE_PROBABILITY``: the chance that Laplace noise alone clears it) give
    each feature's (lo, hi); a feature with no such bin takes
    ``DEFAULT_UNRESOLVED_BOUNDS``.

    Parameters
    ----------
    noisy : ndarray of float64, shape (n_features, 2 * n_exponents + 1)
        Laplace release of ``ops.log2_magnitude_histogram`` (its bin layout).
    noise_scale : float
        The Laplace scale Δ/ε of that release.
    n_exponents, min_exponent : int

    Returns
    -------
    bounds : ndarray of float64, shape (n_features, 2)
    unresolved : list of int
        Features that took the default.
    """
    n_features, n_bins = noisy.shape
    threshold = noise_scale * math.log(noisy.size / (2 * BOUNDS_FAILURE_PROBABILITY))
    k = n_exponents
    # Bin edges: negative bins n-1-k hold [-2^(k+1+m), -2^(k+m)); the middle bin holds
    # (-2^m, 2^m); positive bins n+1+k hold [2^(k+m), 2^(k+1+m)).
    upper = np.empty(n_bins)
    lower = np.empty(n_bins)
    e = min_exponent + np.arange(k)
    lower[k + 1:], upper[k + 1:] = 2.0**e, 2.0 ** (e + 1)
    lower[:k], upper[:k] = -(2.0 ** (e[::-1] + 1)), -(2.0 ** e[::-1])
    lower[k], upper[k] = -(2.0**min_exponent), 2.0**min_exponent
    bounds = np.empty((n_features, 2))
    unresolved = []
    for f in range(n_features):
        above = np.flatnonzero(noisy[f] > threshold)
        if above.size == 0:
            unresolved.append(f)
            bounds[f] = DEFAULT_UNRESOLVED_BOUNDS
        else:
            bounds[f] = lower[above[0]], upper[above[-1]]
    return bounds, unresolved


def data_bounds(stacked_min_max):
    """Bounds forced from the data (``feature_bounds="data"``, not DP: the user was warned).

    Parameters
    ----------
    stacked_min_max : ndarray of float64, shape (n_partitions, n_features, 2)
        Exact per-partition (nanmin, nanmax), NaN for all-missing.

    Returns
    -------
    ndarray of float64, shape (n_features, 2) with lo < hi
    """
    with np.errstate(all="ignore"):
        lo = np.nanmin(stacked_min_max[:, :, 0], axis=0)
        hi = np.nanmax(stacked_min_max[:, :, 1], axis=0)
    lo = np.where(np.isnan(lo), 0.0, lo)
    hi = np.where(np.isnan(hi) | (hi <= lo), lo + 1.0, hi)
    return np.stack([lo, hi], axis=1)
