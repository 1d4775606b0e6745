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
    cdef X_DTYPE_C x
    cdef bint go_left
    cdef Y_DTYPE_C total
    for i in prange(X.shape[0], schedule="static", nogil=True, num_threads=n_threads):
        total = 0.0
        for t in range(n_trees):
            node = tree_roots[t]
            while left[node] >= 0:
                x = X[i, feature[node]]
                if x != x:
                    go_left = missing_left[node] != 0
                elif categorical[node]:
                    go_left = (x >= 0.0 and x < 256.0 and x == <Py_ssize_t>x
                               and in_category_set(category_set, node, <Py_ssize_t>x))
                else:
                    go_left = x <= threshold[node]
                if go_left:
                    node = left[node]
                else:
                    node = right[node]
            total = total + value[node]
        out[i] += total


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
