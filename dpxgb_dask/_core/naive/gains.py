"""Naive twin of the gains kernel: NumPy over whole arrays, each expression as written."""
import numpy as np


def split_gains(sum_g, sum_h, reg_lambda, one_vs_rest=None, parent_term=True, noise=None):
    """Gains of every candidate, shape (n_nodes, n_features, n_bins - 1, 2)
    (``_core/gains.pyx``'s module docstring).

    Parameters
    ----------
    sum_g, sum_h : ndarray of float64, shape (n_nodes, n_features, n_bins)
    reg_lambda : float
    one_vs_rest : ndarray of bool, shape (n_features,), optional
    parent_term : bool
    noise : tuple, optional
        ``(cells, z_squared, sigma_squared, floor_per_root_cell)``: the noise terms.
    """
    if noise is None:
        def term(g, h, k):
            denominator = np.maximum(h, 0.0) + reg_lambda
            out = np.zeros(np.broadcast(g, denominator).shape)
            np.divide(g**2, denominator, out=out, where=denominator > 0)
            return out
    else:
        cells, z_squared, sigma_squared, floor_per_root_cell = noise

        def term(g, h, k):
            return (np.maximum(g**2 - z_squared * k * sigma_squared, 0.0)
                    / (np.maximum(h, floor_per_root_cell * np.sqrt(k)) + reg_lambda))
    one = None if one_vs_rest is None else np.asarray(one_vs_rest, dtype=bool)[:, None]

    def left_and_total(per_bin):
        left = np.cumsum(per_bin[..., :-1], axis=-1)
        total = left[..., -1:] + per_bin[..., -1:]
        return (left if one is None else np.where(one, per_bin[..., :-1], left)), total

    gl, g_tot = left_and_total(sum_g)
    hl, h_tot = left_and_total(sum_h)
    kl, k_tot = (0.0, 0.0) if noise is None else left_and_total(cells)
    k_miss = 0.0 if noise is None else cells[..., -1:]
    parent = term(g_tot, h_tot, k_tot) if parent_term else 0.0
    gains = np.empty(gl.shape + (2,))
    for missing_left in (0, 1):
        g_left = gl + missing_left * sum_g[..., -1:]
        h_left = hl + missing_left * sum_h[..., -1:]
        k_left = kl + missing_left * k_miss
        gains[..., missing_left] = (term(g_left, h_left, k_left)
                                    + term(g_tot - g_left, h_tot - h_left, k_tot - k_left)
                                    - parent)
    return gains
