"""The state of one partition during a fit, on the worker that holds its rows.

Nothing here imports Dask or applies DP noise: these functions compute EXACT quantities
(histograms, sums) from the rows of one partition. Their results stay inside the cluster:
the worker sums them over its partitions, the coordinator sums the workers' totals and
releases only DP-noised versions of them (:mod:`~dpxgb_dask.boosting.coordinator`).

For the length of a fit, each partition's working state is one :class:`PartitionState`,
built once where the rows are (:func:`load_partition`, :meth:`PartitionState.prepare`)
and advanced by one :class:`~dpxgb_dask.partition.messages.Round` per message of the
coordinator: a round may finish the previous tree (its leaf values added to the margins,
reusing the leaf index every row reached while the tree grew), start a tree (subsample,
clipped gradients), re-bin with new cut points, apply the previous level's public split
decisions, and then build the new nodes' histograms or the leaf sums of a whole
data-independent tree. Rounds are numbered; a round replayed with the number of the last
one returns its result without applying it again, so that a round retried after a fault is
idempotent.
"""
from dataclasses import dataclass
import os

import numpy as np

from .._core import empty_histograms, pack_cuts
from .._core.binning import bin_features
from .._core.histogram import build_node_histograms, subtract_histograms
from .._core.partition import apply_splits, route_to_leaves, rows_of_nodes
from .._core.partition import node_sums as node_sums_kernel
from .._core.rows import add_leaf_values, select_tree_rows, select_tree_rows_at_margins
from ..inputs import float_values
from .aggregates import tree_fine_histogram
from .gradients import VALUE_GRID, clip_row_vectors, grid_limits, quantize
from .rows import held_out, row_uniforms


@dataclass
class RawPart:
    """Validated rows of one partition.

    Attributes
    ----------
    X : ndarray of float32 or float64, shape (n_rows, n_features); NaN marks missing values
        (float32 rows are kept as they are: no float64 copy of a partition).
    y : ndarray of float64, shape (n_rows,)
    weights : ndarray of float64, shape (n_rows,), or None
        Each row's weight share in [0, 1] on the value grid (``inputs.weight_shares``);
        None: every row counts fully.
    margins : ndarray of float64, shape (n_rows,) or (n_rows, K), or None
        Each row's base margin (XGBoost's ``base_margin``, label units, in its public
        domain: ``Objective.clip_margins``), where its margins start instead of the base
        score; None: at the base score.
    """

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray | None = None
    margins: np.ndarray | None = None

    @property
    def n_rows(self):
        return self.X.shape[0]


def make_part(X, targets, objective):
    """Validate one partition's rows and targets and convert them to float64.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
    targets : Targets
        The partition's labels, shape (n_rows,), with its rows' weight shares (None: no
        weights) and base margins, shape (n_rows,) or (n_rows, K) (None: the base score).
    objective : Objective

    Returns
    -------
    RawPart

    Raises
    ------
    ValueError
        Naming ``X``, ``y`` or ``base_margin``: lengths differ, non-numeric values, base
        margins of another width than the objective's outputs, or a classification label
        outside its classes (``Objective.labels_in_domain``, unless its rule leaves such
        rows out). Regression labels beyond their bounds are clipped to them, NaN labels
        kept (their rows are left out of the fit's sums), and infinite features kept
        (binned to the ends of their public bounds).
    """
    X = float_values(X, "X")
    y = np.array(float_values(targets.label, "y"), dtype=np.float64, copy=True).reshape(-1)
    weights = margins = None
    if targets.weight is not None:
        shares = np.asarray(float_values(targets.weight, "sample_weight"), dtype=np.float64)
        # on the value grid, rounded down: a share never exceeds 1
        weights = np.floor(np.clip(np.nan_to_num(shares, nan=0.0), 0.0, 1.0) /
                           VALUE_GRID) * VALUE_GRID
    if targets.margin is not None:
        margins = np.asarray(float_values(targets.margin, "base_margin"), dtype=np.float64)
        margins = margins.reshape(len(margins), -1)
        if margins.shape[1] != objective.n_outputs:
            raise ValueError(f"base_margin must have {objective.n_outputs} column(s) per row")
        margins = objective.clip_margins(margins if objective.is_multiclass else margins[:, 0])
    if any(len(v) != len(y) for v in (weights, margins) if v is not None):
        raise ValueError("y, sample_weight and base_margin must have the same number of rows "
                         "in every partition")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    if X.shape[0] != y.shape[0]:
        # No counts in the message: for data that lives only in the cluster they are private.
        raise ValueError("X and y must have the same number of rows in every partition")
    # Values outside the public domain are clipped, never refused (a refusal would tell
    # whether some private row lies outside): ±inf features go to the first or last bin of
    # the public bounds like any value beyond them, regression labels into their bounds.
    # A class label is never moved into another class (Objective.labels_in_domain). A NaN
    # label stays NaN: its row is left out of every sum (as if absent, a neighbouring
    # dataset) but still gets predictions.
    return RawPart(X, objective.labels_in_domain(y), weights, margins)


