import numpy as np
import pytest

from dpxgb_dask._core import pack_cuts
from dpxgb_dask._core.binning import bin_features
from dpxgb_dask._core.naive import predict as naive
from dpxgb_dask._core.predict import (contributions_raw, predict_binned, predict_leaves_raw,
                                     predict_raw)

MISSING_BIN = 255


def _raw(X, forest, n_threads=2):
    out = np.zeros(X.shape[0])
    predict_raw(X, forest["feature"], forest["threshold"], forest["categorical"],
                forest["category_set"], forest["missing_left"], forest["left"], forest["right"],
                forest["value"], forest["tree_roots"], out, n_threads)
    return out


def _binned(X_binned, forest, n_threads=2):
    out = np.zeros(X_binned.shape[0])
    predict_binned(X_binned, forest["feature"], forest["bin_threshold"], forest["categorical"],
                   forest["category_set"], forest["missing_left"], forest["left"],
                   forest["right"], forest["value"], forest["tree_roots"], MISSING_BIN, out,
                   n_threads)
    return out


def _problem(seed, n_samples, random_cuts, random_forest, n_trees=5, max_depth=5):
    rng = np.random.default_rng(seed)
    n_features = 4
    cuts = random_cuts(rng, n_features, max_cuts=30)
    cuts[3] = np.arange(6) + 0.5  # feature 3 is categorical: 7 category codes, bin = code
    forest = random_forest(rng, n_trees, n_features, cuts, max_depth, categorical_features=(3,))
    X = np.round(rng.normal(size=(n_samples, n_features)), 2)
    X[:, 3] = rng.integers(0, 7, size=n_samples)
    X[rng.random(X.shape) < 0.15] = np.nan
    values, offsets = pack_cuts(cuts)
    X_binned = np.empty(X.shape, dtype=np.uint8, order="F")
    bin_features(X, values, offsets, MISSING_BIN, X_binned, 1)
    return X, X_binned, forest


@pytest.mark.parametrize("n_samples", [0, 1, 400])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_walks_match_naive_twins_and_each_other(n_samples, seed, random_cuts, random_forest):
    X, X_binned, forest = _problem(seed, n_samples, random_cuts, random_forest)
    raw = _raw(X, forest)
    assert n_samples == 0 or forest["categorical"].any()
    np.testing.assert_allclose(raw, naive.predict_raw(X, **{k: forest[k] for k in (
        "feature", "threshold", "categorical", "category_set", "missing_left", "left",
        "right", "value", "tree_roots")}))
    binned = _binned(X_binned, forest)
    np.testing.assert_allclose(binned, naive.predict_binned(
        X_binned, forest["feature"], forest["bin_threshold"], forest["categorical"],
        forest["category_set"], forest["missing_left"], forest["left"], forest["right"],
        forest["value"], forest["tree_roots"], MISSING_BIN))
    # The raw and binned walks agree row by row (same cuts).
    np.testing.assert_array_equal(raw, binned)


def test_accumulates_into_out_and_sample_order_independence(random_cuts, random_forest):
    X, _, forest = _problem(5, 300, random_cuts, random_forest)
    out = np.full(300, 0.5)
    predict_raw(X, forest["feature"], forest["threshold"], forest["categorical"],
                forest["category_set"], forest["missing_left"], forest["left"], forest["right"],
                forest["value"], forest["tree_roots"], out, 1)
    np.testing.assert_allclose(out, 0.5 + _raw(X, forest))
    perm = np.random.default_rng(0).permutation(300)
    np.testing.assert_array_equal(_raw(X[perm], forest), _raw(X, forest)[perm])


def test_single_leaf_forest_and_no_trees():
    leaf = dict(feature=np.zeros(1, np.int32), threshold=np.zeros(1), bin_threshold=np.zeros(1, np.uint8),
                categorical=np.zeros(1, np.uint8), category_set=np.zeros((1, 4), np.uint64),
                missing_left=np.zeros(1, np.uint8), left=np.array([-1], np.int32),
                right=np.array([-1], np.int32), value=np.array([2.5]), tree_roots=np.array([0, 0], np.int32))
    X = np.full((3, 2), np.nan)
    np.testing.assert_array_equal(_raw(X, leaf), [5.0, 5.0, 5.0])
    leaf["tree_roots"] = np.zeros(0, np.int32)
    np.testing.assert_array_equal(_raw(X, leaf), [0.0, 0.0, 0.0])


def test_rejects_forests_that_could_loop_or_read_out_of_bounds():
    forest = dict(feature=np.zeros(2, np.int32), threshold=np.zeros(2),
                  categorical=np.zeros(2, np.uint8), category_set=np.zeros((2, 4), np.uint64),
                  missing_left=np.zeros(2, np.uint8), left=np.array([1, 0], np.int32),
                  right=np.array([1, -1], np.int32), value=np.zeros(2),
                  tree_roots=np.array([0], np.int32))
    X = np.zeros((1, 1))
    forest["left"] = np.array([1, 0], np.int32)  # node 1 points back to the root
    with pytest.raises(ValueError, match="children"):
        _raw(X, forest)
    forest["left"] = np.array([1, -1], np.int32)
    forest["feature"] = np.array([3, 0], np.int32)
    with pytest.raises(ValueError, match="feature 3"):
        _raw(X, forest)
    forest["feature"] = np.zeros(2, np.int32)
    forest["tree_roots"] = np.array([2], np.int32)
    with pytest.raises(ValueError, match="tree_roots"):
        _raw(X, forest)


