"""A round cast down and its results summed up a binary tree of the workers, whose root is
the coordinator: the coordinator sends each round to two workers and receives two partial
sums, whatever the number of workers.

The coordinator puts the workers of a fit in order (:func:`reduction_order`: the workers
holding the most partitions first) and sends the round, with that order and an attempt
tag, to the first two. In the binary heap whose position 0 is the coordinator, the worker
at index ``i`` sits at position ``i + 1``. A worker that receives the round passes the
same bytes on to its children (positions ``2i + 3`` and ``2i + 4``) before it computes its
own partitions' sum, then adds the sums its children answer and answers the total of its
subtree to its parent: the call down the tree and the sum up it are one call per edge. A
level's message therefore crosses the network once per worker and its histograms once per
worker, and the coordinator's work per level (two calls, two sums) does not grow with the
number of workers, as in the tree reductions of xgboost (rabit's allreduce) and LightGBM.
The coordinator keeps two children, not one, because a hop between workers costs about as
much as a reply to it.

The partial sums are exact aggregates of the fit's rows; they move only between the
workers that hold those rows, under the fit's capability (each worker checks it, as for
every call), and are dropped as soon as they are added.

Faults: a worker whose child cannot be reached, or answers that it no longer holds the
fit, answers :class:`PeerLost` naming the child, and the coordinator treats that as the
loss of that worker (:mod:`~dpxgb_dask.cluster.backend` also watches every worker of the
tree while it waits, recovers the lost worker's partitions and repeats the round with a
new attempt tag); any other error a child answers is the worker's answer. A worker waits
for its children as long as it takes them (a large partition may be slow): it gives up
when a newer attempt of the fit reaches it (the coordinator saw a loss and repeats the
round), when the fit is dropped, or when the fit's lease expires (its coordinator is gone).
"""
import asyncio

from distributed.core import send_recv

from .codec import register_error
from .wire import unpack_reply


@register_error
class PeerLost(ConnectionError):
    """A worker could not get its child's partial sum in the reduction tree.

    Attributes
    ----------
    address : str
        The lost child's address.
    """

    def __init__(self, message, address):
        super().__init__(message)
        self.address = address


@register_error
class RoundAbandoned(RuntimeError):
    """A newer attempt of the round, or the end of the fit, made this one moot."""


def reduction_order(placement):
    """The workers in heap order, below the coordinator.

    Parameters
    ----------
    placement : dict of str -> list of int
        Worker address -> indices of the partitions it holds.

    Returns
    -------
    tuple of str
        By decreasing number of partitions, then address: the workers holding the most are
        nearest the coordinator.
    """
    return tuple(sorted(placement, key=lambda address: (-len(placement[address]), address)))


def neighbours(order, address):
    """``(parent or None, children)`` of ``address`` in the heap ``order`` (None: the
    parent is the coordinator)."""
    position = order.index(address) + 1      # the coordinator is position 0
    parent = (position - 1) // 2
    children = [order[p - 1] for p in (2 * position + 1, 2 * position + 2) if p <= len(order)]
    return (order[parent - 1] if parent else None), children


def tree_roots(order):
    """The workers the coordinator calls: the first two of the heap ``order``."""
    return order[:2]


class _Forwards:
    """The calls a worker has in flight to its children, per (worker, fit): those of an
    older attempt are cancelled when a newer one arrives, all of a fit when it ends."""

    def __init__(self):
        self._calls = {}   # (worker address, fit id) -> {tag: [asyncio.Task]}

    def open(self, worker_address, fit_id, tag):
        """The list to put the calls of attempt ``tag`` in; older attempts' are cancelled."""
        attempts = self._calls.setdefault((worker_address, fit_id), {})
        for old in [t for t in attempts if t < tag]:
            for call in attempts.pop(old):
                call.cancel()
        return attempts.setdefault(tag, [])

    def close(self, worker_address, fit_id, tag):
        self._calls.get((worker_address, fit_id), {}).pop(tag, None)

    def forget(self, worker_address, fit_id=None):
        """Cancel the calls of a dropped fit (or of every fit of a worker)."""
        for key in [k for k in self._calls if k[0] == worker_address and fit_id in (None, k[1])]:
            for calls in self._calls.pop(key).values():
                for call in calls:
                    call.cancel()


FORWARDS = _Forwards()


class SubtreeRound:
    """One worker's part in one attempt of a reduced round: the calls to its children,
    started before its own sum is computed, and the sum of their answers.

    Parameters
    ----------
    worker : distributed.Worker
        This worker (its RPC pool reaches the children).
    fit_id : str
    capability : bytes
        The fit's secret, from the parent's call: each child checks it.
    reduction : tuple
        ``(tag, order)``: the round's attempt tag and the workers in heap order.
    payload : bytes
        The round's message as this worker received it, passed on unchanged.
    """

    def __init__(self, worker, fit_id, capability, reduction, payload):
        self._worker = worker
        self._fit_id = fit_id
        self._tag, order = reduction
        _, self._children = neighbours(order, worker.address)
        self._message = dict(fit=fit_id, capability=capability, payload=payload)
        self._calls = []

    async def start(self):
        """Send the round to the children; return once the messages are written (so that a
        sum computed on the event loop next does not hold them back)."""
        self._calls = FORWARDS.open(self._worker.address, self._fit_id, self._tag)
        for child in self._children:
            try:
                comm = await self._worker.rpc.connect(child)
            except OSError as exc:
                self.end()
                raise PeerLost(f"the reduction child {child} of worker "
                               f"{self._worker.address} was lost: {exc}", child) from None
            self._calls.append(asyncio.ensure_future(self._call(child, comm)))
        await asyncio.sleep(0)   # each call runs up to its first wait: its write is done

    async def _call(self, child, comm):
        try:
            return await send_recv(comm=comm, op="dpxgb_call", **self._message)
        finally:
            self._worker.rpc.reuse(child, comm)

    async def total(self, own, add):
        """``own`` plus the children's subtree sums, and the compute seconds of the subtree.

        Parameters
        ----------
        own : object
            This worker's sum over its partitions (or None).
        add : callable
            Sums a list of results (None entries skipped).

        Returns
        -------
        tuple
            ``(total, seconds)``: the children's compute seconds, summed.

        Raises
        ------
        PeerLost
            A child could not be reached, or no longer holds the fit.
        RoundAbandoned
            A newer attempt came, or the fit ended.
        """
        parts, seconds = [own], 0.0
        try:
            for child, call in zip(self._children, list(self._calls)):
                parts.append(await self._answer(child, call))
                seconds += call.result().get("seconds", 0.0)
        finally:
            self.end()
        return add(parts), seconds

    def end(self):
        """Cancel the calls still running (this attempt failed), retrieve the outcomes of
        the others, and forget them."""
        for call in self._calls:
            if not call.done():
                call.cancel()
            elif not call.cancelled():
                call.exception()
        FORWARDS.close(self._worker.address, self._fit_id, self._tag)

    async def _answer(self, child, call):
        try:
            answer = await call
        except asyncio.CancelledError:
            raise RoundAbandoned(f"round attempt {self._tag} was superseded, or the fit "
                                 "ended") from None
        except OSError as exc:
            raise PeerLost(f"the reduction child {child} of worker {self._worker.address} "
                           f"was lost: {exc}", child) from None
        try:
            return unpack_reply(answer)
        except PeerLost:
            raise
        except (ConnectionError, KeyError) as exc:  # no dpxgb answer, or the fit is gone
            raise PeerLost(f"the reduction child {child} of worker {self._worker.address} "
                           f"is lost to the fit: {exc}", child) from None
