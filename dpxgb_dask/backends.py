"""Where the coordinator's per-partition work runs: one protocol, two implementations.

The coordinator (``coordinator.py``) is written against :class:`PartitionBackend`: a
handful of asynchronous calls, each ONE message round to every partition, whose exact
results are summed over the partitions before they reach the coordinator.

:class:`LocalBackend` keeps the :class:`~dpxgb_dask.ops.PartitionState` objects in this
process (the tests check the algorithm with it, without a cluster). :class:`DaskBackend`
runs in the scheduler process and reaches the states that live on the workers through
the ``dpxgb_call`` handler of :class:`~dpxgb_dask.plugin.DPXGBWorkerPlugin`, over the
scheduler's pooled RPC connections: no task graph, no keys, one request per worker per
round, all workers at once.
"""
import asyncio
import pickle
from typing import Protocol

from . import ops
from .worker import unpack_reply


class PartitionBackend(Protocol):
    """The per-partition work of a fit, as the coordinator sees it."""

    n_partitions: int
    bytes_gathered: int

    async def collect(self, name, *args):
        """Exact aggregate ``name`` (``ops.AGGREGATES``) of every partition: a list in
        partition order."""

    async def reduce(self, name, *args):
        """Exact aggregate ``name`` summed over the partitions."""

    async def prepare(self, spec):
        """Bin every partition and set its margins (``ops.Prepare``)."""

    async def round(self, step):
        """Apply ``step`` (``ops.Round``) to every partition; its results summed (or None)."""

    async def close(self):
        """Drop every partition's state."""


class LocalBackend:
    """Partition states in this process.

    Parameters
    ----------
    states : list of ops.PartitionState
    """

    def __init__(self, states):
        self.states = list(states)
        self.bytes_gathered = 0

    @property
    def n_partitions(self):
        return len(self.states)

    async def collect(self, name, *args):
        return [ops.aggregate(s, name, *args) for s in self.states]

    async def reduce(self, name, *args):
        return ops.add(*await self.collect(name, *args))

    async def prepare(self, spec):
        for s in self.states:
            s.prepare(spec)

    async def round(self, step):
        results = [r for r in (s.run(step) for s in self.states) if r is not None]
        total = ops.add(*results) if results else None
        if total is not None:
            self.bytes_gathered += total.nbytes
        return total

    async def close(self):
        self.states = []


#: How often a call in flight checks that its worker is still in the cluster.
WORKER_CHECK_SECONDS = 0.25


class WorkerLost(RuntimeError):
    """A worker that holds partitions of the fit left the cluster during the fit."""


class DaskBackend:
    """Partition states on Dask workers, reached from the scheduler process.

    Parameters
    ----------
    scheduler : distributed.Scheduler
        The scheduler this coordinator runs in.
    fit_id : str
    capability : bytes
        The fit's secret; every call carries it (see ``worker.py``).
    placement : dict of str -> list of int
        Worker address -> indices of the partitions it holds.
    """

    def __init__(self, scheduler, fit_id, capability, placement):
        self._scheduler = scheduler
        self._fit_id = fit_id
        self._capability = capability
        self._placement = {w: sorted(p) for w, p in placement.items() if p}
        self.bytes_gathered = 0
        self.worker_seconds = 0.0

    @property
    def n_partitions(self):
        return sum(len(p) for p in self._placement.values())

    @property
    def workers(self):
        return sorted(self._placement)

    async def _call(self, address, action, args):
        if address not in self._scheduler.workers:
            raise WorkerLost(f"worker {address} holding partitions "
                             f"{self._placement[address]} of the fit left the cluster")
        call = asyncio.ensure_future(self._scheduler.rpc(address).dpxgb_call(
            fit=self._fit_id, capability=self._capability, action=action,
            payload=pickle.dumps(args, protocol=5)))
        try:
            while not call.done():
                # A worker that leaves (killed, restarted) is noticed by the scheduler at
                # once, long before a connection attempt to it would time out.
                await asyncio.wait([call], timeout=WORKER_CHECK_SECONDS)
                if not call.done() and address not in self._scheduler.workers:
                    call.cancel()
                    raise WorkerLost(f"worker {address} holding partitions "
                                     f"{self._placement[address]} of the fit left the "
                                     "cluster during the fit")
            reply = call.result()
        except OSError as exc:  # CommClosedError is an OSError
            raise WorkerLost(f"worker {address} holding partitions "
                             f"{self._placement[address]} of the fit was lost: {exc}") from None
        try:
            result = unpack_reply(reply)
        except KeyError:
            raise WorkerLost(f"worker {address} no longer holds partitions "
                             f"{self._placement[address]} of the fit (it restarted, or the "
                             "cluster was restarted)") from None
        self.bytes_gathered += len(reply["payload"])
        self.worker_seconds += reply["seconds"]
        return result

    async def _all(self, action, args):
        return await asyncio.gather(*(self._call(w, action, args) for w in self.workers))

    async def collect(self, name, *args):
        out = {}
        for per_worker in await self._all("aggregate", (name, True, args)):
            out.update(per_worker)
        return [out[i] for i in sorted(out)]

    async def reduce(self, name, *args):
        return _sum(await self._all("aggregate", (name, False, args)))

    async def prepare(self, spec):
        await self._all("prepare", spec)

    async def round(self, step):
        return _sum(await self._all("round", step))

    async def touch(self):
        """Keep the fit's lease on every worker (``worker.LEASE_SECONDS``)."""
        await self._all("touch", None)

    async def close(self):
        """Drop the fit on every worker it may have touched (also on failure)."""
        workers = list(self._scheduler.workers)
        await asyncio.gather(*(self._drop(w) for w in workers), return_exceptions=True)

    async def _drop(self, address):
        await asyncio.wait_for(
            self._scheduler.rpc(address).dpxgb_call(fit=self._fit_id, action="drop"),
            WORKER_CHECK_SECONDS * 20)


def _sum(results):
    results = [r for r in results if r is not None]
    return ops.add(*results) if results else None
