"""The client side of dpxgb on a cluster, in the user's process: the cluster to fit on (a
given client, the default one, or an embedded ``LocalCluster``), the rows loaded into the
fit's states on the workers, and the fit's request to the scheduler.

NumPy and pandas inputs are cut into row chunks, and each chunk is sent to one worker's
``dpxgb_call`` handler through the scheduler's ``broadcast`` (the only connection a remote
client is sure to have): no Dask key, dataset or event ever holds the rows. Dask arrays and
dataframes keep their row partitions: one task per block loads the block into the fit's
state on the worker that runs it (where the block already is; only the labels may travel
to the block of X) and returns just that worker's address. Either way the result is the
fit's placement, worker address -> partition indices; partitions never move after that.

A :class:`~dpxgb_dask.silo_table.SiloTable` is loaded by its silos: each silo's worker gets
one call naming its file and the columns, reads the file itself and keeps the rows
(:mod:`~dpxgb_dask.cluster.silo_loading`): no row passes through this process or the
scheduler, and a silo's partition has no copy elsewhere (a lost silo ends the fit).
"""
import asyncio
from concurrent.futures import TimeoutError as FuturesTimeout
from contextlib import contextmanager
import multiprocessing
import numbers
import os
import threading
import uuid

import dask
import numpy as np
from distributed import Client, LocalCluster, default_client
from distributed.protocol import to_serialize

from ..boosting.silo_plan import planned_silo_events
from ..inputs import Targets, check_lengths, float_values, is_dask_collection, is_sparse
from ..progress import ProgressDisplay
from ..silo_table import SiloTable
from . import dashboard_plot
from .actions import Drop, LoadRows, Touch
from .codec import encode
from .fit_request import FitRequest
from .scheduler import DPXGBSchedulerPlugin
from .silo_loading import load_silos, lost_silos_named
from .wire import (KEEPALIVE_SECONDS, LEASE_SECONDS, PLUGIN_NAME, SchedulerLostError,
                   capability_digest, unpack_reply)
from .worker import DPXGBWorkerPlugin, PartitionLoad, load_task_delayed

#: How long a fit waits for the first worker of a cluster that is still starting.
WAIT_FOR_WORKERS_SECONDS = 60


def configured_scheduler():
    """The scheduler address of Dask's ``scheduler-address`` setting (the environment's
    ``DASK_SCHEDULER_ADDRESS``), or None: where ``client=None`` connects when no default
    client exists, as ``distributed.Client()`` does."""
    return dask.config.get("scheduler-address", None) or None


@contextmanager
def client_or_embedded(client, n_workers=2, threads_per_worker=1):
    """Yield ``client``, a client of the scheduler at the address ``client``, the current
    default client, a client of the scheduler at Dask's ``scheduler-address`` setting
    (``DASK_SCHEDULER_ADDRESS``, as ``distributed.Client()`` reads it), or a fresh embedded
    ``LocalCluster``'s (what this opens, it closes on exit): of worker processes, or of
    worker threads in a process that multiprocessing or joblib started (which cannot start
    processes of its own).

    Parameters
    ----------
    client : distributed.Client, str or None
        A client, a scheduler's address (``"tcp://host:8786"``), or None.
    n_workers, threads_per_worker : int
        Of an embedded cluster.
    """
    if client is None:
        try:
            client = default_client()
        except ValueError:  # no default client: Dask's setting, else an embedded cluster
            client = configured_scheduler()
    if isinstance(client, str):
        with Client(client) as connected:
            yield connected
        return
    if client is not None:
        # (not inside the try: an error of the caller's block must not start a cluster)
        yield client
        return
    # A process that multiprocessing or joblib started (cross_val_score(n_jobs=2)) cannot
    # start worker processes (daemonic, or its start method, loky, is unknown to the
    # children): its embedded cluster's workers are threads.
    processes = multiprocessing.parent_process() is None
    dashboard_plot.register()  # (the scheduler runs here: before it starts its dashboard)
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                      processes=processes, dashboard_address=":0") as cluster, \
            Client(cluster) as embedded:
        yield embedded


