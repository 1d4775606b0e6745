"""Round-trip time of one coordinator "level" for three ways of talking to the workers.

Usage::

    python benchmarks/bench_roundtrip.py [--workers 2 8] [--levels 200] [--warmup 20]
                                         [--nodes 8]

The coordinator runs inside the scheduler process (``Client.run_on_scheduler``), as in
``dpxgb_dask.training``. One "level" is: send a small message (four int64 arrays of 32
entries, 1 KiB) to every worker that holds state, let each worker return a float64 array
of shape ``(nodes, 24 features, 65 bins, 3)`` standing for the level's histograms (36.6
KiB per node: 292.5 KiB for the default ``--nodes 8``) and sum the replies in the
coordinator. The worker's "compute" is a copy of a
pre-allocated array plus a one-cell update, so the times are almost pure communication
and scheduling overhead. Candidates:

(a) task graph (today's ``DaskBackend``): an asynchronous ``Client`` opened inside the
    scheduler process; per level one ``submit`` per worker pinned with ``workers=[w]``
    on a state future held there, one sum task over the results, ``await`` the total.
(b) worker handlers: a ``WorkerPlugin`` adds ``worker.handlers["bench_level"]``; the
    coordinator calls every worker at once with ``dask_scheduler.rpc(addr).bench_level``
    and ``asyncio.gather`` and sums the replies itself. ``inline``: a plain function
    running on the worker's event loop; ``thread``: a coroutine that moves the compute
    to the worker's task thread pool (what real histogram work would need).
(c) Dask actors: one actor per worker (``submit(cls, actor=True, workers=[w])``) from
    the scheduler-side asynchronous client, per level ``asyncio.gather`` of
    ``actor.level(msg)``. ``proxy``: the client's default (``direct_to_workers=None``):
    every call is relayed by the scheduler (``Scheduler.proxy``); ``direct``:
    ``direct_to_workers=True``, the client connects to the workers itself; ``async``:
    ``direct`` with an ``async def`` method (runs on the worker's event loop instead of
    the worker's single actor thread).

Each candidate runs ``--warmup`` untimed levels, then ``--levels`` timed ones; the table
gives the median and 90th percentile of the wall-clock time per level, measured by the
coordinator. Every worker count gets its own ``LocalCluster`` (processes, one thread per
worker); on a machine with fewer cores than workers the processes share the cores.
"""
import argparse
import asyncio
import sys
import time

import numpy as np

N_FEATURES, N_BINS = 24, 65
MSG_LEN = 32
PLUGIN_NAME = "bench-roundtrip-handlers"


# --------------------------------------------------------------------------------------
# The payloads, shared by all candidates.

def make_state(seed, n_nodes):
    """A worker's state: the array its level replies are made from."""
    return np.random.default_rng(seed).random((n_nodes, N_FEATURES, N_BINS, 3))


def make_message(level):
    """The coordinator's per-level message: four int64 arrays of ``MSG_LEN`` (1 KiB)."""
    base = np.arange(MSG_LEN, dtype=np.int64) + level
    return {"nodes": base, "feature": base % N_FEATURES, "bin": base % N_BINS,
            "left": base % 2}


def worker_level(state, nodes, feature, bin, left):
    """A worker's reply to one level: a fresh (n_nodes, 24, 65, 3) float64 array."""
    out = state.copy()
    out[0, 0, 0, 0] += nodes[0] + feature[0] + bin[0] + left[0]
    return out


def sum_arrays(*arrays):
    """Sum the replies into a new array (used by every candidate)."""
    total = arrays[0].copy()
    for a in arrays[1:]:
        np.add(total, a, out=total)
    return total


def task_level(state, msg):
    return worker_level(state, **msg)


def summarize(times):
    ms = np.asarray(times) * 1e3
    return float(np.median(ms)), float(np.percentile(ms, 90))


# --------------------------------------------------------------------------------------
# (a) task graph from an asynchronous client inside the scheduler process.
#
# Even one trivial task costs ~10 ms per round trip here (2 workers, 2 cores): scheduler
# and worker state machines, the thread-pool hand-off, and the batched streams, whose
# intervals are hard-coded (client -> scheduler 10 ms, scheduler -> worker 5 ms,
# worker -> scheduler 2 ms); shrinking them by hand saved ~4 ms of that.

async def run_task_graph(warmup, levels, n_nodes, dask_scheduler=None):
    from distributed import Client, wait

    workers = sorted(dask_scheduler.workers)
    async with Client(dask_scheduler.address, asynchronous=True,
                      name="bench-coordinator") as client:
        states = [client.submit(make_state, i, n_nodes, workers=[w], pure=False)
                  for i, w in enumerate(workers)]
        await wait(states)
        times = []
        for level in range(warmup + levels):
            msg = make_message(level)
            start = time.perf_counter()
            parts = [client.submit(task_level, s, msg, workers=[w], pure=False)
                     for s, w in zip(states, workers)]
            total = await client.submit(sum_arrays, *parts, pure=False)
            elapsed = time.perf_counter() - start
            assert total.shape[1:] == (N_FEATURES, N_BINS, 3)
            if level >= warmup:
                times.append(elapsed)
            del parts  # release the partial results (the release message is not timed)
        await client.cancel(states)
    return times


