"""One tree while it is grown, level by level: nodes keyed by heap id (root 0, children of
``p`` at ``2p + 1`` and ``2p + 2``), the public split decisions of one level
(:class:`~dpxgb_dask.boosting.tree.LevelSplits`), and the bookkeeping between levels (the
children of the split nodes, their reachable bin ranges, their sums). A grown :class:`Tree`
becomes the model's flat node arrays (:meth:`~dpxgb_dask.model.booster.Booster.append_tree`).
"""
from dataclasses import dataclass

import numpy as np

from .._core import CATEGORY_SET_WORDS, category_set_codes, category_sets
from .._core.tree_layout import lay_out_heap_tree
from ..model.booster import CATEGORY_SET
from ..model.explain import node_covers

#: Node fields of the trees while they are grown (``Tree.to_arrays``): bin thresholds index
#: the cuts the tree was grown with (iterative-Hessian candidates change between trees).
TREE_FIELDS = {
    "feature": np.int32,
    "bin_threshold": np.uint8,
    "threshold": np.float64,
    "categorical": np.uint8,
    "category_set": CATEGORY_SET,
    "missing_left": np.uint8,
    "left": np.int32,
    "right": np.int32,
    "value": np.float64,
    "cover": np.float64,
}


class Tree:
    """One tree while it is grown: nodes keyed by heap id (root 0, children 2p+1, 2p+2).

    Parameters
    ----------
    cuts : list of ndarray of float64
        Cut points of each feature; a split on bin ``t`` of feature ``f`` has the raw
        threshold ``cuts[f][t]``.
    """

    def __init__(self, cuts):
        self._cuts = cuts
        self.splits = {}   # heap id -> (feature, bin_threshold, missing_left, categorical,
        #                               category_set or None)
        self.leaves = {}   # heap id -> leaf value (already multiplied by the learning rate)
        self.covers = {}   # heap id -> leaf cover (leaves.leaf_covers: released, or public)

    def add_split(self, node, feature, bin_threshold, missing_left, categorical=False,
                  category_set=None):
        """Record that heap node ``node`` splits on ``bin <= bin_threshold`` of ``feature``
        (``categorical``: the categories whose codes are in ``category_set``, a bit set of
        ``dpxgb_dask._core.CATEGORY_SET_WORDS`` words, go left; without a set, the
        category ``bin_threshold`` alone)."""
        words = None
        if categorical:
            words = (category_sets([[bin_threshold]])[0] if category_set is None
                     else np.asarray(category_set, dtype=np.uint64).copy())
        self.splits[int(node)] = (int(feature), int(bin_threshold), bool(missing_left),
                                  bool(categorical), words)

    def add_heap_splits(self, is_split, feature, split_bin, missing_left, category_set):
        """Record the splits of heap-indexed decision arrays (the layout of
        :meth:`LevelSplits.as_heap_arrays`; ``is_split`` 1 numerical, 2 categorical)."""
        for node in np.flatnonzero(is_split).tolist():
            categorical = bool(is_split[node] == 2)
            self.add_split(node, feature[node], split_bin[node], missing_left[node],
                           categorical, category_set[node] if categorical else None)

    def add_leaf(self, node, value, cover=1.0):
        """Record that heap node ``node`` is a leaf with output ``value`` and ``cover`` (a
        released denominator, or 1: :func:`~dpxgb_dask.boosting.leaves.leaf_covers`)."""
        self.leaves[int(node)] = float(value)
        self.covers[int(node)] = float(cover)

    def add_leaves(self, nodes, values, covers):
        """:meth:`add_leaf` of each of ``nodes`` with its value and cover."""
        for node, value, cover in zip(nodes, values, covers):
            self.add_leaf(node, value, cover)

    @property
    def n_leaves(self):
        """The number of leaves recorded (int)."""
        return len(self.leaves)

    def scale_leaves(self, factor):
        """Multiply every leaf's value by ``factor`` (the learning rate's schedule)."""
        for node in self.leaves:
            self.leaves[node] *= factor

    def to_arrays(self):
        """Breadth-first flat arrays (children after parents), as ``predict.pyx`` needs.

        A node's children are numbered left first, except a categorical node's: its right
        child (the categories outside the set) first, since XGBoost's format sends a
        categorical node's listed categories right and wants its left child first
        (:mod:`~dpxgb_dask.model.xgboost_json`): node ids are then the same in both
        formats.

        Returns
        -------
        dict of ndarray
            The node fields of ``TREE_FIELDS``, indices local to this tree.
        """
        if 0 not in self.splits and 0 not in self.leaves:
            raise ValueError("a tree needs a root (heap id 0)")
        ids, level = [], [0]
        while level:
            ids.extend(level)
            following = []
            for node in level:
                if node in self.splits:
                    children = [2 * node + 1, 2 * node + 2]
                    if any(c not in self.splits and c not in self.leaves for c in children):
                        raise ValueError(f"split node {node} lacks a child")
                    following.extend(children[::-1] if self.splits[node][3] else children)
            level = following
        index = {node: i for i, node in enumerate(ids)}
        n = len(ids)
        if n != len(set(self.splits) | set(self.leaves)):
            raise ValueError("every node of a tree must be reachable from its root")
        arrays = {name: np.zeros(n, dtype=dtype) for name, dtype in TREE_FIELDS.items()}
        for node, i in index.items():
            if node in self.splits:
                feature, bin_threshold, missing_left, categorical, words = self.splits[node]
                left, right = 2 * node + 1, 2 * node + 2
                arrays["feature"][i] = feature
                arrays["bin_threshold"][i] = bin_threshold
                arrays["categorical"][i] = categorical
                if categorical:
                    arrays["category_set"][i] = words
                    arrays["threshold"][i] = float(category_set_codes(words)[0])
                else:
                    arrays["threshold"][i] = self._cuts[feature][bin_threshold]
                arrays["missing_left"][i] = missing_left
                arrays["left"][i] = index[left]
                arrays["right"][i] = index[right]
            else:
                arrays["left"][i] = arrays["right"][i] = -1
                arrays["value"][i] = self.leaves[node]
                arrays["cover"][i] = self.covers[node]
        arrays["cover"] = node_covers(arrays["left"], arrays["right"], arrays["cover"])
        return arrays