def ask_budgets(client, **message):
    """Send ``message`` to the scheduler's ``dpxgb_budget`` handler (installing dpxgb's
    scheduler plugin first) and return its answer, or raise its error.

    Parameters
    ----------
    client : distributed.Client or None
        (:func:`client_or_embedded`).
    **message
        The handler's arguments
        (:meth:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin.budget`).
    """
    with client_or_embedded(client) as c:
        c.register_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME)
        return unpack_reply(c.sync(c.scheduler.dpxgb_budget, **message))


def _planned_events(params, planning, X):
    """The releases a budget admits the fit for (plain dicts), or None without a budget;
    a cross-silo fit's as its silos make them
    (:func:`~dpxgb_dask.boosting.silo_plan.planned_silo_events`)."""
    if params.budget is None:
        return None
    events = planning.result().ledger().events
    if params.cross_silo is not None:
        # (the silos' count is known once they loaded, and any count gives the same
        # epsilon: parallel over the silos, or noise_shares >= 2)
        events = planned_silo_events(events, len(X.silos) if isinstance(X, SiloTable)
                                     else 2, params.cross_silo == "secure")
    return [e.to_dict() for e in events]


def run_fit(client, params, planning, X, y, *, objective, n_features, feature_names, verbose,
            n_partitions, with_timings, init_model, callbacks=(), evals=(), selection=None):
    """Fit on ``client``'s cluster: register dpxgb's plugins, have the scheduler admit the
    fit (its budget) before any row is read, load the rows, and ask the scheduler to run
    the coordinator once the release plan is ready.

    Parameters
    ----------
    client : distributed.Client
    params : TrainParams
        Validated.
    planning : concurrent.futures.Future
        Of the fit's :class:`~dpxgb_dask.boosting.plan.ReleasePlan` (computed meanwhile).
    X, y, objective, n_features, feature_names
        The fit's inputs (:func:`load_partitions`).
    verbose : bool
        Show the coordinator's progress (:func:`progress_display`).
    n_partitions, with_timings, init_model : int or None, bool, Booster or None
    callbacks : sequence of callable
        Each called with every public progress event (:func:`progress_display`).
    evals : sequence of (X, y)
        Private evaluation sets, each loaded like the rows as a fit of its own on the
        workers (id ``<fit id>-eval<i>``, the same capability).
    selection : (list of TrainParams, SelectionSpec), optional
        Run a private selection among these configurations (``params`` the first);
        ``planning`` is then of its :class:`~dpxgb_dask.boosting.selection.SelectionPlan`.

    Returns
    -------
    dict
        The scheduler's answer
        (:meth:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin.coordinate`).
    """
    client.register_plugin(DPXGBWorkerPlugin(), name=PLUGIN_NAME)
    client.register_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME)
    fit_id = uuid.uuid4().hex
    capability = os.urandom(32)
    # Before any row is read: a fit the budget refuses loads nothing. (The coordinator
    # checks again, and reserves atomically, before its first release.)
    unpack_reply(client.sync(client.scheduler.dpxgb_budget, action="admit", name=params.budget,
                             fit_id=fit_id, events=_planned_events(params, planning, X)))
    coordinated = False
    eval_ids = [f"{fit_id}-eval{i}" for i in range(len(evals))]
    try:
        placement, sources, evaluations, reloads = _load_fit(
            client, [(fit_id, X, y)] + [(e, *xy) for e, xy in zip(eval_ids, evals)], objective,
            capability, n_partitions=n_partitions, n_threads=params.n_threads,
            categories=params.categories)
        while True:  # keep the loaded partitions alive while the plan is calibrated
            try:
                plan = planning.result(timeout=KEEPALIVE_SECONDS)
                break
            except FuturesTimeout:
                _touch_fit(client, fit_id, capability, placement)
                for eval_id, eval_placement, _ in evaluations:
                    _touch_fit(client, eval_id, capability, eval_placement)
        with progress_display(client, verbose, plan.n_rounds * plan.trees_per_round,
                              callbacks) as topic, \
                reload_service(client, capability, reloads) as reload_topic:
            coordinated = True
            request = FitRequest(
                fit_id=fit_id, capability=capability, placement=placement, sources=sources,
                params=params, n_features=n_features, feature_names=feature_names,
                client_id=client.id, topic=topic, reload_topic=reload_topic,
                with_timings=with_timings, init_model=init_model,
                evaluations=tuple(evaluations), selection=selection)
            try:
                answer = client.sync(client.scheduler.dpxgb_fit, **request.to_wire())
            except OSError as exc:  # CommClosedError is an OSError
                raise SchedulerLostError(
                    f"the connection to the scheduler {client.scheduler.address} was lost "
                    f"during the fit ({type(exc).__name__}); the fit ended, and its "
                    f"workers drop its state within {LEASE_SECONDS:g} s") from exc
            with lost_silos_named(client, X, placement):
                return unpack_reply(answer)
    finally:
        if not coordinated:
            for dropped in [fit_id] + eval_ids:
                _drop_fit(client, dropped)


