"""Walk a forest stored as flat arrays, on raw float rows or on binned rows.

A forest is the concatenation of its trees' nodes. Node ``j`` is a leaf when
``left[j] < 0``; otherwise it sends a row to ``left[j]`` or ``right[j]`` (indices into the
same arrays). Raw rows go left when ``x[feature[j]] <= threshold[j]`` and, when the value
is NaN, when ``missing_left[j]``. Binned rows compare ``bin <= bin_threshold[j]`` instead,
with ``missing_bin`` for NaN; with the cut points of binning.pyx, ``threshold[j]`` is the
cut at ``bin_threshold[j]`` and both walks agree on every row. A categorical node
(``categorical[j]``) sends a row left when its category code (raw; a code outside 0..255
goes right) or its bin (binned; a category's bin is its code) is in the node's left set
``category_set[j]`` (4 words of 64 bits, ``dpxgb_dask._core.category_sets``).
"""
cimport cython
from cython.parallel import prange
from libc.stdlib cimport malloc, free

from .common cimport (X_DTYPE_C, X_BINNED_DTYPE_C, Y_DTYPE_C, INDEX_DTYPE_C, CATEGORY_WORD_C,
                    in_category_set)


def predict_raw(
    const X_DTYPE_C[:, :] X,                   # IN (n_samples, n_features)
    const INDEX_DTYPE_C[::1] feature,          # IN (n_nodes,)
    const X_DTYPE_C[::1] threshold,            # IN (n_nodes,)
    const unsigned char[::1] categorical,      # IN (n_nodes,) 1: x in category_set left
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_nodes, 4) left categories
    const unsigned char[::1] missing_left,     # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] left,             # IN (n_nodes,) -1 for leaves
    const INDEX_DTYPE_C[::1] right,            # IN (n_nodes,)
    const Y_DTYPE_C[::1] value,                # IN (n_nodes,) leaf values
    const INDEX_DTYPE_C[::1] tree_roots,       # IN (n_trees,) node index of each root
    Y_DTYPE_C[::1] out,                        # OUT (n_samples,) += sum of leaf values
    int n_threads,                             # IN
):
    """Add to ``out[i]`` the sum over trees of the leaf value reached by row ``X[i]``.

    Parameters
    ----------
    X : ndarray of float64, shape (n_samples, n_features); NaN marks missing values
    feature, left, right, tree_roots : ndarray of int32
    threshold, value : ndarray of float64, shape (n_nodes,)
    categorical, missing_left : ndarray of uint8, shape (n_nodes,)
    category_set : ndarray of uint64, shape (n_nodes, 4)
        Left categories of the categorical nodes.
    out : ndarray of float64, shape (n_samples,)
        Accumulated into (initialise it with the base score).
    n_threads : int
    """
    _check_forest(feature, threshold.shape[0], categorical, category_set, missing_left, left,
                  right, value, tree_roots, X.shape[1])
    if out.shape[0] != X.shape[0]:
        raise ValueError(f"out has {out.shape[0]} entries, X has {X.shape[0]} rows")
    cdef Py_ssize_t i, t, node
    cdef Py_ssize_t n_trees = tree_roots.shape[0]
    cdef Y_DTYPE_C total
    for i in prange(X.shape[0], schedule="static", nogil=True, num_threads=n_threads):
        total = 0.0
        for t in range(n_trees):
            total = total + value[_raw_leaf(X, i, tree_roots[t], feature, threshold,
                                            categorical, category_set, missing_left, left,
                                            right)]
        out[i] += total


cdef inline bint _raw_goes_left(X_DTYPE_C x, Py_ssize_t node, const X_DTYPE_C[::1] threshold,
                                const unsigned char[::1] categorical,
                                const CATEGORY_WORD_C[:, ::1] category_set,
                                const unsigned char[::1] missing_left) noexcept nogil:
    """Whether raw value ``x`` of node ``node``'s feature goes left (see the module doc)."""
    if x != x:
        return missing_left[node] != 0
    if categorical[node]:
        return (x >= 0.0 and x < 256.0 and x == <Py_ssize_t>x
                and in_category_set(category_set, node, <Py_ssize_t>x))
    return x <= threshold[node]


