"""Warnings the coordinator raises on the scheduler reach a remote client as the same
class (issue 13, item 4): here the scheduler is another process."""
import warnings

import numpy as np
import pytest

from dpxgb_dask import PrivacyLeakWarning, train
from dpxgb_dask import DPBoundsWarning


def test_scheduler_warnings_reach_a_remote_client(monkeypatch, tmp_path):
    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    X[:, 2] = np.nan  # nothing for the DP bounds estimate to find: a public fallback
    y = (X[:, 0] > 0).astype(float)
    # The subprocesses start in the working directory: keep the checkout's uncompiled
    # sources off their path.
    monkeypatch.chdir(tmp_path)
    with SubprocessCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(1, timeout=60)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train({"bounds_epsilon": 1.0, "epsilon": 2.0, "random_state": 12345,
                   "reproducible_noise": True, "n_estimators": 2, "max_depth": 2}, X, y,
                  client=client)
    raised = [(w.category, str(w.message)) for w in caught]
    assert any(c is DPBoundsWarning and "features [2]" in m for c, m in raised), raised
    # the short seed is checked by the coordinator's noise source, on the scheduler
    assert any(c is PrivacyLeakWarning and "bits" in m for c, m in raised), raised
    assert any(c is PrivacyLeakWarning and "reproducible_noise" in m for c, m in raised)
    # emitted once, in this process, where the user called train()
    assert sum(c is DPBoundsWarning for c, _ in raised) == 1
    assert all(w.filename.endswith("test_remote_warnings.py") for w in caught
               if w.category is DPBoundsWarning)


def test_in_process_training_emits_the_same_warnings(seed):
    from dpxgb_dask.params import resolve_params
    from dpxgb_dask.training import train_in_process

    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 2))
    X[:, 1] = np.nan
    # (reproducible noise: with fresh noise, a bin of the all-missing feature clears the
    # bounds estimate's threshold by chance once in a while, and nothing is to warn about)
    params = resolve_params("binary:logistic", bounds_epsilon=1.0, epsilon=2.0,
                            random_state=seed, reproducible_noise=True, n_estimators=2,
                            max_depth=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.warns(DPBoundsWarning, match=r"features \[1\]"):
            train_in_process(params, X, (X[:, 0] > 0).astype(float))
