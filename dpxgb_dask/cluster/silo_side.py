"""On a worker: a silo's side of one fit, kept with the fit's partitions by the worker's
registry (:mod:`~dpxgb_dask.cluster.worker`). Its secret noise source, drawn here and never
sent; its key pair and pairwise masks for secure aggregation, agreed once per fit with the
peers its operator configured; its operator's cap on what it releases; and, once the
worker holds the silo's own rows, the policy that it answers nothing but silo releases of
them (:meth:`SiloSide.check_call`).
"""
from ..partition.aggregates import SILO_AGGREGATES
from ..partition.silo_release import release_at_silo
from ..privacy.randomness import NoiseSource
from ..privacy.secure_sum import SiloKeyPair
from ..privacy.silo_identity import SignedKey, authenticated_keys
from .actions import Aggregate, LoadRows, RestoreRows, RunRound
from .silo_config import configured_peers, silo_identity


class SiloSide:
    """One fit's silo side on this worker (see the module docstring).

    Attributes
    ----------
    own_rows : bool
        Set by a silo's own load (``LoadSiloRows``), before its rows are read and for the
        fit's life: from then on the worker answers only silo releases.
    budget : SiloBudget or None
        The silo operator's cap (:func:`~dpxgb_dask.cluster.silo_config.silo_budget`).
    key_pair : SiloKeyPair or None
        Fresh per fit, made once (:meth:`key`), never leaves the worker.
    masks : object or None
        The pairwise masks derived from every silo's key (:meth:`peers`).
    last_round : int
        A silo's last round: a round number is never run twice on its own rows.
    """

    def __init__(self):
        self._noise = None
        self.key_pair = self.masks = None
        self.own_rows = False
        self.budget = None
        self.last_round = -1

    def noise(self):
        """This worker's secret noise source for the fit, as a silo of a cross-silo fit
        (:mod:`~dpxgb_dask.boosting.silos`): drawn here, never sent anywhere."""
        if self._noise is None:
            self._noise = NoiseSource()
        return self._noise

    def key(self, fit_id):
        """This silo's public key for the fit's secure aggregation, a
        :class:`~dpxgb_dask.privacy.silo_identity.SignedKey` (its key pair, fresh per fit and
        made once, never leaves the worker), signed for ``fit_id`` by the silo's identity
        if its operator gave it one (``dpxgb.silo.identity``)."""
        if self.key_pair is not None:
            raise PermissionError("silo_key is made once per fit: this silo has its key")
        identity = silo_identity()
        self.key_pair = SiloKeyPair()
        if identity is None:
            return SignedKey(self.key_pair.public_bytes)
        return identity.sign(self.key_pair.public_bytes, fit_id.encode())

    def peers(self, worker_address, fit_id, roster, context):
        """Derive this silo's pairwise masks
        (:meth:`~dpxgb_dask.privacy.secure_sum.SiloKeyPair.masks`) from every silo's key.

        ``roster``: (addresses, signed keys) of every silo, in silo order, as the
        coordinator relays them. With peers configured by its operator
        (``dpxgb.silo.peers``,
        :func:`~dpxgb_dask.cluster.silo_config.configured_peers`) the silo takes part only
        if every other key is signed by one of them, each once, at the address its operator gave
        (:func:`~dpxgb_dask.privacy.silo_identity.authenticated_keys`): a caller who added
        silos whose keys it holds, or stood in for a peer, could unmask this silo's value
        with only its share of the noise (σ/√n of n shares). Without, it uses the keys
        it is given (the coordinator is trusted with them)."""
        addresses, signed_keys = (list(part) for part in roster)
        if worker_address not in addresses or len(signed_keys) != len(addresses):
            raise ValueError(f"the roster must list this silo's worker {worker_address} and "
                             f"one key per address; got {len(addresses)} addresses and "
                             f"{len(signed_keys)} keys")
        if self.key_pair is None:
            raise ValueError("silo_peers needs this silo's key: call silo_key first")
        if self.masks is not None:  # (new masks would use their labels again)
            raise PermissionError("silo_peers is agreed once per fit: this silo has its "
                                  "masks")
        own = addresses.index(worker_address)
        peers = configured_peers()
        if peers is None:
            public_keys = [key.public_key for key in signed_keys]
        else:
            public_keys = authenticated_keys(signed_keys, own, silo_identity(), list(peers),
                                             fit_id.encode())
            for j, (address, key) in enumerate(zip(addresses, signed_keys)):
                expected = peers.get(key.identity)
                if expected is not None and expected != address:
                    raise PermissionError(f"this silo's operator places the peer of the "
                                          f"key at position {j} at {expected}; the fit "
                                          f"names {address}")
        self.masks = self.key_pair.masks(own, public_keys, context)

    def release(self, total, release, floors=None):
        """This worker's release of its sums ``total`` as a silo
        (:func:`~dpxgb_dask.partition.silo_release.release_at_silo`), counted first against the
        silo operator's cap, if any (:class:`~dpxgb_dask.privacy.silo_budget.SiloBudget`).

        ``floors``: a part's field -> (Δ₂, Δ₁) one row can change of it, derived by the
        silo itself (:func:`~dpxgb_dask.partition.aggregates.silo_sensitivity_floors`); a
        part named with a smaller sensitivity is refused, before any charge: its noise
        would be scaled to the caller's word, not to what the silo computed."""
        if floors is not None:
            for part in release.fields:
                floor = floors(part.field)[0 if part.mechanism == "gaussian" else 1]
                if not part.sensitivity >= floor * (1.0 - 1e-12):
                    raise PermissionError(
                        f"this silo's {release.purpose!r} release can change by "
                        f"{floor:.6g} with one row ({part.mechanism}); the request names "
                        f"sensitivity {part.sensitivity:.6g}, which this silo refuses")
        if self.budget is not None:
            self.budget.charge(part.build() for part in release.fields)
        return release_at_silo(total, release, self.noise(), self.masks)

    def refuse_rows_from_elsewhere(self, what):
        """On a silo's own rows, refuse ``what`` (a load or a restore: rows not the silo's).
        Call it under the fit's lock."""
        if self.own_rows:
            raise PermissionError(f"action {what} is refused on a silo's own rows: a silo's "
                                  "partitions are loaded by the silo and never copied")

    def check_call(self, action):
        """Refuse, on a silo's own rows, every call that could answer more than a silo
        release (:func:`~dpxgb_dask.partition.silo_release.release_at_silo`): rows from
        elsewhere (:class:`~dpxgb_dask.cluster.actions.LoadRows`,
        :class:`~dpxgb_dask.cluster.actions.RestoreRows`), aggregates asked per partition or
        without a release, rounds that answer sums without one, and a round number run
        before (a partition answers it again from its last result: ``PartitionState.run``).
        Call it under the fit's lock, before the call runs."""
        if not self.own_rows:
            return
        if isinstance(action, (LoadRows, RestoreRows)):
            self.refuse_rows_from_elsewhere(type(action).__name__)
        if isinstance(action, Aggregate):
            if action.per_partition or action.release is None:
                raise PermissionError("an aggregate of a silo's rows must be a silo release "
                                      "of their sum (not per partition, not exact)")
            if action.name not in SILO_AGGREGATES:
                raise PermissionError(f"a silo releases only the aggregates "
                                      f"{list(SILO_AGGREGATES)}, whose sensitivity it "
                                      f"derives itself; not {action.name!r}")
        if isinstance(action, RunRound):
            step = action.step
            if step.returns_sums and step.silo_release is None:
                raise PermissionError("a round's sums of a silo's rows must be a silo "
                                      "release (the step names none)")
            if step.seq <= self.last_round:
                raise PermissionError(f"round {step.seq} is refused on a silo's own rows: "
                                      f"round {self.last_round} ran, and a silo never "
                                      "runs a round again")
            self.last_round = step.seq
