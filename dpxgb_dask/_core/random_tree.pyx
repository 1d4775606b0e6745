"""Draw a whole totally random tree from a buffer of uniform 64-bit words.

The tree is grown breadth first from the root (heap ids: children of ``p`` at ``2p + 1``
and ``2p + 2``), the nodes of a level in heap order, each node reading the buffer in turn:

1. its feature: uniform among the features it can still split (``hi > lo`` in its
   reachable bin range ``[lo, hi]``), or ``one_feature``; a node with none is a leaf;
2. a numerical feature's threshold ``t`` in ``lo .. hi - 1`` (bins ``<= t`` go left):
   uniform, or with ``mass`` at a random quantile of the feature's mass over those bins
   (integer weights, see below); a categorical feature's left categories: a uniformly random
   non-empty proper subset of its ``n_cuts + 1`` codes (one bit per code from
   ``ceil(codes / 64)`` words, drawn again until the subset is neither empty nor full);
3. the direction of its missing values: a fair coin.

Every bounded draw is Lemire's multiply-and-reject on one word (a next word with
probability below bound / 2**64), so every value is exactly uniform on its range. The
children of a numerical split narrow the feature's range (left ``hi = t``, right
``lo = t + 1``); a categorical split leaves the ranges as they are.

With ``mass`` (shape (n_features, n_bins)) a threshold ``lo + j`` among ``width = hi - lo``
candidates weighs

    w_j = floor(2**weight_bits · ((1 - u) m_j / Σ m + u / width)) + 1

(``u = uniform_share``; with Σ m = 0 every candidate weighs the same), and the pick is the
first candidate whose cumulative weight exceeds a uniform draw below Σ w: exact integer
arithmetic after the same floating-point operations in the same order as the twin.

The kernel knows nothing of where the words come from: the caller reads them from a keyed
stream, and draws again with a longer buffer (the same prefix) when the kernel reports that
the buffer ran out. The naive twin is :func:`dpxgb_dask._core.naive.random_tree.draw_random_tree`.
"""
from libc.math cimport floor
from libc.stdint cimport int64_t, uint64_t, uint8_t

import numpy as np

from .common cimport mul_high

cdef enum:
    SET_WORDS = 4  # 64-bit words of a categorical split's left set (CATEGORY_SET_WORDS)


cdef struct Words:
    const uint64_t* data
    Py_ssize_t size
    Py_ssize_t used
    bint short      # the buffer ran out: the caller reads a longer one


cdef inline uint64_t next_word(Words* words) noexcept nogil:
    if words.used >= words.size:
        words.short = True
        return 0
    words.used += 1
    return words.data[words.used - 1]


cdef inline uint64_t below(Words* words, uint64_t bound) noexcept nogil:
    """Uniform on [0, bound) (Lemire 2019): reject a word whose low product part is below
    2**64 mod bound."""
    cdef uint64_t low, high, threshold
    high = mul_high(next_word(words), bound, &low)
    if low < bound:
        threshold = (0 - bound) % bound
        while low < threshold and not words.short:
            high = mul_high(next_word(words), bound, &low)
    return high


cdef inline void copy_ranges(int64_t[:, :, :, ::1] ranges, int from_side, Py_ssize_t from_i,
                             int64_t[:, :, ::1] out, Py_ssize_t out_i) noexcept nogil:
    cdef Py_ssize_t f
    for f in range(ranges.shape[2]):
        out[out_i, f, 0] = ranges[from_side, from_i, f, 0]
        out[out_i, f, 1] = ranges[from_side, from_i, f, 1]


cdef inline void copy_to_child(int64_t[:, :, :, ::1] ranges, int side, Py_ssize_t i,
                               Py_ssize_t child) noexcept nogil:
    cdef Py_ssize_t f
    for f in range(ranges.shape[2]):
        ranges[1 - side, child, f, 0] = ranges[side, i, f, 0]
        ranges[1 - side, child, f, 1] = ranges[side, i, f, 1]


cdef inline int64_t quantile_weight(double m, double total, int64_t width, double uniform_share,
                                    double scale) noexcept nogil:
    cdef double share = m / total if total > 0 else 0.0
    cdef double uniform = (uniform_share if total > 0 else 1.0) / width
    return <int64_t>floor(((1.0 - uniform_share) * share + uniform) * scale) + 1