def _load_fit(client, inputs, objective, capability, *, n_partitions, n_threads, categories):
    """Load the rows of a fit and of its private evaluation sets (:func:`load_partitions`).

    Parameters
    ----------
    inputs : list of (fit id, X, y)
        The fit's own first.
    categories : list of (list or None) or None
        The fit's public category lists (a silo table's silos encode their features).

    Returns
    -------
    placement, sources
        Of the fit's rows.
    evaluations : list of [fit id, placement, sources]
        Of each evaluation set.
    reloads : dict of str -> dict
        Fit id -> the blocks of its dask inputs, by partition (they stay in this process).
    """
    loaded, reloads = [], {}
    for load_id, X, y in inputs:
        *where, reloads[load_id] = load_partitions(
            client, X, y, objective, load_id, capability, n_partitions=n_partitions,
            n_threads=n_threads, categories=categories)
        loaded.append([load_id, *where])
    return loaded[0][1], loaded[0][2], loaded[1:], reloads


@contextmanager
def progress_display(client, verbose, n_trees, callbacks=()):
    """The topic the coordinator sends progress to (None when neither ``verbose`` nor
    ``callbacks``), shown by a :class:`~dpxgb_dask.progress.ProgressDisplay` (a widget in a
    notebook, else text) and given to each callback.

    The handler is set on the client only (``Client._event_handlers``): subscribing through
    the scheduler would leave a topic there after the fit. A callback's exception is raised
    once the fit ended (the fit's releases are made all the same).
    """
    if not verbose and not callbacks:
        yield None
        return
    topic = f"dpxgb-progress-{uuid.uuid4().hex}"
    display = ProgressDisplay(n_trees) if verbose else None
    failures = []
    done = threading.Event()

    def handle(event):
        if display is not None:
            display(event)
        message = event
        for callback in callbacks:
            try:
                callback(dict(message))
            except Exception as exc:  # (raised in the user's thread, after the fit)
                failures.append(exc)
        if event.get("event") == "done":
            done.set()

    client._event_handlers[topic] = handle
    try:
        yield topic
    except BaseException as exc:
        if display is not None:
            display.close(error=exc)
        raise
    else:
        # The events and the reply travel on different comms: let "done" reach the display
        # and every callback before the fit returns.
        done.wait(timeout=KEEPALIVE_SECONDS)
        if display is not None:
            display.wait_done(timeout=KEEPALIVE_SECONDS)
            display.close()
    finally:
        client._event_handlers.pop(topic, None)
    if failures:
        raise failures[0]


