"""Pure functions that run on the workers, one partition of rows at a time.

Nothing here imports Dask or applies DP noise: these functions compute EXACT quantities
(histograms, sums) from the rows of one partition. Their results stay inside the cluster:
the coordinator reduces them across partitions and releases only DP-noised versions (see
``coordinator.py``). Every function is deterministic given its inputs, so a retried task
returns the same value.

A partition moves through these states:

``RawPart``      validated float rows and labels (``make_part``);
``BinnedPart``   rows clipped to the public bounds and binned (``bin_part``);
``TreeState``    per-tree row positions and gradients (``start_tree``, ``route_rows``).
"""
from dataclasses import dataclass

import numpy as np

from ._core import empty_histograms, pack_cuts
from ._core.binning import bin_features
from ._core.histogram import build_node_histograms, subtract_histograms
from ._core.partition import apply_splits, rows_of_nodes
from ._core.predict import predict_binned


@dataclass
class RawPart:
    """Validated rows of one partition.

    Attributes
    ----------
    X : ndarray of float64, shape (n_rows, n_features); NaN marks missing values
    y : ndarray of float64, shape (n_rows,)
    """

    X: np.ndarray
    y: np.ndarray

    @property
    def n_rows(self):
        return self.X.shape[0]


@dataclass
class BinnedPart:
    """Binned rows of one partition.

    Attributes
    ----------
    X_binned : ndarray of uint8, shape (n_rows, n_features), Fortran-ordered
    y : ndarray of float64, shape (n_rows,)
    row_offset : int
        Global index of the first row (rows are numbered across partitions), which keys
        the per-row randomness so that it does not depend on how rows are partitioned.
    missing_bin : int
        Bin of missing values, the last one: histograms have ``missing_bin + 1`` bins.
    """

    X_binned: np.ndarray
    y: np.ndarray
    row_offset: int
    missing_bin: int

    @property
    def n_bins(self):
        return self.missing_bin + 1


@dataclass
class TreeState:
    """Per-tree state of one partition.

    Attributes
    ----------
    positions : ndarray of int32, shape (n_rows,)
        Heap id of the node each row sits in; -1 for rows outside this tree (not drawn by
        the subsampling, or removed by gradient filtering).
    gradients, hessians : ndarray of float32, shape (n_rows,)
        Clipped gradients and hessians of the rows (0 outside the tree).
    """

    positions: np.ndarray
    gradients: np.ndarray
    hessians: np.ndarray


#: Fixed-point grid of gradients, hessians and labels before any sum. Multiples of 2**-20
#: with |value| <= 16 are exact in float32, and float64 sums of them are exact while
#: |sum| < 2**33, so every exact aggregate (histograms, subtractions, leaf and label sums)
#: is the true sum, whatever the order of summation or the partitioning. The grid-rounding
#: argument of the DP mechanisms (privacy/mechanisms.py) assumes exact queries.
VALUE_GRID = 2.0**-20
#: Largest |gradient| or hessian bound that keeps quantised values exact in float32.
MAX_VALUE_BOUND = 16.0


def quantize(values, bound, lower=None):
    """Round to the ``VALUE_GRID`` and clip to ``[lower, bound]`` (default ``[-bound, bound]``).

    The clipping bound is itself rounded down to the grid, so the result never exceeds the
    public bound the sensitivities use.

    Returns
    -------
    ndarray of float64, same shape
    """
    hi = np.floor(bound / VALUE_GRID) * VALUE_GRID
    lo = -hi if lower is None else np.ceil(lower / VALUE_GRID) * VALUE_GRID
    return np.clip(np.round(np.asarray(values, dtype=np.float64) / VALUE_GRID) * VALUE_GRID,
                   lo, hi)


# -- input ---------------------------------------------------------------------------------


