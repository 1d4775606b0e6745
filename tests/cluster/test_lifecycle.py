"""What a fit leaves behind, and how it ends: client death, twenty fits in a row, two
clients at once, a restart in the middle of a fit."""
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import numpy as np
import pytest

from dpxgb_dask import train
from dpxgb_dask.cluster.worker import fits_on

LONG = {"split_method": "noisy_histogram", "n_estimators": 300, "max_depth": 6,
        "epsilon": 1.0}
#: How long a test waits for a state before failing: the waits poll, so the deadline only
#: bounds a hang (tests assert on states, never on times: issue 40).
DEADLINE_S = 300


def _running(client):
    """Fits whose coordinator runs on the scheduler."""
    def running(dask_scheduler=None):
        plugin = dask_scheduler.plugins.get("dpxgb")
        return list(plugin.running) if plugin is not None else []

    return client.run_on_scheduler(running)


def _fit_in_background(*args, **kwargs):
    """Start ``train(*args, **kwargs)`` in a thread; the outcome dict gets "result" or
    "error", then "end" (a ``time.monotonic()``)."""
    outcome = {}

    def fit():
        try:
            outcome["result"] = train(*args, **kwargs)
        except Exception as exc:
            outcome["error"] = exc
        outcome["end"] = time.monotonic()

    thread = threading.Thread(target=fit)
    thread.start()
    return thread, outcome


def _fits(client):
    return {w: f for w, f in client.run(lambda dask_worker: fits_on(dask_worker.address)).items()
            if f}


