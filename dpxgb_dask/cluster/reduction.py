"""A round's results summed among the workers, along a binary tree whose root is the
coordinator, so that the coordinator receives at most two partial sums per round whatever
the number of workers.

The coordinator puts the workers of a fit in order (:func:`reduction_order`: the workers
holding the most partitions first) and sends every worker the same round with that order
and an attempt tag. In the binary heap whose position 0 is the coordinator, the worker at
index ``i`` sits at position ``i + 1``: it computes its own partitions' sum, waits for the
partial sums of its children (positions ``2i + 3`` and ``2i + 4``, sent to it by ``partial``
calls, worker to worker), adds them, and sends the total to its parent, or, for the two
workers under the coordinator, returns it as the answer to the round; the others answer
nothing. A level's histograms therefore cross the network once per worker, and at most
twice to the scheduler, instead of once per worker to the scheduler, as in the tree
reductions of xgboost (rabit's allreduce) and LightGBM. The coordinator keeps two
children, not one, because a hop between workers costs about as much as a reply to it.

The partial sums are exact aggregates of the fit's rows; they move only between the
workers that hold those rows, under the fit's capability (a worker receiving a partial sum
checks it as for every call), and are dropped as soon as they are added.

Faults: a worker that cannot reach its parent answers :class:`PeerLost` naming it, and the
coordinator treats that as the loss of the parent (:mod:`~dpxgb_dask.cluster.backend`
recovers the lost worker's partitions and repeats the round with a new attempt tag); an
error the parent answers (a dropped fit...) is the worker's answer. A worker waits for its
children as long as it takes them (a large partition may be slow): it gives up when a
newer attempt of the fit reaches it (the coordinator saw a loss and repeats the round),
when the fit is dropped, or when the fit's lease expires (its coordinator is gone).
"""
import asyncio
from .codec import encode, register_error
from .wire import unpack_reply


@register_error
class PeerLost(ConnectionError):
    """A worker could not send its partial sum to its parent in the reduction tree.

    Attributes
    ----------
    address : str
        The parent's address.
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


class _Mailboxes:
    """Partial sums that reached this process, per (worker, fit, tag), until taken."""

    def __init__(self):
        self._boxes = {}   # (worker address, fit id) -> {tag: asyncio.Queue}

    def _box(self, worker_address, fit_id, tag):
        boxes = self._boxes.setdefault((worker_address, fit_id), {})
        if tag not in boxes:
            boxes[tag] = asyncio.Queue()
        return boxes[tag]

    def put(self, worker_address, fit_id, tag, result):
        self._box(worker_address, fit_id, tag).put_nowait(result)

    def open(self, worker_address, fit_id, tag):
        """The queue of ``tag``; the queues of older tags of the fit are abandoned."""
        boxes = self._boxes.setdefault((worker_address, fit_id), {})
        for old in [t for t in boxes if t < tag]:
            boxes.pop(old).put_nowait(RoundAbandoned(f"round {old} was superseded by {tag}"))
        return self._box(worker_address, fit_id, tag)

    def close(self, worker_address, fit_id, tag):
        self._boxes.get((worker_address, fit_id), {}).pop(tag, None)

    def forget(self, worker_address, fit_id=None):
        """Abandon the waits of a dropped fit (or of every fit of a worker)."""
        keys = [k for k in self._boxes if k[0] == worker_address and fit_id in (None, k[1])]
        for key in keys:
            for queue in self._boxes.pop(key).values():
                queue.put_nowait(RoundAbandoned("the fit ended"))


MAILBOXES = _Mailboxes()


async def reduce_along_tree(worker, fit_id, capability, reduction, own, add):
    """Add the children's partial sums to ``own`` and pass the total up the tree.

    Parameters
    ----------
    worker : distributed.Worker
        This worker (its RPC pool reaches the parent).
    fit_id : str
    capability : bytes
        The fit's secret, from the coordinator's call: the parent checks it.
    reduction : tuple
        ``(tag, order)``: the round's attempt tag and the workers in heap order.
    own : object
        This worker's sum over its partitions (or None).
    add : callable
        Sums a list of results (None entries skipped).

    Returns
    -------
    object
        The total of this worker's subtree when its parent is the coordinator; None
        elsewhere (sent to the parent).

    Raises
    ------
    PeerLost
        The parent could not be reached.
    RoundAbandoned
        A newer attempt came, or the fit ended.
    """
    tag, order = reduction
    parent, children = neighbours(order, worker.address)
    queue = MAILBOXES.open(worker.address, fit_id, tag)
    try:
        parts = [own]
        for _ in children:
            part = await queue.get()
            if isinstance(part, BaseException):
                raise part
            parts.append(part)
    finally:
        MAILBOXES.close(worker.address, fit_id, tag)
    total = add(parts)
    if parent is None:
        return total
    try:
        answer = await worker.rpc(parent).dpxgb_call(
            fit=fit_id, capability=capability, action="partial",
            payload=encode((tag, total)))
    except OSError as exc:
        raise PeerLost(f"the reduction parent {parent} of worker {worker.address} was lost: "
                       f"{exc}", parent) from None
    try:
        unpack_reply(answer)  # the parent's own error, if it answered one
    except PeerLost:
        raise
    except ConnectionError as exc:  # no dpxgb answer: the parent is going away
        raise PeerLost(f"the reduction parent {parent} did not take the partial sum: {exc}",
                       parent) from None
    return None
