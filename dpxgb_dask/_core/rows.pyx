"""Select the rows of a tree and quantise their gradients, in one pass over the rows.

A tree's rows are those whose uniform number lies in ``[low, high)`` (all rows when the
interval covers [0, 1]) and whose label is known; with ``drop_outside`` also those whose
gradient is within its bound. Their gradient ``g`` is rounded to the grid and clipped to
``[-g_max, g_max]``, their hessian to ``[0, h_max]`` (``g_max`` and ``h_max`` already on
the grid), as ``numpy.round`` (half to even) then ``numpy.clip`` would; rows outside the
tree get zero gradient and hessian. A row's position is its node: the root ``0``, or with
``routed`` the leaf it was routed to before (the tree's structure came ahead of its rows'
selection); a row outside the tree gets the complement ``~p = -p - 1`` of that node (the
root's: ``-1``).

:func:`select_tree_rows_at_margins` computes the gradient and hessian of each row from its
margin in the same pass (squared error or logistic loss), where :func:`select_tree_rows`
takes them computed. The logistic loss takes ``exp(-m)`` computed by NumPy, whose SIMD
``exp`` is several times faster than libm's, and gives the same bits as before.
"""
from libc.math cimport copysign, fabs, isnan
from cython.parallel import prange

from .common cimport G_H_DTYPE_C, INDEX_DTYPE_C, Y_DTYPE_C


cdef double ROUNDING_SHIFT = 6755399441055744.0  # 1.5 * 2**52


cdef inline double _round_half_even(double x) noexcept nogil:
    """``rint(x)`` (round half to even, the default rounding mode) for |x| < 2**51: adding
    and subtracting 1.5·2**52 leaves no fraction bits, without a call to libm; the sign is
    x's, as rint keeps it (-0.3 rounds to -0.0)."""
    return copysign((x + ROUNDING_SHIFT) - ROUNDING_SHIFT, x)


def select_tree_rows(
    const Y_DTYPE_C[::1] gradients_in,     # IN (n_rows,) g at the margins
    const Y_DTYPE_C[::1] hessians_in,      # IN (n_rows,) h at the margins
    const Y_DTYPE_C[::1] labels,           # IN (n_rows,) NaN: unlabelled
    const Y_DTYPE_C[::1] uniforms,         # IN (n_rows,) or empty: every row is drawn
    double low,                            # IN the drawn interval [low, high)
    double high,
    double g_max,                          # IN gradient clip, on the grid
    double h_max,                          # IN hessian clip, on the grid
    double grid,                           # IN a power of two
    bint drop_outside,                     # IN leave out rows with |g| > g_bound
    double g_bound,                        # IN the gradient bound (before rounding)
    bint routed,                           # IN positions hold each row's leaf already
    INDEX_DTYPE_C[::1] positions,          # IN/OUT (n_rows,) node p in the tree, ~p outside
    G_H_DTYPE_C[::1] gradients,            # OUT (n_rows,)
    G_H_DTYPE_C[::1] hessians,             # OUT (n_rows,)
    int n_threads,
):
    """Positions, quantised gradients and hessians of a tree's rows (module docstring).

    Parameters
    ----------
    gradients_in, hessians_in, labels : ndarray of float64, shape (n_rows,)
    uniforms : ndarray of float64, shape (n_rows,) or (0,)
        Each row's uniform number; empty when the interval covers every row.
    low, high : float
    g_max, h_max, grid : float
    drop_outside : bool
    g_bound : float
    routed : bool
        ``positions`` holds each row's leaf on entry (the tree was routed ahead), kept for
        the rows in the tree; otherwise every row starts at the root ``0`` (``positions``
        is not read).
    positions : ndarray of int32, shape (n_rows,)
        Each row's node p if it is in the tree, ``~p`` otherwise.
    gradients, hessians : ndarray of float32, shape (n_rows,)
    n_threads : int
    """
    cdef Py_ssize_t n = labels.shape[0], i
    cdef bint every_row = uniforms.shape[0] == 0
    cdef double inverse_grid = 1.0 / grid  # exact: the grid is a power of two
    if not (gradients_in.shape[0] == hessians_in.shape[0] == n == positions.shape[0]
            == gradients.shape[0] == hessians.shape[0]):
        raise ValueError("the row arrays must have the same length")
    if not every_row and uniforms.shape[0] != n:
        raise ValueError(f"uniforms must have {n} entries or none, got {uniforms.shape[0]}")
    for i in prange(n, schedule="static", nogil=True, num_threads=n_threads):
        _select_row(gradients_in[i], hessians_in[i], labels[i],
                    0.0 if every_row else uniforms[i], every_row, low, high, drop_outside,
                    g_bound, inverse_grid, grid, g_max, h_max, routed,
                    &positions[i], &gradients[i], &hessians[i])


