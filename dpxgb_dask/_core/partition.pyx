"""Route rows to child nodes after the splits of one tree level.

Rows carry a ``positions`` array: the heap id ``p`` of the node a row sits in (root 0,
children of ``p`` are ``2p + 1`` (left) and ``2p + 2`` (right)) for a row that takes part
in the tree, and ``~p = -p - 1`` for a row that does not (e.g. not drawn by Poisson
subsampling): such rows are routed too, so that every row ends at its leaf (the margins
of all rows are updated from it), but they never enter a histogram.

``is_split[p]`` says how node ``p`` splits: 0 not at all, 1 numerically (a bin ``<=
split_bin[p]`` goes left), 2 categorically (a bin in the set ``category_set[p]`` goes left:
bit ``b`` of its 4 words of 64 bits, ``dpxgb_dask._core.category_sets``).
"""
cimport cython
from cython.parallel import prange
from libc.stdlib cimport calloc, free

import numpy as np

from .common cimport (X_BINNED_DTYPE_C, INDEX_DTYPE_C, G_H_DTYPE_C, Y_DTYPE_C, CATEGORY_WORD_C,
                    in_category_set)


def apply_splits(
    const X_BINNED_DTYPE_C[::1, :] X_binned,   # IN (n_samples, n_features), Fortran order
    INDEX_DTYPE_C[::1] positions,              # IN/OUT (n_samples,) heap node id per row
    const unsigned char[::1] is_split,         # IN (n_node_ids,) 0, 1 (<=) or 2 (in set)
    const INDEX_DTYPE_C[::1] split_feature,    # IN (n_node_ids,)
    const X_BINNED_DTYPE_C[::1] split_bin,     # IN (n_node_ids,) the bin compared to
    const unsigned char[::1] missing_left,     # IN (n_node_ids,) 1: missing goes left
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_node_ids, 4) left categories
    X_BINNED_DTYPE_C missing_bin,              # IN
    int n_threads,                             # IN
):
    """Move every row whose node splits to the child its bin selects.

    A row at node ``p`` with ``is_split[p]`` goes to ``2p + 1`` when its bin for
    ``split_feature[p]`` is ``missing_bin`` and ``missing_left[p]``, or when it is not
    missing and ``<= split_bin[p]`` (``is_split[p] == 1``) or in ``category_set[p]``
    (``is_split[p] == 2``); otherwise to ``2p + 2``. A row outside the tree
    (position ``~p``) moves the same way and stays outside (``~(2p + 1)`` or ``~(2p + 2)``).
    Rows at nodes that do not split, or at node ids ``>= n_node_ids``, are left unchanged.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features), Fortran-ordered
    positions : ndarray of int32, shape (n_samples,)
        Updated in place.
    is_split, missing_left : ndarray of uint8, shape (n_node_ids,)
    split_feature : ndarray of int32, shape (n_node_ids,)
        Feature of each splitting node, in ``[0, n_features)``.
    split_bin : ndarray of uint8, shape (n_node_ids,)
    category_set : ndarray of uint64, shape (n_node_ids, 4)
        Left categories of the categorical splits (ignored elsewhere).
    missing_bin : int
    n_threads : int
    """
    _route(X_binned, positions, is_split, split_feature, split_bin, missing_left,
           category_set, missing_bin, n_threads, False)


def route_to_leaves(
    const X_BINNED_DTYPE_C[::1, :] X_binned,   # IN (n_samples, n_features), Fortran order
    INDEX_DTYPE_C[::1] positions,              # IN/OUT (n_samples,) heap node id per row
    const unsigned char[::1] is_split,         # IN (n_node_ids,) 0, 1 (<=) or 2 (in set)
    const INDEX_DTYPE_C[::1] split_feature,    # IN (n_node_ids,)
    const X_BINNED_DTYPE_C[::1] split_bin,     # IN (n_node_ids,) the bin compared to
    const unsigned char[::1] missing_left,     # IN (n_node_ids,) 1: missing goes left
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_node_ids, 4) left categories
    X_BINNED_DTYPE_C missing_bin,              # IN
    int n_threads,                             # IN
):
    """Move every row down a whole tree: :func:`apply_splits` repeated until no row's node
    splits, in one pass over the rows (the decisions of every level, heap-indexed).

    Parameters and conventions as in :func:`apply_splits` (rows outside the tree, ``~p``,
    are routed too and stay outside).
    """
    _route(X_binned, positions, is_split, split_feature, split_bin, missing_left,
           category_set, missing_bin, n_threads, True)