@contextmanager
def reload_service(client, capability, reloads):
    """The topic on which the scheduler asks this client to load a partition of dask
    inputs again (its worker was lost), or None when no partition comes from dask inputs.

    The load task runs on the cluster from the blocks' graph, which never leaves the client
    (the scheduler receives no graph, nor any other code, from a fit); the client answers
    with the worker that holds the partition now (``dpxgb_reloaded``).

    Parameters
    ----------
    client : distributed.Client
    capability : bytes
    reloads : dict of str -> dict of int -> tuple
        Fit id -> partition -> ``(x_block, target_blocks, objective, n_threads)``
        (:func:`load_partitions`).
    """
    if not any(reloads.values()):
        yield None
        return
    topic = f"dpxgb-reload-{uuid.uuid4().hex}"
    digest = capability_digest(capability)

    async def reload(fit_id, index):
        address = error = None
        try:
            x_block, target_blocks, objective, n_threads = reloads[fit_id][index]
            future = client.compute(load_task_delayed(
                x_block, target_blocks, PartitionLoad(fit_id, digest, index, objective, n_threads)))
            address = await future
        except Exception as exc:  # (its message names arguments, never values)
            error = f"{type(exc).__name__}: {exc}"
        try:
            await client.scheduler.dpxgb_reloaded(fit=fit_id, capability=capability,
                                                  index=index, address=address, error=error)
        except OSError:
            pass  # the scheduler went away: the fit's own call says so

    def handle(event):
        # (a task: the client's other events go on meanwhile)
        asyncio.ensure_future(reload(event.get("fit"), event.get("index")))

    client._event_handlers[topic] = handle
    try:
        yield topic
    finally:
        client._event_handlers.pop(topic, None)


def _touch_fit(client, fit_id, capability, placement):
    """Renew the fit's lease on the workers that hold its partitions."""
    async def touch():
        try:
            await asyncio.wait_for(client.scheduler.broadcast(
                msg={"op": "dpxgb_call", "fit": fit_id, "capability": capability,
                     "payload": encode(Touch())}, workers=list(placement),
                on_error="ignore"),
                KEEPALIVE_SECONDS)
        except asyncio.TimeoutError:
            pass  # a worker that left: the coordinator will say so

    client.sync(touch)


def _drop_fit(client, fit_id):
    """Ask every worker to drop the fit (after a failure before the coordinator ran)."""
    async def drop():
        try:
            await asyncio.wait_for(client.scheduler.broadcast(
                msg={"op": "dpxgb_call", "fit": fit_id, "payload": encode(Drop())},
                on_error="ignore"),
                5 * KEEPALIVE_SECONDS)
        except asyncio.TimeoutError:
            pass  # unreachable workers: their leases expire

    client.sync(drop)


def _row_chunks(n_rows, n_chunks):
    bounds = np.linspace(0, n_rows, n_chunks + 1).round().astype(int)
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def load_partitions(client, X, y, objective, fit_id, capability, *, n_partitions=None,
                    n_threads=1, categories=None):
    """Load validated row partitions of X and its targets into the fit's states on the
    workers.

    Parameters
    ----------
    client : distributed.Client
    X : ndarray, pandas.DataFrame, dask.array.Array, dask.dataframe.DataFrame or SiloTable
        Shape (n_rows, n_features), numeric; NaN marks missing values. A
        :class:`~dpxgb_dask.silo_table.SiloTable` is loaded by its silos
        (:func:`~dpxgb_dask.cluster.silo_loading.load_silos`).
    y : Targets, or None with a silo table
        The rows' :class:`~dpxgb_dask.inputs.Targets` (in-memory or dask fields, as X).
    objective : Objective
    fit_id : str
    capability : bytes
        The fit's secret (:mod:`~dpxgb_dask.cluster.worker`).
    n_partitions : int, optional
        For NumPy / pandas inputs: number of row chunks (default: one per worker).
    n_threads : int
    categories : list of (list or None), optional
        A silo table's: the fit's public category lists.

    Returns
    -------
    placement : dict of str -> list of int
        Worker address -> indices of the partitions it holds.
    sources : dict of int -> list
        Where each partition is rebuilt from if its worker is lost: ``["replica",
        worker address]`` (NumPy, pandas: a copy loaded on another worker), or
        ``["client"]`` (dask: this client runs the load task again, :func:`reload_service`).
    reloads : dict of int -> tuple
        Dask inputs: partition -> ``(x_block, target_blocks, objective, n_threads)``, the
        blocks' graph, which stays in this process; empty otherwise.

    Raises
    ------
    ValueError
        From the checks of :func:`~dpxgb_dask.partition.state.make_part` on any
        partition.
    """
    if isinstance(X, SiloTable):
        _workers(client)  # (waits for a first worker)
        return load_silos(client, X, y, objective, fit_id, capability, n_threads=n_threads,
                          categories=categories)
    check_lengths(X, y.label)
    if is_dask_collection(X) or is_dask_collection(y.label):
        return _load_dask(client, X, y, objective, fit_id, capability, n_threads=n_threads)
    return _load_local(client, X, y, objective, fit_id, capability, n_partitions=n_partitions,
                       n_threads=n_threads)