cdef inline Py_ssize_t _raw_leaf(const X_DTYPE_C[:, :] X, Py_ssize_t row, Py_ssize_t root,
                                 const INDEX_DTYPE_C[::1] feature,
                                 const X_DTYPE_C[::1] threshold,
                                 const unsigned char[::1] categorical,
                                 const CATEGORY_WORD_C[:, ::1] category_set,
                                 const unsigned char[::1] missing_left,
                                 const INDEX_DTYPE_C[::1] left,
                                 const INDEX_DTYPE_C[::1] right) noexcept nogil:
    """The leaf that raw row ``X[row]`` reaches from node ``root``."""
    cdef Py_ssize_t node = root
    while left[node] >= 0:
        if _raw_goes_left(X[row, feature[node]], node, threshold, categorical, category_set,
                          missing_left):
            node = left[node]
        else:
            node = right[node]
    return node


def predict_leaves_raw(
    const X_DTYPE_C[:, :] X,                   # IN (n_samples, n_features)
    const INDEX_DTYPE_C[::1] feature,          # IN (n_nodes,)
    const X_DTYPE_C[::1] threshold,            # IN (n_nodes,)
    const unsigned char[::1] categorical,      # IN (n_nodes,)
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_nodes, 4)
    const unsigned char[::1] missing_left,     # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] left,             # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] right,            # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] tree_roots,       # IN (n_trees,)
    INDEX_DTYPE_C[:, ::1] out,                 # OUT (n_samples, n_trees) leaf node indices
    int n_threads,                             # IN
):
    """Write to ``out[i, t]`` the index (in the forest's node arrays) of the leaf of tree
    ``t`` that row ``X[i]`` reaches.

    Parameters
    ----------
    out : ndarray of int32, shape (n_samples, n_trees)
    Other parameters as in :func:`predict_raw`.
    """
    _check_forest(feature, threshold.shape[0], categorical, category_set, missing_left, left,
                  right, threshold, tree_roots, X.shape[1])
    if out.shape[0] != X.shape[0] or out.shape[1] != tree_roots.shape[0]:
        raise ValueError(f"out must have shape ({X.shape[0]}, {tree_roots.shape[0]}), got "
                         f"({out.shape[0]}, {out.shape[1]})")
    cdef Py_ssize_t i, t, node
    for i in prange(X.shape[0], schedule="static", nogil=True, num_threads=n_threads):
        for t in range(tree_roots.shape[0]):
            out[i, t] = <INDEX_DTYPE_C>_raw_leaf(X, i, tree_roots[t], feature, threshold,
                                                 categorical, category_set, missing_left,
                                                 left, right)


# -- TreeSHAP ---------------------------------------------------------------------------
# Lundberg, Erion & Lee (2018), "Consistent individualized feature attribution for tree
# ensembles", Algorithm 2: exact Shapley values of the path-dependent expectation
# E[f(x) | x_S], where a node splitting on a feature outside S averages its children
# weighted by their covers. The path of unique features from the root holds, per element,
# its feature, the fraction of the cover that flows through it when the feature is absent
# (zero), whether x follows it (one), and the permutation weight of subsets of each size.

cdef struct PathElement:
    Py_ssize_t feature
    double zero_fraction
    double one_fraction
    double weight


cdef void _extend_path(PathElement* path, Py_ssize_t depth, double zero_fraction,
                       double one_fraction, Py_ssize_t feature) noexcept nogil:
    """Append an element at ``path[depth]`` and update the subset-size weights."""
    cdef Py_ssize_t i
    path[depth].feature = feature
    path[depth].zero_fraction = zero_fraction
    path[depth].one_fraction = one_fraction
    path[depth].weight = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        path[i + 1].weight += one_fraction * path[i].weight * (i + 1) / <double>(depth + 1)
        path[i].weight = zero_fraction * path[i].weight * (depth - i) / <double>(depth + 1)


