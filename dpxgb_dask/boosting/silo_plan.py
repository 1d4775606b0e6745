"""The coordinator's side of a cross-silo fit (:mod:`~dpxgb_dask.boosting.silos`): what
each silo releases with each request, built once per fit, and the fit's ledger, in which
every release is parallel over the disjoint silos."""
import dataclasses
import itertools
import os

import numpy as np

from .plan import FitLedger
from ..partition.messages import SiloRelease
from ..partition.summaries import summary_cuts
from .silos import SiloReleased, field_noise

#: A silo's summary of its sketch keeps this many entries per bin of the fit: the merge of
#: up to 8 silos then adds at most 3 / (8 max_bin) to the rank error, an eighth of a
#: bin's width per level of merging.
SUMMARY_BINS_PER_CUT = 8
#: Row ids of a cross-silo fit's partition ``i`` start at ``i << ROW_ID_BITS``: the keys
#: of the per-row randomness stay distinct without any silo telling its row count.
ROW_ID_BITS = 40


class SiloPlan:
    """A cross-silo fit's releases, built once per fit from its release objects: what each
    silo releases with each request (:class:`~dpxgb_dask.partition.messages.SiloRelease`), and the release objects'
    mechanisms turned into :class:`~dpxgb_dask.boosting.silos.SiloReleased` (the silos add the noise).

    Parameters
    ----------
    n_silos : int
        The workers holding the fit's partitions (public).
    secure : bool
        Secure aggregation: each silo adds a share of the Gaussian noise and masks its
        answer (the releases' ``n_shares``).
    initial_score : InitialScore
    candidates : CandidateReleases
    leaf_method : GaussianLeaves
    hessian_denominators : bool
        The leaves' and the sketch's denominators are hessian sums (else counts).
    """

    def __init__(self, n_silos, secure, initial_score, candidates, leaf_method,
                 hessian_denominators):
        self.n_silos, self.secure = int(n_silos), bool(secure)
        if self.secure:
            check_secure_silos(self.n_silos)
        self._labels = itertools.count()
        denominator = 1 if hessian_denominators else 2
        self._init = self._refresh = None
        if hasattr(initial_score, "mechanism"):
            # the label sum and the count are two releases of Δ = 1 each (the plan's
            # "init" event counts 2): two parts, each charged by a silo's cap; the class
            # counts, one (a row moves one of them by 1)
            self._init = ((field_noise(initial_score.mechanism),)
                          if initial_score.objective.is_multiclass else
                          (field_noise(initial_score.mechanism, 0),
                           field_noise(initial_score.mechanism, 1)))
            initial_score.mechanism = SiloReleased(initial_score.mechanism)
        if hasattr(candidates, "refresh_mechanism"):
            self._refresh = (field_noise(candidates.refresh_mechanism,
                                         "sum_hessians" if hessian_denominators else "count"),)
            candidates.refresh_mechanism = SiloReleased(candidates.refresh_mechanism)
        self._leaf = (field_noise(leaf_method.gradient_mechanism, 0),
                      field_noise(leaf_method.denominator_mechanism, denominator))
        leaf_method.gradient_mechanism = SiloReleased(leaf_method.gradient_mechanism)
        leaf_method.denominator_mechanism = SiloReleased(leaf_method.denominator_mechanism)

    #: The silos draw the leaf noise: the coordinator has none to draw ahead.
    draws_leaf_noise = False

    def fit_ledger(self, plan):
        """The fit's :class:`SiloFitLedger`."""
        return SiloFitLedger(plan, self.n_silos, self.secure)

    async def row_offsets(self, backend):
        """The first row id of each partition (``{index: index << ROW_ID_BITS}``: no silo
        tells its row count); with secure aggregation, the silos agree their keys first."""
        offsets = {i: i << ROW_ID_BITS for i in range(backend.n_partitions)}
        if self.secure:
            await backend.agree_silo_keys(os.urandom(16))  # (a fresh context binds the keys)
        return offsets

    async def reduce_init(self, backend, name, *args):
        """Aggregate ``name`` of the initial score, released by each silo
        (:meth:`init`) and summed."""
        return await backend.reduce_released(name, self.init(), *args)

    async def sketch_cuts(self, backend, candidates, bounds, *, n_sketch_bins, max_bin,
                          weight):
        """DP-XGBoost's sketch (§4.1), distributed: each silo releases its fine histogram
        and answers its summaries, which are merged and pruned here: ``(cuts, ledger
        event)``."""
        mechanism, event = candidates.fit_sketch_release(weight)
        summaries = await backend.reduce_released(
            "fine_histogram", self.sketch(mechanism, bounds, max_bin), bounds, n_sketch_bins,
            weight)
        return summary_cuts(summaries, bounds, max_bin), event

    def _release(self, purpose, tree, fields):
        """A :class:`~dpxgb_dask.partition.messages.SiloRelease`, with a mask label of its own."""
        if not self.secure:
            return SiloRelease(purpose, tree, fields=fields)
        return SiloRelease(purpose, tree, fields=fields, n_shares=self.n_silos,
                           label=next(self._labels))

    def init(self):
        """The :class:`~dpxgb_dask.partition.messages.SiloRelease` of the initial score's label
        sum and count (or class counts)."""
        return self._release("init", -1, self._init)

    def leaf(self, tree):
        """The :class:`~dpxgb_dask.partition.messages.SiloRelease` of tree ``tree``'s leaf
        sums (G, H or count)."""
        return self._release("leaf", tree, self._leaf)

    def sketch(self, mechanism, bounds, max_bin):
        """The :class:`~dpxgb_dask.partition.messages.SiloRelease` of the fit's DP sketch
        (DP-XGBoost §4.1, distributed): each silo releases its fine histogram with
        ``mechanism`` and answers with its summaries of ``SUMMARY_BINS_PER_CUT * max_bin``
        entries, which the coordinator merges and prunes."""
        return SiloRelease("sketch", fields=(field_noise(mechanism),),
                           summary=(np.asarray(bounds, dtype=np.float64),
                                    SUMMARY_BINS_PER_CUT * max_bin))

    def refresh(self, tree):
        """The :class:`~dpxgb_dask.partition.messages.SiloRelease` of tree ``tree``'s
        iterative-Hessian root histogram."""
        return self._release("sketch", tree, self._refresh)


