"""The gain of every split candidate of every node and feature, in one pass per histogram row.

A row is one node's histogram of one feature: ``n_bins`` per-bin sums ``g``, ``h`` (and,
for a release with noise, ``k``: how many noisy cells each bin's sums hold), the last bin
holding the rows whose value is missing. Candidate ``t`` sends bins ``0..t`` left (or bin
``t`` alone, for a one-against-the-rest feature), and the missing bin right (``[..., 0]``)
or left (``[..., 1]``). Its gain is::

    term(G_L, H_L, K_L) + term(G - G_L, H - H_L, K - K_L) - term(G, H, K)

(the last term only with ``parent_term``), where, without noise terms,
``term(G, H) = G² / (max(H, 0) + λ)`` (0 where that denominator is not positive) and, with
them (the sums are a Gaussian release with standard deviation σ per noisy cell)::

    term(G, H, K) = max(G² − z² K σ², 0) / (max(H, c σ √K) + λ)

The kernel evaluates these expressions as NumPy would on the same arrays, operation by
operation in the same order (the twin, ``naive/gains.py``), so the gains are the same bits:
cumulative sums run left to right, ``G_L + 0·G_miss`` is still added for the missing-right
direction, maxima return their first argument on ties and propagate NaN.
"""
from libc.math cimport sqrt


cdef inline double _maximum(double a, double b) noexcept nogil:
    """``numpy.maximum(a, b)``: ``a`` on ties (-0.0 against 0.0 too), NaN if either is."""
    return a if (a >= b or a != a) else b


cdef inline double _term(double g, double h, double k, double reg_lambda, bint noise_aware,
                         double z_squared, double sigma_squared,
                         double floor_per_root_cell) noexcept nogil:
    cdef double denominator
    if noise_aware:
        return (_maximum(g * g - z_squared * k * sigma_squared, 0.0)
                / (_maximum(h, floor_per_root_cell * sqrt(k)) + reg_lambda))
    denominator = _maximum(h, 0.0) + reg_lambda
    return g * g / denominator if denominator > 0.0 else 0.0


def split_gains(
    const double[:, :, ::1] sum_g,             # IN (n_nodes, n_features, n_bins)
    const double[:, :, ::1] sum_h,             # IN same shape
    const double[:, :, ::1] cells,             # IN same shape (noise_aware), or any
    const unsigned char[::1] one_vs_rest,      # IN (n_features,) 1: bin t alone goes left
    double reg_lambda,                         # IN λ
    bint parent_term,                          # IN subtract term(G, H, K)
    bint noise_aware,                          # IN the noise terms (module docstring)
    double z_squared,                          # IN z²
    double sigma_squared,                      # IN σ²
    double floor_per_root_cell,                # IN c σ
    double[:, :, :, ::1] gains,                # OUT (n_nodes, n_features, n_bins - 1, 2)
):
    """Gains of every candidate (module docstring).

    Parameters
    ----------
    sum_g, sum_h : ndarray of float64, shape (n_nodes, n_features, n_bins)
    cells : ndarray of float64, shape (n_nodes, n_features, n_bins)
        Read only with ``noise_aware``.
    one_vs_rest : ndarray of uint8, shape (n_features,)
    reg_lambda : float
    parent_term, noise_aware : bool
    z_squared, sigma_squared, floor_per_root_cell : float
        Read only with ``noise_aware``.
    gains : ndarray of float64, shape (n_nodes, n_features, n_bins - 1, 2), overwritten
    """
    cdef Py_ssize_t n_nodes = sum_g.shape[0], n_features = sum_g.shape[1]
    cdef Py_ssize_t n_bins = sum_g.shape[2]
    cdef Py_ssize_t i, f, t, last = n_bins - 1
    cdef double g_total, h_total, k_total, g_left, h_left, k_left, g_cum, h_cum, k_cum
    cdef double g_miss, h_miss, k_miss, parent, missing_left, g_l, h_l, k_l
    cdef int side
    if not (sum_h.shape[0] == n_nodes and sum_h.shape[1] == n_features
            and sum_h.shape[2] == n_bins):
        raise ValueError("sum_g and sum_h must have the same shape")
    if noise_aware and not (cells.shape[0] == n_nodes and cells.shape[1] == n_features
                            and cells.shape[2] == n_bins):
        raise ValueError("cells must have the shape of sum_g")
    if one_vs_rest.shape[0] != n_features:
        raise ValueError(f"one_vs_rest has {one_vs_rest.shape[0]} entries for "
                         f"{n_features} features")
    if not (gains.shape[0] == n_nodes and gains.shape[1] == n_features
            and gains.shape[2] == max(n_bins - 1, 0) and gains.shape[3] == 2):
        raise ValueError("gains must have shape (n_nodes, n_features, n_bins - 1, 2)")
    if n_bins < 2:
        return
    with nogil:
        for i in range(n_nodes):
            for f in range(n_features):
                # the node's totals: the sum of bins 0..n_bins-2 (left to right), plus the
                # missing bin
                g_cum = sum_g[i, f, 0]
                h_cum = sum_h[i, f, 0]
                k_cum = cells[i, f, 0] if noise_aware else 0.0
                for t in range(1, last):
                    g_cum = g_cum + sum_g[i, f, t]
                    h_cum = h_cum + sum_h[i, f, t]
                    if noise_aware:
                        k_cum = k_cum + cells[i, f, t]
                g_miss = sum_g[i, f, last]
                h_miss = sum_h[i, f, last]
                k_miss = cells[i, f, last] if noise_aware else 0.0
                g_total = g_cum + g_miss
                h_total = h_cum + h_miss
                k_total = k_cum + k_miss if noise_aware else 0.0
                parent = _term(g_total, h_total, k_total, reg_lambda, noise_aware,
                               z_squared, sigma_squared, floor_per_root_cell) \
                    if parent_term else 0.0
                g_cum = h_cum = k_cum = 0.0
                for t in range(last):
                    if t == 0:
                        g_cum = sum_g[i, f, 0]
                        h_cum = sum_h[i, f, 0]
                        k_cum = cells[i, f, 0] if noise_aware else 0.0
                    else:
                        g_cum = g_cum + sum_g[i, f, t]
                        h_cum = h_cum + sum_h[i, f, t]
                        if noise_aware:
                            k_cum = k_cum + cells[i, f, t]
                    if one_vs_rest[f]:
                        g_left = sum_g[i, f, t]
                        h_left = sum_h[i, f, t]
                        k_left = cells[i, f, t] if noise_aware else 0.0
                    else:
                        g_left, h_left, k_left = g_cum, h_cum, k_cum
                    for side in range(2):
                        missing_left = <double>side
                        g_l = g_left + missing_left * g_miss
                        h_l = h_left + missing_left * h_miss
                        k_l = k_left + missing_left * k_miss
                        gains[i, f, t, side] = (
                            _term(g_l, h_l, k_l, reg_lambda, noise_aware, z_squared,
                                  sigma_squared, floor_per_root_cell)
                            + _term(g_total - g_l, h_total - h_l, k_total - k_l, reg_lambda,
                                    noise_aware, z_squared, sigma_squared,
                                    floor_per_root_cell)
                            - parent)
