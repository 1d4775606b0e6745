"""Worker-side partition operations, without a cluster."""
import numpy as np
import pytest

from dpxgb_dask import ops
from dpxgb_dask._core.naive import histogram as naive_histogram


def _binned_part(rng, n_rows=500, n_features=4, n_bins=33, row_offset=0):
    X = rng.normal(size=(n_rows, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (rng.random(n_rows) < 0.4).astype(float)
    raw = ops.make_part(X, y, "binary:logistic")
    bounds = np.tile([-3.0, 3.0], (n_features, 1))
    cuts = [np.linspace(-2.5, 2.5, n_bins - 2) for _ in range(n_features)]
    return ops.bin_part(raw, bounds, cuts, row_offset, missing_bin=n_bins - 1)


def test_make_part_validates_and_names_the_argument():
    with pytest.raises(ValueError, match="same number of rows"):
        ops.make_part(np.zeros((3, 2)), np.zeros(2), "reg:squarederror")
    with pytest.raises(ValueError, match="0 and 1"):
        ops.make_part(np.zeros((2, 2)), np.array([0.0, 2.0]), "binary:logistic")
    with pytest.raises(ValueError, match="label_bounds"):
        ops.make_part(np.zeros((2, 2)), np.array([0.0, 2.0]), "reg:squarederror", (0.0, 1.0))
    with pytest.raises(ValueError, match="X must hold numbers"):
        ops.make_part(np.array([["a", "b"]], dtype=object), np.zeros(1), "reg:squarederror")
    with pytest.raises(ValueError, match="infinite"):
        ops.make_part(np.array([[np.inf]]), np.zeros(1), "reg:squarederror")


def test_row_uniforms_do_not_depend_on_partitioning():
    key = 12345678901234567890123456789
    whole = ops.row_uniforms(key, 0, 1003)
    pieces = np.concatenate([ops.row_uniforms(key, a, b - a)
                             for a, b in [(0, 1), (1, 6), (6, 517), (517, 1003)]])
    np.testing.assert_array_equal(whole, pieces)
    assert 0.0 <= whole.min() and whole.max() < 1.0
    assert not np.array_equal(whole, ops.row_uniforms(key + 1, 0, 1003))
    # Roughly uniform: 1003 draws, mean within 5 standard errors of 1/2.
    assert abs(whole.mean() - 0.5) < 5 * np.sqrt(1 / 12 / 1003)


@pytest.mark.parametrize("rule", ["clip", "filter"])
def test_start_tree_samples_and_bounds_gradients(rule):
    rng = np.random.default_rng(0)
    part = _binned_part(rng, n_rows=20000)
    margin = rng.normal(scale=3.0, size=20000)
    state = ops.start_tree(part, margin, "reg:squarederror", sample_key=7,
                           sample_interval=(0.0, 0.3), gradient_bound=1.0, gradient_rule=rule,
                           hessian_bound=1.0)
    in_tree = state.positions == 0
    assert np.all(np.abs(state.gradients) <= 1.0)
    assert np.all(state.gradients[~in_tree] == 0) and np.all(state.hessians[~in_tree] == 0)
    if rule == "clip":
        assert abs(in_tree.mean() - 0.3) < 0.02
    else:
        g = margin - part.y
        assert not np.any(in_tree & (np.abs(g) > 1.0))


def test_level_histograms_with_subtraction_equal_a_direct_build():
    rng = np.random.default_rng(1)
    part = _binned_part(rng)
    state = ops.TreeState(np.zeros(500, np.int32), rng.normal(size=500).astype(np.float32),
                          rng.random(500).astype(np.float32))
    state.positions[rng.random(500) < 0.1] = -1
    root = ops.level_histograms(part, state, [0])
    expected_root = naive_histogram.build_node_histograms(
        part.X_binned, state.gradients, state.hessians, np.flatnonzero(state.positions == 0),
        np.zeros(int((state.positions == 0).sum()), np.int64), 1, part.n_bins)
    np.testing.assert_array_equal(root["count"], expected_root["count"])
    np.testing.assert_allclose(root["sum_gradients"], expected_root["sum_gradients"], atol=1e-9)
    # Split the root, then nodes 1 and 2, and compare the subtraction path with direct builds.
    is_split = np.array([1, 1, 1], np.uint8)
    feats = np.array([0, 1, 2], np.int32)
    bins = np.array([10, 20, 5], np.uint8)
    miss = np.array([1, 0, 1], np.uint8)
    state = ops.route_rows(part, state, is_split[:1], feats[:1], bins[:1], miss[:1])
    depth1 = ops.level_histograms(part, state, [1, 2], previous=root, previous_nodes=[0])
    direct1 = ops.level_histograms(part, state, [1, 2])
    np.testing.assert_array_equal(depth1["count"], direct1["count"])
    np.testing.assert_allclose(depth1["sum_hessians"], direct1["sum_hessians"], atol=1e-9)
    state = ops.route_rows(part, state, is_split, feats, bins, miss)
    nodes = [3, 4, 5, 6]
    depth2 = ops.level_histograms(part, state, nodes, previous=depth1, previous_nodes=[1, 2])
    direct2 = ops.level_histograms(part, state, nodes)
    np.testing.assert_array_equal(depth2["count"], direct2["count"])
    np.testing.assert_allclose(depth2["sum_gradients"], direct2["sum_gradients"], atol=1e-9)
    sums = ops.node_sums(state, nodes)
    np.testing.assert_array_equal(sums[:, 2], direct2["count"][:, 0, :].sum(axis=1))
    np.testing.assert_allclose(sums[:, 0], direct2["sum_gradients"][:, 0, :].sum(axis=1), atol=1e-9)


def test_add_reduces_histograms_and_arrays():
    rng = np.random.default_rng(2)
    part = _binned_part(rng)
    state = ops.TreeState(np.zeros(500, np.int32), rng.normal(size=500).astype(np.float32),
                          np.ones(500, np.float32))
    h = ops.level_histograms(part, state, [0])
    total = ops.add(h, h, h)
    np.testing.assert_array_equal(total["count"], 3 * h["count"])
    np.testing.assert_array_equal(ops.add(np.ones(3), np.ones(3)), 2 * np.ones(3))


def test_quantized_sums_are_exact_in_any_order():
    rng = np.random.default_rng(3)
    g = ops.quantize(rng.normal(size=100_000), 0.8)
    assert np.all(np.abs(g) <= 0.8)
    assert np.all(g / ops.VALUE_GRID == np.round(g / ops.VALUE_GRID))
    assert np.array_equal(g, g.astype(np.float32).astype(np.float64))
    forward = np.cumsum(g)[-1]
    backward = np.cumsum(g[::-1])[-1]
    pairwise = g.sum()
    exact = sum(int(v) for v in np.round(g / ops.VALUE_GRID)) * ops.VALUE_GRID
    assert forward == backward == pairwise == exact
    h = ops.quantize(rng.random(10), 0.25, lower=0.0)
    assert h.min() >= 0.0 and h.max() <= 0.25