def kernel_threads(n_threads):
    """The kernels' threads for ``n_threads``: itself, or for -1 every CPU this process may
    run on (``n_jobs=-1``)."""
    if int(n_threads) != -1:
        return int(n_threads)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


def bin_rows(X, feature_bounds, cuts, missing_bin, n_threads=1, out=None):
    """Bin rows, clipped to the public bounds, with the (DP or public) cut points.

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n_rows, n_features)
    feature_bounds : ndarray of float64, shape (n_features, 2)
    cuts : list of ndarray of float64
        At most ``missing_bin - 1`` cuts per feature (so bins ``0..missing_bin - 1``).
    missing_bin : int in [1, 255]
    n_threads : int
    out : ndarray of uint8, shape (n_rows, n_features), Fortran-ordered, optional
        Overwritten with the bins (a re-binning reuses the partition's array rather than
        page in a new one).

    Returns
    -------
    ndarray of uint8, shape (n_rows, n_features), Fortran-ordered
    """
    if max((len(c) for c in cuts), default=0) >= missing_bin:
        raise ValueError(f"at most {missing_bin - 1} cuts per feature fit before the missing "
                         f"bin {missing_bin}")
    for (lo, hi), c in zip(feature_bounds, cuts):
        if len(c) and not (lo < c[0] and c[-1] < hi):
            raise ValueError("cut points must lie strictly inside the feature bounds")
    # Every cut lies strictly inside (lo, hi), so a value below lo gets bin 0 and a value
    # above hi the last bin: binning the raw value is binning it clipped to the bounds,
    # without a clipped copy of the partition.
    values, offsets = pack_cuts(cuts)
    X_binned = np.empty(X.shape, dtype=np.uint8, order="F") if out is None else out
    bin_features(X, values, offsets, missing_bin, X_binned, n_threads)
    return X_binned


