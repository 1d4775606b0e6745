"""The fixed-point grid of gradients, hessians and labels, and their clipping to the public
bounds the sensitivities use.

Every value a row contributes to an exact aggregate is on the grid, so the aggregates are
the true sums whatever the order of summation or the partitioning; the DP mechanisms'
grid-rounding argument (:mod:`~dpxgb_dask.privacy.mechanisms`) assumes exact queries.
"""
import numpy as np

#: Fixed-point grid of gradients, hessians and labels before any sum. Multiples of 2**-20
#: with ``|value| <= 16`` are exact in float32, and float64 sums of them are exact while
#: ``|sum| < 2**33``, so every exact aggregate (histograms, subtractions, leaf and label sums)
#: is the true sum, whatever the order of summation or the partitioning. The grid-rounding
#: argument of the DP mechanisms (privacy/mechanisms.py) assumes exact queries.
VALUE_GRID = 2.0**-20
#: Largest ``|gradient|`` or hessian bound that keeps quantised values exact in float32.
MAX_VALUE_BOUND = 16.0


def quantize(values, bound, lower=None):
    """Round to the ``VALUE_GRID`` and clip to ``[lower, bound]`` (default ``[-bound, bound]``).

    The clipping bound is itself rounded down to the grid, so the result never exceeds the
    public bound the sensitivities use.

    Returns
    -------
    ndarray of float64, same shape
    """
    lo, hi = grid_limits(bound, lower)
    return np.clip(np.round(np.asarray(values, dtype=np.float64) / VALUE_GRID) * VALUE_GRID,
                   lo, hi)


def grid_limits(bound, lower=None):
    """The clip interval of :func:`quantize` on the grid: ``(lo, hi)`` with ``hi`` the bound
    rounded down to the ``VALUE_GRID`` and ``lo = -hi`` (or ``lower`` rounded up)."""
    hi = np.floor(bound / VALUE_GRID) * VALUE_GRID
    lo = -hi if lower is None else np.ceil(lower / VALUE_GRID) * VALUE_GRID
    return lo, hi


def clip_row_vectors(g, h, gradient_bound, hessian_bound, vector_bounds):
    """Clip the class gradients and hessians of rows to the bounds of a softmax round.

    Each value is clipped to ``[-g*, g*]`` (``[0, h*]``); then each row's vector is scaled
    down so that ``||g||₂ <= G``, ``||h||₂ <= H`` and ``Σ_k h_k <= S`` (the bounds of
    ``privacy.sensitivity.row_contribution_bounds``, which softmax rows meet up to floating
    point already), and rounded toward zero on the ``VALUE_GRID``, which can only shrink
    them: the released sums then obey the bounds exactly.

    Parameters
    ----------
    g, h : ndarray of float64, shape (n_rows, K)
    gradient_bound, hessian_bound : float
        g* and h*.
    vector_bounds : tuple of float
        (G, H, S); ``inf`` leaves that bound out.

    Returns
    -------
    g, h : ndarray of float64, shape (n_rows, K), on the value grid
    """
    g_norm, h_norm, h_sum = vector_bounds
    g = np.clip(g, -gradient_bound, gradient_bound)
    h = np.clip(h, 0.0, hessian_bound)
    shrink = 1.0 - 1e-12  # a scaled norm can round to just above its bound
    with np.errstate(divide="ignore"):
        g_scale = np.minimum(1.0, shrink * g_norm / np.sqrt((g * g).sum(axis=1)))
        h_scale = np.minimum(1.0, shrink * np.minimum(h_norm / np.sqrt((h * h).sum(axis=1)),
                                                      h_sum / h.sum(axis=1)))
    toward_zero = lambda v: np.trunc(v / VALUE_GRID) * VALUE_GRID  # noqa: E731
    return toward_zero(g * g_scale[:, None]), toward_zero(h * h_scale[:, None])