def _workers(client):
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        try:
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_SECONDS)
        except TimeoutError:
            raise RuntimeError(f"the Dask cluster has no workers (waited "
                               f"{WAIT_FOR_WORKERS_SECONDS} s)") from None
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    return workers


def _load_local(client, X, y, objective, fit_id, capability, *, n_partitions, n_threads):
    workers = _workers(client)
    # (sparse rows stay sparse until a worker's make_part: row slices of CSR are cheap)
    X_values = X.tocsr() if is_sparse(X) else float_values(X, "X")
    labels = float_values(y.label, "y")
    n_chunks = int(n_partitions) if n_partitions else len(workers)
    if not isinstance(n_chunks, numbers.Integral) or n_chunks < 1:
        raise ValueError(f"n_partitions must be a positive integer, got {n_partitions!r}")
    placement = {}
    messages = []
    sources = {}
    for i, (a, b) in enumerate(_row_chunks(X_values.shape[0], n_chunks)):
        worker = workers[i % len(workers)]
        placement.setdefault(worker, []).append(i)
        # A second copy of the rows on the next worker, from which the partition is rebuilt
        # if its worker is lost (the client may be gone, or far away, by then).
        holders = [(worker, False)]
        if len(workers) > 1:
            sources[i] = ["replica", workers[(i + 1) % len(workers)]]
            holders.append((sources[i][1], True))
        for holder, replica in holders:
            # (the rows in Dask's own frames: NumPy's serialisation, without a copy)
            messages.append((holder, {"op": "dpxgb_call", "fit": fit_id,
                                      "capability": capability,
                                      "payload": encode(LoadRows(i, objective, n_threads,
                                                                 replica)),
                                      "rows": to_serialize(X_values[a:b]),
                                      "labels": _rows_of(labels, a, b),
                                      "weights": _rows_of(y.weight, a, b),
                                      "margins": _rows_of(y.margin, a, b)}))

    async def push():
        return await asyncio.gather(*(client.scheduler.broadcast(msg=msg, workers=[worker])
                                      for worker, msg in messages))

    for replies in client.sync(push):
        for reply in replies.values():
            unpack_reply(reply)
    return placement, sources, {}


def _rows_of(values, start, stop):
    """Rows ``start:stop`` of a target field in Dask's own frames (None stays None)."""
    return None if values is None else to_serialize(values[start:stop])


