"""Naive twins of the forest walks."""
import math

import numpy as np


def predict_raw(X, feature, threshold, missing_left, left, right, value, tree_roots):
    """Sum over trees of the reached leaf values, shape (n_samples,) float64."""
    out = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        for root in tree_roots:
            node = root
            while left[node] >= 0:
                x = X[i, feature[node]]
                go_left = bool(missing_left[node]) if math.isnan(x) else x <= threshold[node]
                node = left[node] if go_left else right[node]
            out[i] += value[node]
    return out


def predict_binned(X_binned, feature, bin_threshold, missing_left, left, right, value,
                   tree_roots, missing_bin):
    """Same on binned rows."""
    out = np.zeros(X_binned.shape[0])
    for i in range(X_binned.shape[0]):
        for root in tree_roots:
            node = root
            while left[node] >= 0:
                b = X_binned[i, feature[node]]
                go_left = bool(missing_left[node]) if b == missing_bin else b <= bin_threshold[node]
                node = left[node] if go_left else right[node]
            out[i] += value[node]
    return out
