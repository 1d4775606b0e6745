"""The worker side of a fit: partition states held by a worker plugin, reached over RPC.

:class:`DPXGBWorkerPlugin` registers one handler, ``dpxgb_call``, on every worker. The
coordinator (in the scheduler process) calls it over the scheduler's RPC connection pool
for every message of a fit; the client calls it through the scheduler's ``broadcast``
only to load NumPy and pandas rows, or to have each silo read its own. A call names the
fit, proves it belongs to it with the fit's capability (a 256-bit secret of the fitting
client and its coordinator; the worker keeps only its SHA-256), and carries one action, a
dataclass of :mod:`~dpxgb_dask.cluster.actions`, which the worker runs by its type:

=======================  ===================================================================
``LoadRows``             validate rows and labels sent with the call and keep them as a
                         partition (or as the replica of a partition held by another worker)
``LoadSiloRows``         as a silo of a :class:`~dpxgb_dask.silo_table.SiloTable`: read this
                         worker's own file (the call names its path and columns) and keep
                         its rows as a partition (:func:`~dpxgb_dask.inputs.read_silo_rows`)
``RestoreRows``          rebuild a lost partition here, from its replica (or from a block a
                         load task just put here) and the log of the fit's messages so far
``Aggregate``            exact fit-level aggregates of the raw rows (row counts, bounds,
                         sketch...)
``PrepareRows``          bin the rows and set the initial margins
``RunRound``             one :class:`~dpxgb_dask.partition.messages.Round` on every local
                         partition, passed on to this worker's children in the reduction
                         tree and its sum added to theirs (:mod:`~dpxgb_dask.cluster.reduction`);
                         a round that sends the next random tree ahead has its rows routed
                         to that tree's leaves after the answer (:func:`route_ahead`)
``SiloKey``              a cross-silo fit with secure aggregation: this silo's fresh public
                         key, signed by its operator's identity if it has one
``SiloPeers``            every silo's address and public key: derive this silo's pairwise
                         masks (from keys its operator's peers signed, if it configured them)
``Touch``                keep the fit alive (see :data:`~dpxgb_dask.cluster.wire.LEASE_SECONDS`)
``Drop``                 forget the fit
=======================  ===================================================================

A fit whose rows a silo read itself (``LoadSiloRows``) is the silo's
(:class:`~dpxgb_dask.cluster.silo_side.SiloSide`): from then on its worker answers only
silo releases (:func:`~dpxgb_dask.partition.silo_release.release_at_silo`, at the
noise scales the request names: the silo trusts its caller for those) and refuses rows
from elsewhere, aggregates per partition or without a release, rounds whose step names
no release, a round number run before, and a second key agreement, whoever holds the
capability; its replies carry no compute time. Its operator may cap what it releases in
one fit (:func:`~dpxgb_dask.cluster.silo_config.silo_budget`, Dask config
``dpxgb.silo.max-epsilon``), and configures what else it takes from no caller
(:mod:`~dpxgb_dask.cluster.silo_config`).

The plugin is registered once per cluster by the first fit and stays, like an installed
library: it holds no data between fits. This module imports only what a partition needs
(the partition state and the kernels), not the estimators or the accountants.

Results are summed over the worker's partitions before they leave it, and a round's
sums over the workers along the reduction tree. Nothing of a fit
is stored under a Dask key, a dataset or an event: its rows and exact aggregates live in
this module's registry, inside the worker process, until the fit ends, fails, its client
dies (the coordinator drops it), or nobody has called for ``LEASE_SECONDS``.
"""
import asyncio
from dataclasses import dataclass, replace
import hmac
import logging
import sys
import threading
import time

import dask
from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin
import numpy as np

from ..partition.aggregates import add_results, aggregate, silo_sensitivity_floors
from ..partition.silo_release import round_sensitivity_floors
from ..partition.state import load_partition
from ..inputs import Targets, read_silo_rows
from ..objective import Objective
from .actions import (ACTIONS, Aggregate, Drop, LoadRows, LoadSiloRows, PrepareRows,
                      RestoreRows, RunRound, SiloKey, SiloPeers, Touch)
from .codec import ARRAY_KINDS, MessageError, decode
from .reduction import FORWARDS, SubtreeRound
from .silo_config import check_silo_path, silo_budget
from .silo_side import SiloSide
from .wire import LEASE_SECONDS, PLUGIN_NAME, capability_digest, error_reply, reply

