"""The random-tree kernel (``_core/random_tree.pyx``) against its naive twin, bit for bit,
and the distribution of its draws."""
import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from dpxgb_dask._core import category_set_codes
from dpxgb_dask._core.naive import random_tree as naive
from dpxgb_dask._core.random_tree import draw_random_tree

NO_MASS = np.zeros((0, 0))


def _words(seed, n):
    return np.random.default_rng(seed).integers(0, 2**64 - 1, size=n, dtype=np.uint64,
                                                endpoint=True)


def _case(seed):
    """A random configuration: features with 0 to 40 cuts, some categorical, a depth of
    0 to 6, one feature or none, mass with empty rows or none."""
    rng = np.random.default_rng(seed)
    n_features = int(rng.integers(1, 7))
    n_cuts = rng.integers(0, 41, size=n_features).astype(np.int64)
    categorical = (rng.random(n_features) < 0.3).astype(np.uint8)
    one_feature = int(rng.integers(-1, n_features)) if rng.random() < 0.4 else -1
    mass = NO_MASS
    if rng.random() < 0.6:
        mass = rng.exponential(size=(n_features, int(n_cuts.max()) + 1))
        mass *= rng.random(mass.shape) < 0.7
        mass[rng.random(n_features) < 0.3] = 0.0  # features without released mass yet
    return dict(n_cuts=n_cuts, categorical=categorical, one_feature=one_feature,
                max_depth=int(rng.integers(0, 7)), mass=mass, uniform_share=0.1,
                weight_bits=24, keep_ranges=bool(rng.random() < 0.7))


def _assert_same(fast, slow):
    assert (fast is None) == (slow is None)
    if fast is None:
        return
    assert fast[0] == slow[0]
    for a, b in zip(fast[1], slow[1]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast[2], slow[2])
    if fast[3] is None:
        assert slow[3] is None
    else:
        np.testing.assert_array_equal(fast[3], slow[3])


@pytest.mark.parametrize("seed", range(60))
def test_the_kernel_draws_the_twins_tree_bit_for_bit(seed):
    case = _case(seed)
    words = _words(seed, 3000)
    fast = draw_random_tree(words=words, **case)
    _assert_same(fast, naive.draw_random_tree(words=words, **case))
    # a buffer that runs out gives None in both; a longer one the same tree
    if fast is not None and fast[0] > 0:
        short = words[:fast[0] - 1]
        assert draw_random_tree(words=short, **case) is None
        assert naive.draw_random_tree(words=short, **case) is None
        _assert_same(draw_random_tree(words=np.concatenate([words, words]), **case), fast)


def _walk(heap, n_cuts, categorical):
    """Each split node's reachable ranges, recomputed from the root by the test."""
    is_split, feature, split_bin = heap[:3]
    ranges = {0: np.stack([np.zeros_like(n_cuts), n_cuts], axis=1)}
    for node in range(is_split.size):
        if node not in ranges or not is_split[node]:
            continue
        left, right = ranges[node].copy(), ranges[node].copy()
        f, t = feature[node], int(split_bin[node])
        if not categorical[f]:
            left[f, 1], right[f, 0] = t, t + 1
        ranges[2 * node + 1], ranges[2 * node + 2] = left, right
    return ranges


