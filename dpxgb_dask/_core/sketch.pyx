"""Weighted quantile sketch: exact summaries, merge, prune and cut queries.

This is the weighted quantile summary of the XGBoost paper's appendix (Chen & Guestrin,
2016). In dpxgb_dask it turns a DP-released per-feature histogram of weights (points = bin
centres, weights = noisy sums clipped at 0) into split candidates.

Merge and prune combine summaries of disjoint data sets, as cross-silo training does: each
silo summarises its own released histogram, a coordinator merges the silos' summaries and
prunes the result to a fixed size, then queries cuts. Their inputs are summaries of released
points only: merging exact summaries of raw rows would release raw feature values.

Definitions
-----------
For a multiset ``D`` of points ``x`` with weights ``w(x) > 0`` and total weight ``W``:

- ``r-(y)`` = total weight of the points ``< y``; ``r+(y)`` = total weight of the points
  ``<= y``; ``w(y) = r+(y) - r-(y)`` (the weight at ``y``, 0 when ``y`` is not in ``D``).

A *summary* is a NumPy structured array of ``SUMMARY_DTYPE`` (fields ``value``, ``rmin``,
``rmax``, ``wmin``), sorted by strictly increasing ``value``. It is *valid* for ``D`` when the
first and last values are ``min D`` and ``max D``, every value is in ``D``, and each entry
bounds the true ranks: ``rmin <= r-(value)``, ``r+(value) <= rmax``, ``0 <= wmin <= w(value)``.
The summaries built here also keep their first and last entries exact (``rmin[0] == 0``,
``rmax[0] == wmin[0]``, ``rmax[-1] == W`` so ``W`` is read off the summary, and
``rmin[-1] + wmin[-1] == W``), ``rmin[i+1] >= rmin[i] + wmin[i]`` and
``rmax[i+1] - wmin[i+1] >= rmax[i]`` (up to floating-point rounding of the rank sums).

A summary bounds the ranks at every ``y`` (for ``y`` not in it, between entries ``p`` and
``p+1``: ``r-(y) >= rmin[p] + wmin[p]`` and ``r+(y) <= rmax[p+1] - wmin[p+1]``; below the first
value both ranks are 0, above the last both are ``W``). Its uncertainty ``U(y)`` = upper bound of
``r+(y)`` - lower bound of ``r-(y)`` - lower bound of ``w(y)`` is largest either at an entry
(``rmax - rmin - wmin``) or in a gap between consecutive entries
(``rmax[i+1] - wmin[i+1] - rmin[i] - wmin[i]``). The summary's *error* is

    eps = max_y U(y) / W

Error bounds (in units of the total weight ``W``; proved in the comments of the kernels
and tested in tests/kernels/test_sketch.py):

- ``make_summary``: exact, ``eps = 0``.
- ``merge_summaries(a, b)``: uncertainties add, ``U <= eps_a W_a + eps_b W_b``, so
  ``eps <= (eps_a W_a + eps_b W_b) / (W_a + W_b) <= max(eps_a, eps_b)``; exact inputs give
  the exact summary of the union.
- ``prune_summary(s, b)``, ``b = size >= 2``: ``eps' <= eps + 1 / (b - 1)`` (``U`` grows by at
  most ``W / (b - 1)``); no change when ``len(s) <= b``.
- ``merge_and_prune`` of ``m`` summaries to ``b`` entries (a binary tree of merge + prune):
  ``eps <= sum_i eps_i W_i / W + L / (b - 1)`` with ``L = max(1, ceil(log2 m))`` levels.
- ``query_cuts(s, n)``: the cut ``c`` chosen for target rank ``t_k = k W / (n + 1)`` satisfies
  ``r-(c) - eps W / 2 <= t_k <= r+(c) + eps W / 2``, i.e. ``t_k`` is within ``eps W / 2`` of the
  interval ``[r-(c), r+(c)]``. For an exact summary (``eps = 0``) the cut is the exact weighted
  quantile ``q(t) = min{x in D : r+(x) >= t}``.

What a cut means: split candidates are of the form "``x <= cut`` goes left". A cut is always a
value of the summary (a point of ``D``), so the split at ``c`` sends exactly the weight
``r+(c)`` left; the bound above gives ``t_k - eps W / 2 <= r+(c) <= t_k + eps W / 2 + w(c)``
(a heavy point cannot be split). The last cut may be ``max D``, which sends all of ``D`` left.

Inputs: NaN values are missing points and are skipped, as are zero weights; infinite values
are refused (cuts must be finite), and so are negative or non-finite weights (``ValueError``).

Everything is deterministic: the summaries and cuts do not depend on the order of the input
points (equal values are combined after sorting by (value, weight)). Rank sums are
float64; the bounds hold up to their rounding (relative ~1e-15 of ``W`` per operation).
Kernels run without the GIL.
"""
cimport cython
from libc.math cimport isnan, isfinite
from libc.stdlib cimport malloc, free