class SiloFitLedger(FitLedger):
    """The ledger of a cross-silo fit, each release recorded as :func:`silo_event_fields`
    describes it.

    Parameters
    ----------
    plan : ReleasePlan
    n_silos : int
    secure : bool
    """

    def __init__(self, plan, n_silos, secure=False):
        super().__init__(plan)
        self.n_silos, self.secure = int(n_silos), bool(secure)

    def record(self, fields):
        """:meth:`~dpxgb_dask.boosting.plan.FitLedger.record` of the release as the silos
        make it."""
        super().record(dict(fields, **silo_event_fields(fields, self.n_silos, self.secure)))


def check_secure_silos(n_silos):
    """Refuse secure aggregation over fewer than 2 silos (the masks need a peer)."""
    if n_silos < 2:
        raise ValueError(f"secure aggregation needs at least 2 silos, the fit has "
                         f"{n_silos}: load its rows on 2 or more workers")


def silo_event_fields(fields, n_silos, secure):
    """How a cross-silo fit's silos change a release's ledger fields.

    With local noise every release is made at each silo on its own rows: it is parallel
    over the disjoint silos (axis ``"silos"``: by parallel composition it costs what the
    central release costs). With secure aggregation a release is the sum's, its noise
    the sum of ``n_silos`` shares (``noise_shares``: the RDP accountant's distributed
    discrete Gaussian; the other accountants certify no finite ε for it).

    Parameters
    ----------
    fields : mapping
        A release's ``Ledger.record`` keyword arguments, or a
        :class:`~dpxgb_dask.privacy.ledger.PrivacyEvent`'s fields.
    n_silos : int
    secure : bool

    Returns
    -------
    dict
        The changed fields.
    """
    if secure:
        return {"noise_shares": int(n_silos)}
    return {"parallel_over": tuple(fields.get("parallel_over", ())) + ("silos",),
            "n_parallel": fields.get("n_parallel", 1) * int(n_silos)}


def planned_silo_events(events, n_silos, secure):
    """A cross-silo fit's planned releases (``ReleasePlan.ledger().events``, which a budget
    reserves) as its silos make them (:func:`silo_event_fields`).

    Parameters
    ----------
    events : sequence of PrivacyEvent
    n_silos : int
    secure : bool

    Returns
    -------
    list of PrivacyEvent
    """
    if secure:
        check_secure_silos(n_silos)
    return [dataclasses.replace(event, **silo_event_fields(
        {"parallel_over": event.parallel_over, "n_parallel": event.n_parallel}, n_silos,
        secure)) for event in events]