def select_tree_rows_at_margins(
    const Y_DTYPE_C[::1] margins,          # IN (n_rows,) the rows' margins m
    const Y_DTYPE_C[::1] exp_neg_margins,  # IN (n_rows,) exp(-m) (logistic), or empty
    const Y_DTYPE_C[::1] labels,           # IN (n_rows,) NaN: unlabelled
    bint logistic,                         # IN logistic loss; else squared error
    const Y_DTYPE_C[::1] uniforms,         # IN (n_rows,) or empty: every row is drawn
    double low,                            # IN the drawn interval [low, high)
    double high,
    double g_max,                          # IN gradient clip, on the grid
    double h_max,                          # IN hessian clip, on the grid
    double grid,                           # IN a power of two
    bint drop_outside,                     # IN leave out rows with |g| > g_bound
    double g_bound,                        # IN the gradient bound (before rounding)
    bint routed,                           # IN positions hold each row's leaf already
    INDEX_DTYPE_C[::1] positions,          # IN/OUT (n_rows,) node p in the tree, ~p outside
    G_H_DTYPE_C[::1] gradients,            # OUT (n_rows,)
    G_H_DTYPE_C[::1] hessians,             # OUT (n_rows,)
    int n_threads,
):
    """:func:`select_tree_rows` of the gradients and hessians at ``margins``, computed in
    the same pass as ``Objective.gradients`` writes them: ``g = m - y``, ``h = 1`` (squared
    error), or ``p = 1 / (1 + exp(-m))``, ``g = p - y``, ``h = p (1 - p)`` (logistic).

    Parameters
    ----------
    margins : ndarray of float64, shape (n_rows,)
        Read for the squared error only.
    exp_neg_margins : ndarray of float64, shape (n_rows,) or (0,)
        ``numpy.exp(-margins)``; read for the logistic loss only.
    labels : ndarray of float64, shape (n_rows,)
    logistic : bool
    uniforms, low, high, g_max, h_max, grid, drop_outside, g_bound, routed, positions, \
gradients, hessians, n_threads
        As :func:`select_tree_rows`'s.
    """
    cdef Py_ssize_t n = labels.shape[0], i
    cdef bint every_row = uniforms.shape[0] == 0
    cdef double g, h, p
    cdef double inverse_grid = 1.0 / grid  # exact: the grid is a power of two
    if not ((exp_neg_margins if logistic else margins).shape[0] == n == positions.shape[0]
            == gradients.shape[0] == hessians.shape[0]):
        raise ValueError("the row arrays must have the same length")
    if not every_row and uniforms.shape[0] != n:
        raise ValueError(f"uniforms must have {n} entries or none, got {uniforms.shape[0]}")
    for i in prange(n, schedule="static", nogil=True, num_threads=n_threads):
        if logistic:
            p = 1.0 / (1.0 + exp_neg_margins[i])
            g = p - labels[i]
            h = p * (1.0 - p)
        else:
            g = margins[i] - labels[i]
            h = 1.0
        _select_row(g, h, labels[i], 0.0 if every_row else uniforms[i], every_row, low, high,
                    drop_outside, g_bound, inverse_grid, grid, g_max, h_max, routed,
                    &positions[i], &gradients[i], &hessians[i])


cdef inline void _select_row(
    double g, double h, double label, double uniform, bint every_row, double low,
    double high, bint drop_outside, double g_bound, double inverse_grid, double grid,
    double g_max, double h_max, bint routed, INDEX_DTYPE_C* position,
    G_H_DTYPE_C* gradient, G_H_DTYPE_C* hessian,
) noexcept nogil:
    """One row of a tree's selection, from its gradient ``g``, hessian ``h``, label and
    uniform number (read only when not ``every_row``), at its leaf ``position[0]`` when
    ``routed`` (else at the root)."""
    cdef bint in_tree = not isnan(label)
    cdef INDEX_DTYPE_C node = position[0] if routed else 0
    if not every_row:
        in_tree = in_tree and uniform >= low and uniform < high
    if drop_outside:
        in_tree = in_tree and fabs(g) <= g_bound
    if in_tree:
        g = _round_half_even(g * inverse_grid) * grid
        h = _round_half_even(h * inverse_grid) * grid
        position[0] = node
        # written as min/max of two values (minsd/maxsd), not as branches: a third of
        # the rows or more clip, at random; NaN and -0.0 pass as through numpy.clip
        g = g_max if g > g_max else g
        g = -g_max if g < -g_max else g
        h = h_max if h > h_max else h
        h = 0.0 if h < 0.0 else h
        gradient[0] = <G_H_DTYPE_C>g
        hessian[0] = <G_H_DTYPE_C>h
    else:
        position[0] = -node - 1
        gradient[0] = 0.0
        hessian[0] = 0.0


def add_leaf_values(
    const INDEX_DTYPE_C[::1] positions,    # IN (n_rows,) leaf heap id p, or ~p outside
    const Y_DTYPE_C[::1] values,           # IN (n_node_ids,) the tree's value per node id
    Y_DTYPE_C[::1] margins,                # IN/OUT (n_rows,)
    bint clip,                             # IN clip the margins to [low, high]
    double low,
    double high,
    int n_threads,
):
    """Add each row's leaf value to its margin (rows outside the tree too: their leaf is
    ``~p``), then clip the margins to ``[low, high]`` if asked, as ``numpy.clip`` would.

    Parameters
    ----------
    positions : ndarray of int32, shape (n_rows,)
    values : ndarray of float64, shape (n_node_ids,)
    margins : ndarray of float64, shape (n_rows,), updated in place
    clip : bool
    low, high : float
    n_threads : int
    """
    cdef Py_ssize_t n = positions.shape[0], i, n_node_ids = values.shape[0]
    cdef INDEX_DTYPE_C node
    cdef double m
    if margins.shape[0] != n:
        raise ValueError(f"margins has {margins.shape[0]} entries, positions {n}")
    for i in range(n):
        node = positions[i]
        if node < 0:
            node = -node - 1
        if node >= n_node_ids:
            raise ValueError(f"row {i} sits at node {node}, beyond the {n_node_ids} values")
    for i in prange(n, schedule="static", nogil=True, num_threads=n_threads):
        node = positions[i]
        if node < 0:
            node = -node - 1
        m = margins[i] + values[node]
        if clip:
            m = low if m < low else (high if m > high else m)
        margins[i] = m
