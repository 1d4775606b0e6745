"""A round's results are summed among the workers (dpxgb_dask/cluster/reduction.py): the
bytes reaching the coordinator per level do not grow with the number of workers, the tree
is the documented heap, and a lost worker is recovered from wherever it sits in it."""
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


def _bytes_per_level(n_workers):
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X, y = _data()
        _, timings = train(PARAMS, X, y, client=client, n_partitions=n_workers,
                           return_timings=True)
        return np.array(timings["bytes_per_level"])


def test_bytes_reaching_the_coordinator_do_not_grow_with_the_workers():
    two, eight = _bytes_per_level(2), _bytes_per_level(8)
    assert two.shape == eight.shape
    # two partial sums per level, plus a few bytes of acknowledgement per other worker
    assert np.all(eight <= two + 6 * 200)


def _running(client):
    def running(dask_scheduler=None):
        plugin = dask_scheduler.plugins.get("dpxgb")
        return list(plugin.running) if plugin is not None else []

    return client.run_on_scheduler(running)


@pytest.mark.parametrize("victim", ["root", "inner", "leaf"])
def test_a_lost_worker_is_recovered_from_wherever_it_sits_in_the_tree(victim):
    # 4 workers, one partition each, in sorted order below the coordinator: the first
    # ("root") answers it for itself and its two children (the third and the leaf, the
    # fourth); the second ("inner") answers it alone
    import os
    import signal

    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X, y = _data(20_000, seed=1)
        params = dict(PARAMS, n_estimators=60, max_depth=5, random_state=2**130 + 5,
                      reproducible_noise=True)
        reference = train(params, X, y, client=client, n_partitions=4)
        outcome = {}

        def fit():
            try:
                outcome["result"] = train(params, X, y, client=client, n_partitions=4,
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