import numpy as np

from .common cimport X_DTYPE_C, Y_DTYPE_C

#: One summary entry. ``value``: a point; ``rmin``/``rmax``: lower bound of the weight strictly
#: below ``value`` / upper bound of the weight at or below it; ``wmin``: lower bound of the
#: weight at ``value``. Matches ``entry_t`` below.
SUMMARY_DTYPE = np.dtype(
    [("value", np.float64), ("rmin", np.float64), ("rmax", np.float64), ("wmin", np.float64)]
)

cdef struct pair_t:
    X_DTYPE_C value
    Y_DTYPE_C weight

cdef struct entry_t:
    # Same layout as SUMMARY_DTYPE (four float64, no padding).
    X_DTYPE_C value
    Y_DTYPE_C rmin
    Y_DTYPE_C rmax
    Y_DTYPE_C wmin


include "pair_sort.pxi"


# ---------------------------------------------------------------------------------------
# Kernels on summaries
# ---------------------------------------------------------------------------------------

cdef Py_ssize_t _collect_pairs(
    const X_DTYPE_C[:, :] values,     # IN (n_samples, n_features)
    const Y_DTYPE_C[:, :] weights,    # IN (n_samples, n_features), may have stride 0
    Py_ssize_t f,                     # IN feature
    pair_t* out,                      # OUT (n_samples,) the points kept
) noexcept nogil:
    """Copy the points of feature ``f`` with a non-NaN value and a positive weight."""
    cdef Py_ssize_t i, n = 0
    cdef X_DTYPE_C v
    cdef Y_DTYPE_C w
    for i in range(values.shape[0]):
        v = values[i, f]
        w = weights[i, f]
        if not isnan(v) and w > 0.0:
            out[n].value = v + 0.0      # -0.0 -> +0.0: one representation of zero
            out[n].weight = w
            n += 1
    return n


cdef Py_ssize_t _make_exact(
    const pair_t* pairs,    # IN (n,) sorted by (value, weight), weights > 0
    Py_ssize_t n,           # IN
    entry_t* out,           # OUT (<= n,) exact summary
) noexcept nogil:
    """Exact summary: one entry per distinct value, ranks from a running sum.

    rmin = sum of the weights before the value, rmax = rmin + (weight at the value): exactly
    r- and r+ up to rounding. Note rmin[i] + wmin[i] is computed as rmax[i] (same operation).
    """
    cdef Py_ssize_t i = 0, j, k = 0
    cdef Y_DTYPE_C cum = 0.0, w
    cdef X_DTYPE_C v
    while i < n:
        v = pairs[i].value
        w = pairs[i].weight
        j = i + 1
        while j < n and pairs[j].value == v:
            w = w + pairs[j].weight
            j += 1
        out[k].value = v
        out[k].rmin = cum
        out[k].rmax = cum + w
        out[k].wmin = w
        cum = out[k].rmax
        k += 1
        i = j
    return k