class PartitionState:
    """Everything one partition needs during a fit, kept on the worker that holds its rows.

    Parameters
    ----------
    raw : RawPart
    objective : Objective
    index : int
        Partition number in the fit (row order).
    n_threads : int

    Attributes
    ----------
    X_binned : ndarray of uint8, shape (n_rows, n_features), Fortran-ordered
    labels : ndarray of float64, shape (n_rows,)
        Labels on the training scale.
    y : ndarray of float64, shape (n_rows,)
        The labels the trees train on: ``labels``, NaN on held-out rows.
    held_out : ndarray of bool, shape (n_rows,), or None
        The rows a private selection holds out of its trees to score them (once prepared).
    margins, pending : ndarray of float64, shape (n_rows,) or (n_rows, K)
        Margins the gradients are taken at, and margins with the trees of the current
        batch added (the same array when a batch is one tree; a multiclass round is one
        batch).
    positions : ndarray of int32, shape (n_rows,)
        Heap id ``p`` of the node each row of the current tree sits in, ``~p`` for rows
        outside the tree (they are routed too: every row ends in a leaf).
    gradients, hessians : ndarray of float32, shape (n_rows,)
        Clipped, quantised gradients and hessians (0 outside the tree).
    row_filter : RowFilter or None
        The fit's individual Rényi filter.
    filter_spent : ndarray of float64, shape (n_rows,) or None
        Each row's Rényi divergence at the filter's order so far (private: it never
        leaves the worker).
    """

    def __init__(self, raw, objective, index, n_threads=1):
        self.raw = raw
        self.objective = objective
        self.index = int(index)
        self.n_threads = kernel_threads(n_threads)
        self.labels = self.y = objective.scale_labels(raw.y)
        self.held_out = None
        self.row_offset = 0
        self.feature_bounds = None
        self.X_binned = None
        self.missing_bin = None
        self.margins = self.pending = None
        self.positions = self.gradients = self.hessians = None
        self._histograms = self._histogram_nodes = None
        self._class_gradients = None  # multiclass: (in bounds, g, h) at the margins
        #: the current tree's TreeStart: the bounds its gradients were clipped to
        self.tree_spec = None
        #: the next tree's splits sent ahead (Round.next_tree_splits), and once routed
        #: (route_ahead) each row's leaf of it; the buffer is reused tree after tree
        self._ahead = self._ahead_leaves = None
        self._ahead_routed = False
        self.row_filter = self.filter_spent = None
        self._seq = -1
        self._result = None

    @property
    def n_rows(self):
        return self.raw.n_rows

    @property
    def n_bins(self):
        return self.missing_bin + 1

    def prepare(self, spec):
        """Bin the rows and set every margin to the base score.

        Parameters
        ----------
        spec : Prepare
        """
        self.row_offset = int(spec.row_offsets[self.index])
        # a private selection's score rows enter no tree: unlabelled for training
        self.held_out = held_out(spec.holdout, self.row_offset, self.n_rows)
        self.y = np.where(self.held_out, np.nan, self.labels) if spec.holdout else self.labels
        self.feature_bounds = np.asarray(spec.feature_bounds, dtype=np.float64)
        self.missing_bin = int(spec.missing_bin)
        self.X_binned = bin_rows(self.raw.X, self.feature_bounds, spec.cuts, self.missing_bin,
                                 self.n_threads)
        # rows with base margins start there, as XGBoost's (the base score is then 0)
        start = None if self.raw.margins is None else \
            self.objective.training_margins(self.raw.margins)
        if spec.init_model is None:
            base = np.asarray(spec.base_score, dtype=np.float64)
            self.margins = np.empty((self.n_rows,) + base.shape)
            self.margins[...] = base if start is None else start
        else:  # a continued fit starts where its model ended
            self.margins = spec.init_model.predict_margin(self.raw.X, self.n_threads,
                                                          encoded=True, base_margin=start)
        self.pending = self.margins
        self.positions = np.full(self.n_rows, -1, dtype=np.int32)
        self.gradients = np.zeros(self.n_rows, dtype=np.float32)
        self.hessians = np.zeros(self.n_rows, dtype=np.float32)
        self._class_gradients = None
        self.row_filter = spec.row_filter
        self.filter_spent = None if spec.row_filter is None else np.zeros(self.n_rows)
        self._ahead, self._ahead_routed = None, False
        self._seq = -1

    def replay(self, prepare, rounds):
        """Bring a freshly loaded partition to the state of its lost original: prepare it
        and apply every round so far (all deterministic: the same public messages give
        the same state, and exact sums make every later result equal).

        Parameters
        ----------
        prepare : Prepare or None
            None when the fit had not prepared its partitions yet.
        rounds : list of Round
        """
        if prepare is None:
            return
        self.prepare(prepare)
        for step in rounds:
            self.run(step)

    def run(self, step):
        """Apply one :class:`~dpxgb_dask.partition.messages.Round`; return its exact result
        (histograms, sums or None).

        A round with the number of the last one applied returns that round's result again
        without re-applying it (a retry after a fault elsewhere).
        """
        if step.seq == self._seq:
            return self._result
        if step.seq < self._seq:
            raise ValueError(f"round {step.seq} is older than the last round {self._seq}")
        leaves = self._leaves_routed_ahead(step)
        if step.end_tree is not None:
            self._end_tree(step.end_tree)
        if leaves is not None:  # (the finished tree's positions: the next buffer)
            self.positions, self._ahead_leaves = leaves, self.positions
        if step.start_tree is not None:
            self._start_tree(step.start_tree, routed=leaves is not None)
            self.tree_spec = step.start_tree
        if step.rebin_cuts is not None:
            self.X_binned = bin_rows(self.raw.X, self.feature_bounds, step.rebin_cuts,
                                     self.missing_bin, self.n_threads, out=self.X_binned)
            self._histograms = self._histogram_nodes = None
        if step.splits is not None:
            self._apply(step.splits)
        if step.tree_splits is not None:
            is_split, feature, split_bin, missing_left, category_set = step.tree_splits
            route_to_leaves(self.X_binned, self.positions, is_split, feature, split_bin,
                            missing_left, category_set, self.missing_bin, self.n_threads)
        result = None
        if step.histogram_nodes is not None:
            nodes = np.asarray(step.histogram_nodes, dtype=np.int64)
            previous = self._histograms if nodes.size and nodes[0] != 0 else None
            result = level_histograms(self, nodes, previous=previous,
                                      previous_nodes=self._histogram_nodes,
                                      n_threads=self.n_threads)
            self._histograms, self._histogram_nodes = result, nodes
        elif step.leaf_nodes is not None:
            result = node_sums(self, step.leaf_nodes)
        elif step.fine_histogram is not None:
            result = tree_fine_histogram(self, *step.fine_histogram)
        if step.next_tree_splits is not None:
            self._ahead, self._ahead_routed = step.next_tree_splits, False
        self._seq, self._result = step.seq, result
        return result

    def route_ahead(self):
        """Route every row to the leaves of the tree the last round sent ahead
        (``Round.next_tree_splits``), once: the worker calls it after answering that
        round; the next round does, if the worker has not."""
        if self._ahead is None or self._ahead_routed:
            return
        if self._ahead_leaves is None:  # (then the previous tree's positions: run)
            self._ahead_leaves = np.empty(self.n_rows, dtype=np.int32)
        self._ahead_leaves.fill(0)  # every row from the root
        is_split, feature, split_bin, missing_left, category_set = self._ahead
        route_to_leaves(self.X_binned, self._ahead_leaves, is_split, feature, split_bin,
                        missing_left, category_set, self.missing_bin, self.n_threads)
        self._ahead_routed = True

    def _leaves_routed_ahead(self, step):
        """Each row's leaf of the tree ``step`` starts, when the round before sent it ahead
        (routed now if not yet), else None. Such a round starts that tree and no other:
        no ``tree_splits``, no re-binning."""
        if self._ahead is None:
            return None
        if step.start_tree is None or step.tree_splits is not None \
                or step.rebin_cuts is not None:
            raise ValueError("the round after one that sent the next tree ahead "
                             "(next_tree_splits) starts that tree: it needs start_tree, and "
                             "no tree_splits or rebin_cuts")
        self.route_ahead()
        self._ahead = None
        return self._ahead_leaves

    def _apply(self, splits):
        is_split, feature, split_bin, missing_left, category_set = splits
        apply_splits(self.X_binned, self.positions, is_split, feature, split_bin,
                     missing_left, category_set, self.missing_bin, self.n_threads)

    def _start_tree(self, spec, routed=False):
        """Select the tree's rows and compute their clipped, quantised gradients.

        Gradients are taken at ``margins`` (the start of the batch); rows outside the tree
        get position ``~p`` (``~0 = -1`` at the root; ``routed``: the positions hold the
        rows' leaves already) and zero gradient and hessian. With an individual Rényi
        filter, a labelled row pays its divergence in the tree (from its own clipped
        gradient and hessian) if it can afford it, whether or not the Poisson sample then
        picks it (the divergence is the sampled mechanism's), and stays out otherwise.
        """
        if spec.output_class is None and spec.filter_terms is None:
            self._select_rows(spec, routed)
            return
        for rows in _row_chunks(self.n_rows):
            if spec.output_class is None:
                g, h = self._weighted(rows, spec, *self.objective.gradients(
                    self.y[rows], self.margins[rows]))
                within = np.abs(g) <= spec.gradient_bound
                g = quantize(g, spec.gradient_bound)
                h = quantize(h, spec.hessian_bound, lower=0.0)
            else:
                within, g, h = self._class_rows(spec, rows)
            lo, hi = spec.sample_interval
            if lo <= 0.0 and hi > 1.0:
                in_tree = np.ones(g.size, dtype=bool)
            else:
                u = row_uniforms(spec.sample_key, self.row_offset + rows.start, g.size)
                in_tree = (u >= lo) & (u < hi)
            labelled = ~np.isnan(self.y[rows])
            in_tree &= labelled  # unlabelled rows: in no sum
            if spec.gradient_rule == "filter":
                in_tree &= within
            if spec.filter_terms is not None:
                eligible = labelled
                if spec.filter_rounds_left is not None:
                    g, h, affordable = self._paced(rows, labelled, g, h, spec)
                    eligible = labelled & affordable
                denominator = np.ones_like(h) if self.row_filter.counts else h
                in_tree &= self._pay_filter(rows, eligible, g, denominator, spec)
            node = self.positions[rows] if routed else 0
            self.positions[rows] = np.where(in_tree, node, ~node)
            self.gradients[rows] = np.where(in_tree, g, 0.0)
            self.hessians[rows] = np.where(in_tree, h, 0.0)
        self._histograms = self._histogram_nodes = None

    def _select_rows(self, spec, routed):
        """:meth:`_start_tree` of one output without a Rényi filter: the objective's
        gradients, the rows' selection and quantisation in one compiled pass
        (``_core/rows.pyx``; without weights, the gradients too)."""
        lo, hi = spec.sample_interval
        limits = (lo, hi, grid_limits(spec.gradient_bound)[1],
                  grid_limits(spec.hessian_bound, lower=0.0)[1], VALUE_GRID,
                  spec.gradient_rule == "filter", spec.gradient_bound, routed)
        logistic = not self.objective.is_regression
        exp_neg, none = np.empty(min(ROW_CHUNK, self.n_rows) if logistic else 0), np.empty(0)
        for rows in _row_chunks(self.n_rows):
            u = none if lo <= 0.0 and hi > 1.0 else \
                row_uniforms(spec.sample_key, self.row_offset + rows.start, rows.stop - rows.start)
            m, out = self.margins[rows], (self.positions[rows], self.gradients[rows],
                                          self.hessians[rows], 1)
            if self.raw.weights is None:  # the objective's g and h, computed in the pass
                e = exp_neg[:m.shape[0]] if logistic else none
                if logistic:  # (NumPy's SIMD exp: the bits Objective.gradients has)
                    np.exp(np.negative(m, out=e), out=e)
                select_tree_rows_at_margins(m, e, self.y[rows], logistic, u, *limits, *out)
            else:
                g, h = self._weighted(rows, spec, *self.objective.gradients(self.y[rows], m))
                select_tree_rows(g, h, self.y[rows], u, *limits, *out)
        self._histograms = self._histogram_nodes = None

    def _weighted(self, rows, spec, g, h):
        """A chunk's gradients and hessians times its rows' weight shares (in [0, 1], so
        within the same bounds: the clipping and quantisation that follow keep every
        sensitivity), and with count denominators the shares as the hessians (weighted
        counts); unchanged without weights."""
        if self.raw.weights is None:
            return g, h
        share = self.raw.weights[rows]
        if g.ndim == 2:  # one column per class
            share = share[:, None]
        if spec.shares_as_hessians:
            return g * share, np.broadcast_to(share, h.shape).copy()
        return g * share, h * share

    def _paced(self, rows, labelled, g, h, spec):
        """(g, h, affordable) of ``rows``: g and h scaled so that each row spends at most
        what it has left over the rounds left (``RowFilter.pace``), rounded toward zero on
        the value grid; ``affordable`` is False for a row that cannot pay even a zero
        gradient's charge (with counts, the count's) within that share: it sits the
        round out."""
        counts = self.row_filter.counts
        g = np.where(labelled, g, 0.0)
        allowance = (self.row_filter.budget - self.filter_spent[rows]) / spec.filter_rounds_left
        scale = self.row_filter.pace(g, np.ones_like(h) if counts else np.where(labelled, h, 0.0),
                                     spec.filter_terms, spec.filter_worst, allowance)
        g = np.trunc(g * scale / VALUE_GRID) * VALUE_GRID
        if not counts:
            h = np.trunc(h * scale / VALUE_GRID) * VALUE_GRID
        u = np.ones_like(h) if counts else np.where(labelled, h, 0.0)
        affordable = self.row_filter.charges(g, u, spec.filter_terms,
                                             spec.filter_worst) <= allowance
        return g, h, affordable

    def _pay_filter(self, rows, eligible, g, denominator, spec):
        """Charge the eligible rows of ``rows`` (labelled, and when paced within their
        share) that can afford the tree; True for them."""
        charge = self.row_filter.charges(np.where(eligible, g, 0.0),
                                         np.where(eligible, denominator, 0.0),
                                         spec.filter_terms, spec.filter_worst)
        spent = self.filter_spent[rows]
        admitted = eligible & self.row_filter.admit(spent, charge)
        self.filter_spent[rows] = np.where(admitted, spent + charge, spent)
        return admitted

    def _class_rows(self, spec, rows):
        """(within g*, g, h) of one multiclass tree's rows: its class's column of the
        clipped class gradients at the margins (computed once per batch), or the class sums
        of the hessians (``output_class = -1``)."""
        if self._class_gradients is None:
            within = np.empty(self.margins.shape, dtype=bool)
            g_all = np.empty(self.margins.shape, dtype=np.float32)
            h_all = np.empty(self.margins.shape, dtype=np.float32)
            for chunk in _row_chunks(self.n_rows):
                g, h = self._weighted(chunk, spec, *self.objective.gradients(
                    self.y[chunk], self.margins[chunk]))
                within[chunk] = np.abs(g) <= spec.gradient_bound
                g_all[chunk], h_all[chunk] = clip_row_vectors(
                    g, h, spec.gradient_bound, spec.hessian_bound, spec.vector_bounds)
            self._class_gradients = within, g_all, h_all
        within, g_all, h_all = self._class_gradients
        k = spec.output_class
        if k < 0:  # sums of values on the grid: exact
            # (weighted counts: each class's column holds the row's share; a row counts once)
            summed = (h_all[rows, 0].astype(np.float64) if spec.shares_as_hessians
                      else h_all[rows].sum(axis=1, dtype=np.float64))
            return (np.ones(rows.stop - rows.start, dtype=bool),
                    np.zeros(rows.stop - rows.start), summed)
        return within[rows, k], g_all[rows, k], h_all[rows, k]

    def _end_tree(self, end):
        """Add the finished tree's output to every row's margin (the leaf each row reached
        while the tree grew, not a second walk), clip regression margins."""
        if end.splits is not None:
            self._apply(end.splits)
        if self.pending is self.margins and not end.batch_end:
            self.pending = self.margins.copy()
        clip = self.objective.margin_clip
        if end.output_class is None:
            low, high = clip if clip is not None else (0.0, 0.0)
            add_leaf_values(self.positions, np.ascontiguousarray(end.values, dtype=np.float64),
                            self.pending, clip is not None, low, high, self.n_threads)
        else:
            self._add_class_values(end, clip)
        if end.batch_end:
            self.margins = self.pending
            self._class_gradients = None

    def _add_class_values(self, end, clip):
        """:meth:`_end_tree`'s margin update of one class column (multiclass)."""
        for rows in _row_chunks(self.n_rows):
            position = self.positions[rows]
            pending = self.pending[rows, end.output_class]
            pending += end.values[np.where(position >= 0, position, ~position)]
            if clip is not None:
                np.clip(pending, clip[0], clip[1], out=pending)


