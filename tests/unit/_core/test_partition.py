import numpy as np
import pytest

from dpxgb_dask._core import category_set_codes, category_sets
from dpxgb_dask._core.naive import partition as naive
from dpxgb_dask._core.partition import apply_splits, node_sums, route_to_leaves, rows_of_nodes

MISSING_BIN = 255


def _decisions(rng, n_node_ids, n_features):
    # 0: no split, 1: numerical (bin <= split_bin), 2: categorical (bin in category_set)
    split = rng.random(n_node_ids) < 0.7
    return dict(
        is_split=(split * (1 + (rng.random(n_node_ids) < 0.3))).astype(np.uint8),
        split_feature=rng.integers(0, n_features, size=n_node_ids).astype(np.int32),
        split_bin=rng.integers(0, 40, size=n_node_ids).astype(np.uint8),
        missing_left=rng.integers(0, 2, size=n_node_ids).astype(np.uint8),
        # sets of 1 to 30 codes among 0..40, and some beyond 63 (other words)
        category_set=category_sets([rng.choice(np.r_[0:41, 64, 130, 254], rng.integers(1, 31),
                                               replace=False) for _ in range(n_node_ids)]),
    )


@pytest.mark.parametrize("n_samples", [0, 1, 1000])
def test_apply_splits_matches_naive_twin(n_samples):
    rng = np.random.default_rng(n_samples)
    n_features, n_node_ids = 4, 15
    X_binned = np.asfortranarray(rng.integers(0, 41, size=(n_samples, n_features)).astype(np.uint8))
    X_binned[rng.random(X_binned.shape) < 0.1] = MISSING_BIN
    # ~p (rows outside the tree) and ids beyond the table, on both sides
    positions = rng.integers(-20, 20, size=n_samples).astype(np.int32)
    d = _decisions(rng, n_node_ids, n_features)
    expected = naive.apply_splits(X_binned, positions, missing_bin=MISSING_BIN, **d)
    apply_splits(X_binned, positions, d["is_split"], d["split_feature"], d["split_bin"],
                 d["missing_left"], d["category_set"], MISSING_BIN, 2)
    np.testing.assert_array_equal(positions, expected)


def test_rows_outside_the_tree_follow_the_same_path_and_stay_outside():
    rng = np.random.default_rng(7)
    X_binned = np.asfortranarray(rng.integers(0, 41, size=(300, 3)).astype(np.uint8))
    inside = rng.integers(0, 7, size=300).astype(np.int32)
    outside = (-inside - 1).astype(np.int32)
    d = _decisions(rng, 7, 3)
    for positions in (inside, outside):
        apply_splits(X_binned, positions, d["is_split"], d["split_feature"], d["split_bin"],
                     d["missing_left"], d["category_set"], MISSING_BIN, 2)
    assert np.all(outside < 0)
    np.testing.assert_array_equal(-outside - 1, inside)
    assert np.any(inside >= 7)  # rows did move


def test_missing_values_follow_the_default_direction():
    X_binned = np.asfortranarray(np.array([[MISSING_BIN], [MISSING_BIN], [0]], dtype=np.uint8))
    positions = np.array([1, 2, 1], dtype=np.int32)
    apply_splits(X_binned, positions, np.ones(3, np.uint8), np.zeros(3, np.int32),
                 np.full(3, 200, np.uint8), np.array([0, 0, 1], np.uint8),
                 np.zeros((3, 4), np.uint64), MISSING_BIN, 1)
    # node 1 sends missing right (-> 4); node 2 sends missing left (-> 5); bin 0 <= 200 left.
    assert positions.tolist() == [4, 5, 3]


def test_sample_order_independence():
    rng = np.random.default_rng(3)
    X_binned = np.asfortranarray(rng.integers(0, 41, size=(500, 3)).astype(np.uint8))
    positions = rng.integers(0, 7, size=500).astype(np.int32)
    d = _decisions(rng, 7, 3)
    perm = rng.permutation(500)
    a = positions.copy()
    apply_splits(X_binned, a, d["is_split"], d["split_feature"], d["split_bin"], d["missing_left"], d["category_set"], MISSING_BIN, 2)
    b = positions[perm].copy()
    apply_splits(np.asfortranarray(X_binned[perm]), b, d["is_split"], d["split_feature"],
                 d["split_bin"], d["missing_left"], d["category_set"], MISSING_BIN, 2)
    np.testing.assert_array_equal(b, a[perm])