cdef void _unwind_path(PathElement* path, Py_ssize_t depth, Py_ssize_t index) noexcept nogil:
    """Remove element ``index`` from a path of ``depth + 1`` elements (undo its extend)."""
    cdef double one = path[index].one_fraction, zero = path[index].zero_fraction
    cdef double next_one = path[depth].weight, kept
    cdef Py_ssize_t i
    for i in range(depth - 1, -1, -1):
        if one != 0:
            kept = path[i].weight
            path[i].weight = next_one * (depth + 1) / ((i + 1) * one)
            next_one = kept - path[i].weight * zero * (depth - i) / <double>(depth + 1)
        else:
            path[i].weight = path[i].weight * (depth + 1) / (zero * (depth - i))
    for i in range(index, depth):
        path[i].feature = path[i + 1].feature
        path[i].zero_fraction = path[i + 1].zero_fraction
        path[i].one_fraction = path[i + 1].one_fraction


cdef double _unwound_path_sum(const PathElement* path, Py_ssize_t depth,
                              Py_ssize_t index) noexcept nogil:
    """The total weight of the path with element ``index`` removed (without removing it)."""
    cdef double one = path[index].one_fraction, zero = path[index].zero_fraction
    cdef double next_one = path[depth].weight, total = 0.0, part
    cdef Py_ssize_t i
    for i in range(depth - 1, -1, -1):
        if one != 0:
            part = next_one * (depth + 1) / ((i + 1) * one)
            total += part
            next_one = path[i].weight - part * zero * (depth - i) / <double>(depth + 1)
        elif zero != 0:
            total += path[i].weight / zero * (depth + 1) / <double>(depth - i)
    return total


cdef void _tree_shap(const X_DTYPE_C[:, :] X, Py_ssize_t row, const INDEX_DTYPE_C[::1] feature,
                     const X_DTYPE_C[::1] threshold, const unsigned char[::1] categorical,
                     const CATEGORY_WORD_C[:, ::1] category_set,
                     const unsigned char[::1] missing_left, const INDEX_DTYPE_C[::1] left,
                     const INDEX_DTYPE_C[::1] right, const Y_DTYPE_C[::1] value,
                     const Y_DTYPE_C[::1] cover, Y_DTYPE_C[:, ::1] out, Py_ssize_t node,
                     PathElement* parent_path, Py_ssize_t depth, double zero_fraction,
                     double one_fraction, Py_ssize_t split_feature) noexcept nogil:
    """Add node ``node``'s subtree's contributions for row ``row`` to ``out[row]``."""
    # this node's path: its parent's (depth elements, before it in the buffer), extended
    cdef PathElement* path = parent_path + depth
    cdef Py_ssize_t i, hot, cold, index
    cdef double incoming_zero = 1.0, incoming_one = 1.0
    for i in range(depth):
        path[i] = parent_path[i]
    _extend_path(path, depth, zero_fraction, one_fraction, split_feature)
    if left[node] < 0:
        for i in range(1, depth + 1):
            out[row, path[i].feature] += (_unwound_path_sum(path, depth, i)
                                          * (path[i].one_fraction - path[i].zero_fraction)
                                          * value[node])
        return
    if _raw_goes_left(X[row, feature[node]], node, threshold, categorical, category_set,
                      missing_left):
        hot, cold = left[node], right[node]
    else:
        hot, cold = right[node], left[node]
    # a feature split on higher up: undo its element, the fractions multiply
    for index in range(1, depth + 1):
        if path[index].feature == feature[node]:
            incoming_zero = path[index].zero_fraction
            incoming_one = path[index].one_fraction
            _unwind_path(path, depth, index)
            depth -= 1
            break
    _tree_shap(X, row, feature, threshold, categorical, category_set, missing_left, left, right,
               value, cover, out, hot, path, depth + 1,
               incoming_zero * cover[hot] / cover[node], incoming_one, feature[node])
    _tree_shap(X, row, feature, threshold, categorical, category_set, missing_left, left, right,
               value, cover, out, cold, path, depth + 1,
               incoming_zero * cover[cold] / cover[node], 0.0, feature[node])


