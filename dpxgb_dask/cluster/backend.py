"""The coordinator's way to the partitions on a cluster:
:class:`~dpxgb_dask.cluster.backend.DaskBackend`, which runs in
the scheduler process and reaches the states that live on the workers through the
``dpxgb_call`` handler of :class:`~dpxgb_dask.cluster.worker.DPXGBWorkerPlugin`, over the
scheduler's pooled RPC connections: no task graph, no keys, one request per worker per
round, all workers at once; except a round, which the coordinator sends to two workers
and which travels down a binary tree of the workers while its results are summed up it
(:mod:`~dpxgb_dask.cluster.reduction`), so that the coordinator makes two calls and
receives two partial sums per round whatever the number of workers. It implements
:class:`~dpxgb_dask.boosting.protocol.PartitionBackend`, and recovers from lost workers.
"""
import asyncio
from dataclasses import replace
import time

from ..partition.aggregates import add_results
from ..boosting.silos import combine_silo_answers
from .actions import (Aggregate, Drop, PrepareRows, RestoreRows, RunRound, SiloKey,
                      SiloPeers, Touch)
from .codec import encode, register_error
from .reduction import PeerLost, reduction_order, tree_roots
from .wire import unpack_reply

#: How often a call in flight checks that its worker is still in the cluster.
WORKER_CHECK_SECONDS = 0.25
#: How long a recovery waits for the scheduler to see a failed worker leave.
LEAVE_SECONDS = 10.0


#: Worker losses one fit recovers from before it gives up.
MAX_RECOVERIES = 3


@register_error
class WorkerLost(RuntimeError):
    """A worker that holds partitions of the fit left the cluster during the fit.

    Attributes
    ----------
    address : str
    """

    def __init__(self, message, address=None):
        super().__init__(message)
        self.address = address


