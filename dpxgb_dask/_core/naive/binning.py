"""Naive twin of ``binning.bin_features``."""
import numpy as np


def bin_features(X, cuts_per_feature, missing_bin):
    """Bin of ``x`` = number of cuts strictly below ``x``; NaN -> ``missing_bin``.

    Parameters
    ----------
    X : ndarray of float64, shape (n_samples, n_features)
    cuts_per_feature : list of ndarray of float64
    missing_bin : int

    Returns
    -------
    ndarray of uint8, shape (n_samples, n_features), Fortran-ordered
    """
    n_samples, n_features = X.shape
    out = np.empty((n_samples, n_features), dtype=np.uint8, order="F")
    for f in range(n_features):
        cuts = list(cuts_per_feature[f])
        for i in range(n_samples):
            x = X[i, f]
            out[i, f] = missing_bin if np.isnan(x) else sum(1 for c in cuts if c < x)
    return out