cdef struct NodeRule:
    # one split node's decision, packed: a row reads one small struct per level instead of
    # four arrays (with the feature's column offset precomputed)
    Py_ssize_t column               # split feature * X_binned's column stride (bytes)
    INDEX_DTYPE_C right             # the right child 2p + 2, or the node p without a split
    unsigned char kind              # is_split: 0, 1 (<=) or 2 (in set)
    X_BINNED_DTYPE_C split_bin
    unsigned char missing_left


cdef _route(
    const X_BINNED_DTYPE_C[::1, :] X_binned,   # IN (n_samples, n_features), Fortran order
    INDEX_DTYPE_C[::1] positions,              # IN/OUT (n_samples,)
    const unsigned char[::1] is_split,         # IN (n_node_ids,)
    const INDEX_DTYPE_C[::1] split_feature,    # IN (n_node_ids,)
    const X_BINNED_DTYPE_C[::1] split_bin,     # IN (n_node_ids,)
    const unsigned char[::1] missing_left,     # IN (n_node_ids,)
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_node_ids, 4)
    X_BINNED_DTYPE_C missing_bin,              # IN
    int n_threads,                             # IN
    bint to_leaves,                            # IN one step, or down to the leaves
):
    cdef Py_ssize_t n_samples = X_binned.shape[0]
    cdef Py_ssize_t n_features = X_binned.shape[1]
    cdef Py_ssize_t n_node_ids = is_split.shape[0]
    cdef Py_ssize_t node
    if positions.shape[0] != n_samples:
        raise ValueError(f"positions has {positions.shape[0]} entries, X_binned has "
                         f"{n_samples} rows")
    if not (split_feature.shape[0] == split_bin.shape[0] == missing_left.shape[0]
            == category_set.shape[0] == n_node_ids):
        raise ValueError("is_split, split_feature, split_bin, missing_left and category_set "
                         "must have the same length")
    if category_set.shape[1] != 4:
        raise ValueError(f"category_set must have 4 words per node, got {category_set.shape[1]}")
    for node in range(n_node_ids):
        if is_split[node] and not (0 <= split_feature[node] < n_features):
            raise ValueError(f"split_feature[{node}] = {split_feature[node]} is outside "
                             f"[0, {n_features})")
    if n_samples == 0 or n_node_ids == 0:
        return
    # One step per level down to the deepest split's (a row never starts above the
    # root), or the one step of a level. The rules cover the children of every split too
    # (no split there): a row from the root then never leaves them.
    cdef int n_steps = 1, depth
    cdef Py_ssize_t n_rules = n_node_ids
    cdef bint numerical = True
    for node in range(n_node_ids):
        if is_split[node]:
            n_rules = max(n_rules, 2 * node + 3)
            numerical = numerical and is_split[node] == 1
            if to_leaves:
                depth = 0
                while (1 << (depth + 1)) <= node + 1:
                    depth += 1
                n_steps = max(n_steps, depth + 1)
    cdef NodeRule* rules = <NodeRule*> calloc(n_rules, sizeof(NodeRule))
    if rules == NULL:
        raise MemoryError("no memory for the tree's node rules")
    cdef Py_ssize_t column_stride = X_binned.strides[1]
    for node in range(n_rules):
        rules[node].right = node  # (no split: the node stays; calloc zeroed the rest)
    for node in range(n_node_ids):
        rules[node].kind = is_split[node]
        rules[node].right = 2 * node + 2 if is_split[node] else node
        rules[node].column = split_feature[node] * column_stride if is_split[node] else 0
        rules[node].split_bin = split_bin[node]
        rules[node].missing_left = missing_left[node]
    # numerical and complete (every node above the deepest split's level splits): a row
    # from the root meets a split at each step
    cdef bint complete = numerical and n_node_ids >= (1 << n_steps) - 1
    for node in range((1 << n_steps) - 1 if complete else 0):
        complete = complete and is_split[node] != 0
    # A tree whose splits all read one feature sends a row from the root to a leaf that
    # depends on the row's bin alone: the leaf of each of the 256 bins, walked once with
    # the checked step, is then one lookup per row (the default's first trees; a depth-6
    # tree on 500k rows: 0.5 ms against 3.8 to 4.5 walked)
    cdef INDEX_DTYPE_C leaf_of_bin[256]
    cdef Py_ssize_t one_feature = -1
    for node in range(n_node_ids if to_leaves else 0):
        if is_split[node]:
            if one_feature == -1:
                one_feature = split_feature[node]
            elif one_feature != split_feature[node]:
                one_feature = -2
    cdef int code, step
    cdef INDEX_DTYPE_C leaf
    if one_feature >= 0:
        for code in range(256):
            leaf = 0
            for step in range(n_steps):
                if rules[leaf].kind != 0:
                    leaf = _step_on(<X_BINNED_DTYPE_C>code, &rules[leaf], leaf, category_set,
                                    missing_bin)
            leaf_of_bin[code] = leaf
    cdef const X_BINNED_DTYPE_C* rows = &X_binned[0, 0]
    cdef Py_ssize_t n_blocks = (n_samples + ROUTE_BLOCK - 1) // ROUTE_BLOCK
    cdef Py_ssize_t block
    cdef RouteShape shape
    shape.rules = rules
    shape.n_node_ids = n_node_ids
    shape.missing_bin = missing_bin
    shape.n_steps = n_steps
    shape.kind = (ONE_FEATURE if one_feature >= 0 else COMPLETE if complete else
                  NUMERICAL if numerical else ANY)
    shape.leaf_of_bin = leaf_of_bin
    shape.column = one_feature * column_stride if one_feature >= 0 else 0
    try:
        for block in prange(n_blocks, schedule="static", nogil=True, num_threads=n_threads):
            _route_block(rows, positions, &shape, category_set, block * ROUTE_BLOCK,
                         min(n_samples, (block + 1) * ROUTE_BLOCK))
    finally:
        free(rules)