logger = logging.getLogger("dpxgb_dask.silo")

#: How often a worker looks for expired fits.
SWEEP_SECONDS = 1.0
#: A round of a fit holding at most this many feature values (rows x features) on the
#: worker runs on the worker's event loop (blocking it for a few ms at most); larger
#: rounds, and every other action but ``Touch``, run in a thread. The hop to a thread and
#: back costs about 2 ms per call (measured on the Adult default fit: 10.4 ms per tree with
#: threads, 5.8 ms inline).
INLINE_CELLS = 1 << 22


class DPXGBWorkerPlugin(WorkerPlugin):
    """Installs the ``dpxgb_call`` handler and the lease sweeper on a worker.

    Registered once per cluster by the first fit (``idempotent``: later registrations are
    no-ops, so a running fit never loses its state to a re-registration). It stays
    registered after the fit, like an installed library: it holds no data between fits.
    """

    idempotent = True
    name = PLUGIN_NAME

    def setup(self, worker):
        """Install the handler and start the sweeper on ``worker``."""
        async def call(comm=None, **kwargs):
            return await handle_call(worker, **kwargs)

        worker.handlers["dpxgb_call"] = call
        self._sweeper = asyncio.ensure_future(sweep_forever(worker.address))

    def teardown(self, worker):
        """Drop every fit of ``worker`` (it is closing, or the plugin is removed); the
        handler stays, answering each later call that the fit is gone from this worker,
        so that a coordinator's last calls racing the teardown get an error it handles
        rather than a "No handler" traceback in the worker's log."""
        address = worker.address

        async def gone(comm=None, **kwargs):
            return error_reply(ConnectionError(f"worker {address} is closing: it holds no "
                                               "dpxgb fit any more"))

        worker.handlers["dpxgb_call"] = gone
        if getattr(self, "_sweeper", None) is not None:
            self._sweeper.cancel()
        forget_worker(address)


class _FitOnWorker:
    """The partitions of one fit on one worker, and its side as a silo
    (:class:`~dpxgb_dask.cluster.silo_side.SiloSide`)."""

    def __init__(self, digest):
        self.digest = digest
        self.states = {}            # partition index -> PartitionState
        self.replicas = {}          # partition index -> PartitionState, not prepared
        self.touched = time.monotonic()
        self.lock = threading.Lock()
        self.silo = SiloSide()
        #: seconds of routing ahead (:func:`route_ahead`) not yet told in a reply; appended
        #: by the routing thread, taken by the handler (each step atomic: no lock, which
        #: the event loop would wait on while a thread routes)
        self.ahead_seconds = []


#: worker address -> {fit id -> _FitOnWorker}. Keyed by worker so that several workers
#: in one process (``LocalCluster(processes=False)``) keep their fits apart.
_REGISTRY = {}
_REGISTRY_LOCK = threading.RLock()


def _fits_of(worker_address):
    with _REGISTRY_LOCK:
        return _REGISTRY.setdefault(worker_address, {})


def _fit(worker_address, fit_id, digest, create=False):
    fits = _fits_of(worker_address)
    with _REGISTRY_LOCK:
        fit = fits.get(fit_id)
        if fit is None:
            if not create:
                raise KeyError(f"fit {fit_id} is not on worker {worker_address} (dropped, "
                               "or the worker restarted)")
            fit = fits[fit_id] = _FitOnWorker(digest)
    if not hmac.compare_digest(fit.digest, digest):
        raise PermissionError("the call does not carry this fit's capability")
    fit.touched = time.monotonic()
    return fit


def add_partition(worker_address, fit_id, digest, index, state, replica=False):
    """Keep ``state`` as partition ``index`` of the fit on this worker (``replica``: as the
    copy of a partition another worker holds).

    Parameters
    ----------
    digest : str
        :func:`~dpxgb_dask.cluster.wire.capability_digest` of the fit's capability (loads
        may come from a task, whose arguments the scheduler keeps: they carry the digest,
        never the secret).

    Raises
    ------
    PermissionError
        The fit holds a silo's own rows (``SiloSide.refuse_rows_from_elsewhere``).
    """
    fit = _fit(worker_address, fit_id, digest, create=True)
    with fit.lock:
        fit.silo.refuse_rows_from_elsewhere("LoadRows")
        (fit.replicas if replica else fit.states)[int(index)] = state


