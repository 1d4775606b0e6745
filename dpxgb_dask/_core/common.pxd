# Shared C types of the kernels. The Python-side twins (NumPy dtypes) live in common.pyx.
#
# Conventions (as in scikit-learn's hist_gradient_boosting):
# - binned features are uint8, Fortran-ordered (n_samples, n_features); bin index
#   `missing_bin` (the last one, = n_bins - 1) holds missing values (NaN);
# - gradients and hessians are float32; histogram sums are float64 plus a uint32 count;
# - node ids inside a tree are heap-indexed: root 0, children of p are 2p+1 and 2p+2.
cimport numpy as cnp

ctypedef cnp.npy_float64 X_DTYPE_C
ctypedef cnp.npy_uint8 X_BINNED_DTYPE_C
ctypedef cnp.npy_float32 G_H_DTYPE_C
ctypedef cnp.npy_float64 Y_DTYPE_C
ctypedef cnp.npy_int32 INDEX_DTYPE_C
ctypedef cnp.npy_uint32 COUNT_DTYPE_C
# A categorical split's left categories: one bit per bin code, CATEGORY_SET_WORDS (4)
# words of 64 bits per node (bins are uint8: codes 0..255).
ctypedef cnp.npy_uint64 CATEGORY_WORD_C


cdef inline bint in_category_set(const CATEGORY_WORD_C[:, ::1] category_set, Py_ssize_t node,
                                 Py_ssize_t code) noexcept nogil:
    """Whether bin (category code) ``code`` is in node ``node``'s left set."""
    return (category_set[node, code >> 6] >> (code & 63)) & 1

cdef packed struct hist_struct:
    # Same layout as HISTOGRAM_DTYPE in common.pyx.
    Y_DTYPE_C sum_gradients
    Y_DTYPE_C sum_hessians
    COUNT_DTYPE_C count

from libc.stdint cimport uint64_t

cdef extern from *:
    """
    /* 128-bit products, in C: Cython would narrow a 128-bit type to 64 bits in mixed arithmetic */
    static inline uint64_t dpxgb_mul_high(uint64_t a, uint64_t b, uint64_t* low) {
        unsigned __int128 m = (unsigned __int128)a * b;
        *low = (uint64_t)m;
        return (uint64_t)(m >> 64);
    }
    """
    # the high word of a * b, the low one in *low (Lemire's draws)
    uint64_t mul_high "dpxgb_mul_high" (uint64_t a, uint64_t b, uint64_t* low) noexcept nogil
