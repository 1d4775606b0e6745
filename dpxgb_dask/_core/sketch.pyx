"""Weighted quantile sketch: exact summaries and cut queries.

This is the weighted quantile summary of the XGBoost paper's appendix (Chen & Guestrin,
2016). In dpxgb_dask it turns a DP-released per-feature histogram of weights (points = bin
centres, weights = noisy sums clipped at 0) into split candidates.

The paper's merge and prune operations (combining summaries of many partitions) are not
here: their summaries hold data points, so merging exact per-partition summaries would
release raw feature values. Across partitions dpxgb_dask sums histograms instead, releases
the sum once with DP noise, and builds one summary from its (at most a few thousand)
noisy bins, which needs neither merging nor pruning.

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
