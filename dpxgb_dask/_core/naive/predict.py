"""Naive twins of the forest walks."""
import itertools
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


def _raw_leaf(x_row, root, feature, threshold, categorical, category_set, missing_left, left,
              right):
    """The leaf a raw row reaches from node ``root``."""
    node = root
    while left[node] >= 0:
        x = x_row[feature[node]]
        go_left = _go_left(x, threshold[node], categorical[node], category_set[node],
                           missing_left[node], math.isnan(x))
        node = left[node] if go_left else right[node]
    return node


def predict_raw(X, feature, threshold, categorical, category_set, missing_left, left, right,
                value, tree_roots):
    """Sum over trees of the reached leaf values, shape (n_samples,) float64."""
    out = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        for root in tree_roots:
            out[i] += value[_raw_leaf(X[i], root, feature, threshold, categorical,
                                      category_set, missing_left, left, right)]
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


def predict_leaves_raw(X, feature, threshold, categorical, category_set, missing_left, left,
                       right, tree_roots):
    """The leaf each row reaches in each tree, shape (n_samples, n_trees) int32."""
    out = np.zeros((X.shape[0], len(tree_roots)), dtype=np.int32)
    for i in range(X.shape[0]):
        for t, root in enumerate(tree_roots):
            out[i, t] = _raw_leaf(X[i], root, feature, threshold, categorical, category_set,
                                  missing_left, left, right)
    return out


def _expected_value(x, node, present, feature, threshold, categorical, category_set,
                    missing_left, left, right, value, cover):
    """E[tree(x) | the features in ``present``]: a split on a present feature follows x,
    on an absent one averages its children weighted by their covers."""
    if left[node] < 0:
        return value[node]
    args = (feature, threshold, categorical, category_set, missing_left, left, right, value,
            cover)
    f = feature[node]
    if f in present:
        go_left = _go_left(x[f], threshold[node], categorical[node], category_set[node],
                           missing_left[node], math.isnan(x[f]))
        return _expected_value(x, left[node] if go_left else right[node], present, *args)
    return (cover[left[node]] * _expected_value(x, left[node], present, *args)
            + cover[right[node]] * _expected_value(x, right[node], present, *args)) / cover[node]


def contributions_raw(X, feature, threshold, categorical, category_set, missing_left, left,
                      right, value, cover, tree_roots):
    """Shapley values of each tree's path-dependent expectation, by enumerating every
    subset of the features the tree splits on; shape (n_samples, n_features + 1), the last
    column the trees' expected outputs (the value with no feature present)."""
    n_features = X.shape[1]
    out = np.zeros((X.shape[0], n_features + 1))
    bounds = list(tree_roots) + [len(feature)]
    for t, root in enumerate(tree_roots):
        nodes = range(bounds[t], bounds[t + 1])
        used = sorted({int(feature[j]) for j in nodes if left[j] >= 0})
        m = len(used)
        args = (feature, threshold, categorical, category_set, missing_left, left, right,
                value, cover)
        for i in range(X.shape[0]):
            def v(present):
                return _expected_value(X[i], root, present, *args)
            out[i, n_features] += v(frozenset())
            for f in used:
                others = [g for g in used if g != f]
                for size in range(m):
                    weight = math.factorial(size) * math.factorial(m - size - 1) / math.factorial(m)
                    for subset in itertools.combinations(others, size):
                        present = frozenset(subset)
                        out[i, f] += weight * (v(present | {f}) - v(present))
    return out
