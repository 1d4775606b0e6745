"""What the coordinator and the partitions say to each other: the messages of a fit, the
sum that reduces the partitions' results, and the backend protocol the coordinator is
written against.

Every :class:`PartitionBackend` call is ONE message round to all partitions, whose exact
results come back summed (:func:`~dpxgb_dask.boosting.aggregates.add`). :class:`LocalBackend` keeps the
:class:`~dpxgb_dask.boosting.partition.PartitionState` objects in this process (the tests
check the algorithm with it, without a cluster); the cluster's backend
(:class:`~dpxgb_dask.cluster.backend.DaskBackend`) reaches the states on the workers. The
messages hold public values only: parameters, releases and their post-processing.
"""
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..privacy.randomness import NoiseSource
from ..privacy.secure_sum import SiloKeyPair
from .aggregates import add, add_results, aggregate  # noqa: F401 (the reduction step)
from .silos import combine_silo_answers, release_at_silo


@dataclass(frozen=True)
class Prepare:
    """Public inputs that turn a loaded partition into a training state.

    Attributes
    ----------
    feature_bounds : ndarray of float64, shape (n_features, 2)
    cuts : list of ndarray of float64
    missing_bin : int
    base_score : float or ndarray of float64 of shape (K,)
        Initial margin(s) of every row (public or a DP release).
    row_offsets : dict of int -> int
        Global index of the first row of each partition (keys of the per-row randomness).
    init_model : Booster, optional
        A trained model the fit continues, on the training scale (public): every row starts
        at its ``predict_margin`` instead of ``base_score``.
    row_filter : RowFilter, optional
        The fit's individual Rényi filter (``privacy.filter``): every row's divergence so
        far starts at 0.
    holdout : (int, float), optional
        A private selection's held-out rows (``boosting.selection``): the secret 128-bit
        key and fraction p; row ``i`` is held out of every tree when its uniform number
        under the key is below p (:func:`~dpxgb_dask.boosting.sampling.held_out`).
    """

    feature_bounds: np.ndarray
    cuts: list
    missing_bin: int
    base_score: float
    row_offsets: dict
    init_model: object = None
    row_filter: object = None
    holdout: tuple = None


@dataclass(frozen=True)
class TreeStart:
    """Which rows enter a tree, and how their gradients are bounded (public).

    Attributes
    ----------
    sample_key : int
        256-bit key of the tree's (or ensemble's) row selection.
    sample_interval : tuple (lo, hi)
        Row ``i`` joins when its uniform number is in ``[lo, hi)`` (see
        :func:`~dpxgb_dask.boosting.sampling.row_uniforms`); ``hi > 1`` keeps every row.
    gradient_bound : float
        g*: gradients are clipped to [-g*, g*] ("clip") or rows beyond it leave the tree
        ("filter", DPBoost's gradient data filtering).
    gradient_rule : {"clip", "filter"}
    hessian_bound : float
        Hessians are clipped to [0, hessian_bound] (1 for row counts).
    shares_as_hessians : bool
        A weighted fit with count denominators: each row's hessian is its weight share
        (the released counts are weighted).
    output_class : int, optional
        ``multi:softprob``: the class k whose gradients the tree fits, or -1 for the
        class-summed hessians of a round's iterative-Hessian sketch (zero gradients).
    vector_bounds : tuple of float, optional
        ``multi:softprob``: (G, H, S) of :func:`~dpxgb_dask.boosting.gradients.clip_row_vectors`.
    filter_terms : tuple of FilterTerm, optional
        With an individual Rényi filter: the tree's Gaussian mechanisms, from which each
        row's divergence in the tree follows (``RowFilter.charges``).
    filter_worst : float, optional
        The tree's worst-case divergence (no row is charged more).
    filter_rounds_left : int, optional
        Set in the extra rounds of a filter that paces (``filter_spending="pace"``): this
        round and the ones after it; a row scales its gradient and hessian down to spend
        at most what it has left over them.
    """

    sample_key: int
    sample_interval: tuple
    gradient_bound: float
    gradient_rule: str
    hessian_bound: float
    output_class: int = None
    vector_bounds: tuple = None
    filter_terms: tuple = None
    filter_worst: float = None
    filter_rounds_left: int = None
    shares_as_hessians: bool = False