cdef enum:
    # Rows routed together, one level at a time: their loads are independent, so the CPU
    # overlaps them, where one row's walk down the tree is a chain of dependent loads. At
    # a level, a block reads a strip of each split's feature column (Fortran order): 4096
    # rows make each strip 64 cache lines that the prefetcher streams, where 256 rows made
    # 4 (a depth-6 tree on 500k x 50 rows: 9.2 ms with 256, 5.5 ms with 4096; the block's
    # node ids are 16 kB of stack)
    ROUTE_BLOCK = 4096


cdef enum RouteKind:
    # what every row of a block that starts at the root may take (other blocks take the
    # checked step)
    ANY = 0             # the checked step
    NUMERICAL = 1       # numerical splits: steps without a branch
    COMPLETE = 2        # numerical, and every node above the deepest split's level splits
    ONE_FEATURE = 3     # every split reads one feature: one lookup of the leaf of its bin


cdef struct RouteShape:
    # one tree's routing, fixed for all blocks
    const NodeRule* rules          # (n_node_ids,) and beyond: the splits' children
    Py_ssize_t n_node_ids
    X_BINNED_DTYPE_C missing_bin
    int n_steps
    RouteKind kind
    const INDEX_DTYPE_C* leaf_of_bin   # (256,) ONE_FEATURE: the leaf each bin reaches
    Py_ssize_t column                  # ONE_FEATURE: the feature's column offset