def test_apply_splits_rejects_bad_feature():
    X_binned = np.zeros((3, 2), dtype=np.uint8, order="F")
    with pytest.raises(ValueError, match="split_feature"):
        apply_splits(X_binned, np.zeros(3, np.int32), np.ones(1, np.uint8), np.array([2], np.int32),
                     np.zeros(1, np.uint8), np.zeros(1, np.uint8), np.zeros((1, 4), np.uint64),
                     MISSING_BIN, 1)
    with pytest.raises(ValueError, match="positions"):
        apply_splits(X_binned, np.zeros(2, np.int32), np.ones(1, np.uint8), np.array([0], np.int32),
                     np.zeros(1, np.uint8), np.zeros(1, np.uint8), np.zeros((1, 4), np.uint64),
                     MISSING_BIN, 1)


def test_categorical_nodes_send_the_categories_of_their_set_left():
    codes = [0, 5, 63, 64, 200]
    X_binned = np.asfortranarray(np.arange(256, dtype=np.uint8)[:, None])
    positions = np.zeros(256, dtype=np.int32)
    sets = category_sets([codes])
    apply_splits(X_binned, positions, np.array([2], np.uint8), np.zeros(1, np.int32),
                 np.zeros(1, np.uint8), np.zeros(1, np.uint8), sets, MISSING_BIN, 1)
    went_left = np.flatnonzero(positions == 1)
    assert went_left.tolist() == codes  # (255 is the missing bin: right by default)
    assert category_set_codes(sets[0]).tolist() == codes
    with pytest.raises(ValueError, match="category_set"):
        apply_splits(X_binned, positions, np.array([2], np.uint8), np.zeros(1, np.int32),
                     np.zeros(1, np.uint8), np.zeros(1, np.uint8), np.zeros((1, 3), np.uint64),
                     MISSING_BIN, 1)


@pytest.mark.parametrize("n_samples", [0, 1, 777])
def test_rows_of_nodes_matches_naive_twin(n_samples):
    rng = np.random.default_rng(n_samples + 11)
    positions = rng.integers(-2, 40, size=n_samples).astype(np.int32)
    slot_of_node = np.full(31, -1, dtype=np.int32)
    chosen = rng.choice(31, size=8, replace=False)
    slot_of_node[chosen] = np.arange(8)
    rows, slots = rows_of_nodes(positions, slot_of_node)
    e_rows, e_slots = naive.rows_of_nodes(positions, slot_of_node)
    np.testing.assert_array_equal(rows, e_rows)
    np.testing.assert_array_equal(slots, e_slots)
    assert rows.dtype == np.int32 and slots.dtype == np.int32


def test_all_missing_feature_routes_every_row_by_the_default_direction():
    rng = np.random.default_rng(7)
    X_binned = np.asfortranarray(rng.integers(0, 41, size=(200, 3)).astype(np.uint8))
    X_binned[:, 1] = MISSING_BIN
    positions = np.zeros(200, dtype=np.int32)
    for missing_left, child in ((1, 1), (0, 2)):
        pos = positions.copy()
        args = (np.ones(1, np.uint8), np.array([1], np.int32), np.array([20], np.uint8),
                np.array([missing_left], np.uint8), np.zeros((1, 4), np.uint64))
        apply_splits(X_binned, pos, *args, MISSING_BIN, 2)
        np.testing.assert_array_equal(pos, naive.apply_splits(X_binned, positions, *args,
                                                              MISSING_BIN))
        assert np.all(pos == child)


# (9000 rows: two whole blocks of the kernel's ROUTE_BLOCK = 4096 rows and part of a third)
@pytest.mark.parametrize("n_samples", [0, 1, 2000, 9000])
def test_route_to_leaves_matches_repeated_apply_splits(n_samples):
    rng = np.random.default_rng(n_samples + 3)
    n_features, n_node_ids = 4, 63
    X_binned = np.asfortranarray(rng.integers(0, 41, size=(n_samples, n_features)).astype(np.uint8))
    X_binned[rng.random(X_binned.shape) < 0.1] = MISSING_BIN
    positions = rng.integers(-3, 3, size=n_samples).astype(np.int32)
    d = _decisions(rng, n_node_ids, n_features)
    expected = naive.route_to_leaves(X_binned, positions, missing_bin=MISSING_BIN, **d)
    route_to_leaves(X_binned, positions, d["is_split"], d["split_feature"], d["split_bin"],
                    d["missing_left"], d["category_set"], MISSING_BIN, 2)
    np.testing.assert_array_equal(positions, expected)


# the kernel's ways through a block: a complete tree of numerical splits whose rows all
# start at the root (or outside the tree, at ~0) takes steps without checks; a set split,
# a row elsewhere or a missing split takes the checked steps (9000 rows: three blocks, and
# a row elsewhere only in the last)
@pytest.mark.parametrize("tree", ["complete", "complete, one set split",
                                  "complete but one node", "complete, a row elsewhere"])