# --------------------------------------------------------------------------------------
# (b) rpc handlers registered on the workers by a plugin.
#
# How arrays travel in rpc messages (distributed 2026.8):
# * Arguments: raw ndarrays inside the keyword arguments arrive as ndarrays, but only
#   through a fallback: msgpack fails, the whole message is encoded a second time with
#   pickle for the unknown objects, and ``distributed.protocol.core`` logs "Failed to
#   serialize ...; falling back to pickle" at INFO on every call. Wrapping each array
#   with ``to_serialize`` avoids that; the worker's comm deserializes them to ndarrays.
# * Replies: a BARE ndarray as the handler's return value breaks the worker's
#   ``Server._handle_comm`` (``result != Status.dont_reply`` on an array raises "truth
#   value of an array is ambiguous"): the comm is dropped and the caller gets
#   ``CommClosedError``. An ndarray nested in a dict works (same pickle fallback as
#   above). ``to_serialize(array)`` (top level or nested) is the clean way, BUT the
#   scheduler's connection pool (``dask_scheduler.rpc``) is created with
#   ``deserialize=False`` (the scheduler forwards data without unpickling it), so the
#   reply arrives in the scheduler as a ``distributed.protocol.Serialized``, to decode
#   with ``distributed.protocol.deserialize(s.header, s.frames)`` (done below).
# * Handlers may be plain functions or ``async def``: ``Server._handle_comm`` awaits a
#   returned coroutine. A plain function runs on the worker's event loop and blocks it
#   (heartbeats, other comms) while it computes; real histogram work should be moved to
#   a thread (``thread`` variant).
# * ``dask_scheduler.rpc`` is the scheduler's ``ConnectionPool``: it reuses one comm per
#   concurrent call and worker, nothing to set up (its limit is the scheduler's
#   ``connection_limit``, half the process's file-descriptor limit).

def _make_handler_plugin(offload, n_nodes):
    from distributed import WorkerPlugin
    from distributed.protocol import to_serialize

    class LevelHandlers(WorkerPlugin):
        """Adds ``bench_level`` to the worker's rpc handlers; the state lives here."""

        name = PLUGIN_NAME

        def __init__(self, offload, n_nodes):
            self.offload = offload
            self.n_nodes = n_nodes

        def setup(self, worker):
            self.worker = worker
            self.state = make_state(sum(worker.address.encode()), self.n_nodes)
            worker.handlers["bench_level"] = (self.level_thread if self.offload
                                              else self.level_inline)

        def teardown(self, worker):
            worker.handlers.pop("bench_level", None)

        def level_inline(self, nodes, feature, bin, left):
            return to_serialize(worker_level(self.state, nodes, feature, bin, left))

        async def level_thread(self, nodes, feature, bin, left):
            loop = asyncio.get_running_loop()
            out = await loop.run_in_executor(self.worker.executors["default"], worker_level,
                                             self.state, nodes, feature, bin, left)
            return to_serialize(out)

    return LevelHandlers(offload, n_nodes)


async def run_handlers(warmup, levels, dask_scheduler=None):
    from distributed.protocol import Serialized, deserialize, to_serialize

    def unwrap(reply):
        if isinstance(reply, Serialized):
            return deserialize(reply.header, reply.frames)
        return reply

    workers = sorted(dask_scheduler.workers)
    times = []
    for level in range(warmup + levels):
        msg = {k: to_serialize(v) for k, v in make_message(level).items()}
        start = time.perf_counter()
        replies = await asyncio.gather(*(dask_scheduler.rpc(w).bench_level(**msg)
                                         for w in workers))
        total = sum_arrays(*map(unwrap, replies))
        elapsed = time.perf_counter() - start
        assert total.shape[1:] == (N_FEATURES, N_BINS, 3)
        if level >= warmup:
            times.append(elapsed)
    return times


# --------------------------------------------------------------------------------------
# (c) one actor per worker, created and called from the scheduler-side client.
#
# * The Actor handles returned by ``gather`` bind, when unpickled, to ``get_client()``:
#   inside the scheduler process of a LocalCluster that is the newest live client of the
#   PROCESS, which may be the user's synchronous client, not the coordinator's. Gather
#   under ``client.as_current()`` so they bind to the coordinator's client (checked).
# * With the client's default ``direct_to_workers=None`` every actor call is sent to the
#   scheduler (``Scheduler.proxy``) over TCP, i.e. from the scheduler process back to
#   itself, and relayed to the worker. ``direct_to_workers=True`` calls the worker.
# * Arguments and results travel wrapped in ``to_serialize`` by ``Actor`` and
#   ``Worker.actor_execute``: ndarrays just work. Sync methods run in the worker's
#   single "actor" thread; ``async def`` methods run on the worker's event loop.
# * ``actor.level(...)`` returns an ``ActorFuture``; it is awaitable and can be given
#   to ``asyncio.gather``.

