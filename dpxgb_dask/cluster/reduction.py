"""A round's results summed among the workers, along a binary tree, so that the coordinator
receives one reduced result per round whatever the number of workers.

The coordinator puts the workers of a fit in heap order (:func:`reduction_order`: the
worker holding the most partitions first, as the root) and sends every worker the same
round with that order and an attempt tag. Worker ``i`` computes its own partitions' sum,
waits for the partial sums of its children ``2i + 1`` and ``2i + 2`` (``partial`` calls
they make to it, worker to worker), adds them, and sends the total to its parent
``(i - 1) // 2``; the root returns the total to the coordinator, the others an empty
answer. A level's histograms therefore cross the network ``n_workers - 1`` times between
workers and once to the scheduler, instead of ``n_workers`` times to the scheduler, as in
the reductions of xgboost (rabit's tree allreduce) and LightGBM.

The partial sums are exact aggregates of the fit's rows; they move only between the
workers that hold those rows, under the fit's capability (a worker receiving a partial sum
checks it as for every call), and are dropped as soon as they are added.

Faults: a worker that cannot reach its parent answers :class:`PeerLost` naming it, and the
coordinator treats that as the loss of the parent (:mod:`~dpxgb_dask.cluster.backend`
recovers the lost worker's partitions and repeats the round with a new attempt tag). A
worker waiting for a child gives up when a newer attempt of the fit reaches it, when the
fit is dropped, or after ``CHILD_WAIT_SECONDS``.
"""
import asyncio
import pickle

#: How long a worker waits for a child's partial sum before it fails the round.
CHILD_WAIT_SECONDS = 120.0


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

    def __reduce__(self):
        return type(self), (str(self), self.address)


class RoundAbandoned(RuntimeError):
    """A newer attempt of the round, or the end of the fit, made this one moot."""


def reduction_order(placement):
    """The workers in heap order, the root first.

    Parameters
    ----------
    placement : dict of str -> list of int
        Worker address -> indices of the partitions it holds.

    Returns
    -------
    tuple of str
        By decreasing number of partitions, then address: the root holds the most.
    """
    return tuple(sorted(placement, key=lambda address: (-len(placement[address]), address)))


def neighbours(order, address):
    """``(parent or None, children)`` of ``address`` in the heap ``order``."""
    i = order.index(address)
    parent = order[(i - 1) // 2] if i else None
    children = [order[j] for j in (2 * i + 1, 2 * i + 2) if j < len(order)]
    return parent, children


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
        The tree's total at the root; None elsewhere (sent to the parent).

    Raises
    ------
    PeerLost
        The parent could not be reached.
    RoundAbandoned, TimeoutError
        A newer attempt came, the fit ended, or a child did not answer in time.
    """
    tag, order = reduction
    parent, children = neighbours(order, worker.address)
    queue = MAILBOXES.open(worker.address, fit_id, tag)
    try:
        parts = [own]
        for _ in children:
            part = await asyncio.wait_for(queue.get(), CHILD_WAIT_SECONDS)
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
            payload=pickle.dumps((tag, total), protocol=5))
    except OSError as exc:
        raise PeerLost(f"the reduction parent {parent} of worker {worker.address} was lost: "
                       f"{exc}", parent) from None
    if not isinstance(answer, dict) or "payload" not in answer:
        raise PeerLost(f"the reduction parent {parent} did not take the partial sum", parent)
    return None