def draw_random_tree(
    const int64_t[::1] n_cuts,          # IN (n_features,) feature f has bins 0 .. n_cuts[f]
    const uint8_t[::1] categorical,     # IN (n_features,) 1: the feature's bins are categories
    int64_t one_feature,                # IN every node's feature, or -1: each node draws one
    int max_depth,                      # IN levels of splits
    const double[:, ::1] mass,          # IN (n_features, n_bins), or (0, 0): uniform thresholds
    const uint64_t[::1] words,          # IN uniform 64-bit words, read in order
    *,
    double uniform_share,               # IN u of the weights
    int weight_bits,                    # IN the weights' scale 2**weight_bits
    bint keep_ranges,                   # IN also return the leaves' reachable ranges
):
    """Draw one totally random tree (see the module notes).

    Parameters
    ----------
    n_cuts : ndarray of int64, shape (n_features,)
    categorical : ndarray of uint8, shape (n_features,)
    one_feature : int
    max_depth : int
    mass : ndarray of float64, shape (n_features, n_bins) or (0, 0)
        Non-negative; ``n_bins > max(n_cuts) - 1``.
    words : ndarray of uint64, shape (n_words,)
    uniform_share : float
    weight_bits : int
    keep_ranges : bool

    Returns
    -------
    None
        When ``words`` ran out before the tree was drawn.
    (n_used, heap, leaves, leaf_ranges)
        ``n_used``: the words read. ``heap``: ``(is_split, feature, split_bin,
        missing_left, category_set)`` indexed by heap id up to the largest id of a node
        drawn at a depth below ``max_depth`` (uint8 with 1 numerical and 2 categorical,
        int32, uint8, uint8, uint64 of shape (size, 4)); ``leaves``: int64 heap ids, the
        nodes that did not split in the order they were drawn, then the nodes of depth
        ``max_depth``; ``leaf_ranges``: int64 of shape (n_leaves, n_features, 2), their
        reachable bins ``[lo, hi]``, or None without ``keep_ranges``.
    """
    cdef Py_ssize_t n_features = n_cuts.shape[0]
    cdef Py_ssize_t width_cap = (<Py_ssize_t>1) << max_depth
    cdef Py_ssize_t heap_cap = width_cap - 1
    cdef bint use_mass = mass.shape[0] > 0 and one_feature < 0
    cdef double scale = 2.0 ** weight_bits
    if use_mass and (mass.shape[0] != n_features):
        raise ValueError("mass must have one row per feature")

    is_split_a = np.zeros(heap_cap, dtype=np.uint8)
    feature_a = np.zeros(heap_cap, dtype=np.int32)
    split_bin_a = np.zeros(heap_cap, dtype=np.uint8)
    missing_a = np.zeros(heap_cap, dtype=np.uint8)
    sets_a = np.zeros((heap_cap, SET_WORDS), dtype=np.uint64)
    leaves_a = np.zeros(width_cap, dtype=np.int64)
    leaf_ranges_a = np.zeros((width_cap if keep_ranges else 0, n_features, 2), dtype=np.int64)
    nodes_a = np.zeros((2, width_cap), dtype=np.int64)
    ranges_a = np.zeros((2, width_cap, n_features, 2), dtype=np.int64)
    cdef uint8_t[::1] is_split = is_split_a, split_bin = split_bin_a, missing = missing_a
    cdef int[::1] feature = feature_a
    cdef uint64_t[:, ::1] sets = sets_a
    cdef int64_t[::1] leaves = leaves_a
    cdef int64_t[:, :, ::1] leaf_ranges = leaf_ranges_a
    cdef int64_t[:, ::1] nodes = nodes_a
    cdef int64_t[:, :, :, ::1] ranges = ranges_a

    cdef Words reader
    reader.data = &words[0] if words.shape[0] else NULL
    reader.size = words.shape[0]
    reader.used = 0
    reader.short = False

    cdef Py_ssize_t size = 0, n_open = 1, n_next, n_leaves = 0, i, f, g, j, k, c, cur = 0
    cdef Py_ssize_t n_ok, n_codes, n_set_words, count
    cdef int depth
    cdef int64_t node, lo, hi, width, threshold, total_weight, cumulative
    cdef uint64_t pick, word
    cdef uint64_t drawn[SET_WORDS]
    cdef double total
    for f in range(n_features):
        ranges[0, 0, f, 1] = n_cuts[f]

    with nogil:
        for depth in range(max_depth):
            if n_open == 0 or reader.short:
                break
            n_next = 0
            for i in range(n_open):
                node = nodes[cur, i]
                if node + 1 > size:
                    size = node + 1
                if one_feature >= 0:
                    n_ok = ranges[cur, i, one_feature, 1] > ranges[cur, i, one_feature, 0]
                else:
                    n_ok = 0
                    for f in range(n_features):
                        n_ok += ranges[cur, i, f, 1] > ranges[cur, i, f, 0]
                if n_ok == 0:
                    leaves[n_leaves] = node
                    if keep_ranges:
                        copy_ranges(ranges, cur, i, leaf_ranges, n_leaves)
                    n_leaves += 1
                    continue
                k = <Py_ssize_t>below(&reader, <uint64_t>n_ok)
                if one_feature >= 0:
                    f = one_feature
                else:
                    f = -1
                    for g in range(n_features):
                        if ranges[cur, i, g, 1] > ranges[cur, i, g, 0]:
                            if k == 0:
                                f = g
                                break
                            k -= 1
                lo = ranges[cur, i, f, 0]
                hi = ranges[cur, i, f, 1]
                if categorical[f]:
                    n_codes = n_cuts[f] + 1
                    n_set_words = (n_codes + 63) // 64
                    while not reader.short:
                        count = 0
                        for j in range(SET_WORDS):
                            drawn[j] = 0
                        for j in range(n_set_words):
                            word = next_word(&reader)
                            if (j + 1) * 64 > n_codes:  # keep the codes' bits only
                                word &= ((<uint64_t>1) << (n_codes - 64 * j)) - 1
                            drawn[j] = word
                            for c in range(64):
                                count += (word >> c) & 1
                        if 0 < count < n_codes:
                            break
                    threshold = 0  # the smallest left code (none when the words ran out)
                    while count > 0 and not (drawn[threshold >> 6] >> (threshold & 63)) & 1:
                        threshold += 1
                    for j in range(SET_WORDS):
                        sets[node, j] = drawn[j]
                    is_split[node] = 2
                else:
                    width = hi - lo
                    if use_mass:
                        total = 0.0
                        for j in range(width):
                            total += mass[f, lo + j]
                        total_weight = 0
                        for j in range(width):
                            total_weight += quantile_weight(mass[f, lo + j], total, width,
                                                            uniform_share, scale)
                        pick = below(&reader, <uint64_t>total_weight)
                        cumulative = 0
                        threshold = lo + width - 1
                        for j in range(width):
                            cumulative += quantile_weight(mass[f, lo + j], total, width,
                                                          uniform_share, scale)
                            if <uint64_t>cumulative > pick:
                                threshold = lo + j
                                break
                    else:
                        threshold = lo + <int64_t>below(&reader, <uint64_t>width)
                    is_split[node] = 1
                missing[node] = <uint8_t>below(&reader, 2)
                feature[node] = <int>f
                split_bin[node] = <uint8_t>threshold
                for k in range(2):
                    nodes[1 - cur, n_next + k] = 2 * node + 1 + k
                    copy_to_child(ranges, cur, i, n_next + k)
                if not categorical[f]:
                    ranges[1 - cur, n_next, f, 1] = threshold
                    ranges[1 - cur, n_next + 1, f, 0] = threshold + 1
                n_next += 2
            cur = 1 - cur
            n_open = n_next
        if not reader.short:
            for i in range(n_open):
                leaves[n_leaves] = nodes[cur, i]
                if keep_ranges:
                    copy_ranges(ranges, cur, i, leaf_ranges, n_leaves)
                n_leaves += 1
    if reader.short:
        return None
    heap = (is_split_a[:size].copy(), feature_a[:size].copy(), split_bin_a[:size].copy(),
            missing_a[:size].copy(), sets_a[:size].copy())
    return (int(reader.used), heap, leaves_a[:n_leaves].copy(),
            leaf_ranges_a[:n_leaves].copy() if keep_ranges else None)
