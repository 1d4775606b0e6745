"""NumPy dtypes shared by the kernels and the Python code that calls them."""
import numpy as np

X_DTYPE = np.float64
X_BINNED_DTYPE = np.uint8
G_H_DTYPE = np.float32
Y_DTYPE = np.float64
INDEX_DTYPE = np.int32
COUNT_DTYPE = np.uint32

#: Largest number of bins of a feature, the missing-value bin included (uint8 bins).
MAX_N_BINS = 256

#: One histogram cell: exact sums of gradients and hessians and the number of rows.
#: Matches ``hist_struct`` in common.pxd (packed, no padding).
HISTOGRAM_DTYPE = np.dtype(
    [
        ("sum_gradients", Y_DTYPE),
        ("sum_hessians", Y_DTYPE),
        ("count", COUNT_DTYPE),
    ]
)