def tree_expectations(
    const INDEX_DTYPE_C[::1] left,             # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] right,            # IN (n_nodes,)
    const Y_DTYPE_C[::1] value,                # IN (n_nodes,)
    const Y_DTYPE_C[::1] cover,                # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] tree_roots,       # IN (n_trees,)
):
    """Each tree's expected output: its leaf values averaged with weights ``cover``.

    Returns
    -------
    ndarray of float64, shape (n_trees,)
    """
    cdef Py_ssize_t n_nodes = left.shape[0], j, t
    mean = [0.0] * n_nodes
    for j in range(n_nodes - 1, -1, -1):  # children come after their parent
        if left[j] < 0:
            mean[j] = value[j]
        else:
            mean[j] = (mean[left[j]] * cover[left[j]]
                       + mean[right[j]] * cover[right[j]]) / cover[j]
    return [mean[tree_roots[t]] for t in range(tree_roots.shape[0])]


def contributions_raw(
    const X_DTYPE_C[:, :] X,                   # IN (n_samples, n_features)
    const INDEX_DTYPE_C[::1] feature,          # IN (n_nodes,)
    const X_DTYPE_C[::1] threshold,            # IN (n_nodes,)
    const unsigned char[::1] categorical,      # IN (n_nodes,)
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_nodes, 4)
    const unsigned char[::1] missing_left,     # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] left,             # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] right,            # IN (n_nodes,)
    const Y_DTYPE_C[::1] value,                # IN (n_nodes,) leaf values
    const Y_DTYPE_C[::1] cover,                # IN (n_nodes,) > 0, a parent's = its children's
    const INDEX_DTYPE_C[::1] tree_roots,       # IN (n_trees,)
    int max_depth,                             # IN the deepest leaf's depth (root: 0)
    Y_DTYPE_C[:, ::1] out,                     # OUT (n_samples, n_features + 1) +=
    int n_threads,                             # IN
):
    """Add to ``out[i]`` the TreeSHAP contributions of row ``X[i]`` summed over the trees:
    ``out[i, f]`` for each feature, ``out[i, n_features]`` the trees' expected outputs, so
    that a row's entries sum to its margin (less the base score).

    Parameters
    ----------
    cover : ndarray of float64, shape (n_nodes,)
        Positive; a split node's cover is the sum of its children's.
    max_depth : int
        At least the depth of every leaf (sizes the path buffers).
    out : ndarray of float64, shape (n_samples, n_features + 1)
    Other parameters as in :func:`predict_raw`.
    """
    _check_forest(feature, threshold.shape[0], categorical, category_set, missing_left, left,
                  right, value, tree_roots, X.shape[1])
    if cover.shape[0] != feature.shape[0]:
        raise ValueError("cover must have one entry per node")
    if out.shape[0] != X.shape[0] or out.shape[1] != X.shape[1] + 1:
        raise ValueError(f"out must have shape ({X.shape[0]}, {X.shape[1] + 1}), got "
                         f"({out.shape[0]}, {out.shape[1]})")
    for j in range(cover.shape[0]):
        if not cover[j] > 0:
            raise ValueError(f"cover[{j}] = {cover[j]} must be positive")
    expectations = tree_expectations(left, right, value, cover, tree_roots)
    cdef double bias = sum(expectations)
    # the paths of depths 0..max_depth + 1 side by side
    cdef Py_ssize_t path_size = (max_depth + 2) * (max_depth + 3) // 2
    cdef Py_ssize_t i, t
    cdef PathElement* buffer
    for i in prange(X.shape[0], schedule="static", nogil=True, num_threads=n_threads):
        buffer = <PathElement*>malloc(path_size * sizeof(PathElement))
        if buffer == NULL:
            with gil:
                raise MemoryError()
        for t in range(tree_roots.shape[0]):
            _tree_shap(X, i, feature, threshold, categorical, category_set, missing_left, left,
                       right, value, cover, out, tree_roots[t], buffer, 0, 1.0, 1.0, -1)
        free(buffer)
        out[i, X.shape[1]] += bias


