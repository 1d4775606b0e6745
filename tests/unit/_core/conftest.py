import numpy as np
import pytest

from dpxgb_dask._core import category_sets, pack_cuts


def _random_cuts(rng, n_features, max_cuts):
    cuts = []
    for _ in range(n_features):
        k = int(rng.integers(0, max_cuts + 1))
        cuts.append(np.unique(np.round(rng.normal(size=k), 2)))
    return cuts


def _random_forest(rng, n_trees, n_features, cuts, max_depth, categorical_features=()):
    """A forest in pre-order (children after parents), as the kernels require. Nodes on a
    feature of ``categorical_features`` (whose cuts are ``k + 0.5``: bin = category code)
    send a random non-empty subset of its categories left (``category_set``)."""
    feature, bin_threshold, threshold, missing_left, left, right, value = ([] for _ in range(7))
    categorical, left_codes = [], []
    roots = []

    def grow(depth):
        j = len(feature)
        usable = [f for f in range(n_features) if len(cuts[f]) > 0]
        for arr in (feature, bin_threshold, threshold, missing_left, left, right, value,
                    categorical):
            arr.append(0)
        left_codes.append([])
        if depth >= max_depth or not usable or rng.random() < 0.25:
            left[j] = right[j] = -1
            value[j] = float(rng.normal())
            return j
        f = int(rng.choice(usable))
        if f in categorical_features:
            n_categories = len(cuts[f]) + 1
            codes = sorted(rng.choice(n_categories, int(rng.integers(1, n_categories + 1)),
                                      replace=False).tolist())
            t = codes[0]
            feature[j], bin_threshold[j], threshold[j], categorical[j] = f, t, float(t), 1
            left_codes[j] = codes
        else:
            t = int(rng.integers(0, len(cuts[f])))
            feature[j], bin_threshold[j], threshold[j] = f, t, float(cuts[f][t])
        missing_left[j] = int(rng.integers(0, 2))
        left[j] = grow(depth + 1)
        right[j] = grow(depth + 1)
        return j

    for _ in range(n_trees):
        roots.append(grow(0))
    return dict(
        feature=np.array(feature, dtype=np.int32),
        bin_threshold=np.array(bin_threshold, dtype=np.uint8),
        threshold=np.array(threshold, dtype=np.float64),
        categorical=np.array(categorical, dtype=np.uint8),
        category_set=category_sets(left_codes),
        missing_left=np.array(missing_left, dtype=np.uint8),
        left=np.array(left, dtype=np.int32),
        right=np.array(right, dtype=np.int32),
        value=np.array(value, dtype=np.float64),
        tree_roots=np.array(roots, dtype=np.int32),
    )


@pytest.fixture
def random_cuts():
    """``random_cuts(rng, n_features, max_cuts)`` -> list of sorted unique cut arrays."""
    return _random_cuts


@pytest.fixture
def random_forest():
    """``random_forest(rng, n_trees, n_features, cuts, max_depth, categorical_features=())``
    -> dict of node arrays."""
    return _random_forest


@pytest.fixture
def binned_problem():
    """``binned_problem(rng, n_samples, n_features, n_bins)`` -> (X_binned, g, h): random bins
    in ``[0, n_bins)`` (the last one being the missing bin), float32 gradients/hessians."""

    def make(rng, n_samples, n_features, n_bins):
        X_binned = np.asfortranarray(
            rng.integers(0, n_bins, size=(n_samples, n_features)).astype(np.uint8))
        g = rng.normal(size=n_samples).astype(np.float32)
        h = rng.uniform(0.0, 1.0, size=n_samples).astype(np.float32)
        return X_binned, g, h

    return make


@pytest.fixture
def packed():
    return pack_cuts