class CutTable:
    """Every feature's cut points in one flat array (public), built once per set of cuts (they
    change only at a refresh): the thresholds of a tree's numerical splits are one lookup.

    Parameters
    ----------
    cuts : list of ndarray of float64
        Cut points of each feature.
    """

    def __init__(self, cuts):
        self.cuts = cuts
        sizes = np.array([len(c) for c in cuts], dtype=np.int64)
        self.values = np.concatenate([np.zeros(0)] + [np.asarray(c, dtype=np.float64)
                                                      for c in cuts])
        self.offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes)[:-1]])


class HeapTree:
    """A tree whose structure came whole, as heap-indexed decision arrays (a random tree:
    :meth:`~dpxgb_dask.boosting.splits.RandomSplits.draw_tree`), and its leaves as one
    release. :meth:`to_arrays` is one kernel call where :class:`Tree`, its slow twin, takes
    a Python step per node; both give the same arrays (the tests compare them).

    Parameters
    ----------
    cuts : CutTable or list of ndarray of float64
        Cut points of each feature.
    heap : tuple of ndarray, or None
        ``(is_split, feature, split_bin, missing_left, category_set)`` by heap id
        (``is_split`` 1 numerical, 2 categorical; the layout of
        :meth:`LevelSplits.as_heap_arrays`); None for a lone leaf.
    """

    def __init__(self, cuts, heap):
        self._cuts = cuts if isinstance(cuts, CutTable) else CutTable(cuts)
        if heap is None or heap[0].size == 0:
            heap = (np.zeros(1, np.uint8), np.zeros(1, np.int32), np.zeros(1, np.uint8),
                    np.zeros(1, np.uint8), np.zeros((1, CATEGORY_SET_WORDS), np.uint64))
        self._heap = heap
        self._leaves = None

    def add_leaves(self, nodes, values, covers):
        """Record the leaves: heap ids ``nodes`` (int64, shape (n_leaves,)) with their
        released ``values`` (:meth:`scale_leaves` applies the learning rate) and
        ``covers`` (float64, shape (n_leaves,))."""
        self._leaves = (np.asarray(nodes, dtype=np.int64),
                        np.asarray(values, dtype=np.float64),
                        np.asarray(covers, dtype=np.float64))

    @property
    def n_leaves(self):
        """The number of leaves recorded (int)."""
        return self._leaves[0].size

    def scale_leaves(self, factor):
        """Multiply every leaf's value by ``factor`` (the learning rate's schedule)."""
        nodes, values, covers = self._leaves
        self._leaves = (nodes, values * factor, covers)

    def to_arrays(self):
        """Breadth-first flat arrays, as :meth:`Tree.to_arrays`, in one kernel call
        (``_core.tree_layout.lay_out_heap_tree``).

        Returns
        -------
        dict of ndarray
            The node fields of ``TREE_FIELDS``, indices local to this tree.

        Raises
        ------
        ValueError
            The leaves are not the heap's leaves (each node reached, none twice).
        """
        n_nodes = 1 + 2 * int(np.count_nonzero(self._heap[0]))
        arrays = {name: np.empty(n_nodes, dtype=dtype) for name, dtype in TREE_FIELDS.items()}
        lay_out_heap_tree(self._heap, self._leaves, self._cuts.values, self._cuts.offsets,
                          arrays)
        return arrays


