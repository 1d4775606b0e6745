"""Map raw float features to uint8 bins given per-feature cut points.

Bin convention (shared with predict.pyx and the grower): with the sorted cut points
``c_0 < c_1 < ... < c_{k-1}`` of a feature, a value ``x`` falls in bin
``b = #{j : c_j < x}`` (``numpy.searchsorted(cuts, x, side="left")``), so ``b`` lies in
``0..k`` and ``bin(x) <= t  <=>  x <= c_t``. A split "bin <= t goes left" is therefore the
raw-value split "x <= c_t goes left". NaN goes to ``missing_bin``, which must exceed every
non-missing bin (``k < missing_bin``).
"""
cimport cython
from cython.parallel import prange

import numpy as np

from .common import X_BINNED_DTYPE, X_DTYPE

from common cimport X_DTYPE_C, X_BINNED_DTYPE_C

ctypedef Py_ssize_t cnp_intp_t

# Raw features as they come (float32 rows are binned without a float64 copy; a float32
# value converts to float64 exactly, so both give the same bins).
ctypedef fused X_IN_DTYPE_C:
    float
    double


def bin_features(
    const X_IN_DTYPE_C[:, :] X,               # IN (n_samples, n_features), any memory order
    const X_DTYPE_C[::1] cut_values,          # IN all features' cuts, concatenated
    const cnp_intp_t[::1] cut_offsets,        # IN (n_features + 1,) cuts of f: [off[f], off[f+1])
    X_BINNED_DTYPE_C missing_bin,             # IN bin index for NaN
    X_BINNED_DTYPE_C[::1, :] X_binned,        # OUT (n_samples, n_features), Fortran order
    int n_threads,                            # IN
):
    """Bin every feature of ``X`` into ``X_binned`` (see the module docstring for the rule).

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n_samples, n_features)
    cut_values : ndarray of float64, shape (total_cuts,)
        Sorted, strictly increasing cut points of feature ``f`` in
        ``cut_values[cut_offsets[f]:cut_offsets[f + 1]]``.
    cut_offsets : ndarray of intp, shape (n_features + 1,)
    missing_bin : int
        Bin of NaN values; must be larger than every feature's number of cuts.
    X_binned : ndarray of uint8, shape (n_samples, n_features), Fortran-ordered
        Output, overwritten.
    n_threads : int
        Threads of the parallel loop over features.
    """
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t f
    for f in prange(n_features, schedule="static", nogil=True, num_threads=n_threads):
        _bin_one_feature(X, f, cut_values, cut_offsets[f], cut_offsets[f + 1],
                         missing_bin, X_binned)



cdef void _bin_one_feature(
    const X_IN_DTYPE_C[:, :] X,               # IN
    Py_ssize_t f,                             # IN
    const X_DTYPE_C[::1] cut_values,          # IN
    Py_ssize_t start,                         # IN first cut of f
    Py_ssize_t stop,                          # IN one past the last cut of f
    X_BINNED_DTYPE_C missing_bin,             # IN
    X_BINNED_DTYPE_C[::1, :] X_binned,        # OUT column f
) noexcept nogil:
    cdef Py_ssize_t i, lo, n, half, less
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef X_DTYPE_C x
    for i in range(n_samples):
        x = X[i, f]
        if x != x:  # NaN
            X_binned[i, f] = missing_bin
            continue
        # Binary search for the number of cuts strictly below x, without branches on the
        # data (the comparison selects the step arithmetically; random values would make
        # a branch mispredict half the time).
        lo = start
        n = stop - start
        while n > 0:
            half = n >> 1
            less = cut_values[lo + half] < x
            lo = lo + less * (half + 1)
            n = less * (n - half - 1) + (1 - less) * half
        X_binned[i, f] = <X_BINNED_DTYPE_C>(lo - start)