@dataclass(frozen=True)
class PartitionLoad:
    """What a load task needs besides its rows: the fit, its capability's digest, the
    partition's index, the objective and the worker's kernel threads."""

    fit_id: str
    digest: bytes
    index: int
    objective: Objective
    n_threads: int


def load_task(X, targets, load):
    """Dask task: load one block of a dask collection (rows ``X`` and their
    :class:`~dpxgb_dask.inputs.Targets`) into the fit's state on the worker that runs it
    (``load``: a :class:`PartitionLoad`), and return only that worker's address (no rows,
    no counts)."""
    address = get_worker().address
    add_partition(address, load.fit_id, load.digest, load.index,
                  load_partition(X, targets, load.objective, load.index, load.n_threads))
    return address


def load_task_delayed(x_block, target_blocks, load):
    """The delayed load task of one dask partition
    (:func:`~dpxgb_dask.cluster.worker.load_task`; ``target_blocks``: the
    :class:`~dpxgb_dask.inputs.Targets` of its blocks; ``load``: a :class:`PartitionLoad`)."""
    return dask.delayed(load_task, pure=False)(x_block, target_blocks, load)


def drop_fit(worker_address, fit_id):
    """Forget a fit (no capability needed: dropping reveals nothing)."""
    FORWARDS.forget(worker_address, fit_id)
    with _REGISTRY_LOCK:
        return _fits_of(worker_address).pop(fit_id, None) is not None


def fits_on(worker_address):
    """Ids of the fits this worker holds (public: for cleanup checks)."""
    with _REGISTRY_LOCK:
        return sorted(_fits_of(worker_address))


def _sweep(worker_address):
    now = time.monotonic()
    with _REGISTRY_LOCK:
        fits = _fits_of(worker_address)
        for fit_id in [f for f, fit in fits.items() if now - fit.touched > LEASE_SECONDS]:
            del fits[fit_id]
            FORWARDS.forget(worker_address, fit_id)  # calls to its children in flight


def _runs_inline(worker_address, fit_id, action):
    """Whether a call is small enough to run on the event loop (see ``INLINE_CELLS``).

    Only the per-level and per-tree calls (:class:`RunRound`, :class:`Touch`), and only for
    fits whose rows here are few (a shape, public); loads, re-loads, aggregates and binning
    go to a thread whatever their size.
    """
    if isinstance(action, Touch):
        return True
    if not isinstance(action, RunRound):
        return False
    fit = _fits_of(worker_address).get(fit_id)
    if fit is None:
        return True  # fails at once
    states = list(fit.states.values())
    return sum(s.raw.X.size for s in states) <= INLINE_CELLS


def execute(worker_address, fit_id, capability, action, rows=None):
    """Run one action of a fit on this worker's partitions (CPU work: in a thread, or on
    the event loop for small fits, see ``INLINE_CELLS``).

    Parameters
    ----------
    worker_address, fit_id : str
    capability : bytes
    action : one of :data:`~dpxgb_dask.cluster.actions.ACTIONS`
    rows : tuple of (X, Targets), optional
        :class:`~dpxgb_dask.cluster.actions.LoadRows`: the rows and targets the call
        carried.

    Returns
    -------
    object
        :class:`~dpxgb_dask.cluster.actions.Aggregate` with ``per_partition``: dict
        index -> result; otherwise the sum over the local partitions (None when the
        operation returns nothing).
    """
    digest = capability_digest(capability)
    if isinstance(action, LoadRows):
        fit = _fit(worker_address, fit_id, digest, create=True)
        with fit.lock:
            fit.silo.check_call(action)
        add_partition(worker_address, fit_id, digest, action.index,
                      load_partition(*rows, action.objective, action.index, action.n_threads),
                      action.replica)
        return None
    if isinstance(action, LoadSiloRows):  # (the rows come from this worker's own storage)
        return _load_silo(worker_address, fit_id, digest, action)
    fit = _fit(worker_address, fit_id, digest)
    if isinstance(action, Touch):
        return None
    try:
        with fit.lock:
            if isinstance(action, SiloKey):
                return fit.silo.key(fit_id)
            if isinstance(action, SiloPeers):
                return fit.silo.peers(worker_address, fit_id, action.roster, action.context)
            fit.silo.check_call(action)
            return _execute(fit, action)
    finally:
        fit.touched = time.monotonic()  # a long computation must not expire its own fit