def test_route_to_leaves_of_a_complete_tree_matches_repeated_apply_splits(tree):
    rng = np.random.default_rng(11)
    n_samples, n_features, depth = 9000, 4, 5
    X_binned = np.asfortranarray(rng.integers(0, 41, size=(n_samples, n_features)).astype(np.uint8))
    X_binned[rng.random(X_binned.shape) < 0.1] = MISSING_BIN
    d = _decisions(rng, 2 ** (depth + 1) - 1, n_features)
    d["is_split"][:] = 0
    d["is_split"][: 2 ** depth - 1] = 1
    if tree == "complete, one set split":
        d["is_split"][5] = 2
    if tree == "complete but one node":
        d["is_split"][9] = 0
    positions = np.where(rng.random(n_samples) < 0.3, -1, 0).astype(np.int32)
    if tree == "complete, a row elsewhere":
        positions[-1] = 4
    expected = naive.route_to_leaves(X_binned, positions, missing_bin=MISSING_BIN, **d)
    route_to_leaves(X_binned, positions, d["is_split"], d["split_feature"], d["split_bin"],
                    d["missing_left"], d["category_set"], MISSING_BIN, 2)
    np.testing.assert_array_equal(positions, expected)
    reached = np.where(positions < 0, ~positions, positions)
    assert reached.min() >= (2 ** depth - 1 if tree == "complete" else 9)


# a tree whose splits all read one feature: rows from the root look their leaf up by their
# bin (every bin of 0..255 occurs, the missing one too); a row elsewhere sends its block to
# the checked steps
@pytest.mark.parametrize("tree", ["numerical", "some nodes unsplit", "set splits",
                                  "one split", "a row elsewhere"])
def test_route_to_leaves_of_a_one_feature_tree_matches_repeated_apply_splits(tree):
    rng = np.random.default_rng(13)
    n_samples, n_features, depth = 9000, 3, 6
    X_binned = np.asfortranarray(rng.integers(0, 256, size=(n_samples, n_features),
                                              dtype=np.uint8))
    X_binned[:256, 2] = np.arange(256)
    d = _decisions(rng, 2 ** (depth + 1) - 1, n_features)
    d["split_feature"][:] = 2
    # each split cuts its node's interval of bins (as a drawn one-feature tree does)
    low, high = {0: 0}, {0: 254}
    for node in range(2 ** depth - 1):
        cut = int(rng.integers(low[node], max(low[node], high[node] - 1) + 1))
        d["split_bin"][node] = cut
        low[2 * node + 1], high[2 * node + 1] = low[node], cut
        low[2 * node + 2], high[2 * node + 2] = min(cut + 1, 254), high[node]
    d["is_split"][:] = 0
    d["is_split"][: 2 ** depth - 1] = 1
    if tree == "some nodes unsplit":
        d["is_split"][1 + rng.choice(2 ** depth - 2, size=12, replace=False)] = 0
    if tree == "set splits":
        d["is_split"][rng.choice(2 ** depth - 1, size=20, replace=False)] = 2
    if tree == "one split":
        d["is_split"][1:] = 0
    d["split_feature"][d["is_split"] == 0] = 0  # (read by no row)
    positions = np.where(rng.random(n_samples) < 0.3, -1, 0).astype(np.int32)
    if tree == "a row elsewhere":
        positions[5000] = 2
    expected = naive.route_to_leaves(X_binned, positions, missing_bin=MISSING_BIN, **d)
    route_to_leaves(X_binned, positions, d["is_split"], d["split_feature"], d["split_bin"],
                    d["missing_left"], d["category_set"], MISSING_BIN, 2)
    np.testing.assert_array_equal(positions, expected)
    reached = np.where(positions < 0, ~positions, positions)
    assert len(np.unique(reached)) >= (2 if tree == "one split" else 10)


@pytest.mark.parametrize("n_samples", [0, 1, 3000])
def test_node_sums_match_naive_twin_exactly(n_samples):
    rng = np.random.default_rng(n_samples + 5)
    positions = rng.integers(-5, 40, size=n_samples).astype(np.int32)
    gradients = (np.round(rng.normal(size=n_samples) * 2**10) / 2**10).astype(np.float32)
    hessians = rng.random(n_samples).astype(np.float32)
    slot_of_node = np.full(31, -1, dtype=np.int32)
    slot_of_node[[3, 7, 8, 30]] = [0, 1, 2, 3]
    out = np.full((4, 3), np.nan)
    node_sums(positions, gradients, hessians, slot_of_node, out)
    np.testing.assert_array_equal(out, naive.node_sums(positions, gradients, hessians,
                                                       slot_of_node))
