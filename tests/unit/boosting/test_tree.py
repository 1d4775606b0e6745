"""A tree's flat arrays (``boosting/tree.py``): a random tree's, built from its heap arrays
in a few array operations per level (``HeapTree``), against the node-by-node ``Tree``,
its slow twin, array for array."""
import numpy as np
import pytest

from dpxgb_dask._core.random_tree import draw_random_tree
from dpxgb_dask.boosting.tree import TREE_FIELDS, HeapTree, Tree


def _random_tree(seed):
    """A random tree's heap arrays and leaves (categorical features among them), its cuts,
    and released values and covers for its leaves."""
    rng = np.random.default_rng(seed)
    n_features = int(rng.integers(1, 6))
    n_cuts = rng.integers(1, 30, size=n_features).astype(np.int64)
    categorical = (rng.random(n_features) < 0.4).astype(np.uint8)
    words = rng.integers(0, 2**64 - 1, size=4000, dtype=np.uint64, endpoint=True)
    _, heap, leaves, _ = draw_random_tree(n_cuts, categorical, -1, int(rng.integers(0, 7)),
                                          np.zeros((0, 0)), words, uniform_share=0.1,
                                          weight_bits=24, keep_ranges=False)
    cuts = [np.sort(rng.normal(size=int(n))) for n in n_cuts]
    values, covers = rng.normal(size=leaves.size), rng.exponential(size=leaves.size)
    return cuts, heap, leaves, values, covers


@pytest.mark.parametrize("seed", range(40))
def test_a_heap_tree_gives_the_arrays_of_its_node_by_node_twin(seed):
    cuts, heap, leaves, values, covers = _random_tree(seed)
    fast = HeapTree(cuts, heap)
    fast.add_leaves(leaves, values, covers)
    slow = Tree(cuts)
    slow.add_heap_splits(*heap)
    slow.add_leaves(leaves, values, covers)
    fast_arrays, slow_arrays = fast.to_arrays(), slow.to_arrays()
    assert set(fast_arrays) == set(slow_arrays) == set(TREE_FIELDS)
    for name in TREE_FIELDS:
        assert fast_arrays[name].dtype == slow_arrays[name].dtype, name
        assert fast_arrays[name].shape == slow_arrays[name].shape, name
        np.testing.assert_array_equal(fast_arrays[name], slow_arrays[name], err_msg=name)


def test_a_lone_leaf_and_leaves_that_are_not_the_trees():
    lone = HeapTree([np.zeros(3)], None)
    lone.add_leaves([0], [0.25], [7.0])
    arrays = lone.to_arrays()
    assert arrays["left"].tolist() == [-1] and arrays["value"].tolist() == [0.25]
    assert arrays["cover"].tolist() == [7.0]
    cuts, heap, leaves, values, covers = _random_tree(3)
    assert leaves.size > 1
    for wrong in (leaves[1:], np.append(leaves, leaves.max() + 100)):
        tree = HeapTree(cuts, heap)
        tree.add_leaves(wrong, np.zeros(wrong.size), np.ones(wrong.size))
        with pytest.raises(ValueError, match="leaves of its splits"):
            tree.to_arrays()


def test_splits_that_are_not_one_tree_from_the_root():
    # node 3 splits, but its parent, node 1, is a leaf: the root never reaches it
    size = 4
    heap = (np.array([1, 0, 0, 1], np.uint8), np.zeros(size, np.int32),
            np.ones(size, np.uint8), np.zeros(size, np.uint8), np.zeros((size, 4), np.uint64))
    tree = HeapTree([np.arange(3.0)], heap)
    tree.add_leaves([1, 2], [0.5, -0.5], [1.0, 2.0])
    with pytest.raises(ValueError, match="not one tree from the root"):
        tree.to_arrays()


def test_a_split_beyond_the_cut_points_is_refused():
    heap = (np.array([1], np.uint8), np.array([0], np.int32), np.array([3], np.uint8),
            np.zeros(1, np.uint8), np.zeros((1, 4), np.uint64))
    tree = HeapTree([np.arange(3.0)], heap)  # bins 0-2 have cut points, bin 3 none
    tree.add_leaves([1, 2], [0.5, -0.5], [1.0, 2.0])
    with pytest.raises(ValueError, match="one of its cut points"):
        tree.to_arrays()
