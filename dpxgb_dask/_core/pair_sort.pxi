# Included by sketch.pyx (``include "pair_sort.pxi"``): the sort of (value, weight) pairs,
# kept apart so that the summaries' kernels read on their own. Needs ``pair_t``.
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
