"""Where the coordinator's per-partition work runs.

The coordinator (``coordinator.py``) is written against one small asynchronous interface:

``map(fn, *columns, args=())``    run ``fn(columns[0][i], columns[1][i], ..., *args)`` for every
                                  partition ``i``, where partition ``i`` lives; a column holds
                                  one handle (or plain value) per partition; returns one
                                  handle per partition;
``reduce_gather(handles, name)``  sum the per-partition results (on the workers) and bring the
                                  single total to the coordinator;
``release(handles)``              drop results that are no longer needed;
``span(*tags)``                   a context naming the tasks submitted inside it (Dask's
                                  dashboard groups them per tree and per depth).

:class:`DaskBackend` runs inside the scheduler process with an asynchronous client: tasks
are pinned to the workers that hold each partition (found with ``who_has``), partial
results are summed on the workers by a tree reduction, and only the reduced total is
gathered, by the coordinator. :class:`LocalBackend` runs the same calls in-process on a
list of partitions; the tests use it to check the algorithm without a cluster.
"""
import asyncio
from contextlib import nullcontext
import uuid

from . import ops

#: Fan-in of the reduction tree across workers.
REDUCTION_FAN_IN = 4


class LocalBackend:
    """Run partition functions in this process (no cluster).

    Parameters
    ----------
    parts : list
        One object per partition (e.g. ``ops.RawPart``).
    """

    def __init__(self, parts):
        self._parts = list(parts)
        self.bytes_gathered = 0

    @property
    def n_partitions(self):
        return len(self._parts)

    @property
    def partitions(self):
        return list(self._parts)

    async def map(self, fn, *columns, args=(), name="task"):
        return [fn(*row, *args) for row in zip(*columns)]

    async def reduce_gather(self, handles, name="reduce"):
        total = ops.add(*handles)
        self.bytes_gathered += total.nbytes
        return total

    async def gather(self, handles):
        return list(handles)

    def release(self, handles):
        """Nothing to do: local results are plain objects, freed when unreferenced."""

    def span(self, *tags):
        """No dashboard here: a context that does nothing."""
        return nullcontext()

    async def run_cpu(self, fn, *args):
        return fn(*args)


class DaskBackend:
    """Run partition functions on the Dask workers that hold the partitions.

    Parameters
    ----------
    client : distributed.Client
        An asynchronous client (the coordinator's, inside the scheduler process).
    parts : list of distributed.Future
        Futures of the partitions, already persisted on workers.
    """

    def __init__(self, client, parts):
        self._client = client
        self._parts = list(parts)
        self._workers = None
        self.bytes_gathered = 0
        self._token = uuid.uuid4().hex[:8]
        self._counter = 0

    @property
    def n_partitions(self):
        return len(self._parts)

    @property
    def partitions(self):
        return list(self._parts)

    async def locate(self):
        """Find the worker of every partition (``who_has``); partitions never move."""
        who_has = await self._client.who_has(self._parts)
        workers = []
        for part in self._parts:
            holders = sorted(who_has.get(part.key, ()))
            if not holders:
                raise RuntimeError(f"partition {part.key!r} is held by no worker")
            workers.append(holders[0])
        self._workers = workers
        return workers

    def _key(self, name, i):
        """``(name-token-counter, i)``: the dashboard's task prefix is the operation (the
        words of ``name`` before ``tree3``...), and each call is its own task group, which
        is what ``distributed.span`` attaches to a span."""
        self._counter += 1
        return (f"{name}-{self._token}-{self._counter}", i)

    async def map(self, fn, *columns, args=(), name="task"):
        return [
            self._client.submit(fn, *row, *args, key=self._key(name, i), workers=[w],
                                allow_other_workers=True, pure=False)
            for i, (row, w) in enumerate(zip(zip(*columns), self._workers))
        ]

    async def reduce_gather(self, handles, name="reduce"):
        """Sum per-partition results: first on each worker, then across workers by a tree
        of fan-in ``REDUCTION_FAN_IN``; gather the single total (exact, stays here)."""
        by_worker = {}
        for h, w in zip(handles, self._workers):
            by_worker.setdefault(w, []).append(h)
        level = []
        for i, (w, hs) in enumerate(sorted(by_worker.items())):
            if len(hs) == 1:
                level.append((hs[0], w))
            else:
                level.append((self._client.submit(ops.add, *hs, key=self._key(name, i),
                                                  workers=[w], allow_other_workers=True,
                                                  pure=False), w))
        while len(level) > 1:
            nxt = []
            for i in range(0, len(level), REDUCTION_FAN_IN):
                group = level[i:i + REDUCTION_FAN_IN]
                w = group[0][1]
                nxt.append((self._client.submit(ops.add, *[h for h, _ in group],
                                                key=self._key(name, i), workers=[w],
                                                allow_other_workers=True, pure=False), w))
            level = nxt
        total = await level[0][0]
        self.bytes_gathered += total.nbytes
        return total

    async def gather(self, handles):
        return await self._client.gather(handles)

    def release(self, handles):
        for h in handles:
            h.release()

    def span(self, *tags):
        """``distributed.span``: the dashboard shows the tasks inside per span."""
        from distributed import span

        return span(*tags)

    async def run_cpu(self, fn, *args):
        """Run CPU work off the scheduler's event loop."""
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)
