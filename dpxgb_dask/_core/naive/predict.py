"""Naive twins of the forest walks."""
import math

import numpy as np


def _go_left(x, threshold, categorical, words, missing_left, missing):
    if missing:
        return bool(missing_left)
    if categorical:  # a code in the node's set (a non-integer or outside 0..255: right)
        if not (0 <= x < 256 and x == int(x)):
            return False
        return (int(words[int(x) // 64]) >> (int(x) % 64)) & 1 == 1
    return x <= threshold


def predict_raw(X, feature, threshold, categorical, category_set, missing_left, left, right,
                value, tree_roots):
    """Sum over trees of the reached leaf values, shape (n_samples,) float64."""
    out = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        for root in tree_roots:
            node = root
            while left[node] >= 0:
                x = X[i, feature[node]]
                go_left = _go_left(x, threshold[node], categorical[node], category_set[node],
                                   missing_left[node], math.isnan(x))
                node = left[node] if go_left else right[node]
            out[i] += value[node]
    return out


def predict_binned(X_binned, feature, bin_threshold, categorical, category_set, missing_left,
                   left, right, value, tree_roots, missing_bin):
    """Same on binned rows."""
    out = np.zeros(X_binned.shape[0])
    for i in range(X_binned.shape[0]):
        for root in tree_roots:
            node = root
            while left[node] >= 0:
                b = X_binned[i, feature[node]]
                go_left = _go_left(b, bin_threshold[node], categorical[node], category_set[node],
                                   missing_left[node], b == missing_bin)
                node = left[node] if go_left else right[node]
            out[i] += value[node]
    return out
