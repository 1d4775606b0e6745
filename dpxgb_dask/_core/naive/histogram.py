"""Naive twins of the histogram kernels, one Python-level loop per row."""
import numpy as np

from ..common import HISTOGRAM_DTYPE


def build_node_histograms(X_binned, gradients, hessians, sample_indices, sample_slots,
                          n_slots, n_bins):
    """Histograms (n_slots, n_features, n_bins) of HISTOGRAM_DTYPE by direct summation.

    Sums are accumulated in float64 in the order rows are given, like the kernel.
    """
    n_features = X_binned.shape[1]
    hist = np.zeros((n_slots, n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    for row, slot in zip(sample_indices, sample_slots):
        for f in range(n_features):
            cell = hist[slot, f, X_binned[row, f]]
            cell["sum_gradients"] += np.float64(gradients[row])
            cell["sum_hessians"] += np.float64(hessians[row])
            cell["count"] += 1
    return hist


def build_root_histogram(X_binned, gradients, hessians, n_bins):
    """Histogram (n_features, n_bins) of all rows."""
    n = X_binned.shape[0]
    return build_node_histograms(X_binned, gradients, hessians, np.arange(n),
                                 np.zeros(n, dtype=np.int64), 1, n_bins)[0]


def subtract_histograms(parent, child):
    """``parent - child`` field by field."""
    out = np.empty_like(parent)
    for name in ("sum_gradients", "sum_hessians", "count"):
        out[name] = parent[name] - child[name]
    return out


def add_histograms(a, b):
    """``a + b`` field by field."""
    out = np.empty_like(a)
    for name in ("sum_gradients", "sum_hessians", "count"):
        out[name] = a[name] + b[name]
    return out