class LevelActor:
    def __init__(self, seed, n_nodes):
        self.state = make_state(seed, n_nodes)

    def level(self, msg):
        return task_level(self.state, msg)


class AsyncLevelActor(LevelActor):
    async def level(self, msg):
        return task_level(self.state, msg)


async def run_actors(warmup, levels, n_nodes, direct, use_async, dask_scheduler=None):
    from distributed import Client

    workers = sorted(dask_scheduler.workers)
    cls = AsyncLevelActor if use_async else LevelActor
    async with Client(dask_scheduler.address, asynchronous=True, name="bench-coordinator",
                      direct_to_workers=direct) as client:
        futures = [client.submit(cls, i, n_nodes, actor=True, workers=[w], pure=False)
                   for i, w in enumerate(workers)]
        with client.as_current():
            actors = await client.gather(futures)
        assert all(a._client is client for a in actors), "actors bound to another client"
        times = []
        for level in range(warmup + levels):
            msg = make_message(level)
            start = time.perf_counter()
            replies = await asyncio.gather(*(a.level(msg) for a in actors))
            total = sum_arrays(*replies)
            elapsed = time.perf_counter() - start
            assert total.shape[1:] == (N_FEATURES, N_BINS, 3)
            if level >= warmup:
                times.append(elapsed)
        del actors
        await client.cancel(futures)
    return times


# --------------------------------------------------------------------------------------

CANDIDATES = [
    ("(a) task graph", "submit + sum task"),
    ("(b) handlers", "inline"),
    ("(b) handlers", "thread"),
    ("(c) actors", "proxy"),
    ("(c) actors", "direct"),
    ("(c) actors", "async"),
]


def bench_cluster(n_workers, warmup, levels, n_nodes):
    """Run every candidate on one fresh LocalCluster; return {candidate: (median, p90)}."""
    from distributed import Client, LocalCluster

    results = {}
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        client.wait_for_workers(n_workers)
        for candidate in CANDIDATES:
            kind, variant = candidate
            print(f"  {n_workers} workers: {kind} {variant} ...", file=sys.stderr, flush=True)
            if kind.startswith("(a)"):
                times = client.run_on_scheduler(run_task_graph, warmup, levels, n_nodes)
            elif kind.startswith("(b)"):
                client.register_plugin(_make_handler_plugin(variant == "thread", n_nodes))
                try:
                    times = client.run_on_scheduler(run_handlers, warmup, levels)
                finally:
                    client.unregister_worker_plugin(PLUGIN_NAME)
            else:
                times = client.run_on_scheduler(run_actors, warmup, levels, n_nodes,
                                                variant != "proxy", variant == "async")
            results[candidate] = summarize(times)
    return results


def compute_alone(worker_counts, n_nodes, repeat=2000):
    """Median seconds of the worker's reply and of the coordinator's sum, in-process."""
    state = make_state(0, n_nodes)
    msg = make_message(0)
    replies = [worker_level(state, **msg) for _ in range(max(worker_counts))]

    def median_time(fn):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    reply = median_time(lambda: worker_level(state, **msg))
    sums = {n: median_time(lambda n=n: sum_arrays(*replies[:n])) for n in worker_counts}
    return reply, sums


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--levels", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=8,
                        help="histogram nodes per reply (36.6 KiB each)")
    args = parser.parse_args()

    results = {n: bench_cluster(n, args.warmup, args.levels, args.nodes) for n in args.workers}
    reply, sums = compute_alone(args.workers, args.nodes)

    shape = (args.nodes, N_FEATURES, N_BINS, 3)
    nbytes = int(np.prod(shape)) * 8
    header = "| candidate | variant | " + " | ".join(
        f"{n} workers median (ms) | {n} workers p90 (ms)" for n in args.workers) + " |"
    lines = [
        f"Round trip of one level: 1 KiB message to each worker, one {shape} float64 "
        f"reply ({nbytes / 1024:.1f} KiB) per worker, summed; {args.levels} levels after "
        f"{args.warmup} warm-up, coordinator in the scheduler process, LocalCluster "
        f"(processes, 1 thread per worker).",
        "",
        header,
        "|" + "---|" * (2 + 2 * len(args.workers)),
    ]
    for candidate in CANDIDATES:
        cells = []
        for n in args.workers:
            med, p90 = results[n][candidate]
            cells += [f"{med:.2f}", f"{p90:.2f}"]
        lines.append(f"| {candidate[0]} | {candidate[1]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Compute alone (in-process, median): worker reply (copy + update) "
        f"{reply * 1e6:.1f} us; coordinator sum of "
        + ", ".join(f"{n} replies {t * 1e6:.1f} us" for n, t in sums.items()) + ".",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
