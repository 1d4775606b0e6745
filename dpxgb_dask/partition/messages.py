"""What the coordinator tells a partition: the messages of a fit (public values only:
parameters, releases and their post-processing), and what a silo is asked to release
with a request (:class:`~dpxgb_dask.partition.messages.SiloRelease`: which mechanism each
part of its answer gets).

A worker applies them (:class:`~dpxgb_dask.partition.state.PartitionState`); the
coordinator (:mod:`~dpxgb_dask.boosting.coordinator`) builds them. The codec's type list
holds every one (:data:`~dpxgb_dask.cluster.codec.TYPES`).
"""
from dataclasses import dataclass

import numpy as np

from ..privacy.mechanisms import GaussianMechanism, LaplaceMechanism


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
        under the key is below p (:func:`~dpxgb_dask.partition.rows.held_out`).
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
        :func:`~dpxgb_dask.partition.rows.row_uniforms`); ``hi > 1`` keeps every row.
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
        ``multi:softprob``: (G, H, S) of :func:`~dpxgb_dask.partition.gradients.clip_row_vectors`.
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
        :func:`~dpxgb_dask.partition.aggregates.tree_fine_histogram` of the tree's rows (a
        per-tree DP sketch).
    silo_release : SiloRelease, optional
        A cross-silo fit: each silo releases its sum of the round's answer so
        (:func:`~dpxgb_dask.partition.silo_release.release_at_silo`) before it leaves the silo.
    next_tree_splits : tuple of ndarray, optional
        The decisions of the next data-independent tree, as ``tree_splits``: after its
        answer, the partition routes every row to that tree's leaves
        (:meth:`~dpxgb_dask.partition.state.PartitionState.route_ahead`), and the round
        that starts the tree (with no ``tree_splits``) selects its rows at those leaves.
        The worker routes them after it has answered, while the coordinator releases this
        round's sums: the next round waits only for the rest of its work.
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
    next_tree_splits: tuple = None

    @property
    def returns_sums(self):
        """bool: whether the round answers sums of the rows (histograms, leaf sums or a
        fine histogram: :meth:`~dpxgb_dask.partition.state.PartitionState.run`), not
        None."""
        return any(answer is not None for answer in
                   (self.histogram_nodes, self.leaf_nodes, self.fine_histogram))


#: Parts of one release at most (each takes a mask label of its own).
MAX_FIELDS = 16


@dataclass(frozen=True)
class FieldNoise:
    """The mechanism a silo applies to one part of an aggregate (public).

    Attributes
    ----------
    field : int, str or None
        The part: a column of a 2-D answer (int), a field of a histogram (str), or the
        whole answer (None).
    mechanism : {"gaussian", "laplace"}
    sensitivity : float
        Δ₂ (Gaussian) or Δ₁ (Laplace) of the part under add/remove of one row.
    scale : float
        σ (Gaussian) or ε (Laplace).
    coords_per_row : int
        Entries of the part one row can change (the grid-rounding margin).
    """

    field: object
    mechanism: str
    sensitivity: float
    scale: float
    coords_per_row: int

    def build(self):
        """The :mod:`~dpxgb_dask.privacy.mechanisms` object this describes."""
        if self.mechanism == "gaussian":
            return GaussianMechanism(self.sensitivity, sigma=self.scale,
                                     coords_per_row=self.coords_per_row)
        if self.mechanism == "laplace":
            return LaplaceMechanism(self.sensitivity, self.scale,
                                    coords_per_row=self.coords_per_row)
        raise ValueError(f"mechanism must be 'gaussian' or 'laplace', got {self.mechanism!r}")


@dataclass(frozen=True)
class SiloRelease:
    """What a silo releases of its answer to one request (public).

    Attributes
    ----------
    purpose : str
        The release's name, which keys the silo's noise stream with ``tree`` and ``depth``.
    tree, depth : int
        -1 for fit-level releases.
    fields : tuple of FieldNoise
        Every part of the answer that leaves the silo; the rest is zeroed.
    n_shares : int
        0: local noise (each silo adds the mechanism's noise). With secure aggregation,
        the number of silos, each adding a share of a Gaussian mechanism's noise to its
        integer grid sum and masking the result.
    label : int
        Secure aggregation: the release's number, which keys its masks (never reused).
    summary : tuple (ndarray, int), optional
        Local noise, a fine histogram (DP-XGBoost §4.1 distributed): ``(feature_bounds,
        size)``; the silo answers with the weighted quantile summaries of its release,
        one per feature, pruned to ``size`` entries
        (:func:`~dpxgb_dask.partition.summaries.histogram_summaries`).
    """

    purpose: str
    tree: int = -1
    depth: int = -1
    fields: tuple = ()
    n_shares: int = 0
    label: int = -1
    summary: tuple = None
