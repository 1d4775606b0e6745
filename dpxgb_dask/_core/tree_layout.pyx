"""A tree's heap-indexed decisions laid out as the model's flat node arrays.

A drawn tree (``_core.random_tree.draw_random_tree``) is heap indexed: the children of
node ``p`` are ``2p + 1`` and ``2p + 2``. The model stores each tree breadth first,
children after their parent, a node's children numbered left first except a categorical
split's, whose right child comes first (XGBoost's format sends a categorical node's listed
categories right). That order is a first-in first-out walk from the root that queues each
split node's children in that order. A split node's cover is the sum of its children's,
summed from the last node back to the first.

The slow twin is ``dpxgb_dask.boosting.tree.Tree.to_arrays``, a Python step per node; the
tests compare the two array for array.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

import numpy as np

cdef enum:
    SET_WORDS = 4  # 64-bit words of a categorical split's left set (CATEGORY_SET_WORDS)


cdef inline int64_t lowest_code(const uint64_t[:, ::1] sets, Py_ssize_t node) noexcept nogil:
    """The smallest category code in node ``node``'s left set, or -1 for an empty set."""
    cdef Py_ssize_t w
    cdef uint64_t word
    cdef int64_t bit
    for w in range(SET_WORDS):
        word = sets[node, w]
        if word:
            bit = 0
            while not (word & 1):
                word >>= 1
                bit += 1
            return 64 * w + bit
    return -1


def lay_out_heap_tree(heap, leaves, const double[::1] cut_values,
                      const int64_t[::1] cut_offsets, dict arrays):
    """Fill ``arrays`` with the tree of ``heap`` and ``leaves`` breadth first (see the
    module notes).

    Parameters
    ----------
    heap : tuple of ndarray
        ``(is_split, feature, split_bin, missing_left, category_set)`` by heap id: uint8 (0
        leaf or beyond the tree, 1 numerical, 2 categorical), int32, uint8, uint8, and
        uint64 of shape (size, 4).
    leaves : tuple of ndarray
        ``(nodes, values, covers)``: the leaves' heap ids (int64) with their values and
        covers (float64), all of shape (n_leaves,).
    cut_values : ndarray of float64, shape (n_cut_points,)
        Every feature's cut points, one feature after another.
    cut_offsets : ndarray of int64, shape (n_features,)
        Where each feature's cut points start in ``cut_values``: a numerical split on bin
        ``t`` of feature ``f`` has the threshold ``cut_values[cut_offsets[f] + t]``.
    arrays : dict of ndarray
        The tree's node fields (``boosting.tree.TREE_FIELDS``), each of length
        ``1 + 2 * (number of split nodes)``, written in place: ``feature`` (int32),
        ``bin_threshold``, ``categorical``, ``missing_left`` (uint8), ``threshold``,
        ``value``, ``cover`` (float64), ``left``, ``right`` (int32, -1 at leaves) and
        ``category_set`` (uint64, shape (n_nodes, 4)). A categorical split's threshold is
        its lowest left code.

    Raises
    ------
    ValueError
        The splits do not make one tree from the root, or the leaves are not its leaves
        (each reached once).
    """
    n_nodes = arrays["feature"].shape[0]
    size = heap[0].shape[0]
    if any(a.shape[0] != size for a in heap):
        raise ValueError("the heap's arrays must have one entry per heap id")
    if any(a.shape[0] != leaves[0].shape[0] for a in leaves):
        raise ValueError("the leaves need one value and one cover each")
    if any(a.shape[0] != n_nodes for a in arrays.values()):
        raise ValueError("every node array must have the same length")
    position = np.full(2 * size + 3, -1, dtype=np.int64)  # heap id -> place in the arrays
    _walk(heap, cut_values, cut_offsets, arrays, position)
    _place_leaves(leaves, position, arrays)