@dataclass(frozen=True)
class TreeEnd:
    """A finished tree, applied to the margins of every row (public).

    Attributes
    ----------
    splits : tuple of ndarray or None
        The last level's decisions (heap-indexed, see ``LevelSplits.as_heap_arrays``),
        not yet applied to the rows; None when the rows already sit in their leaves.
    values : ndarray of float64, shape (n_node_ids,)
        Output of each leaf by heap id (learning rate included).
    batch_end : bool
        The tree closes a batch: the margins take the accumulated outputs.
    output_class : int, optional
        ``multi:softprob``: the class whose margins the tree adds to.
    """

    splits: tuple
    values: np.ndarray
    batch_end: bool = True
    output_class: int = None


@dataclass(frozen=True)
class Round:
    """One message of the coordinator to every partition, applied in field order.

    Attributes
    ----------
    seq : int
        Round number (increasing within a fit).
    end_tree : TreeEnd, optional
    start_tree : TreeStart, optional
    rebin_cuts : list of ndarray, optional
        New cut points (iterative-Hessian candidates): re-bin the raw rows.
    splits : tuple of ndarray, optional
        The previous level's decisions of the current tree.
    histogram_nodes : ndarray of int64, optional
        Return the (G, H, count) histograms of these nodes (sibling pairs after the root:
        the smaller child is built, its sibling is the parent's minus it).
    tree_splits : tuple of ndarray, optional
        The decisions of a whole data-independent tree, heap-indexed
        (:meth:`~dpxgb_dask.boosting.splits.RandomSplits.draw_tree`): route the rows to
        its leaves.
    leaf_nodes : ndarray of int64, optional
        Return the (G, H, count) sums of these nodes.
    fine_histogram : tuple (int, bool), optional
        ``(n_fine_bins, by_hessian)``: return
        :func:`~dpxgb_dask.boosting.aggregates.tree_fine_histogram` of the tree's rows (a
        per-tree DP sketch).
    silo_release : SiloRelease, optional
        A cross-silo fit: each silo releases its sum of the round's answer so
        (:func:`~dpxgb_dask.boosting.silos.release_at_silo`) before it leaves the silo.
    """

    seq: int
    end_tree: TreeEnd = None
    start_tree: TreeStart = None
    rebin_cuts: list = None
    splits: tuple = None
    histogram_nodes: np.ndarray = None
    tree_splits: tuple = None
    leaf_nodes: np.ndarray = None
    fine_histogram: tuple = None
    silo_release: object = None

    @property
    def returns_sums(self):
        """bool: whether the round answers sums of the rows (histograms, leaf sums or a
        fine histogram: :meth:`~dpxgb_dask.boosting.partition.PartitionState.run`), not
        None."""
        return any(answer is not None for answer in
                   (self.histogram_nodes, self.leaf_nodes, self.fine_histogram))


class FitRun(Protocol):
    """One fit as the scheduler (or ``train_in_process``) runs it: a
    :class:`~dpxgb_dask.boosting.coordinator.Coordinator`, or a private selection's
    :class:`~dpxgb_dask.boosting.selection.Selection` of several.

    Attributes
    ----------
    ledger : Ledger
        What it released (a selection: its plan, charged in full).
    warnings : list of (warning class, message)
    scores, score_estimates : list of dict
        Its private evaluation sets' DP scores (empty for a selection).
    timings : dict
    """

    ledger: object
    warnings: list
    scores: list
    score_estimates: list
    timings: dict

    async def fit(self):
        """Grow the model; return its :class:`~dpxgb_dask.model.booster.Booster`."""

    def unpublished_releases(self):
        """The ledger's events not yet sent with a progress event, as dicts."""


