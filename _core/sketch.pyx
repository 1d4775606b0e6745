"""Weighted quantile sketch: exact summaries, merge, prune and cut queries.

This is the weighted quantile summary of the XGBoost paper's appendix (Chen & Guestrin,
2016). In dpxgb_dask it turns a DP-released per-feature histogram of hessian weights (points =
bin centres, weights = noisy hessian sums clipped at 0) into split candidates, and it also
summarises up to millions of weighted points per feature on each worker, to be merged
across workers and pruned.

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

    eps = max_y U(y) / W        (``summary_error`` computes it from the summary alone)

Error bounds (all in units of the total weight ``W``; proved in the comments of the kernels
and tested in tests/kernels/test_sketch.py):

- ``make_summary``: exact, ``eps = 0``.
- ``merge_summaries(a, b)``: ``eps <= (eps_a W_a + eps_b W_b) / (W_a + W_b) <= max(eps_a, eps_b)``.
- ``prune_summary(s, b)`` with ``b = max_size >= 2``: ``eps' <= eps + 1 / (b - 1)`` (no change
  when ``len(s) <= b``). Equivalently, pruning to ``k + 1`` entries adds at most ``1/k``.
- ``make_pruned_summaries(..., max_size=b)``: ``eps <= 1 / (b - 1)`` per feature.
- ``reduce_summaries`` of ``m`` summaries (a binary tree of merge + prune):
  ``eps <= max_i eps_i + ceil(log2 m) / (b - 1)``.
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
points (equal values are combined after sorting by (value, weight)), nor on ``n_threads``.
Rank sums are float64; the bounds hold up to their rounding (relative ~1e-15 of ``W`` per
operation). Kernels run without the GIL; the batched entry point runs one feature per
thread.
"""
cimport cython
from cython.parallel cimport parallel, prange
from libc.math cimport isnan, isfinite
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

import numpy as np

from common cimport X_DTYPE_C, Y_DTYPE_C

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


# ---------------------------------------------------------------------------------------
# Sorting (value, weight) pairs: introsort (median-of-3 quicksort, Hoare partition, heapsort
# when too deep) and a final insertion sort. Lexicographic order on (value, weight) makes
# the sums of tied values independent of the input order. NaN values never reach it.
# ---------------------------------------------------------------------------------------

cdef inline bint _pair_less(pair_t x, pair_t y) noexcept nogil:
    return x.value < y.value or (x.value == y.value and x.weight < y.weight)