def test_a_categorical_node_sends_its_set_left_and_odd_codes_right():
    from dpxgb_dask._core import category_sets

    forest = dict(feature=np.zeros(3, np.int32), threshold=np.array([1.0, 0.0, 0.0]),
                  bin_threshold=np.array([1, 0, 0], np.uint8),
                  categorical=np.array([1, 0, 0], np.uint8),
                  category_set=category_sets([[1, 4, 200], [], []]),
                  missing_left=np.array([1, 0, 0], np.uint8), left=np.array([1, -1, -1], np.int32),
                  right=np.array([2, -1, -1], np.int32), value=np.array([0.0, 1.0, 2.0]),
                  tree_roots=np.array([0], np.int32))
    X = np.array([[1.0], [4.0], [200.0], [0.0], [2.0], [1.5], [-1.0], [300.0], [np.nan]])
    expected = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0]
    np.testing.assert_array_equal(_raw(X, forest), expected)
    np.testing.assert_array_equal(naive.predict_raw(X, **{k: forest[k] for k in (
        "feature", "threshold", "categorical", "category_set", "missing_left", "left", "right",
        "value", "tree_roots")}), expected)
    binned = np.asfortranarray(np.array([[1], [4], [200], [0], [2], [MISSING_BIN]], np.uint8))
    np.testing.assert_array_equal(_binned(binned, forest), [1.0, 1.0, 1.0, 2.0, 2.0, 1.0])


def _with_covers(rng, forest):
    """Random positive leaf covers, a split node's the sum of its children's."""
    from dpxgb_dask.model.explain import node_covers

    leaves = rng.uniform(0.1, 50.0, size=forest["left"].shape[0])
    return dict(forest, cover=node_covers(forest["left"], forest["right"], leaves))


def _depth(forest):
    depth = np.zeros(forest["left"].shape[0], dtype=int)
    for j in range(depth.shape[0]):
        if forest["left"][j] >= 0:
            depth[forest["left"][j]] = depth[forest["right"][j]] = depth[j] + 1
    return int(depth.max(initial=0))


def _contributions(X, forest, n_threads=2):
    out = np.zeros((X.shape[0], X.shape[1] + 1))
    contributions_raw(X, *(forest[k] for k in (
        "feature", "threshold", "categorical", "category_set", "missing_left", "left", "right",
        "value", "cover", "tree_roots")), _depth(forest), out, n_threads)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tree_shap_matches_the_shapley_values_by_enumeration(seed, random_cuts, random_forest):
    # trees of depth up to 6 on 4 features (categorical and missing values included): a
    # feature split on twice on one path is the case the path's unwinding handles
    rng = np.random.default_rng(seed)
    X, _, forest = _problem(seed, 40, random_cuts, random_forest, n_trees=4, max_depth=6)
    forest = _with_covers(rng, forest)
    fast = _contributions(X, forest)
    slow = naive.contributions_raw(X, *(forest[k] for k in (
        "feature", "threshold", "categorical", "category_set", "missing_left", "left", "right",
        "value", "cover", "tree_roots")))
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-10)
    # local accuracy: a row's contributions and the expected outputs add up to its margin
    np.testing.assert_allclose(fast.sum(axis=1), _raw(X, forest), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_contributions(X, forest, n_threads=1), fast, rtol=0, atol=0)


def test_tree_shap_of_one_split_is_the_difference_from_the_cover_weighted_mean():
    forest = dict(feature=np.zeros(3, np.int32), threshold=np.array([0.0, 0.0, 0.0]),
                  categorical=np.zeros(3, np.uint8), category_set=np.zeros((3, 4), np.uint64),
                  missing_left=np.zeros(3, np.uint8), left=np.array([1, -1, -1], np.int32),
                  right=np.array([2, -1, -1], np.int32), value=np.array([0.0, 1.0, 4.0]),
                  cover=np.array([4.0, 3.0, 1.0]), tree_roots=np.array([0], np.int32))
    X = np.array([[-1.0, 7.0], [1.0, 7.0], [np.nan, 0.0]])
    # expected output 1 * 3/4 + 4 * 1/4 = 1.75; feature 1 is never split on
    np.testing.assert_allclose(_contributions(X, forest), [[-0.75, 0.0, 1.75],
                                                           [2.25, 0.0, 1.75],
                                                           [2.25, 0.0, 1.75]])
    forest["cover"] = np.array([4.0, 4.0, 0.0])
    with pytest.raises(ValueError, match=r"cover\[2\]"):
        _contributions(X, forest)


@pytest.mark.parametrize("seed", [0, 1])
def test_leaf_indices_match_the_naive_walk_and_the_predictions(seed, random_cuts,
                                                               random_forest):
    X, _, forest = _problem(seed, 300, random_cuts, random_forest)
    args = [forest[k] for k in ("feature", "threshold", "categorical", "category_set",
                                "missing_left", "left", "right")]
    out = np.zeros((X.shape[0], forest["tree_roots"].shape[0]), dtype=np.int32)
    predict_leaves_raw(X, *args, forest["tree_roots"], out, 2)
    np.testing.assert_array_equal(out, naive.predict_leaves_raw(X, *args, forest["tree_roots"]))
    assert np.all(forest["left"][out] < 0)
    np.testing.assert_allclose(forest["value"][out].sum(axis=1), _raw(X, forest))
