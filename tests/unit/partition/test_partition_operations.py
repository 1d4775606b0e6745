"""Worker-side partition operations, without a cluster."""
import numpy as np
import pytest

from dpxgb_dask.inputs import Targets
from dpxgb_dask.boosting import candidates, tree
from dpxgb_dask.partition import aggregates, gradients, messages, rows, state as partition
from dpxgb_dask._core.naive import histogram as naive_histogram
from dpxgb_dask._core.predict import predict_binned
from dpxgb_dask.objective import Objective


def _binned_part(rng, n_rows=500, n_features=4, n_bins=33, row_offset=0,
                 objective=Objective("binary:logistic")):
    """A prepared PartitionState (binned rows, margins 0; K columns of them and labels in
    0..K-1 for ``multi:softprob``)."""
    X = rng.normal(size=(n_rows, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    K = objective.n_classes if objective.is_multiclass else None
    y = (rng.random(n_rows) < 0.4).astype(float) if K is None else \
        rng.integers(K, size=n_rows).astype(float)
    state = partition.load_partition(X, Targets(y), objective, index=0)
    bounds = np.tile([-3.0, 3.0], (n_features, 1))
    cuts = [np.linspace(-2.5, 2.5, n_bins - 2) for _ in range(n_features)]
    state.prepare(messages.Prepare(bounds, cuts, n_bins - 1, 0.0 if K is None else np.zeros(K),
                                   {0: row_offset}))
    return state


def _tree_state(state, positions, gradients, hessians):
    state.positions, state.gradients, state.hessians = positions, gradients, hessians
    return state


def _heap(is_split, feats, bins, miss):
    return (np.asarray(is_split, np.uint8), np.asarray(feats, np.int32),
            np.asarray(bins, np.uint8), np.asarray(miss, np.uint8),
            np.zeros((len(is_split), 4), np.uint64))


def test_make_part_validates_and_names_the_argument():
    with pytest.raises(ValueError, match="same number of rows"):
        partition.make_part(np.zeros((3, 2)), Targets(np.zeros(2)), Objective("reg:squarederror"))
    # outside the classes 0 and 1: never moved into one (issue 43); refused to the process
    # that sent the rows, or left out on request
    with pytest.raises(ValueError, match="labels outside the classes of binary:logistic"):
        partition.make_part(np.zeros((2, 2)), Targets(np.array([-1.0, 1.0])),
                            Objective("binary:logistic"))
    part = partition.make_part(np.zeros((2, 2)), Targets(np.array([-1.0, 1.0])),
                               Objective("binary:logistic", unknown_labels="missing"))
    np.testing.assert_array_equal(part.y, [np.nan, 1.0])
    # outside label_bounds: clipped, not refused
    part = partition.make_part(np.zeros((2, 2)), Targets(np.array([-3.0, 2.0])),
                         Objective("reg:squarederror", (0.0, 1.0)))
    np.testing.assert_array_equal(part.y, [0.0, 1.0])
    with pytest.raises(ValueError, match="X must hold numbers"):
        partition.make_part(np.array([["a", "b"]], dtype=object), Targets(np.zeros(1)),
                      Objective("reg:squarederror"))
    # a NaN label is kept: the row is left out of the label sum (and of every tree)
    part = partition.make_part(np.zeros((3, 1)), Targets(np.array([0.5, np.nan, -0.5])),
                         Objective("reg:squarederror", (-1.0, 1.0)))

    np.testing.assert_array_equal(
        aggregates.clipped_label_sum(part, Objective("reg:squarederror", (-1.0, 1.0))), [0.0, 2.0])
    # infinite features are kept (the binning sends them to the ends of the bounds) and
    # left out of the exact extremes of feature_bounds='data'
    part = partition.make_part(np.array([[np.inf], [1.0], [-np.inf], [-2.0]]), Targets(np.zeros(4)),
                         Objective("reg:squarederror"))
    # class indices 0..K-1 kept, NaN kept, any other label left out on request (never
    # rounded or clipped into a class: issue 43)
    part = partition.make_part(np.zeros((5, 1)), Targets(np.array([0.0, 1.0, 2.0, 1.4, np.nan])),
                               Objective("multi:softprob", n_classes=3,
                                         unknown_labels="missing"))
    np.testing.assert_array_equal(part.y, [0.0, 1.0, 2.0, np.nan, np.nan])
    np.testing.assert_array_equal(aggregates.class_counts(part, 3), [1.0, 1.0, 1.0])
    part = partition.make_part(np.array([[np.inf], [1.0], [-np.inf], [-2.0]]), Targets(np.zeros(4)),
                         Objective("reg:squarederror"))
    np.testing.assert_array_equal(aggregates.feature_min_max(part), [[-2.0, 1.0]])


def test_row_uniforms_do_not_depend_on_partitioning():
    key = 12345678901234567890123456789
    whole = rows.row_uniforms(key, 0, 1003)
    pieces = np.concatenate([rows.row_uniforms(key, a, b - a)
                             for a, b in [(0, 1), (1, 6), (6, 517), (517, 1003)]])
    np.testing.assert_array_equal(whole, pieces)
    assert 0.0 <= whole.min() and whole.max() < 1.0
    assert not np.array_equal(whole, rows.row_uniforms(key + 1, 0, 1003))
    # Roughly uniform: 1003 draws, mean within 5 standard errors of 1/2.
    assert abs(whole.mean() - 0.5) < 5 * np.sqrt(1 / 12 / 1003)


@pytest.mark.parametrize("rule", ["clip", "filter"])
def test_start_tree_samples_and_bounds_gradients(rule):
    rng = np.random.default_rng(0)
    part = state = _binned_part(rng, n_rows=20000, objective=Objective("reg:squarederror",
                                                                         (-1.0, 1.0)))
    margin = rng.normal(scale=3.0, size=20000)
    state.margins = state.pending = margin
    state.run(messages.Round(seq=1, start_tree=messages.TreeStart(7, (0.0, 0.3), 1.0, rule, 1.0)))
    in_tree = state.positions == 0
    assert np.all(state.positions[~in_tree] == -1)  # ~0: outside the tree, at the root
    assert np.all(np.abs(state.gradients) <= 1.0)
    assert np.all(state.gradients[~in_tree] == 0) and np.all(state.hessians[~in_tree] == 0)
    if rule == "clip":
        assert abs(in_tree.mean() - 0.3) < 0.02
    else:
        g = margin - part.y
        assert not np.any(in_tree & (np.abs(g) > 1.0))


def test_level_histograms_with_subtraction_equal_a_direct_build():
    rng = np.random.default_rng(1)
    part = state = _tree_state(_binned_part(rng), np.zeros(500, np.int32),
                               rng.normal(size=500).astype(np.float32),
                               rng.random(500).astype(np.float32))
    state.positions[rng.random(500) < 0.1] = -1
    root = partition.level_histograms(state, [0])
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
    state.run(messages.Round(seq=1, splits=_heap(is_split[:1], feats[:1], bins[:1], miss[:1])))
    depth1 = partition.level_histograms(state, [1, 2], previous=root, previous_nodes=[0])
    direct1 = partition.level_histograms(state, [1, 2])
    np.testing.assert_array_equal(depth1["count"], direct1["count"])
    np.testing.assert_allclose(depth1["sum_hessians"], direct1["sum_hessians"], atol=1e-9)
    state.run(messages.Round(seq=2, splits=_heap(is_split, feats, bins, miss)))
    nodes = [3, 4, 5, 6]
    depth2 = partition.level_histograms(state, nodes, previous=depth1, previous_nodes=[1, 2])
    direct2 = partition.level_histograms(state, nodes)
    np.testing.assert_array_equal(depth2["count"], direct2["count"])
    np.testing.assert_allclose(depth2["sum_gradients"], direct2["sum_gradients"], atol=1e-9)
    sums = partition.node_sums(state, nodes)
    np.testing.assert_array_equal(sums[:, 2], direct2["count"][:, 0, :].sum(axis=1))
    np.testing.assert_allclose(sums[:, 0], direct2["sum_gradients"][:, 0, :].sum(axis=1), atol=1e-9)


def test_add_reduces_histograms_and_arrays():
    rng = np.random.default_rng(2)
    state = _tree_state(_binned_part(rng), np.zeros(500, np.int32),
                        rng.normal(size=500).astype(np.float32), np.ones(500, np.float32))
    h = partition.level_histograms(state, [0])
    before = h.copy()
    total = aggregates.add(h, h, h)
    np.testing.assert_array_equal(total["count"], 3 * h["count"])
    np.testing.assert_array_equal(total["sum_gradients"], 3 * h["sum_gradients"])
    alone = aggregates.add(h)  # a copy, as the sum of one partition
    assert alone is not h and not np.shares_memory(alone, h)
    np.testing.assert_array_equal(alone, h)
    np.testing.assert_array_equal(h, before)  # the addends are left as they were
    np.testing.assert_array_equal(aggregates.add(np.ones(3), np.ones(3)), 2 * np.ones(3))


def test_quantized_sums_are_exact_in_any_order():
    rng = np.random.default_rng(3)
    g = gradients.quantize(rng.normal(size=100_000), 0.8)
    assert np.all(np.abs(g) <= 0.8)
    assert np.all(g / gradients.VALUE_GRID == np.round(g / gradients.VALUE_GRID))
    assert np.array_equal(g, g.astype(np.float32).astype(np.float64))
    forward = np.cumsum(g)[-1]
    backward = np.cumsum(g[::-1])[-1]
    pairwise = g.sum()
    exact = sum(int(v) for v in np.round(g / gradients.VALUE_GRID)) * gradients.VALUE_GRID
    assert forward == backward == pairwise == exact
    h = gradients.quantize(rng.random(10), 0.25, lower=0.0)
    assert h.min() >= 0.0 and h.max() <= 0.25


def _merge_levels(levels):
    """The heap-indexed decisions of several levels of one tree as one set of arrays (the
    layout of ``Round.tree_splits``)."""
    size = max(level[0].shape[0] for level in levels)
    merged = [np.zeros((size,) + a.shape[1:], dtype=a.dtype) for a in levels[0]]
    for level in levels:
        where = np.flatnonzero(level[0])
        for out, values in zip(merged, level):
            out[where] = values[where]
    return tuple(merged)


def _random_level(rng, nodes, n_features, n_cuts):
    size = int(max(nodes)) + 1
    heap = [np.zeros(size, np.uint8), np.zeros(size, np.int32), np.zeros(size, np.uint8),
            np.zeros(size, np.uint8), np.zeros((size, 4), np.uint64)]
    for node in nodes:
        heap[0][node] = rng.random() < 0.8
        heap[1][node] = rng.integers(n_features)
        heap[2][node] = rng.integers(n_cuts)
        heap[3][node] = rng.integers(2)
    return tuple(heap)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_margins_from_the_leaf_each_row_reached_equal_a_walk_of_the_tree(seed):
    """TreeEnd reuses the positions found while growing (rows outside the tree included);
    the result must be what predicting the tree on the binned rows gives."""
    from dpxgb_dask.boosting.tree import Tree

    rng = np.random.default_rng(seed)
    state = _binned_part(rng, n_rows=3000, objective=Objective("reg:squarederror", (-1, 1)))
    state.run(messages.Round(seq=1, start_tree=messages.TreeStart(11, (0.0, 0.4), 1.0, "clip", 1.0)))
    assert np.any(state.positions < 0) and np.any(state.positions == 0)
    cuts = [np.linspace(-2.5, 2.5, 31) for _ in range(4)]
    tree = Tree(cuts)
    nodes, levels = [0], []
    for depth in range(3):
        level = _random_level(rng, nodes, 4, 31)
        levels.append(level)
        children = []
        for node in nodes:
            if level[0][node]:
                tree.add_split(node, level[1][node], level[2][node], level[3][node])
                children += [2 * node + 1, 2 * node + 2]
            else:
                tree.add_leaf(node, 0.0)
        nodes = children
    state.run(messages.Round(seq=2, tree_splits=_merge_levels(levels[:-1])))
    leaf_values = rng.normal(size=2 ** 4)
    for node in nodes + [n for n in tree.leaves]:
        tree.add_leaf(node, leaf_values[node])
    arrays = tree.to_arrays()
    expected = state.margins.copy()
    predict_binned(state.X_binned, arrays["feature"], arrays["bin_threshold"],
                   arrays["categorical"], arrays["category_set"], arrays["missing_left"],
                   arrays["left"], arrays["right"], arrays["value"],
                   np.zeros(1, np.int32), state.missing_bin, expected, 1)
    by_heap = np.zeros(2 ** 4)
    for node, value in tree.leaves.items():
        by_heap[node] = value
    state.run(messages.Round(seq=3, end_tree=messages.TreeEnd(levels[-1], by_heap)))
    np.testing.assert_array_equal(state.margins, np.clip(expected, -1.0, 1.0))


def test_a_replayed_round_returns_its_result_without_applying_it_again():
    rng = np.random.default_rng(4)
    state = _binned_part(rng)
    start = messages.Round(seq=1, start_tree=messages.TreeStart(0, (0.0, 2.0), 1.0, "clip", 0.25),
                      histogram_nodes=np.array([0]))
    root = state.run(start)
    split = messages.Round(seq=2, splits=_heap([1], [0], [10], [1]), histogram_nodes=np.array([1, 2]))
    first = state.run(split)
    positions = state.positions.copy()
    again = state.run(split)
    assert again is first
    np.testing.assert_array_equal(state.positions, positions)
    with pytest.raises(ValueError, match="older"):
        state.run(start)
    assert root["count"].sum() == 500 * 4


def test_leaf_sums_read_off_the_histograms_equal_direct_sums():
    rng = np.random.default_rng(5)
    state = _tree_state(_binned_part(rng, n_rows=2000), np.zeros(2000, np.int32),
                        gradients.quantize(rng.normal(size=2000), 1.0).astype(np.float32),
                        gradients.quantize(rng.random(2000), 0.25, lower=0.0).astype(np.float32))
    state.positions[rng.random(2000) < 0.2] = -1
    root = partition.level_histograms(state, [0])
    splits = tree.LevelSplits(np.array([0]), np.array([True]), np.array([2], np.int32),
                                   np.array([12], np.int32), np.array([True]))
    children = tree.child_totals(root, splits)
    state.run(messages.Round(seq=1, splits=splits.as_heap_arrays()))
    direct = partition.node_sums(state, tree.children(splits))
    np.testing.assert_array_equal(children, direct)
    np.testing.assert_array_equal(tree.node_totals(root), partition.node_sums(state, [1, 2]).sum(
        axis=0, keepdims=True))


def test_float32_partitions_are_kept_without_a_copy_and_bin_like_float64():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(1000, 3)).astype(np.float32)
    y = (rng.random(1000) < 0.5).astype(float)
    bounds = np.tile([-2.0, 2.0], (3, 1))  # values beyond the bounds: binned as if clipped
    cuts = candidates.uniform_cuts(bounds, 16)
    states = []
    for values in (X, X.astype(np.float64)):
        state = partition.load_partition(values, Targets(y), Objective("binary:logistic"), 0)
        state.prepare(messages.Prepare(bounds, cuts, 16, 0.0, {0: 0}))
        states.append(state)
    assert np.shares_memory(states[0].raw.X, X)
    np.testing.assert_array_equal(states[0].X_binned, states[1].X_binned)
    clipped = np.clip(X.astype(np.float64), -2.0, 2.0)
    expected = np.stack([np.searchsorted(c, clipped[:, f], side="left")
                         for f, c in enumerate(cuts)], axis=1)
    np.testing.assert_array_equal(states[0].X_binned, expected)
    with pytest.raises(ValueError, match="strictly inside"):
        partition.bin_rows(X, bounds, [np.array([-2.0, 0.0])] * 3, 16)


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("drop_outside", [False, True])
@pytest.mark.parametrize("routed", [False, True])
def test_rows_selected_at_their_margins_match_the_objectives_gradients(objective, sampled,
                                                                       drop_outside, routed):
    """The compiled pass that computes each row's gradient from its margin
    (``select_tree_rows_at_margins``) against its twin: ``Objective.gradients``, the one
    home of the formulas, then the naive selection (at the root, or at leaves the rows
    were routed to ahead)."""
    from dpxgb_dask._core.naive import rows as naive_rows
    from dpxgb_dask._core.rows import select_tree_rows_at_margins
    from dpxgb_dask.objective import Objective

    rng = np.random.default_rng(sampled + 2 * drop_outside)
    n = 9000
    margins = rng.normal(scale=3.0, size=n)
    margins[:3] = [0.0, 40.0, -800.0]  # p = 1/2, p rounding to 1, exp(-m) overflowing
    y = (rng.random(n) < 0.5).astype(float)
    if objective == "reg:squarederror":
        y = rng.normal(size=n)
    y[rng.random(n) < 0.05] = np.nan
    u = rng.random(n) if sampled else np.empty(0)
    low, high = (0.2, 0.7) if sampled else (0.0, 2.0)
    grid = gradients.VALUE_GRID
    g_max, h_max = np.floor(0.9 / grid) * grid, np.floor(0.25 / grid) * grid
    with np.errstate(over="ignore"):  # (exp(800) = inf: p = 0)
        g, h = Objective(objective).gradients(y, margins)
    leaves = rng.integers(7, 15, size=n).astype(np.int32)
    expected = naive_rows.select_tree_rows(g, h, y, u, low, high, g_max, h_max, grid,
                                           drop_outside, 0.9, leaves=leaves if routed else None)
    got = (leaves.copy() if routed else np.empty(n, np.int32), np.empty(n, np.float32),
           np.empty(n, np.float32))
    logistic = objective == "binary:logistic"
    with np.errstate(over="ignore"):
        exp_neg = np.exp(-margins) if logistic else np.empty(0)
    select_tree_rows_at_margins(margins, exp_neg, y, logistic, u, low, high, g_max, h_max,
                                grid, drop_outside, 0.9, routed, *got, 2)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    if routed:
        assert got[0].min() == -15 and got[0].max() == 14
    else:
        assert got[0].min() == -1 and got[0].max() == 0


def _complete_tree(rng, depth, n_features, n_cuts):
    """Heap arrays of a tree of ``depth`` whose every node above the leaves splits
    numerically, and its leaves' heap ids."""
    n_splits = 2**depth - 1
    heap = _heap(np.ones(n_splits), rng.integers(n_features, size=n_splits),
                 rng.integers(n_cuts, size=n_splits), rng.integers(2, size=n_splits))
    return heap, np.arange(n_splits, 2 * n_splits + 1)


@pytest.mark.parametrize("routing", ["after the answer", "by the next round"])
@pytest.mark.parametrize("objective", [Objective("binary:logistic"),
                                       Objective("multi:softprob", n_classes=3)])
def test_a_tree_sent_ahead_sums_and_ends_as_one_routed_in_its_own_round(routing, objective):
    """``Round.next_tree_splits``: the next tree's rows are routed to its leaves after the
    round (by the worker, ``route_ahead``, or else by the round that starts the tree), and
    the round starting it gives the same sums, positions and margins as a round that
    routes the tree itself (rows outside the sample included: their complement ~leaf)."""
    rng = np.random.default_rng(6)
    trees = [_complete_tree(rng, 3, 4, 31) for _ in range(4)]
    multiclass = objective.is_multiclass
    own, ahead = (_binned_part(np.random.default_rng(7), n_rows=2000, objective=objective)
                  for _ in range(2))
    values = None
    for t, (heap, leaves) in enumerate(trees):
        start = messages.TreeStart(100 + t, (0.1, 0.7), 1.0, "clip", 0.25,
                                   output_class=t % 3 if multiclass else None,
                                   vector_bounds=(1.0, 0.25, 1.0) if multiclass else None)
        end = None if values is None else messages.TreeEnd(
            None, values, output_class=(t - 1) % 3 if multiclass else None)
        following = trees[t + 1][0] if t + 1 < len(trees) else None
        expected = own.run(messages.Round(seq=t + 1, end_tree=end, start_tree=start,
                                          tree_splits=heap, leaf_nodes=leaves))
        got = ahead.run(messages.Round(seq=t + 1, end_tree=end, start_tree=start,
                                       tree_splits=heap if t == 0 else None,
                                       leaf_nodes=leaves, next_tree_splits=following))
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(ahead.positions, own.positions)
        assert (own.positions < 0).any() and (own.positions >= 7).any()
        if routing == "after the answer":
            ahead.route_ahead()
        values = np.zeros(15)
        values[leaves] = rng.normal(size=leaves.size)
    np.testing.assert_array_equal(ahead.margins, own.margins)


def test_the_round_after_a_tree_sent_ahead_must_start_that_tree():
    rng = np.random.default_rng(8)
    state = _binned_part(rng)
    (heap, leaves), (following, _) = _complete_tree(rng, 2, 4, 31), _complete_tree(rng, 2, 4, 31)
    start = messages.TreeStart(0, (0.0, 2.0), 1.0, "clip", 0.25)
    state.run(messages.Round(seq=1, start_tree=start, tree_splits=heap, leaf_nodes=leaves,
                             next_tree_splits=following))
    for wrong in (dict(), dict(start_tree=start, tree_splits=heap)):
        with pytest.raises(ValueError, match="next_tree_splits"):
            state.run(messages.Round(seq=2, **wrong, leaf_nodes=leaves))