cdef int _walk(tuple heap, const double[::1] cut_values, const int64_t[::1] cut_offsets,
               dict arrays, int64_t[::1] position) except -1:
    """The breadth-first walk: every node's split fields and children (-1 at leaves),
    ``position`` of each heap id reached."""
    cdef const uint8_t[::1] is_split = heap[0]
    cdef const int32_t[::1] feature = heap[1]
    cdef const uint8_t[::1] split_bin = heap[2]
    cdef const uint8_t[::1] missing_left = heap[3]
    cdef const uint64_t[:, ::1] sets = heap[4]
    cdef int32_t[::1] out_feature = arrays["feature"]
    cdef uint8_t[::1] out_bin = arrays["bin_threshold"]
    cdef double[::1] out_threshold = arrays["threshold"]
    cdef uint8_t[::1] out_categorical = arrays["categorical"]
    cdef uint64_t[:, ::1] out_sets = arrays["category_set"]
    cdef uint8_t[::1] out_missing = arrays["missing_left"]
    cdef int32_t[::1] out_left = arrays["left"]
    cdef int32_t[::1] out_right = arrays["right"]
    cdef Py_ssize_t n_nodes = out_feature.shape[0], size = is_split.shape[0]
    cdef Py_ssize_t i, w, node, first, second, n_queued = 1
    cdef int64_t code
    order_a = np.empty(n_nodes, dtype=np.int64)  # heap ids, breadth first
    cdef int64_t[::1] order = order_a
    order[0] = position[0] = 0
    i = 0
    while i < n_queued:
        node = order[i]
        out_left[i] = out_right[i] = -1
        out_feature[i] = 0
        out_bin[i] = out_missing[i] = out_categorical[i] = 0
        out_threshold[i] = 0.0
        for w in range(SET_WORDS):
            out_sets[i, w] = 0
        if node < size and is_split[node]:
            if n_queued + 2 > n_nodes:
                raise ValueError("the heap's splits are not one tree from the root")
            first, second = 2 * node + 1, 2 * node + 2
            if is_split[node] == 2:  # a categorical split's right child first
                first, second = second, first
            order[n_queued], order[n_queued + 1] = first, second
            position[first], position[second] = n_queued, n_queued + 1
            n_queued += 2
            out_left[i] = <int32_t>position[2 * node + 1]
            out_right[i] = <int32_t>position[2 * node + 2]
            out_feature[i] = feature[node]
            out_bin[i] = split_bin[node]
            out_missing[i] = missing_left[node]
            if is_split[node] == 2:
                code = lowest_code(sets, node)
                if code < 0:
                    raise ValueError("a categorical split needs a non-empty left set")
                out_categorical[i] = 1
                for w in range(SET_WORDS):
                    out_sets[i, w] = sets[node, w]
                out_threshold[i] = <double>code
            else:
                if not 0 <= feature[node] < cut_offsets.shape[0] or \
                        cut_offsets[feature[node]] + split_bin[node] >= cut_values.shape[0]:
                    raise ValueError("a numerical split must name a feature and one of its "
                                     "cut points")
                out_threshold[i] = cut_values[cut_offsets[feature[node]] + split_bin[node]]
        i += 1
    if n_queued != n_nodes:
        raise ValueError("the heap's splits are not one tree from the root")
    return 0


cdef int _place_leaves(tuple leaves, const int64_t[::1] position, dict arrays) except -1:
    """Each leaf's value and cover at its place (as many leaves as the tree has, each at a
    leaf's place, none twice: every leaf), then every split's cover, the sum of its
    children's, from the last node back to the first."""
    cdef const int64_t[::1] nodes = leaves[0]
    cdef const double[::1] values = leaves[1]
    cdef const double[::1] covers = leaves[2]
    cdef int32_t[::1] left = arrays["left"]
    cdef int32_t[::1] right = arrays["right"]
    cdef double[::1] out_value = arrays["value"]
    cdef double[::1] out_cover = arrays["cover"]
    cdef Py_ssize_t n_nodes = left.shape[0], i, j
    cdef int64_t node
    seen_a = np.zeros(n_nodes, dtype=np.uint8)
    cdef uint8_t[::1] seen = seen_a
    if nodes.shape[0] != (n_nodes + 1) // 2:
        raise ValueError("a tree's leaves must be the leaves of its splits")
    out_value[:] = 0.0
    out_cover[:] = 0.0
    for j in range(nodes.shape[0]):
        node = nodes[j]
        if node < 0 or node >= position.shape[0] or position[node] < 0:
            raise ValueError("a tree's leaves must be the leaves of its splits")
        i = position[node]
        if left[i] >= 0 or seen[i]:
            raise ValueError("a tree's leaves must be the leaves of its splits")
        seen[i] = 1
        out_value[i] = values[j]
        out_cover[i] = covers[j]
    for i in range(n_nodes - 1, -1, -1):
        if left[i] >= 0:
            out_cover[i] = out_cover[left[i]] + out_cover[right[i]]
    return 0