def make_part(X, y, objective, label_bounds=None):
    """Validate one partition's rows and labels and convert them to float64.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
    y : array-like of shape (n_rows,)
    objective : {"reg:squarederror", "binary:logistic"}
    label_bounds : tuple (lo, hi), optional
        Regression: labels must lie within.

    Returns
    -------
    RawPart

    Raises
    ------
    ValueError
        Naming ``X`` or ``y``: lengths differ, non-numeric values, labels outside {0, 1}
        (binary:logistic) or outside ``label_bounds``, infinite feature values.
    """
    try:
        X = np.array(X, dtype=np.float64, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X must hold numbers only: {exc}") from None
    try:
        y = np.array(y, dtype=np.float64, copy=True).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must hold numbers only: {exc}") from None
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    if X.shape[0] != y.shape[0]:
        # No counts in the message: for data that lives only in the cluster they are private.
        raise ValueError("X and y must have the same number of rows in every partition")
    if np.isinf(X).any():
        raise ValueError("X holds infinite values; use NaN for missing values")
    if np.isnan(y).any():
        raise ValueError("y holds NaN labels")
    if objective == "binary:logistic":
        if not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("y must hold only the labels 0 and 1 for binary:logistic")
    elif label_bounds is not None:
        lo, hi = label_bounds
        if ((y < lo) | (y > hi)).any():
            raise ValueError(f"y holds labels outside label_bounds=({lo}, {hi})")
    return RawPart(X, y)


def part_length(part):
    """Number of rows of a partition (stays in the cluster: it fixes the row offsets)."""
    return part.n_rows


# -- bounds and candidates ------------------------------------------------------------------


def log2_magnitude_histogram(part, n_exponents, min_exponent):
    """Per-feature counts of rows by sign and binary order of magnitude.

    Bin layout per feature (``2 * n_exponents + 1`` bins): bin ``n_exponents`` holds zeros
    and values with ``|x| < 2**min_exponent``; bin ``n_exponents + 1 + k`` holds positive
    values with ``floor(log2 x) - min_exponent == k`` (clipped to the last bin) and bin
    ``n_exponents - 1 - k`` the negative values of the same magnitude. Each row adds 1 to
    one bin of each feature (NaN adds nothing), which is what the DP bounds estimate needs.

    Returns
    -------
    ndarray of float64, shape (n_features, 2 * n_exponents + 1)
    """
    X = part.X
    n_bins = 2 * n_exponents + 1
    out = np.zeros((X.shape[1], n_bins))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.floor(np.log2(np.abs(X))) - min_exponent
    k = np.clip(np.nan_to_num(k, nan=-1.0, neginf=-1.0), -1, n_exponents - 1).astype(np.int64)
    small = k < 0
    idx = np.where(small, n_exponents, np.where(X > 0, n_exponents + 1 + k, n_exponents - 1 - k))
    valid = ~np.isnan(X)
    for f in range(X.shape[1]):
        out[f] = np.bincount(idx[valid[:, f], f], minlength=n_bins)
    return out


def fine_histogram(part, feature_bounds, n_fine_bins, hessian):
    """Per-feature equal-width histograms of row weights over the public bounds.

    Values are clipped to ``feature_bounds`` first, so every non-missing row adds
    ``hessian`` to exactly one of the ``n_fine_bins`` bins of each feature. This is the
    input of the DP sketch (DP-XGBoost, section 4.1): the noisy bins become weighted points
    of the weighted quantile sketch.

    Parameters
    ----------
    part : RawPart
    feature_bounds : ndarray of float64, shape (n_features, 2)
    n_fine_bins : int
    hessian : float
        Weight of every row (the hessian at the initial score; constant per objective).

    Returns
    -------
    ndarray of float64, shape (n_features, n_fine_bins)
    """
    X = part.X
    lo, hi = feature_bounds[:, 0], feature_bounds[:, 1]
    out = np.zeros((X.shape[1], n_fine_bins))
    scaled = (np.clip(X, lo, hi) - lo) / (hi - lo) * n_fine_bins
    bins = np.minimum(np.floor(scaled), n_fine_bins - 1)
    for f in range(X.shape[1]):
        col = bins[:, f]
        col = col[~np.isnan(col)].astype(np.int64)
        out[f] = np.bincount(col, minlength=n_fine_bins) * hessian
    return out


def clipped_label_sum(part, offset, scale, lower):
    """Sum and count of the labels mapped to ``(y - offset) / scale`` and clipped to
    ``[lower, 1]``, on the value grid (for a DP initial score).

    Returns
    -------
    ndarray of float64, shape (2,): (exact sum of the clipped labels, number of rows)
    """
    scaled = quantize((part.y - offset) / scale, 1.0, lower=lower)
    return np.array([scaled.sum(), float(part.n_rows)])


def bin_part(part, feature_bounds, cuts, row_offset, missing_bin, y=None, n_threads=1):
    """Clip rows to the public bounds and bin them with the (DP or public) cut points.

    Parameters
    ----------
    part : RawPart
    feature_bounds : ndarray of float64, shape (n_features, 2)
    cuts : list of ndarray of float64
        At most ``missing_bin - 1`` cuts per feature (so bins ``0..missing_bin - 1``).
    row_offset : int
    missing_bin : int in [1, 255]
    y : ndarray of float64, shape (n_rows,), optional
        Labels to keep (default ``part.y``), e.g. regression labels scaled to [-1, 1].
    n_threads : int

    Returns
    -------
    BinnedPart
    """
    if max((len(c) for c in cuts), default=0) >= missing_bin:
        raise ValueError(f"at most {missing_bin - 1} cuts per feature fit before the missing "
                         f"bin {missing_bin}")
    X = np.clip(part.X, feature_bounds[:, 0], feature_bounds[:, 1])
    values, offsets = pack_cuts(cuts)
    X_binned = np.empty(X.shape, dtype=np.uint8, order="F")
    bin_features(X, values, offsets, missing_bin, X_binned, n_threads)
    return BinnedPart(X_binned, part.y if y is None else y, int(row_offset), int(missing_bin))


def scale_labels(part, offset, scale):
    """Labels mapped to ``(y - offset) / scale`` (regression labels to [-1, 1])."""
    return (part.y - offset) / scale


def initial_margin(part, base_score):
    """Margins of every row before the first tree: ``base_score``, float64 (n_rows,)."""
    return np.full(part.y.shape[0], base_score, dtype=np.float64)


# -- trees --------------------------------------------------------------------------------


def row_uniforms(key, row_offset, n_rows):
    """Uniform [0, 1) numbers for global rows ``row_offset .. row_offset + n_rows - 1``.

    The number of global row ``i`` is the ``i``-th output of a Philox-4x64 stream keyed by
    ``key``, so it does not depend on how rows are split into partitions; with a secret
    key (drawn by the coordinator from the OS CSPRNG when no seed is given) the selection
    is unpredictable.

    Parameters
    ----------
    key : int
        128-bit key.
    row_offset, n_rows : int

    Returns
    -------
    ndarray of float64, shape (n_rows,)
    """
    key_words = [(key >> (64 * i)) & (2**64 - 1) for i in range(2)]
    block, skip = divmod(int(row_offset), 4)  # Philox-4x64 emits 4 words per counter step
    bit_generator = np.random.Philox(key=np.array(key_words, dtype=np.uint64),
                                     counter=np.array([block, 0, 0, 0], dtype=np.uint64))
    raw = bit_generator.random_raw(skip + n_rows)[skip:]
    return (raw >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)


def gradients_and_hessians(objective, y, margin):
    """First and second derivatives of the loss at ``margin``.

    squared error ``(y - m)^2 / 2``: ``g = m - y``, ``h = 1``;
    logistic: ``g = sigmoid(m) - y``, ``h = sigmoid(m) (1 - sigmoid(m))``.

    Returns
    -------
    g, h : ndarray of float64, shape (n_rows,)
    """
    if objective == "binary:logistic":
        p = 1.0 / (1.0 + np.exp(-margin))
        return p - y, p * (1.0 - p)
    return margin - y, np.ones_like(y)


def start_tree(part, margin, objective, sample_key, sample_interval, gradient_bound,
               gradient_rule, hessian_bound):
    """Select this tree's rows and compute their clipped gradients and hessians.

    Row ``i`` joins the tree when its uniform number (:func:`row_uniforms` under
    ``sample_key``) falls in ``sample_interval = [lo, hi)``: ``[0, γ)`` is Poisson
    subsampling at rate γ; consecutive intervals under one key give disjoint row sets
    (DPBoost's trees inside one ensemble); ``[0, 1]`` (hi > 1) keeps every row.

    Parameters
    ----------
    part : BinnedPart
    margin : ndarray of float64, shape (n_rows,)
    objective : str
    sample_key : int
        128-bit key of this tree's (or ensemble's) row selection.
    sample_interval : tuple (lo, hi)
    gradient_bound : float
        g*: the public bound on |g| the sensitivities assume.
    gradient_rule : {"clip", "filter"}
        "clip": clip g to [-g*, g*]; "filter": gradient data filtering (DPBoost, section
        3.1): rows with |g| > g* take no part in the tree.
    hessian_bound : float
        Hessians are clipped to [0, hessian_bound].

    Gradients and hessians are rounded to ``VALUE_GRID`` (see :func:`quantize`), so that
    every histogram sum is exact.

    Returns
    -------
    TreeState
    """
    n = part.y.shape[0]
    g, h = gradients_and_hessians(objective, part.y, margin)
    lo, hi = sample_interval
    if lo <= 0.0 and hi > 1.0:
        in_tree = np.ones(n, dtype=bool)
    else:
        u = row_uniforms(sample_key, part.row_offset, n)
        in_tree = (u >= lo) & (u < hi)
    if gradient_rule == "filter":
        in_tree &= np.abs(g) <= gradient_bound
    g = quantize(g, gradient_bound)
    h = quantize(h, hessian_bound, lower=0.0)
    positions = np.where(in_tree, 0, -1).astype(np.int32)
    return TreeState(positions,
                     np.where(in_tree, g, 0.0).astype(np.float32),
                     np.where(in_tree, h, 0.0).astype(np.float32))


def route_rows(part, state, is_split, split_feature, split_bin, missing_left, n_threads=1):
    """Move the rows of splitting nodes to their children (a new TreeState).

    The decision arrays are indexed by heap node id (see ``partition.apply_splits``).
    """
    positions = state.positions.copy()
    apply_splits(part.X_binned, positions, is_split, split_feature, split_bin, missing_left,
                 part.missing_bin, n_threads)
    return TreeState(positions, state.gradients, state.hessians)


def tree_leaf_sums(part, state, tree_arrays, n_leaves, n_threads=1):
    """Exact (G, H, count) per leaf of a whole tree whose splits are already known.

    For data-independent trees (random splits) every level is decided before any row is
    read, so one task routes the rows through the whole tree.

    Parameters
    ----------
    part : BinnedPart
    state : TreeState
    tree_arrays : dict of ndarray
        Flat node arrays of the tree with ``value[j]`` = the leaf's index ``0..n_leaves-1``.
    n_leaves : int

    Returns
    -------
    ndarray of float64, shape (n_leaves, 3)
    """
    leaf = np.zeros(part.y.shape[0], dtype=np.float64)
    t = tree_arrays
    predict_binned(part.X_binned, t["feature"], t["bin_threshold"], t["missing_left"],
                   t["left"], t["right"], t["value"], np.zeros(1, dtype=np.int32),
                   part.missing_bin, leaf, n_threads)
    in_tree = state.positions >= 0
    idx = leaf[in_tree].astype(np.int64)
    out = np.zeros((n_leaves, 3))
    out[:, 0] = np.bincount(idx, weights=state.gradients[in_tree].astype(np.float64),
                            minlength=n_leaves)
    out[:, 1] = np.bincount(idx, weights=state.hessians[in_tree].astype(np.float64),
                            minlength=n_leaves)
    out[:, 2] = np.bincount(idx, minlength=n_leaves)
    return out


def level_histograms(part, state, nodes, previous=None, previous_nodes=None, n_threads=1):
    """Exact (G, H, count) histograms of the given nodes of one level, on this partition.

    With the previous level's histograms (``previous``, of ``previous_nodes``), the nodes
    must come in sibling pairs ``(2p + 1, 2p + 2)``: only the child with fewer rows (on
    this partition) is built from the rows, and its sibling is the parent's histogram
    minus it (``histogram.subtract_histograms``), which halves the work.

    Parameters
    ----------
    part : BinnedPart
    state : TreeState
    nodes : ndarray of int, shape (n_nodes,)
        Heap ids of the nodes, in the order of the output.
    previous : ndarray of HISTOGRAM_DTYPE, shape (n_previous, n_features, n_bins), optional
    previous_nodes : ndarray of int, shape (n_previous,), optional
        Heap ids of ``previous``; must contain the parent of every node.

    Returns
    -------
    ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    n_features = part.X_binned.shape[1]
    out = empty_histograms(nodes.shape[0], n_features, part.n_bins)
    if nodes.size == 0:
        return out
    n_node_ids = int(nodes.max()) + 1
    if previous is None:
        slot_of_node = np.full(n_node_ids, -1, dtype=np.int32)
        slot_of_node[nodes] = np.arange(nodes.shape[0], dtype=np.int32)
        rows, slots = rows_of_nodes(state.positions, slot_of_node)
        build_node_histograms(part.X_binned, state.gradients, state.hessians, rows, slots,
                              out, n_threads)
        return out
    left, right = nodes[0::2], nodes[1::2]
    if nodes.shape[0] % 2 or not (np.all(left % 2 == 1) and np.array_equal(right, left + 1)):
        raise ValueError("nodes must be sibling pairs (2p + 1, 2p + 2)")
    parents = (left - 1) // 2
    where = {int(node): i for i, node in enumerate(previous_nodes)}
    parent_histograms = previous[[where[int(p)] for p in parents]]
    in_tree = state.positions[state.positions >= 0]
    counts = np.bincount(in_tree, minlength=n_node_ids)
    build_left = counts[left] <= counts[right]
    smaller = np.where(build_left, left, right)
    slot_of_node = np.full(max(n_node_ids, counts.shape[0]), -1, dtype=np.int32)
    slot_of_node[smaller] = np.arange(smaller.shape[0], dtype=np.int32)
    rows, slots = rows_of_nodes(state.positions, slot_of_node)
    small = empty_histograms(smaller.shape[0], n_features, part.n_bins)
    build_node_histograms(part.X_binned, state.gradients, state.hessians, rows, slots, small,
                          n_threads)
    large = empty_histograms(smaller.shape[0], n_features, part.n_bins)
    subtract_histograms(np.ascontiguousarray(parent_histograms), small, large, n_threads)
    out[0::2] = np.where(build_left[:, None, None], small, large)
    out[1::2] = np.where(build_left[:, None, None], large, small)
    return out


def node_sums(state, nodes):
    """Exact (sum of g, sum of h, count) of the rows at each node.

    Parameters
    ----------
    state : TreeState
    nodes : ndarray of int, shape (n_nodes,)

    Returns
    -------
    ndarray of float64, shape (n_nodes, 3)
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    out = np.zeros((nodes.shape[0], 3))
    if nodes.size == 0:
        return out
    n_node_ids = int(nodes.max()) + 1
    slot = np.full(n_node_ids, -1, dtype=np.int64)
    slot[nodes] = np.arange(nodes.shape[0])
    pos = state.positions
    keep = (pos >= 0) & (pos < n_node_ids)
    s = slot[pos[keep]]
    sel = s >= 0
    s = s[sel]
    out[:, 0] = np.bincount(s, weights=state.gradients[keep][sel].astype(np.float64),
                            minlength=nodes.shape[0])
    out[:, 1] = np.bincount(s, weights=state.hessians[keep][sel].astype(np.float64),
                            minlength=nodes.shape[0])
    out[:, 2] = np.bincount(s, minlength=nodes.shape[0])
    return out


def update_margin(part, margin, trees, n_threads=1, clip=None):
    """Margins after adding trees (their leaf values already include the shrinkage).

    Parameters
    ----------
    part : BinnedPart
    margin : ndarray of float64, shape (n_rows,)
    trees : list of dict of ndarray
        Flat node arrays of each tree (``model.Tree.to_arrays``), built with the cuts
        ``part`` was binned with.
    clip : tuple (lo, hi), optional
        Range of the margins (regression: the scaled label range [-1, 1], so that
        gradients are taken at the predictions the model will make).

    Returns
    -------
    ndarray of float64, shape (n_rows,)
    """
    out = margin.copy()
    for t in trees:
        predict_binned(part.X_binned, t["feature"], t["bin_threshold"], t["missing_left"],
                       t["left"], t["right"], t["value"], np.zeros(1, dtype=np.int32),
                       part.missing_bin, out, n_threads)
    if clip is not None:
        np.clip(out, clip[0], clip[1], out=out)
    return out


def rebin_part(binned, raw, feature_bounds, cuts, n_threads=1):
    """Re-bin a partition's rows with new cut points (iterative-Hessian candidates)."""
    return bin_part(raw, feature_bounds, cuts, binned.row_offset, binned.missing_bin,
                    y=binned.y, n_threads=n_threads)


def feature_min_max(part):
    """Exact per-feature (nanmin, nanmax); only for bounds the user forces from the data.

    Returns
    -------
    ndarray of float64, shape (n_features, 2); NaN for all-missing features
    """
    out = np.full((part.X.shape[1], 2), np.nan)
    if part.n_rows:
        with np.errstate(all="ignore"):
            valid = ~np.all(np.isnan(part.X), axis=0)
            out[valid, 0] = np.nanmin(part.X[:, valid], axis=0)
            out[valid, 1] = np.nanmax(part.X[:, valid], axis=0)
    return out


def add(*arrays):
    """Sum of partial results of several partitions (the reduction step)."""
    if arrays and arrays[0].dtype.names:  # histograms: field by field
        out = arrays[0].copy()
        for a in arrays[1:]:
            for name in out.dtype.names:
                out[name] += a[name]
        return out
    return np.sum(arrays, axis=0)