@pytest.mark.parametrize("seed", range(20))
def test_every_split_lies_in_its_nodes_reachable_bins_and_every_leaf_is_one(seed):
    case = _case(1000 + seed)
    case.update(keep_ranges=True, max_depth=5)
    n_cuts, categorical = case["n_cuts"], case["categorical"]
    _, heap, leaves, leaf_ranges = draw_random_tree(words=_words(seed, 4000), **case)
    ranges = _walk(heap, n_cuts, categorical)
    is_split, feature, split_bin, missing_left, sets = heap
    for node in np.flatnonzero(is_split):
        f, t, r = feature[node], int(split_bin[node]), ranges[node]
        assert r[f, 1] > r[f, 0]  # the feature could still be split here
        assert case["one_feature"] in (-1, f)
        if categorical[f]:
            codes = category_set_codes(sets[node])
            assert is_split[node] == 2 and 0 < len(codes) < n_cuts[f] + 1
            assert t == min(codes) and max(codes) <= n_cuts[f]
        else:
            assert is_split[node] == 1 and r[f, 0] <= t < r[f, 1] and not sets[node].any()
    # the leaves: the nodes that could not split, then the last level; with their ranges
    assert len(set(leaves.tolist())) == leaves.size
    for node, r in zip(leaves, leaf_ranges):
        parent_split = node == 0 or is_split[(node - 1) // 2]
        assert parent_split and (node >= is_split.size or not is_split[node])
        np.testing.assert_array_equal(r, ranges[node])
        if node < is_split.size:  # did not split: no feature had room
            allowed = range(len(n_cuts)) if case["one_feature"] < 0 else [case["one_feature"]]
            assert all(r[f, 1] <= r[f, 0] for f in allowed)


def _root_draws(n_trees, seed=0, **case):
    """The root's (feature, threshold, missing_left, set) of ``n_trees`` one-level trees."""
    case = dict(dict(categorical=np.zeros(len(case["n_cuts"]), np.uint8), one_feature=-1,
                     max_depth=1, mass=NO_MASS, uniform_share=0.1, weight_bits=24,
                     keep_ranges=False), **case)
    words = _words(seed, 40 * n_trees)
    out, used = [], 0
    for _ in range(n_trees):
        n, heap, _, _ = draw_random_tree(words=words[used:], **case)
        used += n
        out.append((int(heap[1][0]), int(heap[2][0]), int(heap[3][0]), heap[4][0]))
    return out


def test_features_thresholds_and_directions_are_uniform():
    n_cuts = np.array([4, 0, 9], dtype=np.int64)  # feature 1 cannot be split
    draws = _root_draws(6000, n_cuts=n_cuts)
    features = np.array([d[0] for d in draws])
    assert not np.any(features == 1)
    assert chisquare(np.bincount(features, minlength=3)[[0, 2]]).pvalue > 1e-4
    for f in (0, 2):
        thresholds = np.array([d[1] for d in draws if d[0] == f])
        assert chisquare(np.bincount(thresholds, minlength=n_cuts[f])).pvalue > 1e-4
    assert chisquare(np.bincount([d[2] for d in draws], minlength=2)).pvalue > 1e-4


def test_thresholds_follow_the_mass_and_its_weights():
    mass = np.zeros((2, 10))
    mass[0] = [0, 0, 1, 5, 20, 20, 5, 1, 0, 0]
    draws = _root_draws(6000, n_cuts=np.array([9, 9], dtype=np.int64), mass=mass)
    for f in (0, 1):
        thresholds = np.array([d[1] for d in draws if d[0] == f])
        weights = np.array(naive.quantile_weights(list(mass[f, :9]), 9, 0.1, 24), dtype=float)
        expected = weights / weights.sum() * thresholds.size
        assert chisquare(np.bincount(thresholds, minlength=9), expected).pvalue > 1e-4
    # the weights: the mass mixed with a uniform share, uniform without mass
    weights = naive.quantile_weights([0.0, 3.0, 1.0, 0.0], 4, 0.1, 24)
    expected = (0.9 * np.array([0, 3, 1, 0]) / 4 + 0.1 / 4) * 2**24
    np.testing.assert_array_equal(weights, np.floor(expected) + 1)
    assert len(set(naive.quantile_weights([0.0] * 5, 5, 0.1, 24))) == 1
    # a one-feature tree's thresholds stay uniform whatever the mass
    one = _root_draws(3000, n_cuts=np.array([9, 9], dtype=np.int64), mass=mass, one_feature=0)
    assert {d[0] for d in one} == {0}
    assert chisquare(np.bincount([d[1] for d in one], minlength=9)).pvalue > 1e-4


def test_category_subsets_are_uniform_over_the_non_empty_proper_subsets():
    draws = _root_draws(6000, n_cuts=np.array([3], dtype=np.int64),
                        categorical=np.array([1], np.uint8))  # 4 categories: 14 subsets
    subsets = [tuple(category_set_codes(d[3])) for d in draws]
    every = [c for k in (1, 2, 3) for c in itertools.combinations(range(4), k)]
    assert set(subsets) == set(every)
    assert chisquare([subsets.count(c) for c in every]).pvalue > 1e-4
    assert all(d[1] == min(s) for d, s in zip(draws, subsets))
    # more categories than a word holds: the sets span several words
    wide = _root_draws(200, n_cuts=np.array([149], dtype=np.int64),
                       categorical=np.array([1], np.uint8))
    codes = np.concatenate([category_set_codes(d[3]) for d in wide])
    assert codes.max() > 128 and codes.max() <= 149
