"""A round travels down a tree of the workers and its results are summed up it
(dpxgb_dask/cluster/reduction.py): the coordinator's calls and the bytes reaching it per
level do not grow with the number of workers, the tree is the documented heap, and a lost
worker is recovered from wherever it sits in it."""
import threading
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster

from dpxgb_dask import train
from dpxgb_dask.cluster.reduction import neighbours, reduction_order

PARAMS = dict(epsilon=1.0, split_method="noisy_histogram", n_estimators=3, max_depth=4,
              max_bin=32, feature_bounds=[(-5.0, 5.0)] * 8)


def _data(n_rows=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 8))
    return X, (X[:, 0] + X[:, 1] > 0).astype(float)


def test_heap_order_and_neighbours():
    # the coordinator is position 0 of the heap; c and b answer it, a and d send to c
    placement = {"tcp://b": [0, 1], "tcp://a": [2], "tcp://c": [3, 4, 5], "tcp://d": [6],
                 "tcp://e": [7]}
    order = reduction_order(placement)
    assert order == ("tcp://c", "tcp://b", "tcp://a", "tcp://d", "tcp://e")
    assert neighbours(order, "tcp://c") == (None, ["tcp://a", "tcp://d"])
    assert neighbours(order, "tcp://b") == (None, ["tcp://e"])
    assert neighbours(order, "tcp://a") == ("tcp://c", [])
    assert neighbours(order, "tcp://e") == ("tcp://b", [])
    assert neighbours(("tcp://x",), "tcp://x") == (None, [])


def _counts(n_workers):
    """Timings of two fits (3 and 6 trees) on ``n_workers`` workers."""
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X, y = _data()
        return [train(dict(PARAMS, n_estimators=trees), X, y, client=client,
                      n_partitions=n_workers, return_timings=True)[1] for trees in (3, 6)]


def test_the_coordinators_messages_do_not_grow_with_the_workers():
    """Per round, two calls (to the tree's roots) and two partial sums back, whether the
    fit has 2 workers or 8: the round travels down the tree, its sums up it."""
    two, eight = _counts(2), _counts(8)
    # (the same two sums; their row counts are encoded in a few more bytes or fewer)
    assert np.all(np.abs(np.subtract(eight[1]["bytes_per_level"],
                                     two[1]["bytes_per_level"])) <= 16)
    for three_trees, six_trees in (two, eight):
        rounds = six_trees["rounds"] - three_trees["rounds"]
        assert rounds == 3 * PARAMS["max_depth"]
        assert six_trees["worker_calls"] - three_trees["worker_calls"] == 2 * rounds


def _running(client):
    def running(dask_scheduler=None):
        plugin = dask_scheduler.plugins.get("dpxgb")
        return list(plugin.running) if plugin is not None else []

    return client.run_on_scheduler(running)


#: The kill tests' fit: 60 trees of depth 5 on 20,000 rows in 4 partitions, noise keyed.
KILLED_FIT = dict(PARAMS, n_estimators=60, max_depth=5, random_state=2**130 + 5,
                  reproducible_noise=True)


@pytest.fixture(scope="module")
def four_workers():
    """A LocalCluster of 4 worker processes shared by the kill tests (each killed worker's
    nanny starts a fresh one, which the next test waits for), its client, and the model
    of :data:`KILLED_FIT` without a kill."""
    import dask

    # (as the session's cluster: a kill's lost-worker check must not close the nanny of
    # the worker that replaced it)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "1h"}), \
            LocalCluster(n_workers=4, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as cluster, Client(cluster) as client:
        X, y = _data(20_000, seed=1)
        yield client, X, y, train(KILLED_FIT, X, y, client=client, n_partitions=4)


@pytest.mark.parametrize("victim", ["root", "inner", "leaf"])
def test_a_lost_worker_is_recovered_from_wherever_it_sits_in_the_tree(victim, four_workers):
    # 4 workers, one partition each, in sorted order below the coordinator: the first
    # ("root") answers it for itself and its two children (the third and the leaf, the
    # fourth); the second ("inner") answers it alone
    import os
    import signal

    client, X, y, reference = four_workers
    client.wait_for_workers(4, timeout=60)
    outcome = {}

    def fit():
        try:
            outcome["result"] = train(KILLED_FIT, X, y, client=client, n_partitions=4,
                                      return_timings=True)
        except Exception as exc:  # reported below
            outcome["error"] = exc

    thread = threading.Thread(target=fit)
    thread.start()
    deadline = time.monotonic() + 60
    while not _running(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    pids = client.run(os.getpid)
    order = sorted(pids)
    target = {"root": order[0], "inner": order[1], "leaf": order[3]}[victim]
    os.kill(pids[target], signal.SIGKILL)
    thread.join(120)
    assert "error" not in outcome, outcome.get("error")
    model, timings = outcome["result"]
    assert timings["recoveries"] == 1, "the kill did not land mid-fit"
    assert model.to_dict() == reference.to_dict()