def predict_binned(
    const X_BINNED_DTYPE_C[::1, :] X_binned,   # IN (n_samples, n_features), Fortran order
    const INDEX_DTYPE_C[::1] feature,          # IN (n_nodes,)
    const X_BINNED_DTYPE_C[::1] bin_threshold, # IN (n_nodes,)
    const unsigned char[::1] categorical,      # IN (n_nodes,) 1: bin in category_set left
    const CATEGORY_WORD_C[:, ::1] category_set,  # IN (n_nodes, 4) left categories
    const unsigned char[::1] missing_left,     # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] left,             # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] right,            # IN (n_nodes,)
    const Y_DTYPE_C[::1] value,                # IN (n_nodes,)
    const INDEX_DTYPE_C[::1] tree_roots,       # IN (n_trees,)
    X_BINNED_DTYPE_C missing_bin,              # IN
    Y_DTYPE_C[::1] out,                        # OUT (n_samples,) += sum of leaf values
    int n_threads,                             # IN
):
    """Same as :func:`predict_raw` on binned rows (used while training).

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_samples, n_features), Fortran-ordered
    bin_threshold : ndarray of uint8, shape (n_nodes,)
    missing_bin : int
    Other parameters as in :func:`predict_raw`.
    """
    _check_forest(feature, bin_threshold.shape[0], categorical, category_set, missing_left,
                  left, right, value, tree_roots, X_binned.shape[1])
    if out.shape[0] != X_binned.shape[0]:
        raise ValueError(f"out has {out.shape[0]} entries, X_binned has "
                         f"{X_binned.shape[0]} rows")
    cdef Py_ssize_t i, t, node
    cdef Py_ssize_t n_trees = tree_roots.shape[0]
    cdef X_BINNED_DTYPE_C b
    cdef bint go_left
    cdef Y_DTYPE_C total
    for i in prange(X_binned.shape[0], schedule="static", nogil=True, num_threads=n_threads):
        total = 0.0
        for t in range(n_trees):
            node = tree_roots[t]
            while left[node] >= 0:
                b = X_binned[i, feature[node]]
                if b == missing_bin:
                    go_left = missing_left[node] != 0
                elif categorical[node]:
                    go_left = in_category_set(category_set, node, b)
                else:
                    go_left = b <= bin_threshold[node]
                if go_left:
                    node = left[node]
                else:
                    node = right[node]
            total = total + value[node]
        out[i] += total


cdef _check_forest(const INDEX_DTYPE_C[::1] feature, Py_ssize_t n_thresholds,
                   const unsigned char[::1] categorical,
                   const CATEGORY_WORD_C[:, ::1] category_set,
                   const unsigned char[::1] missing_left, const INDEX_DTYPE_C[::1] left,
                   const INDEX_DTYPE_C[::1] right, const Y_DTYPE_C[::1] value,
                   const INDEX_DTYPE_C[::1] tree_roots, Py_ssize_t n_features):
    """Refuse a forest whose walk could read out of bounds or loop forever.

    Children must point forward (``left[j] > j``), which every tree stored in pre-order
    or breadth-first order satisfies, so every walk ends at a leaf.
    """
    cdef Py_ssize_t n_nodes = feature.shape[0]
    cdef Py_ssize_t j
    if not (n_thresholds == categorical.shape[0] == missing_left.shape[0] == left.shape[0]
            == right.shape[0] == value.shape[0] == category_set.shape[0] == n_nodes):
        raise ValueError("the forest's node arrays must all have the same length")
    if category_set.shape[1] != 4:
        raise ValueError(f"category_set must have 4 words per node, got {category_set.shape[1]}")
    for j in range(tree_roots.shape[0]):
        if not (0 <= tree_roots[j] < n_nodes):
            raise ValueError(f"tree_roots[{j}] = {tree_roots[j]} is outside [0, {n_nodes})")
    for j in range(n_nodes):
        if left[j] < 0:
            continue
        if not (j < left[j] < n_nodes and j < right[j] < n_nodes):
            raise ValueError(f"node {j} has children ({left[j]}, {right[j]}); children must "
                             f"come after their parent and lie in [0, {n_nodes})")
        if not (0 <= feature[j] < n_features):
            raise ValueError(f"node {j} splits on feature {feature[j]}, outside "
                             f"[0, {n_features})")