class DaskBackend:
    """Partition states on Dask workers, reached from the scheduler process.

    Parameters
    ----------
    scheduler : distributed.Scheduler
        The scheduler this coordinator runs in.
    fit_id : str
    capability : bytes
        The fit's secret; every call carries it (:mod:`~dpxgb_dask.cluster.worker`).
    placement : dict of str -> list of int
        Worker address -> indices of the partitions it holds.
    sources : dict of int -> tuple, optional
        Where a lost partition is rebuilt from
        (:func:`~dpxgb_dask.cluster.client.load_partitions`): ``("replica", address)``,
        or ``("client",)``, rebuilt by ``reload``.
    reload : coroutine function, optional
        ``await reload(index)`` has the fit's client load partition ``index`` again (from
        the graph of its dask inputs) and returns the worker that holds it now.
    silos : bool
        A cross-silo fit (:mod:`~dpxgb_dask.boosting.silos`): each worker is a silo and
        answers the coordinator with its own release, never through another worker; a lost
        silo ends the fit (its rows are never moved).

    Notes
    -----
    Faults: the backend keeps the fit's log (the ``Prepare`` and every ``Round``: public
    messages only). When a worker is lost, each of its partitions is loaded again on a
    live worker (from its replica, or by the client, which re-runs its load task on the
    blocks' graph),
    the log is replayed on it, and the interrupted call is repeated on every partition:
    the others answer a repeated round from their cache, so the exact totals, and hence
    the releases and the model, are the ones of an undisturbed fit, and nothing is
    released twice. A fit that loses every worker at once (a restart) ends with
    :class:`WorkerLost`.
    """

    def __init__(self, scheduler, fit_id, capability, placement, *, sources=None, reload=None,
                 silos=False):
        self._scheduler = scheduler
        self._fit_id = fit_id
        self._capability = capability
        self._placement = {w: sorted(p) for w, p in placement.items() if p}
        self._sources = dict(sources or {})
        self._reload_by_client = reload
        self._prepare = None
        self._rounds = []
        self._pending_round = False
        self.bytes_gathered = 0
        #: calls to workers and the bytes of their payloads (counted, never timed: the
        #: tests guard the messages per tree and per level with them)
        self.worker_calls = 0
        self.bytes_sent = 0
        self.worker_seconds = 0.0
        self.recoveries = 0
        self._reduction_tag = 0   # one per attempt of a round (reduction.py)
        self.silos = bool(silos)

    @property
    def n_partitions(self):
        return sum(len(p) for p in self._placement.values())

    @property
    def n_silos(self):
        """Silos of a cross-silo fit, one per worker holding partitions (0: central)."""
        return len(self._placement) if self.silos else 0

    @property
    def n_rounds(self):
        """Rounds sent since the partitions were prepared (one call to each of the
        reduction tree's two roots; a cross-silo fit's, to each silo)."""
        return len(self._rounds)

    def counts(self):
        """What the fit's messages came to: rounds, calls to workers, bytes sent and
        gathered, the workers' compute seconds (None for silos, which send none), and the
        recoveries from lost workers.

        Returns
        -------
        dict
        """
        return dict(rounds=self.n_rounds, worker_calls=self.worker_calls,
                    bytes_sent=self.bytes_sent, bytes_gathered=self.bytes_gathered,
                    worker_seconds=None if self.silos else self.worker_seconds,
                    recoveries=self.recoveries)

    @property
    def workers(self):
        return sorted(self._placement)

    def _missing(self, addresses):
        """The first of ``addresses`` that left the cluster, or None."""
        workers = self._scheduler.workers
        return next((a for a in addresses if a not in workers), None)

    async def _call(self, address, payload, watched=None):
        """One call to one worker; ``payload`` is its action
        (:mod:`~dpxgb_dask.cluster.actions`), encoded (once for a message that goes to
        every worker); ``watched``: the workers whose loss ends the call (a reduced
        round's: the whole tree; by default ``address``)."""
        watched = (address,) if watched is None else watched
        if address not in self._scheduler.workers:
            raise WorkerLost(f"worker {address} holding partitions "
                             f"{self._placement[address]} of the fit left the cluster",
                             address)
        self.worker_calls += 1
        self.bytes_sent += len(payload)
        call = asyncio.ensure_future(self._scheduler.rpc(address).dpxgb_call(
            fit=self._fit_id, capability=self._capability, payload=payload))
        try:
            while not call.done():
                # A worker that leaves (killed, restarted) is noticed by the scheduler at
                # once, long before a connection attempt to it would time out.
                await asyncio.wait([call], timeout=WORKER_CHECK_SECONDS)
                gone = None if call.done() else self._missing(watched)
                if gone is not None:
                    raise WorkerLost(f"worker {gone} holding partitions "
                                     f"{self._placement[gone]} of the fit was lost: it "
                                     "left the cluster during the fit (killed, or the "
                                     "cluster restarted)", gone)
            reply = call.result()
        except OSError as exc:  # CommClosedError is an OSError
            raise WorkerLost(f"worker {address} holding partitions "
                             f"{self._placement[address]} of the fit was lost: {exc}",
                             address) from None
        finally:
            if not call.done():  # lost, or this call was cancelled with its round
                call.cancel()
        try:
            result = unpack_reply(reply)
        except PeerLost as exc:  # a worker below lost its reduction child
            lost = exc.address
            raise WorkerLost(f"worker {lost} holding partitions "
                             f"{self._placement.get(lost, [])} of the fit was lost: {exc}",
                             lost) from None
        except ConnectionError as exc:
            raise WorkerLost(f"worker {address} holding partitions "
                             f"{self._placement[address]} of the fit was lost: {exc}",
                             address) from None
        except KeyError:
            raise WorkerLost(f"worker {address} no longer holds partitions "
                             f"{self._placement[address]} of the fit (it restarted, or the "
                             "cluster was restarted)", address) from None
        self.bytes_gathered += len(reply["payload"])
        self.worker_seconds += reply.get("seconds", 0.0)  # (a silo sends none)
        return result

    async def _all(self, action, reduced=False):
        """One call of ``action`` (:mod:`~dpxgb_dask.cluster.actions`) to every worker
        holding partitions; worker losses are recovered from (see the class notes) and the
        call repeated. ``reduced`` (a :class:`RunRound`): one call to each of the reduction
        tree's two roots, which pass it down the tree and answer their subtree's sums;
        every worker of the tree is watched, and the first failure cancels the other
        call."""
        for attempt in range(MAX_RECOVERIES + 1):
            if reduced:
                self._reduction_tag += 1
                order = reduction_order(self._placement)
                payload = encode(replace(action, reduction=(self._reduction_tag, order)))
                outcomes = await self._gather(payload, tree_roots(order), order)
            else:
                outcomes = await self._gather(encode(action), self.workers)
            lost = [o for o in outcomes if isinstance(o, WorkerLost)]
            errors = [o for o in outcomes if isinstance(o, BaseException) and o not in lost]
            if errors:
                raise errors[0]
            if not lost:
                return outcomes
            if self.silos:
                raise WorkerLost(f"silo {lost[0].address} left the cluster during the "
                                 "cross-silo fit, which ends: a silo's rows never move to "
                                 "another worker", lost[0].address)
            if attempt == MAX_RECOVERIES:
                raise lost[0]
            await self._recover(lost)

    async def _gather(self, payload, targets, tree=None):
        """The outcomes (results or exceptions) of one call to each of ``targets``; for the
        roots of a reduction ``tree`` (every worker, in heap order), the call still running
        when the other fails is cancelled (its outcome is None: the round is repeated)."""
        calls = [asyncio.ensure_future(self._call(w, payload, tree)) for w in targets]
        if tree is None:
            return await asyncio.gather(*calls, return_exceptions=True)
        try:
            await asyncio.wait(calls, return_when=asyncio.FIRST_EXCEPTION)
        finally:  # also when this round is cancelled: no call outlives it
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
        return [None if c.cancelled() else (c.exception() or c.result()) for c in calls]

    async def _recover(self, lost):
        """Rebuild the partitions of the lost workers on live ones (see the class notes)."""
        gone = {e.address for e in lost}
        deadline = time.monotonic() + LEAVE_SECONDS
        while any(a in self._scheduler.workers for a in gone) and time.monotonic() < deadline:
            await asyncio.sleep(WORKER_CHECK_SECONDS)  # let the scheduler see them leave
        gone = {a for a in self._placement if a not in self._scheduler.workers}
        if not gone:
            raise lost[0]
        if gone == set(self._placement):
            raise WorkerLost(f"every worker holding the fit's partitions left the cluster "
                             f"({sorted(gone)}): was the cluster restarted? The fit "
                             "cannot go on", sorted(gone)[0])
        self.recoveries += 1
        for address in sorted(gone):
            for index in self._placement.pop(address):
                target = await self._reload(index)
                log = self._rounds[:-1] if self._pending_round else self._rounds
                await self._call(target, encode(RestoreRows(index, self._prepare, log)))
                self._placement.setdefault(target, []).append(index)
        for indices in self._placement.values():
            indices.sort()

    async def _reload(self, index):
        """Load partition ``index`` again on a live worker; return that worker."""
        source = self._sources.get(index)
        if source is None:
            raise WorkerLost(f"partition {index} of the fit was lost with its worker and "
                             "has no copy to be rebuilt from (a one-worker cluster)")
        if source[0] == "replica":
            holder = source[1]
            if holder not in self._scheduler.workers:
                raise WorkerLost(f"partition {index} and its replica were both lost", holder)
            return holder
        if self._reload_by_client is None:
            raise WorkerLost(f"partition {index} of the fit was lost with its worker and "
                             "nothing can load it again")
        return await self._reload_by_client(index)

    async def collect(self, name, *args):
        out = {}
        for per_worker in await self._all(Aggregate(name, True, args)):
            out.update(per_worker)
        return [out[i] for i in sorted(out)]

    async def reduce(self, name, *args):
        return add_results(await self._all(Aggregate(name, False, args)))

    async def reduce_released(self, name, release, *args):
        return combine_silo_answers(await self._all(Aggregate(name, False, args, release)),
                                    release)

    async def agree_silo_keys(self, context):
        """Secure aggregation: every silo's fresh public key (signed by its operator's
        identity, if any), relayed with the silos' addresses to every silo, which derives
        its pairwise masks (:mod:`~dpxgb_dask.privacy.secure_sum`); ``context``: bytes
        naming the fit."""
        keys = await self._all(SiloKey())
        await self._all(SiloPeers((self.workers, keys), context))

    async def prepare(self, spec):
        self._prepare, self._rounds = spec, []
        self._pending_round = False
        await self._all(PrepareRows(spec))

    async def round(self, step):
        self._rounds.append(step)
        self._pending_round = True
        try:
            if self.silos:  # every silo answers for itself: no sum passes another silo
                answers = await self._all(RunRound(step))
                return add_results(answers) if step.silo_release is None else \
                    combine_silo_answers(answers, step.silo_release)
            return add_results(await self._all(RunRound(step), reduced=True))
        finally:
            self._pending_round = False

    async def touch(self):
        """Keep the fit's lease on every worker (:data:`~dpxgb_dask.cluster.wire.LEASE_SECONDS`);
        a worker that fails to answer is left to the next real call."""
        await asyncio.gather(*(self._call(w, encode(Touch())) for w in self.workers),
                             return_exceptions=True)

    async def close(self):
        """Drop the fit on every worker it may have touched (also on failure)."""
        workers = list(self._scheduler.workers)
        await asyncio.gather(*(self._drop(w) for w in workers), return_exceptions=True)

    async def _drop(self, address):
        await asyncio.wait_for(
            self._scheduler.rpc(address).dpxgb_call(fit=self._fit_id,
                                                    payload=encode(Drop())),
            WORKER_CHECK_SECONDS * 20)