cdef inline Y_DTYPE_C _lower_rplus(const entry_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    # Lower bound of r+(x_i); exact (= W) for the last entry, which is max D.
    if i == n - 1:
        return s[n - 1].rmax
    return s[i].rmin + s[i].wmin


cdef inline Y_DTYPE_C _upper_rminus(const entry_t* s, Py_ssize_t i) noexcept nogil:
    # Upper bound of r-(x_i); exact (= 0) for the first entry, which is min D.
    if i == 0:
        return 0.0
    return s[i].rmax - s[i].wmin


cdef inline Y_DTYPE_C _choice_error(const entry_t* s, Py_ssize_t i, Py_ssize_t n,
                                    Y_DTYPE_C t) noexcept nogil:
    """Worst-case distance from t to [r-(x_i), r+(x_i)] given the bounds of entry i:
    max(t - lower(r+), upper(r-) - t, 0)."""
    cdef Y_DTYPE_C e = t - _lower_rplus(s, i, n)
    cdef Y_DTYPE_C e2 = _upper_rminus(s, i) - t
    if e2 > e:
        e = e2
    if e < 0.0:
        e = 0.0
    return e


cdef Py_ssize_t _select_entry(
    const entry_t* s,       # IN (n,) summary, n >= 1
    Py_ssize_t n,           # IN
    Y_DTYPE_C t,            # IN target rank
    Py_ssize_t* cursor,     # IN/OUT scan position, non-decreasing over increasing targets
    Py_ssize_t floor,       # IN smallest index allowed
) noexcept nogil:
    """Index of the leftmost entry minimising _choice_error(t) (the rank query).

    With a_i = lower(r+(x_i)) and b_i = upper(r-(x_i)) both non-decreasing in i, the error
    max(t - a_i, b_i - t, 0) is a valley in i; its minimum lies at the first j with
    a_j + b_j >= 2t or at j - 1. Proof that it is <= eps W / 2: b_i - a_i <= eps W
    (uncertainty at entry i), b_{i+1} - a_i <= eps W (gap), b_0 = 0, a_{n-1} = W, so the
    intervals [b_i - eps W / 2, a_i + eps W / 2] cover [0, W]. The leftmost minimiser is
    non-decreasing in t, which makes one forward scan serve all sorted targets.
    """
    cdef Py_ssize_t j = cursor[0]
    cdef Py_ssize_t best
    cdef Y_DTYPE_C e_best, e
    if j < floor:
        j = floor
    while j < n and _lower_rplus(s, j, n) + _upper_rminus(s, j) < 2.0 * t:
        j += 1
    cursor[0] = j
    if j == n:
        best = n - 1
    else:
        best = j
    e_best = _choice_error(s, best, n, t)
    # Leftmost minimiser: walk left over equal (or, after rounding, smaller) errors.
    while best > floor:
        e = _choice_error(s, best - 1, n, t)
        if e > e_best:
            break
        e_best = e
        best -= 1
    return best


cdef inline void _gap_bounds(const entry_t* s, Py_ssize_t n, Py_ssize_t j,
                             Y_DTYPE_C* lo, Y_DTYPE_C* hi) noexcept nogil:
    # Bounds s gives at a y strictly between its entries j - 1 and j: r-(y) >= lo,
    # r+(y) <= hi. Below its first value (j = 0) both ranks are 0, above its last (j = n) W.
    if j == 0:
        lo[0] = 0.0
        hi[0] = 0.0
    elif j == n:
        lo[0] = s[n - 1].rmax
        hi[0] = s[n - 1].rmax
    else:
        lo[0] = s[j - 1].rmin + s[j - 1].wmin
        hi[0] = s[j].rmax - s[j].wmin


cdef Py_ssize_t _merge(
    const entry_t* a,       # IN (n_a,) summary of A
    Py_ssize_t n_a,         # IN
    const entry_t* b,       # IN (n_b,) summary of B, B disjoint from A
    Py_ssize_t n_b,         # IN
    entry_t* out,           # OUT (<= n_a + n_b,) summary of A + B
) noexcept nogil:
    """At every value y of either summary, add the rank bounds each summary gives at y.

    Ranks of disjoint multisets add, so sums of valid bounds are valid. Proof of the error
    bound: the merged uncertainty at an entry is the sum of the two uncertainties there; in a
    merged gap, each input contributes one of its own gaps, or its uncertainty at its
    first/last entry, or 0. Hence U_merged <= eps_a W_a + eps_b W_b everywhere. The first and
    last entries stay exact (below an input's first value its bounds are exactly 0, above
    its last exactly W).
    """
    cdef Py_ssize_t i = 0, j = 0, k = 0
    cdef Y_DTYPE_C lo, hi
    while i < n_a or j < n_b:
        if j == n_b or (i < n_a and a[i].value < b[j].value):
            _gap_bounds(b, n_b, j, &lo, &hi)      # a[i].value is not in B
            out[k] = a[i]
            out[k].rmin = a[i].rmin + lo
            out[k].rmax = a[i].rmax + hi
            i += 1
        elif i == n_a or b[j].value < a[i].value:
            _gap_bounds(a, n_a, i, &lo, &hi)
            out[k] = b[j]
            out[k].rmin = b[j].rmin + lo
            out[k].rmax = b[j].rmax + hi
            j += 1
        else:
            out[k].value = a[i].value
            out[k].rmin = a[i].rmin + b[j].rmin
            out[k].rmax = a[i].rmax + b[j].rmax
            out[k].wmin = a[i].wmin + b[j].wmin
            i += 1
            j += 1
        k += 1
    return k


cdef Py_ssize_t _prune(
    const entry_t* s,       # IN (n,) summary, n > size
    Py_ssize_t n,           # IN
    Py_ssize_t size,        # IN >= 2
    entry_t* out,           # OUT (<= size,) a sub-summary of s
) noexcept nogil:
    """Keep the first and last entries and the entries the rank query selects for the targets
    t_m = m W / (size - 1), m = 1 .. size - 2 (each once).

    Proof of eps' <= eps + 1/(size - 1): entries keep their bounds, so uncertainties at
    entries are unchanged; a new gap lies between the entries chosen for consecutive targets
    t_m < t_{m+1}, and _select_entry gives a_p >= t_m - eps W / 2, b_q <= t_{m+1} + eps W / 2,
    so the gap b_q - a_p <= W / (size - 1) + eps W (at the ends: a_0 >= 0, b_{n-1} <= W).
    """
    cdef Py_ssize_t k = 1, m, i, last = 0, cursor = 0
    cdef Y_DTYPE_C W = s[n - 1].rmax, t
    out[0] = s[0]
    for m in range(1, size - 1):
        t = W * <Y_DTYPE_C>m / <Y_DTYPE_C>(size - 1)
        i = _select_entry(s, n, t, &cursor, last)
        if i > last:
            out[k] = s[i]
            k += 1
            last = i
    if last < n - 1:
        out[k] = s[n - 1]
        k += 1
    return k


cdef Py_ssize_t _query(
    const entry_t* s,       # IN (n,) summary
    Py_ssize_t n,           # IN
    Py_ssize_t n_cuts,      # IN
    X_DTYPE_C* cuts,        # OUT (<= n_cuts,) strictly increasing
) noexcept nogil:
    """Cut k (k = 1..n_cuts) is the value the rank query selects for t_k = k W / (n_cuts + 1);
    values selected twice are written once."""
    cdef Py_ssize_t k, i, n_out = 0, last = -1, cursor = 0
    cdef Y_DTYPE_C W, t
    if n == 0:
        return 0
    W = s[n - 1].rmax
    for k in range(1, n_cuts + 1):
        t = W * <Y_DTYPE_C>k / <Y_DTYPE_C>(n_cuts + 1)
        i = _select_entry(s, n, t, &cursor, 0 if last < 0 else last)
        if i > last:
            cuts[n_out] = s[i].value
            n_out += 1
            last = i
    return n_out


# ---------------------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------------------

@cython.wraparound(True)
@cython.boundscheck(True)
def _as_summary(summary, name):
    """Validate a summary argument; return it as a C-contiguous SUMMARY_DTYPE array."""
    arr = np.asarray(summary)
    if arr.dtype != SUMMARY_DTYPE:
        raise TypeError(f"{name} must be an array of SUMMARY_DTYPE, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr)
    if arr.shape[0]:
        v = arr["value"]
        if not np.all(np.isfinite(v)) or not np.all(v[1:] > v[:-1]):
            raise ValueError(f"{name}: values must be finite and strictly increasing")
        for field in ("rmin", "rmax", "wmin"):
            col = arr[field]
            if not np.all(np.isfinite(col)) or np.any(col < 0):
                raise ValueError(f"{name}: {field} must be finite and non-negative")
    return arr


def _check_points(values, weights, values_ndim):
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if values.ndim != values_ndim:
        raise ValueError(f"values must be {values_ndim}-dimensional, got shape {values.shape}")
    if np.any(np.isinf(values)):
        raise ValueError("values must be finite or NaN (missing); got an infinite value")
    if weights.size and not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
        raise ValueError("weights must be finite and non-negative")
    return values, weights


def make_summary(values, weights):
    """Exact weighted quantile summary of the points ``(values[i], weights[i])``.

    Parameters
    ----------
    values : array-like of float64, shape (n,)
        Points. NaN (missing) points are skipped; infinite values raise ``ValueError``.
    weights : array-like of float64, shape (n,)
        Finite, non-negative weights (``ValueError`` otherwise). Zero-weight points are skipped.

    Returns
    -------
    summary : ndarray of SUMMARY_DTYPE, shape (n_distinct,)
        One entry per distinct value: ``rmin = r-(value)``, ``rmax = r+(value)``,
        ``wmin = w(value)`` (error 0). Does not depend on the order of the points.
    """
    values, weights = _check_points(values, weights, 1)
    if weights.shape != values.shape:
        raise ValueError(f"weights must have shape {values.shape}, got {weights.shape}")
    cdef Py_ssize_t n = values.shape[0]
    out = np.empty(n, dtype=SUMMARY_DTYPE)
    if n == 0:
        return out
    cdef const X_DTYPE_C[:, :] v2 = values.reshape(n, 1)
    cdef const Y_DTYPE_C[:, :] w2 = weights.reshape(n, 1)
    cdef entry_t[::1] out_view = out
    cdef pair_t* pairs = <pair_t*> malloc(n * sizeof(pair_t))
    cdef Py_ssize_t k
    if pairs == NULL:
        raise MemoryError()
    with nogil:
        k = _collect_pairs(v2, w2, 0, pairs)
        _sort_pairs(pairs, k)
        k = _make_exact(pairs, k, &out_view[0])
    free(pairs)
    return out if k == n else out[:k].copy()


def query_cuts(summary, n_cuts):
    """Split candidates at the weighted quantiles ``k W / (n_cuts + 1)``, ``k = 1..n_cuts``.

    Parameters
    ----------
    summary : ndarray of SUMMARY_DTYPE
    n_cuts : int >= 0

    Returns
    -------
    cuts : ndarray of float64, shape (<= n_cuts,)
        Strictly increasing values of the summary; a split "``x <= cut`` goes left" at cut
        ``c`` sends the weight ``r+(c)`` left. Cut ``k`` (before removing repeats) satisfies
        ``r-(c) - eps W / 2 <= k W / (n_cuts + 1) <= r+(c) + eps W / 2`` with ``eps`` the
        summary's error (module docstring); for an exact summary it is the exact weighted
        quantile ``min{x : r+(x) >= k W / (n_cuts + 1)}``. Fewer than ``n_cuts`` cuts come back
        when targets share a value (few distinct values, heavy points). Empty summary -> empty.
    """
    if int(n_cuts) != n_cuts or n_cuts < 0:
        raise ValueError(f"n_cuts must be a non-negative integer, got {n_cuts!r}")
    s = _as_summary(summary, "summary")
    cdef Py_ssize_t n = s.shape[0], nc = int(n_cuts), k
    cuts = np.empty(nc, dtype=np.float64)
    if n == 0 or nc == 0:
        return cuts[:0].copy()
    cdef entry_t[::1] s_view = s
    cdef X_DTYPE_C[::1] cuts_view = cuts
    with nogil:
        k = _query(&s_view[0], n, nc, &cuts_view[0])
    return cuts[:k].copy()


def _check_size(size):
    if int(size) != size or size < 2:
        raise ValueError(f"size must be an integer >= 2, got {size!r}")
    return int(size)


def _merge_checked(a, b):
    """merge_summaries on summaries already through _as_summary (merge_and_prune checks its
    inputs once, not its own intermediate results)."""
    cdef Py_ssize_t n_a = a.shape[0], n_b = b.shape[0], k
    out = np.empty(n_a + n_b, dtype=SUMMARY_DTYPE)
    if n_a + n_b == 0:
        return out
    # An empty input still needs a valid address; the kernel reads none of it.
    cdef const entry_t[::1] a_view = a if n_a else out
    cdef const entry_t[::1] b_view = b if n_b else out
    cdef entry_t[::1] out_view = out
    with nogil:
        k = _merge(&a_view[0], n_a, &b_view[0], n_b, &out_view[0])
    return out if k == n_a + n_b else out[:k].copy()


def _prune_checked(s, Py_ssize_t size):
    cdef Py_ssize_t n = s.shape[0], k
    if n <= size:
        return s.copy()
    out = np.empty(size, dtype=SUMMARY_DTYPE)
    cdef const entry_t[::1] s_view = s
    cdef entry_t[::1] out_view = out
    with nogil:
        k = _prune(&s_view[0], n, size, &out_view[0])
    return out if k == size else out[:k].copy()


def merge_summaries(a, b):
    """Summary of the union of the (disjoint) data sets of summaries ``a`` and ``b``.

    Parameters
    ----------
    a, b : ndarray of SUMMARY_DTYPE, shape (n_a,) and (n_b,)
        Summaries of disjoint multisets ``A`` and ``B``, totals ``W_a`` and ``W_b``.

    Returns
    -------
    summary : ndarray of SUMMARY_DTYPE, shape (<= n_a + n_b,)
        One entry per value of either input, with the sums of the rank bounds both give
        there. Error ``eps <= (eps_a W_a + eps_b W_b) / (W_a + W_b) <= max(eps_a, eps_b)``
        (uncertainties add); two exact summaries give the exact summary of ``A + B``.
        ``merge_summaries(a, b)`` and ``merge_summaries(b, a)`` are identical.
    """
    return _merge_checked(_as_summary(a, "a"), _as_summary(b, "b"))


def prune_summary(summary, size):
    """Sub-summary of at most ``size`` entries, the first and last kept.

    Parameters
    ----------
    summary : ndarray of SUMMARY_DTYPE, shape (n,)
    size : int >= 2

    Returns
    -------
    summary : ndarray of SUMMARY_DTYPE, shape (min(n, size),) or fewer
        The entries the rank query selects for the targets ``m W / (size - 1)``,
        ``m = 1 .. size - 2``, with their bounds unchanged. Error
        ``eps' <= eps + 1 / (size - 1)``: the uncertainty grows by at most ``W / (size - 1)``.
        A summary of at most ``size`` entries comes back unchanged (a copy).
    """
    size = _check_size(size)
    return _prune_checked(_as_summary(summary, "summary"), size)


def merge_and_prune(summaries, size):
    """Merge summaries of disjoint data sets (one per silo) into one of at most ``size`` entries.

    Parameters
    ----------
    summaries : sequence of ndarray of SUMMARY_DTYPE, each of shape (n_i,)
        Summaries of disjoint multisets, errors ``eps_i``, totals ``W_i``.
    size : int >= 2

    Returns
    -------
    summary : ndarray of SUMMARY_DTYPE, shape (<= size,)
        A balanced binary tree: neighbours are merged and each merge is pruned to ``size``,
        level by level (an odd one out waits for the next level), until one summary is left;
        a single summary is pruned. Every input passes ``L = max(1, ceil(log2 m))`` prunes
        for ``m`` summaries and the prunes of one level cover disjoint data, so
        ``eps <= sum_i eps_i W_i / W + L / (size - 1)``, ``W = sum_i W_i``. No summaries ->
        an empty summary.
    """
    size = _check_size(size)
    if isinstance(summaries, np.ndarray):
        raise TypeError("summaries must be a sequence of summaries, got one array")
    level = [_as_summary(s, f"summaries[{i}]") for i, s in enumerate(summaries)]
    if len(level) <= 1:
        return _prune_checked(level[0], size) if level else np.empty(0, SUMMARY_DTYPE)
    while len(level) > 1:
        nxt = [_prune_checked(_merge_checked(level[i], level[i + 1]), size)
               for i in range(0, len(level) - 1, 2)]
        level = nxt + level[len(nxt) * 2:]
    return level[0]


def _sort_points(values, weights, int depth_limit=-1, bint final_insertion_sort=True):
    """Test hook: the kernel's sort of (value, weight) pairs, lexicographic order.

    ``depth_limit`` = -1 uses the default (2 log2 n); 0 makes the introsort a pure heapsort.
    ``final_insertion_sort=False`` skips the pass that sorts the runs of <= 16 elements the
    introsort leaves. Returns sorted copies ``(values, weights)``; NaN values are not allowed.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if values.shape != weights.shape or values.ndim != 1 or np.any(np.isnan(values)):
        raise ValueError("values and weights must be 1-d of one shape, values without NaN")
    cdef Py_ssize_t n = values.shape[0], i, m
    cdef pair_t* pairs = <pair_t*> malloc((n if n > 0 else 1) * sizeof(pair_t))
    if pairs == NULL:
        raise MemoryError()
    for i in range(n):
        pairs[i].value = values[i]
        pairs[i].weight = weights[i]
    if depth_limit < 0:
        depth_limit = 0
        m = n
        while m > 1:
            depth_limit += 2
            m >>= 1
    with nogil:
        _introsort(pairs, n, depth_limit)
        if final_insertion_sort:
            _insertion_sort(pairs, n)
    out_v = np.empty(n)
    out_w = np.empty(n)
    for i in range(n):
        out_v[i] = pairs[i].value
        out_w[i] = pairs[i].weight
    free(pairs)
    return out_v, out_w