cdef void _route_block(
    const X_BINNED_DTYPE_C* rows,       # X_binned's data: row i of feature f at i + f*stride
    INDEX_DTYPE_C[::1] positions,
    const RouteShape* shape,
    const CATEGORY_WORD_C[:, ::1] category_set,
    Py_ssize_t start,
    Py_ssize_t stop,
) noexcept nogil:
    """Route rows ``start:stop`` (at most ``ROUTE_BLOCK``) level by level: every row of the
    block takes one step (a row at a node that does not split stays), ``n_steps`` times.
    When every row of the block starts at the root, a tree of numerical splits steps
    without a branch (a loop of their own; a complete tree's, not even a node's kind), and
    a tree on one feature takes no step: its rows look their leaf up."""
    cdef INDEX_DTYPE_C nodes[ROUTE_BLOCK]
    cdef Py_ssize_t j, n = stop - start
    cdef INDEX_DTYPE_C node
    cdef int step
    cdef const NodeRule* rules = shape.rules
    cdef X_BINNED_DTYPE_C missing_bin = shape.missing_bin
    cdef bint from_root = True
    for j in range(n):
        node = positions[start + j]
        nodes[j] = -node - 1 if node < 0 else node
        from_root = from_root and nodes[j] == 0
    cdef RouteKind kind = shape.kind if from_root else ANY
    if kind == ONE_FEATURE:
        for j in range(n):
            nodes[j] = shape.leaf_of_bin[rows[start + j + shape.column]]
    for step in range(shape.n_steps if kind != ONE_FEATURE else 0):
        if kind == COMPLETE:
            for j in range(n):
                nodes[j] = _complete_step(rows, start + j, &rules[nodes[j]], nodes[j],
                                          missing_bin)
        elif kind == NUMERICAL:
            for j in range(n):
                nodes[j] = _numerical_step(rows, start + j, &rules[nodes[j]], missing_bin)
        else:
            for j in range(n):
                node = nodes[j]
                if node < shape.n_node_ids and rules[node].kind != 0:
                    nodes[j] = _step(rows, start + j, &rules[node], node, category_set,
                                     missing_bin)
    for j in range(n):
        if positions[start + j] < 0:
            positions[start + j] = -nodes[j] - 1
        else:
            positions[start + j] = nodes[j]