def _frame_blocks(X, y):
    """Row blocks of a dask DataFrame ``X`` and of its targets' series and frames
    (``y``: :class:`~dpxgb_dask.inputs.Targets`), cut the same way.

    Taken apart, each collection is optimised on its own, and dask may fuse the
    partitions of a projection (``ddf["y"]`` of a Parquet read) differently from the
    other's; joined into one frame first, all come from the same blocks. Only
    collections with X's partitions (count and divisions) are joined, partition by
    partition: others keep their own blocks (and the count check of the caller), never a
    join on the index that could pair a row with another row's label.

    Returns
    -------
    x_blocks : list of dask.delayed.Delayed
    target_blocks : list of Targets of dask.delayed.Delayed
    """
    fields = y.fields()
    if any(X.npartitions != v.npartitions or tuple(X.divisions) != tuple(v.divisions)
           for v in fields.values()):
        blocks = {name: list(values.to_delayed()) for name, values in fields.items()}
        return list(X.to_delayed()), [Targets(**dict(zip(blocks, parts)))
                                      for parts in zip(*blocks.values())]
    prefix = "__dpxgb_"
    while any(str(c).startswith(prefix) for c in X.columns):
        prefix += "_"
    columns = {}  # field -> its column names in the joined frame
    for name, values in fields.items():
        parts = [values[c] for c in values.columns] if getattr(values, "ndim", 1) == 2 \
            else [values]
        columns[name] = [f"{prefix}{name}_{k}" for k in range(len(parts))]
        X = X.assign(**dict(zip(columns[name], parts)))
    blocks = X.to_delayed()
    joined = [c for names in columns.values() for c in names]
    return ([b.drop(columns=joined) for b in blocks],
            [Targets(**{name: b[names] if name == "margin" and len(names) > 1 else b[names[0]]
                        for name, names in columns.items()}) for b in blocks])


def _load_dask(client, X, y, objective, fit_id, capability, *, n_threads):
    if not (is_dask_collection(X) and is_dask_collection(y.label)):
        raise ValueError("X and y must both be dask collections, or neither")
    if not hasattr(X, "chunks") and not hasattr(y.label, "chunks"):  # DataFrame and Series
        x_blocks, y_blocks = _frame_blocks(X, y)
    else:
        if hasattr(X, "chunks"):  # dask array
            X = X.rechunk({1: -1})
            x_blocks = list(X.to_delayed().ravel())
        else:
            x_blocks = list(X.to_delayed())
        blocks = {name: _row_blocks(values, X) for name, values in y.fields().items()}
        if len({len(b) for b in blocks.values()}) != 1:
            raise ValueError("sample_weight and base_margin must have the partitions of y")
        y_blocks = [Targets(**dict(zip(blocks, parts))) for parts in zip(*blocks.values())]
    if len(x_blocks) != len(y_blocks):
        raise ValueError(f"X and y must have the same row partitions, got {len(x_blocks)} "
                         f"and {len(y_blocks)} partitions")
    digest = capability_digest(capability)
    futures = client.compute([
        load_task_delayed(xb, yb, PartitionLoad(fit_id, digest, i, objective, n_threads))
        for i, (xb, yb) in enumerate(zip(x_blocks, y_blocks))])
    try:
        addresses = client.gather(futures)  # raises the first worker error (its own type)
    finally:
        client.cancel(futures, force=True)
    placement = {}
    for i, address in enumerate(addresses):
        placement.setdefault(address, []).append(i)
    # A lost partition is loaded again from its blocks' graph (recomputed by Dask), by this
    # client when the scheduler asks (reload_service).
    reloads = {i: (xb, yb, objective, n_threads)
               for i, (xb, yb) in enumerate(zip(x_blocks, y_blocks))}
    return placement, {i: ["client"] for i in reloads}, reloads


def _row_blocks(values, X):
    """The row blocks of one target field (a dask array, chunked as the rows of a dask
    array ``X`` where both chunkings are known, or a dask series or frame)."""
    if not hasattr(values, "chunks"):
        return list(values.to_delayed())
    if hasattr(X, "chunks") and not any(np.isnan(c) for c in X.chunks[0]) \
            and not any(np.isnan(c) for c in values.chunks[0]):
        values = values.rechunk({0: X.chunks[0]})
    if values.ndim == 2:  # (K margins: one block per row block)
        values = values.rechunk({1: -1})
    return list(values.to_delayed().ravel())