def _load_silo(worker_address, fit_id, digest, action):
    """:class:`LoadSiloRows`: read this silo's own file into the fit's one partition."""
    source = action.source
    check_silo_path(source["path"])  # (before the fit holds anything here)
    fit = _fit(worker_address, fit_id, digest, create=True)
    with fit.lock:
        if fit.silo.own_rows or fit.states or fit.replicas:
            raise PermissionError("a silo loads its rows into a fit of its own, once: "
                                  "this fit already holds partitions here")
        fit.silo.own_rows = True  # (before the rows are read, and for the fit's life)
        fit.silo.budget = silo_budget(source["path"])
    X, y = read_silo_rows(**source)
    # a silo never refuses on its rows (its caller would learn that some label is
    # not a class): it leaves such rows out and tells its operator, in its own log
    state = load_partition(X, Targets(y), replace(action.objective, unknown_labels="missing"),
                           action.index, action.n_threads)
    missing = int(np.isnan(np.asarray(y, dtype=np.float64)).sum())
    left_out = int(np.isnan(state.labels).sum()) - missing
    if left_out:
        logger.warning("silo file %s: %d rows have a label outside the fit's classes "
                       "%s and are left out of the fit", source["path"], left_out,
                       source.get("classes") or [0, 1])
    with fit.lock:
        fit.states[int(action.index)] = state
    return None


def _execute(fit, action):
    states = [fit.states[i] for i in sorted(fit.states)]
    if isinstance(action, Aggregate):
        results = {s.index: aggregate(s, action.name, *action.args) for s in states}
        if action.per_partition:
            return results
        total = add_results(list(results.values()))
        if action.release is None:
            return total
        n_features = states[0].raw.X.shape[1]
        return fit.silo.release(total, action.release, lambda field: silo_sensitivity_floors(
            action.name, action.args, n_features, field))
    if isinstance(action, PrepareRows):
        for s in states:
            s.prepare(action.spec)
        return None
    if isinstance(action, RunRound):  # (the reduction is the handler's: handle_call)
        step = action.step
        total = add_results([s.run(step) for s in states])
        if step.silo_release is None or total is None:
            return total
        return fit.silo.release(total, step.silo_release, round_sensitivity_floors(
            step, states[0].tree_spec, states[0].raw.X.shape[1]))
    if isinstance(action, RestoreRows):
        state = fit.states.get(action.index) or fit.replicas.pop(action.index)
        state.replay(action.prepare, action.rounds)
        fit.states[action.index] = state
        return None
    raise MessageError(f"unknown action {type(action).__name__}")


def route_ahead(worker_address, fit_id):
    """Route the rows of a fit's partitions here to the leaves of the tree its last round
    sent ahead (``PartitionState.route_ahead``), after that round was answered: on the
    event loop for a small fit, in a thread otherwise (its next round waits on the fit's
    lock). A failure leaves the routing to the next round, which repeats it and answers
    the error."""
    fit = _fits_of(worker_address).get(fit_id)
    if fit is None:  # (dropped meanwhile)
        return
    start = time.perf_counter()
    with fit.lock:
        try:
            for state in fit.states.values():
                state.route_ahead()
        except Exception:  # (not swallowed: the next round raises it again, with a reply)
            return
    fit.ahead_seconds.append(time.perf_counter() - start)


def _after_reply(worker_address, fit_id, inline):
    """Schedule :func:`route_ahead` to run once this call's reply is out: a callback of
    the event loop after the handler's (which writes the reply first), or a thread."""
    loop = asyncio.get_running_loop()
    if inline:
        loop.call_soon(route_ahead, worker_address, fit_id)
    else:
        loop.run_in_executor(None, route_ahead, worker_address, fit_id)


def _told_ahead_seconds(fit):
    """The routing-ahead seconds of ``fit`` not yet told, now told (for the next reply)."""
    done, fit.ahead_seconds = fit.ahead_seconds, []
    return sum(done)


