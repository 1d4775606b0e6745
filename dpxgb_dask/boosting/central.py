"""Where a central fit's sums become releases: in the coordinator, which adds the plan's
noise to the exact sums the workers answer. A fit's coordinator is given one such site:
this one, or a cross-silo fit's :class:`~dpxgb_dask.boosting.silo_plan.SiloPlan`, whose
silos release their own sums (both a :class:`~dpxgb_dask.boosting.protocol.ReleaseSite`).
"""
import numpy as np

from .plan import FitLedger


class CentralReleases:
    """The coordinator releases every sum itself (a central fit).

    Its requests name no silo release (``leaf`` and ``refresh`` are None), and the leaf
    noise can be drawn before the sums arrive (``draws_leaf_noise``).
    """

    draws_leaf_noise = True

    @staticmethod
    def fit_ledger(plan):
        """The fit's :class:`~dpxgb_dask.boosting.plan.FitLedger`."""
        return FitLedger(plan)

    @staticmethod
    async def row_offsets(backend):
        """The first row of each partition, from the partitions' row counts (exact, kept in
        the coordinator: they key the per-row randomness)."""
        lengths = np.cumsum(await backend.collect("length"))[:-1]
        return dict(enumerate(np.concatenate([[0], lengths]).astype(np.int64).tolist()))

    @staticmethod
    async def reduce_init(backend, name, *args):
        """The exact aggregate ``name`` of the initial score, summed over the partitions."""
        return await backend.reduce(name, *args)

    @staticmethod
    def leaf(tree):
        """No silo release with a tree's leaf sums."""
        return None

    @staticmethod
    def refresh(tree):
        """No silo release with a tree's iterative-Hessian root histogram."""
        return None

    @staticmethod
    async def sketch_cuts(backend, candidates, bounds, *, n_sketch_bins, max_bin, weight):
        """DP-XGBoost's sketch (§4.1) of the exact fine histogram summed over the
        partitions: ``(cuts, ledger event)`` (``max_bin``: the candidates' own)."""
        histogram = await backend.reduce("fine_histogram", bounds, n_sketch_bins, weight)
        return candidates.fit_sketch(histogram, bounds, weight)