cdef inline INDEX_DTYPE_C _step(
    const X_BINNED_DTYPE_C* rows, Py_ssize_t row, const NodeRule* rule, INDEX_DTYPE_C node,
    const CATEGORY_WORD_C[:, ::1] category_set, X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    """The child of split node ``node`` (``rule``) that row ``row`` goes to."""
    return _step_on(rows[row + rule.column], rule, node, category_set, missing_bin)


cdef inline INDEX_DTYPE_C _step_on(
    X_BINNED_DTYPE_C b, const NodeRule* rule, INDEX_DTYPE_C node,
    const CATEGORY_WORD_C[:, ::1] category_set, X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    """The child of split node ``node`` (``rule``) that a row of bin ``b`` goes to."""
    cdef int go_left
    if rule.kind == 2:
        go_left = in_category_set(category_set, node, b)
    else:
        go_left = b <= rule.split_bin
    if b == missing_bin:
        go_left = rule.missing_left != 0
    # heap children: 2p + 1 (left), 2p + 2 (right), without a branch on the side
    return 2 * node + 2 - go_left


cdef inline INDEX_DTYPE_C _numerical_step(
    const X_BINNED_DTYPE_C* rows, Py_ssize_t row, const NodeRule* rule,
    X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    """:func:`_step` at a numerical split, or no step at a node without one (kind 0: the
    same arithmetic keeps the node, its ``right``, without a branch)."""
    cdef X_BINNED_DTYPE_C b = rows[row + rule.column]
    cdef int go_left = b <= rule.split_bin
    if b == missing_bin:
        go_left = rule.missing_left != 0
    return rule.right - (go_left & rule.kind)


cdef inline INDEX_DTYPE_C _complete_step(
    const X_BINNED_DTYPE_C* rows, Py_ssize_t row, const NodeRule* rule, INDEX_DTYPE_C node,
    X_BINNED_DTYPE_C missing_bin,
) noexcept nogil:
    """:func:`_step` at a numerical split (reading neither its kind nor its ``right``:
    about a tenth faster than :func:`_numerical_step`)."""
    cdef X_BINNED_DTYPE_C b = rows[row + rule.column]
    cdef int go_left = b <= rule.split_bin
    if b == missing_bin:
        go_left = rule.missing_left != 0
    return 2 * node + 2 - go_left


def node_sums(
    const INDEX_DTYPE_C[::1] positions,        # IN (n_samples,) heap node id per row
    const G_H_DTYPE_C[::1] gradients,          # IN (n_samples,)
    const G_H_DTYPE_C[::1] hessians,           # IN (n_samples,)
    const INDEX_DTYPE_C[::1] slot_of_node,     # IN (n_node_ids,) slot, or -1 to skip
    Y_DTYPE_C[:, ::1] out,                     # OUT (n_slots, 3) G, H, count; overwritten
):
    """Exact (sum of gradients, sum of hessians, row count) of the rows in selected nodes.

    Rows outside the tree (negative positions) and rows at unselected nodes are skipped.
    float64 sums of float32 values on the quantisation grid are exact in any order.
    """
    cdef Py_ssize_t n_samples = positions.shape[0]
    cdef Py_ssize_t n_node_ids = slot_of_node.shape[0]
    cdef Py_ssize_t i, slot
    cdef INDEX_DTYPE_C node
    if gradients.shape[0] != n_samples or hessians.shape[0] != n_samples:
        raise ValueError("positions, gradients and hessians must have the same length")
    if out.shape[1] != 3:
        raise ValueError("out must have 3 columns")
    for slot in range(out.shape[0]):
        out[slot, 0] = 0.0
        out[slot, 1] = 0.0
        out[slot, 2] = 0.0
    with nogil:
        for i in range(n_samples):
            node = positions[i]
            if node < 0 or node >= n_node_ids:
                continue
            slot = slot_of_node[node]
            if slot < 0:
                continue
            out[slot, 0] += gradients[i]
            out[slot, 1] += hessians[i]
            out[slot, 2] += 1.0


def rows_of_nodes(
    const INDEX_DTYPE_C[::1] positions,        # IN (n_samples,) heap node id per row
    const INDEX_DTYPE_C[::1] slot_of_node,     # IN (n_node_ids,) slot, or -1 to skip
):
    """Rows that sit in selected nodes, with each row's histogram slot.

    Parameters
    ----------
    positions : ndarray of int32, shape (n_samples,)
    slot_of_node : ndarray of int32, shape (n_node_ids,)
        ``slot_of_node[p] >= 0`` selects node ``p`` and names its histogram slot.

    Returns
    -------
    sample_indices : ndarray of int32, shape (n_selected,)
        Increasing row numbers of the rows whose node is selected.
    sample_slots : ndarray of int32, shape (n_selected,)
        ``slot_of_node[positions[sample_indices]]``; the inputs of
        ``histogram.build_node_histograms``.
    """
    cdef Py_ssize_t n_samples = positions.shape[0]
    cdef Py_ssize_t n_node_ids = slot_of_node.shape[0]
    cdef Py_ssize_t i, n_selected = 0
    cdef INDEX_DTYPE_C node
    with nogil:
        for i in range(n_samples):
            node = positions[i]
            if 0 <= node < n_node_ids and slot_of_node[node] >= 0:
                n_selected += 1
    sample_indices_arr = np.empty(n_selected, dtype=np.int32)
    sample_slots_arr = np.empty(n_selected, dtype=np.int32)
    cdef INDEX_DTYPE_C[::1] sample_indices = sample_indices_arr
    cdef INDEX_DTYPE_C[::1] sample_slots = sample_slots_arr
    cdef Py_ssize_t k = 0
    with nogil:
        for i in range(n_samples):
            node = positions[i]
            if 0 <= node < n_node_ids and slot_of_node[node] >= 0:
                sample_indices[k] = <INDEX_DTYPE_C>i
                sample_slots[k] = slot_of_node[node]
                k += 1
    return sample_indices_arr, sample_slots_arr