def _wait_for(predicate, timeout):
    """Seconds until ``predicate()`` held, or None after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


def _scheduler_snapshot(dask_scheduler=None):
    def not_ours(event):  # this very run_on_scheduler call logs a "run-function" event
        return not (isinstance(event[1], dict) and event[1].get("action") == "run-function")

    return {
        "clients": sorted(dask_scheduler.clients),
        "topics": {k: sum(map(not_ours, v)) for k, v in dask_scheduler.get_events().items()},
        "tasks": len(dask_scheduler.tasks),
        "datasets": len(dask_scheduler.extensions["publish"].datasets),
    }


def test_a_dead_client_stops_its_fit_and_leaves_nothing(cluster, client, tmp_path,
                                                         classification_data):
    X, y, bounds = classification_data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "bounds.npy", bounds)
    script = textwrap.dedent(f"""
        import numpy as np
        from distributed import Client
        from dpxgb_dask import train
        X, y, bounds = (np.load(f) for f in ("X.npy", "y.npy", "bounds.npy"))
        with Client({cluster.scheduler_address!r}) as client:
            train(dict({LONG!r}, feature_bounds=bounds), X, y, client=client)
    """)
    before = client.run_on_scheduler(_scheduler_snapshot)
    # Started outside the checkout: its uncompiled sources must not shadow the package.
    child = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path)
    try:
        assert _wait_for(lambda: _running(client), 60) is not None, "the fit never started"
        time.sleep(0.5)  # mid-fit
        assert child.poll() is None, "the fit ended before the client was killed"
        child.kill()
        child.wait()
        killed = time.monotonic()
        gone = _wait_for(lambda: not _fits(client), 5.0)
        assert gone is not None, "workers still hold the fit 5 s after its client died"
        clean = _wait_for(lambda: client.run_on_scheduler(_scheduler_snapshot)["clients"]
                          == before["clients"], 5.0 - (time.monotonic() - killed))
        assert clean is not None
    finally:
        child.kill()
    after = client.run_on_scheduler(_scheduler_snapshot)
    assert after["tasks"] == 0 and after["datasets"] == 0


def _workers_rss(client):
    import gc

    def rss(dask_worker=None):
        import psutil

        gc.collect()
        return psutil.Process().memory_info().rss

    return client.run(rss)


def test_twenty_fits_leave_the_scheduler_and_workers_as_they_found_them(client, seed,
                                                                         classification_data):
    X, y, bounds = classification_data
    params = {"feature_bounds": bounds, "random_state": seed, "n_estimators": 4,
              "max_depth": 3, "split_method": "noisy_histogram"}
    for _ in range(3):  # warm up: imports, the worker plugin (registered once per cluster)
        train(params, X, y, client=client)
    before = client.run_on_scheduler(_scheduler_snapshot)
    rss_before = _workers_rss(client)
    for i in range(20):
        train(dict(params, random_state=seed + i), X, y, client=client, verbose=i % 2 == 0)
    assert client.run_on_scheduler(_scheduler_snapshot) == before
    assert not _fits(client)
    rss_after = _workers_rss(client)
    for worker, rss in rss_after.items():
        assert rss <= 1.05 * rss_before[worker], (worker, rss_before[worker], rss)


def test_two_clients_at_once_each_get_the_model_they_get_alone(cluster, client, seed,
                                                              classification_data):
    from distributed import Client

    X, y, bounds = classification_data
    jobs = {
        "a": ({"feature_bounds": bounds, "random_state": seed,
               "reproducible_noise": True, "n_estimators": 30,
               "max_depth": 3, "split_method": "noisy_histogram"}, X, y),
        "b": ({"feature_bounds": bounds, "random_state": seed + 1,
               "reproducible_noise": True, "n_estimators": 40,
               "max_depth": 4}, X[::-1], y[::-1]),
    }
    alone = {name: train(*job, client=client) for name, job in jobs.items()}
    together, errors = {}, []

    def run(name):
        try:
            with Client(cluster.scheduler_address) as own:
                together[name] = train(*jobs[name], client=own)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for name in jobs:
        assert together[name] == alone[name]
        assert together[name].to_dict() == alone[name].to_dict()


@pytest.mark.slow
def test_a_restart_during_a_fit_ends_it_with_an_error_that_says_so(client, seed,
                                                                  classification_data):
    X, y, bounds = classification_data
    thread, outcome = _fit_in_background(dict(LONG, feature_bounds=bounds, random_state=seed),
                                         X, y, client=client)
    assert _wait_for(lambda: _running(client), DEADLINE_S) is not None
    client.restart()
    thread.join(DEADLINE_S)  # (a deadline for a hang, not a speed: it ends long before)
    assert not thread.is_alive()
    assert outcome.get("error") is not None and "result" not in outcome
    assert "restart" in str(outcome["error"]) or "lost" in str(outcome["error"]), \
        "".join(traceback.format_exception(outcome["error"]))
    assert not _fits(client)


def _inputs(kind, X, y):
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    if kind == "numpy":
        return X, y
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    if kind == "pandas":
        return frame, pd.Series(y)
    if kind == "dask_array":
        return da.from_array(X, chunks=(1000, X.shape[1])), da.from_array(y, chunks=1000)
    return dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y), npartitions=3)


@pytest.mark.parametrize("kind", ["numpy", "pandas", "dask_array", "dask_frame",
                                  "numpy_multiclass", "numpy_filtered",
                                  "numpy_categorical_pr", "numpy_tree_sketch",
                                  "numpy_private_eval"])
def test_a_worker_killed_mid_fit_changes_nothing(client, seed, classification_data, kind):
    """The fit finishes after a worker is killed, with the very model (and ledger) of an
    undisturbed fit: the lost partitions are rebuilt and the interrupted round replayed
    (multiclass: the class gradients of the round are recomputed where they were lost;
    with an individual Rényi filter, every row's divergence so far; partially random
    splits on sets of categories; a DP sketch of each tree's rows; a private evaluation
    set, whose lost partitions are rebuilt when it is scored)."""
    import os
    import signal

    X, y, bounds = classification_data
    params = {"feature_bounds": bounds, "random_state": seed,
              "reproducible_noise": True, "n_estimators": 150,
              "max_depth": 4, "split_method": "noisy_histogram"}
    if kind == "numpy_multiclass":
        kind, y = "numpy", y + (X[:, 1] > 0)  # classes 0, 1, 2
        params.update(objective="multi:softprob", num_class=3, n_estimators=50,
                      batch_size=2)
    if kind == "numpy_filtered":
        kind = "numpy"
        params.update(n_estimators=50, filter_rounds=100, accountant="rdp")
    if kind == "numpy_categorical_pr":  # feature 5 as the codes of 6 public categories
        kind, X = "numpy", X.copy()
        X[:, 5] = np.where(np.isnan(X[:, 5]), np.nan, np.floor(np.clip(X[:, 5] + 3, 0, 5.5)))
        params.update(split_method="partially_random",
                      categories=[None] * 5 + [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]])
    if kind == "numpy_tree_sketch":
        kind = "numpy"
        params.update(preset="dp-xgboost", split_method="exponential", n_estimators=100,
                      epsilon=10.0)
    evaluation = {}
    if kind == "numpy_private_eval":
        kind, evaluation = "numpy", {"evals": [(X[:3000], y[:3000])]}
    scores = [{}, {}]
    undisturbed = train(params, *_inputs(kind, X, y), client=client, **evaluation,
                        evals_result=scores[0])
    thread, outcome = _fit_in_background(params, *_inputs(kind, X, y), client=client,
                                         return_timings=True, **evaluation,
                                         evals_result=scores[1])
    assert _wait_for(lambda: _running(client), 60) is not None
    time.sleep(0.3)
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    thread.join(120)
    client.wait_for_workers(2, timeout=60)
    assert "error" not in outcome, outcome.get("error")
    model, timings = outcome["result"]
    assert timings["recoveries"] == 1, "the kill did not land mid-fit"
    assert model.to_dict() == undisturbed.to_dict()
    assert scores[0] == scores[1] and len(scores[0]) == len(evaluation.get("evals", []))
    assert _wait_for(lambda: not _fits(client), 5.0) is not None


def test_a_call_to_a_worker_that_left_the_cluster_ends_with_worker_lost(monkeypatch):
    """A call in flight is checked every ``WORKER_CHECK_SECONDS``: a call to a worker that
    left the cluster without closing its connection (a hung process) ends with a
    ``WorkerLost`` naming it; a call to a worker still there goes on, and when its round
    is cancelled it is cancelled, not lost."""
    import asyncio
    from types import SimpleNamespace

    from dpxgb_dask.cluster import backend as bk

    monkeypatch.setattr(bk, "WORKER_CHECK_SECONDS", 0.01)

    class HungWorker:
        async def dpxgb_call(self, **kwargs):
            await asyncio.sleep(3600)

    async def scenario():
        workers = {"tcp://a:1": None, "tcp://b:2": None}
        scheduler = SimpleNamespace(workers=workers, rpc=lambda address: HungWorker())
        backend = bk.DaskBackend(scheduler, "fit", b"c" * 32,
                                 {"tcp://a:1": [0], "tcp://b:2": [1]})
        lost = asyncio.ensure_future(backend._call("tcp://a:1", b"x"))
        kept = asyncio.ensure_future(backend._call("tcp://b:2", b"x"))
        await asyncio.sleep(0.05)
        assert not lost.done() and not kept.done()
        del workers["tcp://a:1"]
        with pytest.raises(bk.WorkerLost, match=r"worker tcp://a:1 holding partitions \[0\]"):
            await asyncio.wait_for(lost, 5)
        await asyncio.sleep(0.05)
        assert not kept.done()
        kept.cancel()
        with pytest.raises(asyncio.CancelledError):
            await kept

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_lost_scheduler_ends_the_fit_with_an_error_that_says_so(tmp_path, monkeypatch,
                                                                 classification_data):
    import os
    import signal

    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    from dpxgb_dask.cluster.wire import SchedulerLostError

    X, y, bounds = classification_data
    monkeypatch.chdir(tmp_path)  # subprocesses must not import the checkout's sources
    cluster = SubprocessCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
    client = Client(cluster)
    try:
        client.wait_for_workers(2, timeout=60)
        thread, outcome = _fit_in_background(dict(LONG, feature_bounds=bounds), X, y,
                                             client=client)
        assert _wait_for(lambda: _running(client), 60) is not None
        pid = client.run_on_scheduler(os.getpid)
        os.kill(pid, signal.SIGKILL)
        thread.join(DEADLINE_S)  # (a deadline for a hang, not a speed)
        assert not thread.is_alive()
        assert isinstance(outcome.get("error"), SchedulerLostError), outcome
        assert "scheduler" in str(outcome["error"])
    finally:
        client.close(timeout=5)
        try:  # (its nannies close about 2 s after the scheduler dies)
            cluster.close(timeout=4)
        except Exception:
            pass  # the scheduler is gone already: the close times out