async def sweep_forever(worker_address):
    """Drop the fits of a worker whose lease expired, every ``SWEEP_SECONDS``."""
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        _sweep(worker_address)


async def handle_call(worker, *, fit=None, capability=None, payload=None, rows=None,
                      labels=None, weights=None, margins=None):
    """The ``dpxgb_call`` handler of a worker: ``payload`` is one action of
    :mod:`~dpxgb_dask.cluster.actions`, encoded by :func:`~dpxgb_dask.cluster.codec.encode`
    (never unpickled: a payload of any other kind is refused).

    Parameters
    ----------
    worker : distributed.Worker
    rows, labels, weights, margins : ndarray or scipy.sparse matrix, optional
        :class:`~dpxgb_dask.cluster.actions.LoadRows`: the rows and the fields of their
        :class:`~dpxgb_dask.inputs.Targets` (weights and margins None when the fit has
        none), in Dask's own frames (NumPy's serialisation, no copy: the fast path of a
        trusted client's rows); anything but arrays of numbers is refused
        (``_row_arrays``).

    Returns
    -------
    dict
        :func:`~dpxgb_dask.cluster.wire.reply` of the result with ``seconds``, its compute
        time (a reduced round's: its subtree's), which stays with the coordinator, in the
        cluster (a silo does not send it);
        or :func:`~dpxgb_dask.cluster.wire.error_reply`.
    """
    address = worker.address
    start = time.perf_counter()
    subtree = None
    try:
        action = decode(payload)
        if not isinstance(action, ACTIONS):
            raise MessageError(f"a dpxgb_call carries one of the actions "
                               f"{[a.__name__ for a in ACTIONS]}, got "
                               f"{type(action).__name__}")
        if isinstance(action, Drop):
            return reply(drop_fit(address, fit), seconds=0.0)
        loaded = _row_arrays(rows, Targets(labels, weights, margins)) \
            if isinstance(action, LoadRows) else None
        if isinstance(action, RunRound) and action.reduction is not None:
            _fit(address, fit, capability_digest(capability))  # checked before it travels on
            subtree = SubtreeRound(worker, fit, capability, action.reduction, payload)
            await subtree.start()
        inline = _runs_inline(address, fit, action)
        if inline:
            result = execute(address, fit, capability, action, loaded)
        else:
            result = await asyncio.to_thread(execute, address, fit, capability, action,
                                             loaded)
        seconds = time.perf_counter() - start
        if subtree is not None:
            result, below = await subtree.total(result, add_results)
            seconds += below
        if isinstance(action, RunRound) and action.step.next_tree_splits is not None:
            _after_reply(address, fit, inline)
        held = _fits_of(address).get(fit)
        if held is not None:
            seconds += _told_ahead_seconds(held)
            if held.silo.own_rows:  # (its compute time grows with its rows)
                return reply(result)
        return reply(result, seconds=seconds)
    except Exception as exc:  # returned, not raised: the comm would lose its type
        if subtree is not None:
            subtree.end()  # (its children's calls, when this worker's own part failed)
        return error_reply(exc)


def _row_arrays(rows, targets):
    """``rows`` and ``targets`` of a ``load`` call, checked: NumPy arrays of numbers (rows
    may be a SciPy sparse matrix; a target's weights and margins may be absent) with as
    many rows as each other.

    Raises
    ------
    ValueError
    """
    sparse = sys.modules.get("scipy.sparse")
    named = {"rows": rows, "labels": targets.label, "weights": targets.weight,
             "margins": targets.margin}
    for name, value in named.items():
        is_sparse = name == "rows" and sparse is not None and sparse.issparse(value)
        if (value is None and name in ("weights", "margins")) or is_sparse:
            continue
        if not (isinstance(value, np.ndarray) and value.dtype.kind in ARRAY_KINDS):
            raise ValueError(f"a load call's {name} must be an array of numbers, got "
                             f"{type(value).__name__}")
        if value.shape[0] != rows.shape[0]:
            raise ValueError(f"a load call's rows and {name} differ in length: "
                             f"{rows.shape[0]} and {value.shape[0]}")
    return rows, targets


def forget_worker(worker_address):
    """Drop every fit of a worker (its plugin is torn down)."""
    FORWARDS.forget(worker_address)
    with _REGISTRY_LOCK:
        _REGISTRY.pop(worker_address, None)
