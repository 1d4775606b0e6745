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

from .common cimport X_DTYPE_C, X_BINNED_DTYPE_C

ctypedef Py_ssize_t cnp_intp_t

# Rows per block of bin_features: 256 rows of 50 float64 features are 100 kB (L2).
cdef Py_ssize_t ROW_BLOCK = 256
# Padded cut table width: at most 255 cuts (uint8 bins, the missing bin above them).
cdef Py_ssize_t SEARCH_WIDTH = 256

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
        Threads of the parallel loop over row blocks.

    Notes
    -----
    Rows are taken in blocks of ``ROW_BLOCK``, every feature of a block before the next
    block: a row-major ``X`` is then read a few cache lines at a time instead of one
    strided pass over all rows per feature. With the fixed-step search below, 500k x 50
    float32 rows with 31 cuts per feature bin in 0.18 s (0.53 s feature by feature with
    a data-dependent number of steps).
    """
    cdef Py_ssize_t n_samples = X.shape[0]
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t n_blocks = (n_samples + ROW_BLOCK - 1) // ROW_BLOCK
    cdef Py_ssize_t block, f, first, n_cuts
    # Feature f's cuts padded with +inf to 2**k - 1 entries (k = bit length of its number
    # of cuts), so that every row's search takes the same k halving steps.
    padded_array = np.full((n_features, SEARCH_WIDTH), np.inf, dtype=X_DTYPE)
    top_step_array = np.zeros(n_features, dtype=np.intp)
    cdef X_DTYPE_C[:, ::1] padded = padded_array
    cdef cnp_intp_t[::1] top_step = top_step_array
    for f in range(n_features):
        n_cuts = cut_offsets[f + 1] - cut_offsets[f]
        if n_cuts >= SEARCH_WIDTH:
            raise ValueError(f"feature {f} has {n_cuts} cuts; at most {SEARCH_WIDTH - 1} fit")
        padded[f, :n_cuts] = cut_values[cut_offsets[f]:cut_offsets[f + 1]]
        top_step[f] = (1 << (n_cuts.bit_length() - 1)) if n_cuts else 0
    for block in prange(n_blocks, schedule="static", nogil=True, num_threads=n_threads):
        first = block * ROW_BLOCK
        for f in range(n_features):
            _bin_one_feature(X, f, first, min(first + ROW_BLOCK, n_samples), padded[f],
                             top_step[f], missing_bin, X_binned)


cdef void _bin_one_feature(
    const X_IN_DTYPE_C[:, :] X,               # IN
    Py_ssize_t f,                             # IN
    Py_ssize_t row_start,                     # IN first row of the block
    Py_ssize_t row_stop,                      # IN one past its last row
    const X_DTYPE_C[::1] cuts,                # IN f's cuts padded with +inf to 2**k - 1
    Py_ssize_t top_step,                      # IN 2**(k - 1), 0 without cuts
    X_BINNED_DTYPE_C missing_bin,             # IN
    X_BINNED_DTYPE_C[::1, :] X_binned,        # OUT column f
) noexcept nogil:
    cdef Py_ssize_t i, position, step
    cdef X_DTYPE_C x
    for i in range(row_start, row_stop):
        x = X[i, f]
        # Count the cuts strictly below x by halving steps: the same k steps for every
        # row and no branch on the data (a random comparison would mispredict half the
        # time). NaN compares false everywhere; it gets the missing bin below.
        position = 0
        step = top_step
        while step:
            position += step * (cuts[position + step - 1] < x)
            step >>= 1
        X_binned[i, f] = missing_bin if x != x else <X_BINNED_DTYPE_C>position