@dataclass
class LevelSplits:
    """Split decisions of the nodes of one level (public).

    Attributes
    ----------
    nodes : ndarray of int64, shape (n_nodes,)
        Heap ids of the nodes.
    is_split : ndarray of bool, shape (n_nodes,)
    feature : ndarray of int32, shape (n_nodes,)
    bin_threshold : ndarray of int32, shape (n_nodes,)
    missing_left : ndarray of bool, shape (n_nodes,)
    categorical : ndarray of bool, shape (n_nodes,), optional
        The node splits its feature's categories: those of ``category_set`` go left.
    category_set : ndarray of uint64, shape (n_nodes, CATEGORY_SET_WORDS), optional
        The left categories of the categorical nodes (bit sets, ``_core.category_sets``;
        zero elsewhere). ``bin_threshold`` of a categorical node is its smallest left code.
    """

    nodes: np.ndarray
    is_split: np.ndarray
    feature: np.ndarray
    bin_threshold: np.ndarray
    missing_left: np.ndarray
    categorical: np.ndarray = None
    category_set: np.ndarray = None

    def __post_init__(self):
        if self.categorical is not None and self.category_set is None:
            # one category, bin_threshold, against the rest
            self.category_set = category_sets([[t] if c else [] for t, c in
                                               zip(self.bin_threshold, self.categorical)])

    def as_heap_arrays(self):
        """Decision arrays indexed by heap id, the layout of ``partition.apply_splits``:
        ``(is_split, feature, split_bin, missing_left, category_set)`` (``is_split`` 1 for
        a numerical split, 2 for a categorical one)."""
        size = int(self.nodes.max()) + 1 if self.nodes.size else 0
        is_split = np.zeros(size, dtype=np.uint8)
        feature = np.zeros(size, dtype=np.int32)
        split_bin = np.zeros(size, dtype=np.uint8)
        missing_left = np.zeros(size, dtype=np.uint8)
        category_set = np.zeros((size, CATEGORY_SET_WORDS), dtype=np.uint64)
        kind = np.asarray(self.is_split, dtype=np.uint8)
        if self.categorical is not None:
            kind = kind * (1 + np.asarray(self.categorical, dtype=np.uint8))
            category_set[self.nodes] = self.category_set
        is_split[self.nodes] = kind
        feature[self.nodes] = self.feature
        split_bin[self.nodes] = self.bin_threshold
        missing_left[self.nodes] = self.missing_left
        return is_split, feature, split_bin, missing_left, category_set


