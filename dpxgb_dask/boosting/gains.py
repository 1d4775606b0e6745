"""The candidates of a split at a node and their gains, computed on exact or released sums.

Split candidates of a feature ``f`` with ``k_f`` cuts are the thresholds ``t = 0..k_f-1``
("bin <= t goes left") times the direction of missing values (left, right). A categorical
feature (``categorical[f]``; its bins are the codes of its ``k_f + 1`` public categories)
sends a set of its categories left: a random subset (:func:`random_category_subset`), the
best prefix of the categories sorted by their released G/(H + λ) (:func:`category_order`),
or one category against the rest (the exponential mechanism's candidates ``t = 0..k_f``,
"bin == t"). How each split method chooses among them is in
:mod:`~dpxgb_dask.boosting.splits`.
"""
import numpy as np

from .._core.gains import split_gains as gains_kernel


def safe_ratio(numerator, denominator):
    """``numerator / denominator``, with 0 where the denominator is not positive (0/0 := 0,
    the limit the sensitivity bounds use for empty nodes when λ = 0)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


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


#: A released child's hessian sum enters a gain as at least this many standard deviations of
#: its noise (:class:`ReleasedNoise`): below it, the released H cannot be told from zero, and
#: dividing by it would let the noise of near-empty children pick the splits. Scored on
#: training folds (``benchmarks/ablate_greedy.py --grid floor``): without a floor the greedy
#: methods' own defaults lose up to 0.26 validation AUC, 1σ to 4σ score within the seeds'
#: spread, and 2σ is kept. Maddock et al.'s configuration (g* = 1, h* = 1/4, λ = 1) with
#: partially random splits scores 0.01 higher at ε = 4 without the floor and lower at
#: ε <= 1 (``benchmarks/results/greedy_ablation/floor.md``).
NOISE_FLOOR_SDS = 2.0


class ReleasedNoise:
    """What is public about the Gaussian noise of a released histogram: which cells carry
    it, and its standard deviation (the same for G and H).

    With it, a child's term of the gain (:func:`split_gains`), from released sums over
    ``k`` noisy cells, is::

        max(G̃² − z² k σ², 0) / (max(H̃, c σ √k) + λ),   c = NOISE_FLOOR_SDS.

    G̃ = G + N(0, kσ²). With z = 1, G̃² − kσ² estimates G² without the noise's bias, which
    otherwise favours children summed from many cells. With z > 1 only the part of G̃²
    beyond z noise standard deviations counts (a soft threshold): where no candidate's
    children are told from noise, every gain of a node is 0 and the split is drawn among
    them at random (:func:`argmax_random_ties`), instead of following the noise of the
    cells with the widest spread, the near-empty tails, in every tree. The floor keeps a
    child whose released H is within c standard deviations of zero from dividing by noise.
    All are public quantities (post-processing of the release).

    Parameters
    ----------
    cells : ndarray of float64, shape (n_nodes, n_features, n_bins)
        1 where a cell was released with noise, 0 where its noise was dropped because the
        cell is known to hold no row (public: bins the node's ancestors' splits cut off, or
        beyond a categorical feature's categories).
    sigma : float
        The noise's standard deviation σ per cell.
    significance : float, default 1.0
        z in the term above: a child's G̃ counts by how far its square exceeds z² times
        its noise variance. 1 is the unbiased estimate of G² (``gain_estimate=
        "noise_aware"``); the split methods' ``significance_sds`` for
        ``gain_estimate="significant"``.
    """

    def __init__(self, cells, sigma, significance=1.0):
        self.cells = np.asarray(cells, dtype=np.float64)
        self.sigma = float(sigma)
        self.significance = float(significance)

    def floored(self, noisy_h):
        """Released per-cell H floored as a child's term floors one cell."""
        return np.maximum(noisy_h, self._floor(self.cells))

    def _floor(self, k):
        """c σ √k: the least H̃ of a sum over ``k`` noisy cells."""
        return NOISE_FLOOR_SDS * self.sigma * np.sqrt(k)


def argmax_random_ties(scores, rng):
    """Each row's best column, ties broken uniformly at random.

    Post-processing: the scores are a DP release's, and the draw reads the public
    structure stream. Equal maxima are the rule, not an accident, where every candidate of
    a node scores 0 (:class:`ReleasedNoise` with z > 1): the first of them would
    always be feature 0's lowest threshold.

    Parameters
    ----------
    scores : ndarray of float64, shape (n_rows, n_columns)
        ``-inf`` marks a column that is no candidate.
    rng : RandomStream
        One ``uniform_below`` draw per row.

    Returns
    -------
    ndarray of int64, shape (n_rows,)
        The chosen column (a row of ``-inf`` only: one of them).
    """
    tied = scores == scores.max(axis=1, keepdims=True)
    k = rng.uniform_below(tied.sum(axis=1))
    return np.argmax(tied & (np.cumsum(tied, axis=1) - 1 == k[:, None]), axis=1)


def split_gains(sum_g, sum_h, reg_lambda, categorical=None, parent_term=True, noise=None):
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
    parent_term : bool, default True
        False leaves out −G²/(H+λ), which is the same for every candidate of a node: the
        exponential mechanism's utilities, which are rounded to a grid, must not carry a
        data-dependent common term (its rounding would move a utility by one grid step
        more than the children's terms can, see
        :class:`~dpxgb_dask.privacy.exponential.ExponentialMechanism`).
    noise : ReleasedNoise, optional
        The sums are a Gaussian release: each term is the noise-aware term of
        :class:`ReleasedNoise` over the noisy cells it sums (its ``cells`` in the bins'
        order of ``sum_g``). Without it every term is G²/(max(H, 0) + λ).

    Returns
    -------
    ndarray of float64, shape (n_nodes, n_features, n_bins - 1, 2)
        ``[..., t, 0]``: missing values right; ``[..., t, 1]``: missing values left.
    """
    sum_g = np.ascontiguousarray(sum_g, dtype=np.float64)
    sum_h = np.ascontiguousarray(sum_h, dtype=np.float64)
    n_nodes, n_features, n_bins = sum_g.shape
    one_vs_rest = np.zeros(n_features, dtype=np.uint8) if categorical is None else \
        np.ascontiguousarray(categorical, dtype=np.uint8)
    gains = np.empty((n_nodes, n_features, max(n_bins - 1, 0), 2))
    if noise is None:  # (exact sums, or plain gains: no cell counts to carry)
        gains_kernel(sum_g, sum_h, _NO_CELLS, one_vs_rest, reg_lambda, parent_term, False,
                     0.0, 0.0, 0.0, gains)
    else:
        cells = np.ascontiguousarray(np.broadcast_to(noise.cells, sum_g.shape))
        gains_kernel(sum_g, sum_h, cells, one_vs_rest, reg_lambda, parent_term, True,
                     noise.significance**2, noise.sigma**2, NOISE_FLOOR_SDS * noise.sigma,
                     gains)
    return gains


#: The cell counts of gains without noise terms (the kernel reads none).
_NO_CELLS = np.zeros((0, 0, 0))


def decode_candidates(choice, n_features, n_thresholds):
    """Flat candidate index -> (feature, threshold, missing_left): candidates are ordered
    by feature, then threshold, then the direction of missing values (right, left)."""
    feature, rest = np.divmod(choice, n_thresholds * 2)
    threshold, missing_left = np.divmod(rest, 2)
    return feature.astype(np.int32), threshold.astype(np.int32), missing_left.astype(bool)


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
        ratio = safe_ratio(sum_g[:, f, :c], sum_h[:, f, :c] + reg_lambda)
        order[:, f, :c] = np.argsort(ratio, axis=1, kind="stable")
    return order


def reachable_bins(node_ranges, n_cuts, n_bins, categorical=None):
    """The bins that can hold rows of each node (public: from the ancestors' splits and the
    features' cuts).

    Parameters
    ----------
    node_ranges : ndarray of int, shape (n_nodes, n_features, 2)
        Reachable bin range ``[lo, hi]`` (both included) of each numerical feature.
    n_cuts : ndarray of int, shape (n_features,)
    n_bins : int
        Bins per feature, the missing bin (last, always reachable) included.
    categorical : ndarray of bool, shape (n_features,), optional
        A categorical feature's bins are its ``n_cuts + 1`` categories at every node.

    Returns
    -------
    ndarray of bool, shape (n_nodes, n_features, n_bins)
    """
    b = np.arange(n_bins)[None, None, :]
    lo, hi = node_ranges[:, :, 0:1], node_ranges[:, :, 1:2]
    reachable = (b >= lo) & (b <= hi)
    if categorical is not None and np.any(categorical):
        one = np.asarray(categorical, dtype=bool)[None, :, None]
        reachable = np.where(one, b <= np.asarray(n_cuts)[None, :, None], reachable)
    reachable[..., -1] = True
    return reachable


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