#: Rows per chunk of the per-tree row updates. Dask's nanny starts workers with
#: MALLOC_TRIM_THRESHOLD_=65536, which pins glibc's mmap threshold at 128 kB: every
#: larger temporary array is a fresh mmap, page-faulted and unmapped again. Chunks of
#: 8192 rows keep the temporaries (at most 64 kB) on the heap: on 500k rows, starting a
#: tree took 64 ms that way (17 ms with the default allocator) and takes 20 ms in chunks.
#: Elementwise NumPy gives the same values chunked or not.
ROW_CHUNK = 8192


def _row_chunks(n_rows):
    return [slice(start, min(start + ROW_CHUNK, n_rows)) for start in range(0, n_rows, ROW_CHUNK)]


def load_partition(X, targets, objective, index, n_threads=1):
    """Validate one partition's rows and make its :class:`PartitionState`.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
    targets : Targets
    objective : Objective
    index : int
    n_threads : int

    Returns
    -------
    PartitionState
    """
    raw = make_part(X, targets, objective)
    return PartitionState(raw, objective, index, n_threads)


def level_histograms(state, nodes, previous=None, previous_nodes=None, n_threads=1):
    """Exact (G, H, count) histograms of the given nodes of one level, on this partition.

    With the previous level's histograms (``previous``, of ``previous_nodes``), the nodes
    must come in sibling pairs ``(2p + 1, 2p + 2)``: only the child with fewer rows (on
    this partition) is built from the rows, and its sibling is the parent's histogram
    minus it (``histogram.subtract_histograms``), which halves the work.

    Parameters
    ----------
    state : PartitionState
        Binned rows and the current tree's positions, gradients and hessians.
    nodes : ndarray of int, shape (n_nodes,)
        Heap ids of the nodes, in the order of the output.
    previous : ndarray of HISTOGRAM_DTYPE, shape (n_previous, n_features, n_bins), optional
    previous_nodes : ndarray of int, shape (n_previous,), optional
        Heap ids of ``previous``; must contain the parent of every node.

    Returns
    -------
    ndarray of HISTOGRAM_DTYPE, shape (n_nodes, n_features, n_bins)
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    n_features = state.X_binned.shape[1]
    out = empty_histograms(nodes.shape[0], n_features, state.n_bins)
    if nodes.size == 0:
        return out
    n_node_ids = int(nodes.max()) + 1
    if previous is None:
        slot_of_node = np.full(n_node_ids, -1, dtype=np.int32)
        slot_of_node[nodes] = np.arange(nodes.shape[0], dtype=np.int32)
        rows, slots = rows_of_nodes(state.positions, slot_of_node)
        build_node_histograms(state.X_binned, state.gradients, state.hessians, rows, slots,
                              out, n_threads)
        return out
    left, right = nodes[0::2], nodes[1::2]
    if nodes.shape[0] % 2 or not (np.all(left % 2 == 1) and np.array_equal(right, left + 1)):
        raise ValueError("nodes must be sibling pairs (2p + 1, 2p + 2)")
    parents = (left - 1) // 2
    where = {int(node): i for i, node in enumerate(previous_nodes)}
    counts = np.bincount(state.positions[state.positions >= 0], minlength=n_node_ids)
    build_left = counts[left] <= counts[right]
    # each pair's smaller child is built in its slot of ``out``, its sibling is the parent
    # minus it: no copies (a structured array copies record by record)
    smaller_slot = np.arange(0, nodes.shape[0], 2) + np.where(build_left, 0, 1)
    slot_of_node = np.full(max(n_node_ids, counts.shape[0]), -1, dtype=np.int32)
    slot_of_node[nodes[smaller_slot]] = smaller_slot
    rows, slots = rows_of_nodes(state.positions, slot_of_node)
    build_node_histograms(state.X_binned, state.gradients, state.hessians, rows, slots, out,
                          n_threads)
    for small, k in zip(smaller_slot.tolist(), [where[p] for p in parents.tolist()]):
        large = small ^ 1  # (the other slot of the pair: 2i <-> 2i + 1)
        subtract_histograms(previous[k:k + 1], out[small:small + 1], out[large:large + 1],
                            n_threads)
    return out


def node_sums(state, nodes):
    """Exact (sum of g, sum of h, count) of the rows at each node.

    Parameters
    ----------
    state : PartitionState
    nodes : ndarray of int, shape (n_nodes,)

    Returns
    -------
    ndarray of float64, shape (n_nodes, 3)
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    out = np.zeros((nodes.shape[0], 3))
    if nodes.size == 0:
        return out
    slot = np.full(int(nodes.max()) + 1, -1, dtype=np.int32)
    slot[nodes] = np.arange(nodes.shape[0], dtype=np.int32)
    node_sums_kernel(state.positions, state.gradients, state.hessians, slot, out)
    return out