def level_splits(nodes, is_split, feature, threshold, missing_left, categorical, *,
                 left_codes=None):
    """The :class:`LevelSplits` of chosen candidates; a categorical feature's split is
    categorical, and sends ``left_codes[i]`` left (default: the one category
    ``threshold[i]``).

    Parameters
    ----------
    nodes : ndarray of int64, shape (n_nodes,)
    is_split : ndarray of bool, shape (n_nodes,)
    feature, threshold : ndarray of int, shape (n_nodes,)
    missing_left : ndarray of bool, shape (n_nodes,)
    categorical : ndarray of bool, shape (n_features,) or None
    left_codes : sequence of (list of int or None), optional

    Returns
    -------
    LevelSplits
    """
    if categorical is None:
        return LevelSplits(nodes, is_split, feature, threshold, missing_left & is_split)
    kind = np.asarray(categorical)[feature] & is_split
    if left_codes is None:
        left_codes = [[t] for t in threshold]
    codes = [left_codes[i] if kind[i] else [] for i in range(len(nodes))]
    threshold = np.array([min(c) if c else t for c, t in zip(codes, threshold)],
                         dtype=np.int32)
    return LevelSplits(nodes, is_split, feature, threshold, missing_left & is_split, kind,
                       category_sets(codes))


def children(splits):
    """Heap ids ``2p + 1, 2p + 2`` of the children of the split nodes, in order.

    Returns
    -------
    ndarray of int64, shape (2 * n_split,)
    """
    parents = splits.nodes[splits.is_split].astype(np.int64)
    return np.stack([2 * parents + 1, 2 * parents + 2], axis=1).reshape(-1)


def child_ranges(node_ranges, splits):
    """Reachable bin ranges of the children of the split nodes.

    Returns
    -------
    ndarray of int64, shape (2 * n_split, n_features, 2)
        Ranges of children ``2p+1, 2p+2`` for the split nodes ``p`` in order.
    """
    numerical = np.asarray(splits.is_split, dtype=bool)
    if splits.categorical is not None:  # a category split leaves the bin ranges as they are
        numerical = numerical & ~np.asarray(splits.categorical, dtype=bool)
    split = np.flatnonzero(splits.is_split)
    both = np.repeat(node_ranges[split].astype(np.int64)[:, None], 2, axis=1)
    narrowed = numerical[split]
    f = np.asarray(splits.feature)[split][narrowed]
    t = np.asarray(splits.bin_threshold, dtype=np.int64)[split][narrowed]
    rows = np.flatnonzero(narrowed)
    both[rows, 0, f, 1] = np.minimum(both[rows, 0, f, 1], t)
    both[rows, 1, f, 0] = np.maximum(both[rows, 1, f, 0], t + 1)
    return both.reshape(-1, node_ranges.shape[1], 2)


def node_totals(histograms):
    """Exact (G, H, count) of each node, summed over the bins of its first feature (every
    row lies in one bin of each feature, the missing bin included).

    Parameters
    ----------
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)

    Returns
    -------
    ndarray of float64, shape (n_nodes, 3)
    """
    first = histograms[:, 0, :]
    return np.stack([first["sum_gradients"].sum(axis=1), first["sum_hessians"].sum(axis=1),
                     first["count"].astype(np.float64).sum(axis=1)], axis=1)


def child_totals(histograms, splits):
    """Exact (G, H, count) of the children of the split nodes, from the parents' histograms:
    the left child holds bins ``<= t`` of the split feature (the bins of its left set for a
    categorical split; and the missing bin when missing values go left), the right child
    the rest.

    Parameters
    ----------
    histograms : ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
        Of ``splits.nodes``, in order.
    splits : LevelSplits

    Returns
    -------
    ndarray of float64, shape (2 * n_split, 3)
        Rows in the order of :func:`children`.
    """
    out = []
    for i in np.flatnonzero(splits.is_split):
        column = histograms[i, splits.feature[i]]
        cells = np.stack([column["sum_gradients"], column["sum_hessians"],
                          column["count"].astype(np.float64)], axis=1)
        total = cells.sum(axis=0)
        t = splits.bin_threshold[i]
        if splits.categorical is not None and splits.categorical[i]:
            left = cells[category_set_codes(splits.category_set[i])].sum(axis=0)
        else:
            left = cells[:t + 1].sum(axis=0)
        if splits.missing_left[i]:
            left = left + cells[-1]
        out.extend([left, total - left])
    return np.array(out, dtype=np.float64).reshape(-1, 3)
