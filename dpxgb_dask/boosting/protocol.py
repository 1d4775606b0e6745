"""The interfaces the coordinator is written against: how it reaches the partitions
(:class:`~dpxgb_dask.boosting.protocol.PartitionBackend`, whose messages are
:mod:`~dpxgb_dask.partition.messages`), where its sums become releases
(:class:`~dpxgb_dask.boosting.protocol.ReleaseSite`), and what the scheduler reads of a
fit's run (:class:`~dpxgb_dask.boosting.protocol.FitRun`); and the in-process backend.

Every :class:`PartitionBackend` call is ONE message round to all partitions, whose exact
results come back summed (:func:`~dpxgb_dask.partition.aggregates.add`). :class:`LocalBackend` keeps the
:class:`~dpxgb_dask.partition.state.PartitionState` objects in this process (the tests
check the algorithm with it, without a cluster); the cluster's backend
(:class:`~dpxgb_dask.cluster.backend.DaskBackend`) reaches the states on the workers.
"""
from typing import Protocol


from ..partition.aggregates import add, add_results, aggregate
from ..partition.silo_release import release_at_silo
from ..privacy.randomness import NoiseSource
from ..privacy.secure_sum import SiloKeyPair
from .silos import combine_silo_answers


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
        """Exact aggregate ``name`` (:data:`~dpxgb_dask.partition.aggregates.AGGREGATES`) of
        every partition: a list in partition order."""

    async def reduce(self, name, *args):
        """Exact aggregate ``name`` summed over the partitions."""

    async def reduce_released(self, name, release, *args):
        """Aggregate ``name`` of each silo released at the silo (``release``: a
        :class:`~dpxgb_dask.partition.messages.SiloRelease`), summed over the silos."""

    async def agree_silo_keys(self, context):
        """A cross-silo fit with secure aggregation: each silo's fresh key pair and its
        pairwise masks with the others (:mod:`~dpxgb_dask.privacy.secure_sum`);
        ``context``: bytes naming the fit."""

    async def prepare(self, spec):
        """Bin every partition and set its margins
        (:class:`~dpxgb_dask.partition.messages.Prepare`)."""

    async def round(self, step):
        """Apply ``step`` (:class:`~dpxgb_dask.partition.messages.Round`) to every
        partition; its results summed (or None)."""

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