cdef inline void _swap(pair_t* a, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    cdef pair_t tmp = a[i]
    a[i] = a[j]
    a[j] = tmp


cdef void _insertion_sort(
    pair_t* a,        # IN/OUT
    Py_ssize_t n,     # IN
) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef pair_t x
    for i in range(1, n):
        x = a[i]
        j = i
        while j > 0 and _pair_less(x, a[j - 1]):
            a[j] = a[j - 1]
            j -= 1
        a[j] = x


cdef void _sift_down(pair_t* a, Py_ssize_t root, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t child
    cdef pair_t x = a[root]
    while True:
        child = 2 * root + 1
        if child >= n:
            break
        if child + 1 < n and _pair_less(a[child], a[child + 1]):
            child += 1
        if not _pair_less(x, a[child]):
            break
        a[root] = a[child]
        root = child
    a[root] = x


cdef void _heapsort(
    pair_t* a,        # IN/OUT
    Py_ssize_t n,     # IN
) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(a, i, n)
    for i in range(n - 1, 0, -1):
        _swap(a, 0, i)
        _sift_down(a, 0, i)


cdef void _introsort(pair_t* a, Py_ssize_t n, int depth_limit) noexcept nogil:
    # Leaves runs of at most 16 elements unsorted (but in their final block).
    cdef Py_ssize_t i, j, mid
    cdef pair_t pivot
    while n > 16:
        if depth_limit <= 0:
            _heapsort(a, n)
            return
        depth_limit -= 1
        mid = n // 2
        if _pair_less(a[mid], a[0]):
            _swap(a, 0, mid)
        if _pair_less(a[n - 1], a[mid]):
            _swap(a, mid, n - 1)
            if _pair_less(a[mid], a[0]):
                _swap(a, 0, mid)
        pivot = a[mid]
        # Hoare partition: a[0] <= pivot <= a[n-1] are sentinels; equal keys are spread over
        # both sides, so runs of ties split evenly.
        i = -1
        j = n
        while True:
            i += 1
            while _pair_less(a[i], pivot):
                i += 1
            j -= 1
            while _pair_less(pivot, a[j]):
                j -= 1
            if i >= j:
                break
            _swap(a, i, j)
        # a[0..j] <= pivot <= a[j+1..n-1], with 0 <= j < n - 1. Recurse on the smaller side.
        if j + 1 < n - j - 1:
            _introsort(a, j + 1, depth_limit)
            a = a + j + 1
            n = n - j - 1
        else:
            _introsort(a + j + 1, n - j - 1, depth_limit)
            n = j + 1


cdef void _sort_pairs(
    pair_t* a,        # IN/OUT
    Py_ssize_t n,     # IN
) noexcept nogil:
    cdef int depth_limit = 0
    cdef Py_ssize_t m = n
    while m > 1:
        depth_limit += 2
        m >>= 1
    _introsort(a, n, depth_limit)
    _insertion_sort(a, n)


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


cdef Py_ssize_t _merge(
    const entry_t* a,       # IN (n_a,) summary of A
    Py_ssize_t n_a,         # IN
    const entry_t* b,       # IN (n_b,) summary of B
    Py_ssize_t n_b,         # IN
    entry_t* out,           # OUT (<= n_a + n_b,) summary of A + B
) noexcept nogil:
    """Merge: at every value y of either summary, add the rank bounds each summary gives at y.

    A summary S with total W_S gives at y not among its values: lower bound of r-(y) =
    rmin[p] + wmin[p] (p = last entry below y; 0 below the first value; W_S above the last),
    upper bound of r+(y) = rmax[q] - wmin[q] (q = first entry above y; 0 below the first
    value; W_S above the last). Proof of the error bound: the merged uncertainty at an entry
    is the sum of the two uncertainties there; in a merged gap, each input contributes one of
    its own gaps, or its uncertainty at its first/last entry, or 0. Hence
    U_merged <= eps_a W_a + eps_b W_b everywhere.
    """
    cdef Py_ssize_t i = 0, j = 0, k = 0
    cdef Y_DTYPE_C w_a, w_b, lo, hi
    if n_a == 0:
        if n_b > 0:
            memcpy(out, b, n_b * sizeof(entry_t))
        return n_b
    if n_b == 0:
        memcpy(out, a, n_a * sizeof(entry_t))
        return n_a
    w_a = a[n_a - 1].rmax
    w_b = b[n_b - 1].rmax
    while i < n_a or j < n_b:
        if j == n_b or (i < n_a and a[i].value < b[j].value):
            # a[i].value is not in B: B's bounds from its neighbours b[j-1] < y < b[j].
            if j == 0:
                lo = 0.0
                hi = 0.0
            elif j == n_b:
                lo = w_b
                hi = w_b
            else:
                lo = b[j - 1].rmin + b[j - 1].wmin
                hi = b[j].rmax - b[j].wmin
            out[k].value = a[i].value
            out[k].rmin = a[i].rmin + lo
            out[k].rmax = a[i].rmax + hi
            out[k].wmin = a[i].wmin
            i += 1
        elif i == n_a or b[j].value < a[i].value:
            if i == 0:
                lo = 0.0
                hi = 0.0
            elif i == n_a:
                lo = w_a
                hi = w_a
            else:
                lo = a[i - 1].rmin + a[i - 1].wmin
                hi = a[i].rmax - a[i].wmin
            out[k].value = b[j].value
            out[k].rmin = b[j].rmin + lo
            out[k].rmax = b[j].rmax + hi
            out[k].wmin = b[j].wmin
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


cdef Py_ssize_t _prune(
    const entry_t* s,       # IN (n,) summary
    Py_ssize_t n,           # IN
    Py_ssize_t max_size,    # IN >= 2
    entry_t* out,           # OUT (<= max_size,) a sub-summary of s
) noexcept nogil:
    """Keep the first and last entries and the entries the rank query selects for the targets
    t_m = m W / (max_size - 1), m = 1 .. max_size - 2 (each once).

    Proof of eps' <= eps + 1/(max_size - 1): entries keep their bounds, so uncertainties at
    entries are unchanged; a new gap lies between the entries chosen for consecutive targets
    t_m < t_{m+1}, and _select_entry gives a_p >= t_m - eps W / 2, b_q <= t_{m+1} + eps W / 2,
    so the gap b_q - a_p <= W / (max_size - 1) + eps W (at the ends: a_0 >= 0, b_{n-1} <= W).
    """
    cdef Py_ssize_t k = 0, m, i, last = 0, cursor = 0
    cdef Py_ssize_t n_targets = max_size - 2
    cdef Y_DTYPE_C W, t
    if n <= max_size:
        if n > 0:
            memcpy(out, s, n * sizeof(entry_t))
        return n
    W = s[n - 1].rmax
    out[0] = s[0]
    k = 1
    for m in range(1, n_targets + 1):
        t = W * <Y_DTYPE_C>m / <Y_DTYPE_C>(max_size - 1)
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


def _check_max_size(max_size):
    if int(max_size) != max_size or max_size < 2:
        raise ValueError(f"max_size must be an integer >= 2, got {max_size!r}")
    return int(max_size)


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


def merge_summaries(a, b):
    """Summary of the union of the data of summaries ``a`` and ``b``.

    Error: ``eps <= (eps_a W_a + eps_b W_b) / (W_a + W_b) <= max(eps_a, eps_b)``; merging two
    exact summaries gives the exact summary of the union. ``merge_summaries(a, b)`` and
    ``merge_summaries(b, a)`` are identical. The result has up to ``len(a) + len(b)`` entries.
    """
    a = _as_summary(a, "a")
    b = _as_summary(b, "b")
    cdef Py_ssize_t n_a = a.shape[0], n_b = b.shape[0], k
    out = np.empty(n_a + n_b, dtype=SUMMARY_DTYPE)
    if n_a + n_b == 0:
        return out
    cdef entry_t[::1] a_view = a if n_a else np.empty(1, SUMMARY_DTYPE)
    cdef entry_t[::1] b_view = b if n_b else np.empty(1, SUMMARY_DTYPE)
    cdef entry_t[::1] out_view = out
    with nogil:
        k = _merge(&a_view[0], n_a, &b_view[0], n_b, &out_view[0])
    return out if k == n_a + n_b else out[:k].copy()


def prune_summary(summary, max_size):
    """Sub-summary with at most ``max_size`` entries (first and last always kept).

    The kept entries answer the rank query for the targets ``m W / (max_size - 1)``,
    ``m = 1 .. max_size - 2``. Error: ``eps' <= eps + 1 / (max_size - 1)``; a summary with at
    most ``max_size`` entries is returned unchanged (as a copy). ``max_size >= 2``.
    """
    max_size = _check_max_size(max_size)
    s = _as_summary(summary, "summary")
    cdef Py_ssize_t n = s.shape[0], k
    cdef Py_ssize_t b = max_size
    if n <= b:
        return s.copy()
    out = np.empty(b, dtype=SUMMARY_DTYPE)
    cdef entry_t[::1] s_view = s
    cdef entry_t[::1] out_view = out
    with nogil:
        k = _prune(&s_view[0], n, b, &out_view[0])
    return out if k == b else out[:k].copy()


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
        ``r-(c) - eps W / 2 <= k W / (n_cuts + 1) <= r+(c) + eps W / 2`` with
        ``eps = summary_error(summary)``; for an exact summary it is the exact weighted
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


def make_pruned_summaries(values, weights, max_size, n_threads=1):
    """Summaries of every feature, each made exactly then pruned to ``max_size`` entries.

    Parameters
    ----------
    values : array-like of float64, shape (n_samples, n_features)
        Any memory order (Fortran order reads each feature contiguously). NaN = missing,
        skipped; infinite values raise ``ValueError``.
    weights : array-like of float64, shape (n_samples,) or (n_samples, n_features)
        Finite, non-negative; one weight per row (shared by all features) or per cell.
    max_size : int >= 2
    n_threads : int >= 1
        Threads of the parallel loop over features (one feature per thread at a time). The
        result does not depend on it. Each thread uses 48 * n_samples bytes of scratch.

    Returns
    -------
    summaries : list of n_features ndarrays of SUMMARY_DTYPE
        ``summaries[f] == prune_summary(make_summary(values[:, f], w_f), max_size)``, error
        ``<= 1 / (max_size - 1)`` (0 when the feature has at most ``max_size`` distinct values).
    """
    max_size = _check_max_size(max_size)
    if int(n_threads) != n_threads or n_threads < 1:
        raise ValueError(f"n_threads must be an integer >= 1, got {n_threads!r}")
    values, weights = _check_points(values, weights, 2)
    cdef Py_ssize_t n = values.shape[0], n_features = values.shape[1]
    if weights.ndim == 1 and weights.shape[0] == n:
        weights = np.broadcast_to(weights[:, None], (n, n_features))
    elif weights.shape != (n, n_features):
        raise ValueError(
            f"weights must have shape ({n},) or ({n}, {n_features}), got {weights.shape}")
    out = np.empty((n_features, max_size), dtype=SUMMARY_DTYPE)
    sizes = np.zeros(n_features, dtype=np.intp)
    if n_features == 0:
        return []
    cdef const X_DTYPE_C[:, :] v2 = values
    cdef const Y_DTYPE_C[:, :] w2 = weights
    cdef entry_t[:, ::1] out_view = out
    cdef Py_ssize_t[::1] sizes_view = sizes
    cdef Py_ssize_t b = max_size, f, k
    cdef int threads = n_threads
    cdef pair_t* pairs = NULL
    cdef entry_t* exact = NULL
    cdef size_t n_alloc = n if n > 0 else 1
    with nogil, parallel(num_threads=threads):
        pairs = <pair_t*> malloc(n_alloc * sizeof(pair_t))
        exact = <entry_t*> malloc(n_alloc * sizeof(entry_t))
        for f in prange(n_features, schedule="dynamic"):
            if pairs == NULL or exact == NULL:
                sizes_view[f] = -1
            else:
                k = _collect_pairs(v2, w2, f, pairs)
                _sort_pairs(pairs, k)
                k = _make_exact(pairs, k, exact)
                sizes_view[f] = _prune(exact, k, b, &out_view[f, 0])
        free(pairs)
        free(exact)
    if np.any(sizes < 0):
        raise MemoryError(f"could not allocate the scratch buffers for {n} samples")
    return [out[f, : sizes[f]].copy() for f in range(n_features)]


@cython.wraparound(True)
@cython.boundscheck(True)
def reduce_summaries(summaries, max_size):
    """Merge many summaries of one feature (e.g. one per worker) into one of <= max_size entries.

    A balanced binary tree: neighbours are merged, each merge is pruned to ``max_size``, until
    one summary is left. Error: ``eps <= max_i eps_i + ceil(log2 m) / (max_size - 1)`` for ``m``
    summaries. An empty sequence gives an empty summary.
    """
    max_size = _check_max_size(max_size)
    level = [_as_summary(s, "summaries[%d]" % i) for i, s in enumerate(summaries)]
    if not level:
        return np.empty(0, dtype=SUMMARY_DTYPE)
    if len(level) == 1:
        return prune_summary(level[0], max_size)
    while len(level) > 1:
        nxt = [prune_summary(merge_summaries(level[i], level[i + 1]), max_size)
               for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


@cython.wraparound(True)
@cython.boundscheck(True)
def summary_error(summary):
    """The error ``eps`` of a summary, in units of its total weight: max over entries of
    ``rmax - rmin - wmin`` and over consecutive pairs of ``rmax[i+1] - wmin[i+1] - rmin[i] -
    wmin[i]`` (also ``rmax[0] - wmin[0]``), divided by ``W = rmax[-1]``. 0 for an empty
    summary. Only meaningful for a valid summary (one made by this module)."""
    s = _as_summary(summary, "summary")
    if s.shape[0] == 0:
        return 0.0
    rmin, rmax, wmin = s["rmin"], s["rmax"], s["wmin"]
    W = rmax[-1]
    if W <= 0:
        return 0.0
    worst = max(float(np.max(rmax - rmin - wmin)), float(rmax[0] - wmin[0]), 0.0)
    if s.shape[0] > 1:
        worst = max(worst, float(np.max((rmax[1:] - wmin[1:]) - (rmin[:-1] + wmin[:-1]))))
    return worst / W


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
