"""The user's process never receives an exact (un-noised) aggregate.

The scheduler and the workers run in subprocesses; every message the user's process
decodes (``distributed.protocol.loads``, and the dpxgb replies inside them) is recorded. The exact root histogram of the first
tree is recomputed here, and none of its gradient or hessian sums may appear among the
numbers received, while the model's DP leaf values must (the spy works). The same holds
for a private evaluation set: its exact loss sums never arrive, its DP scores do.
"""
import numpy as np
import pytest

import distributed
from dpxgb_dask.inputs import Targets
from dpxgb_dask import train
from dpxgb_dask.partition import messages, state as partition
from dpxgb_dask.partition.aggregates import round_loss_sums
from dpxgb_dask.boosting.candidates import uniform_cuts
from dpxgb_dask.objective import Objective

SEED = 2**200 + 7


#: Dask's host metrics of a worker (CPU percent, memory...), sent with ``scheduler_info``:
#: public machine data, whose values (a CPU share of 12.5%) can equal a small exact sum.
_HOST_METRICS = "metrics"


def _numbers(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == _HOST_METRICS:
                continue
            _numbers(k, out)
            _numbers(v, out)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            _numbers(v, out)
    elif isinstance(obj, np.ndarray):
        if obj.dtype.names:
            for name in obj.dtype.names:
                _numbers(obj[name], out)
        elif obj.dtype.kind in "fiu":
            out.update(float(v) for v in obj.ravel())
    elif isinstance(obj, (float, np.floating)):
        out.add(float(obj))
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        _numbers(vars(obj), out)


@pytest.mark.slow
def test_client_process_never_receives_an_exact_aggregate(monkeypatch, tmp_path):
    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    rng = np.random.default_rng(5)
    X = rng.normal(size=(3001, 4))
    y = (X[:, 0] + rng.normal(size=3001) > 0).astype(float)
    X_val = rng.normal(size=(1003, 4))
    y_val = (X_val[:, 0] + rng.normal(size=1003) > 0).astype(float)
    bounds = np.tile([-4.0, 4.0], (4, 1))
    params = {"feature_bounds": bounds, "epsilon": 1.0, "random_state": SEED,
              "n_estimators": 3, "max_depth": 3, "split_method": "noisy_histogram",
              "gradient_bound": 0.3, "hessian_bound": 0.25, "max_bin": 16}

    received = []
    original = distributed.protocol.loads

    def spy(*args, **kwargs):
        message = original(*args, **kwargs)
        received.append(message)
        return message

    monkeypatch.setattr(distributed.protocol, "loads", spy)
    # dpxgb's own replies (the model, load acknowledgements) are codec bytes inside messages.
    from dpxgb_dask.cluster import client as cluster_client
    from dpxgb_dask.cluster.wire import unpack_reply

    def unpack_spy(reply):
        result = unpack_reply(reply)
        received.append(result)
        return result

    monkeypatch.setattr(cluster_client, "unpack_reply", unpack_spy)
    # The scheduler and worker processes start in the working directory: keep them out of
    # the checkout, whose uncompiled sources would shadow the installed package.
    monkeypatch.chdir(tmp_path)
    with SubprocessCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        scores = {}
        booster = train(params, X, y, client=client, verbose=True,
                        evals=[(X_val, y_val)], evals_result=scores)
    monkeypatch.setattr(distributed.protocol, "loads", original)

    numbers = set()
    for message in received:
        _numbers(message, numbers)

    # Tree 0's exact root histogram, recomputed locally (same cuts, gradients at margin 0).
    state = partition.load_partition(X, Targets(y), Objective("binary:logistic"), 0)
    state.prepare(messages.Prepare(bounds, uniform_cuts(bounds, 16), 16, 0.0, {0: 0}))
    root = state.run(messages.Round(seq=1, start_tree=messages.TreeStart(0, (0.0, 2.0), 0.3, "clip", 0.25),
                               histogram_nodes=np.array([0])))[0]
    # Distinctive values only: small round numbers (0.25 k for tiny bins) also occur in
    # unrelated metadata. Gradient sums are multiples of the quantised 0.3.
    g_sums = np.append(root["sum_gradients"].ravel(), state.gradients.astype(np.float64).sum())
    h_sums = np.append(root["sum_hessians"].ravel(), state.hessians.astype(np.float64).sum())
    exact = {v for v in g_sums.tolist() if abs(v) > 1.0}
    exact |= {v for v in h_sums.tolist() if v > 10.0 and v != round(v)}
    assert len(exact) > 10
    leaked = exact & numbers
    assert not leaked, f"exact aggregates reached the user's process: {sorted(leaked)[:5]}"
    # Positive control: the DP leaf values did arrive through the spied channel.
    leaves = booster.nodes["value"][booster.nodes["left"] < 0]
    assert set(leaves.tolist()) <= numbers

    # The evaluation set's exact query, and the exact scores, recomputed from the model.
    sums = round_loss_sums(partition.RawPart(X_val, y_val), booster, ["logloss"], 3)
    exact_scores = sums[:-1] / sums[-1] * np.log(100.0)
    exact_values = set(sums[:-1].tolist()) | set(exact_scores.tolist())
    assert len(exact_values) == 6
    assert not exact_values & numbers, "exact evaluation sums reached the user's process"
    assert set(scores["validation_0"]["logloss"]) <= numbers