class ReleaseSite(Protocol):
    """Where a fit's sums become DP releases, which the coordinator is given once per fit:
    in the coordinator (:class:`~dpxgb_dask.boosting.central.CentralReleases`), or at
    each silo of a cross-silo fit (:class:`~dpxgb_dask.boosting.silo_plan.SiloPlan`).

    Attributes
    ----------
    draws_leaf_noise : bool
        Whether the coordinator draws the leaf noise (ahead of the sums).
    """

    draws_leaf_noise: bool

    def fit_ledger(self, plan):
        """The fit's ledger of releases (:class:`~dpxgb_dask.boosting.plan.FitLedger`)."""

    async def row_offsets(self, backend):
        """``{partition index: its first row id}``, which key the per-row randomness."""

    async def reduce_init(self, backend, name, *args):
        """Aggregate ``name`` of the initial score, summed (released at the silos, or
        exact for the coordinator's own release)."""

    def leaf(self, tree):
        """The silo release a tree's leaf round names (None: released here)."""

    def refresh(self, tree):
        """The silo release an iterative-Hessian refresh round names (None: here)."""

    async def sketch_cuts(self, backend, candidates, bounds, *, n_sketch_bins, max_bin,
                          weight):
        """The DP sketch's cuts and its ledger event."""


class PartitionBackend(Protocol):
    """The per-partition work of a fit, as the coordinator sees it."""

    n_partitions: int
    bytes_gathered: int
    #: Silos of a cross-silo fit, each releasing its own sums (0: a central fit).
    n_silos: int

    async def collect(self, name, *args):
        """Exact aggregate ``name`` (:data:`~dpxgb_dask.boosting.aggregates.AGGREGATES`) of
        every partition: a list in partition order."""

    async def reduce(self, name, *args):
        """Exact aggregate ``name`` summed over the partitions."""

    async def reduce_released(self, name, release, *args):
        """Aggregate ``name`` of each silo released at the silo (``release``: a
        :class:`~dpxgb_dask.boosting.silos.SiloRelease`), summed over the silos."""

    async def agree_silo_keys(self, context):
        """A cross-silo fit with secure aggregation: each silo's fresh key pair and its
        pairwise masks with the others (:mod:`~dpxgb_dask.privacy.secure_sum`);
        ``context``: bytes naming the fit."""

    async def prepare(self, spec):
        """Bin every partition and set its margins (:class:`Prepare`)."""

    async def round(self, step):
        """Apply ``step`` (:class:`Round`) to every partition; its results summed (or None)."""

    async def close(self):
        """Drop every partition's state."""


class LocalBackend:
    """Partition states in this process.

    Parameters
    ----------
    states : list of PartitionState
    silos : list of list of int, optional
        A cross-silo fit: the states of each silo (by index in ``states``); each silo
        releases its own sums with noise from a secret source of its own.
    """

    def __init__(self, states, silos=None):
        self.states = list(states)
        self.bytes_gathered = 0
        self.silos = None if silos is None else [list(s) for s in silos]
        self._silo_noise = None if silos is None else [NoiseSource() for _ in self.silos]
        self._silo_masks = [None] * self.n_silos

    @property
    def n_partitions(self):
        return len(self.states)

    @property
    def n_silos(self):
        """Silos of a cross-silo fit (0: a central fit)."""
        return len(self.silos) if self.silos else 0

    async def collect(self, name, *args):
        return [aggregate(s, name, *args) for s in self.states]

    async def reduce(self, name, *args):
        return add(*await self.collect(name, *args))

    async def prepare(self, spec):
        for s in self.states:
            s.prepare(spec)

    async def agree_silo_keys(self, context):
        """Secure aggregation: each silo's fresh key pair, and its pairwise masks with the
        others (:class:`~dpxgb_dask.privacy.secure_sum.SiloKeyPair`); ``context``: bytes
        naming the fit."""
        pairs = [SiloKeyPair() for _ in self.silos]
        keys = [pair.public_bytes for pair in pairs]
        self._silo_masks = [pair.masks(i, keys, context) for i, pair in enumerate(pairs)]

    def _released(self, results, release):
        """Each silo's release of its partitions' ``results``, combined."""
        return combine_silo_answers(
            [release_at_silo(add_results([results[i] for i in silo]), release, source, masks)
             for silo, source, masks in zip(self.silos, self._silo_noise, self._silo_masks)],
            release)

    async def reduce_released(self, name, release, *args):
        return self._released(await self.collect(name, *args), release)

    async def round(self, step):
        results = [s.run(step) for s in self.states]
        if step.silo_release is not None:
            results = [self._released(results, step.silo_release)]
        total = add_results(results)
        if total is not None:
            self.bytes_gathered += total.nbytes
        return total

    async def close(self):
        self.states = []
