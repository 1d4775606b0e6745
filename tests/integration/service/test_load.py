"""Load on the service (issue 30's target): 8 analysts submit 50 fits in all at once
against one cluster. Every budget is exactly its accountant's total over the analyst's
jobs, and every model's privacy report equals that of a model fitted alone with the same
parameters. The status calls' latencies are printed (``-s``; tests do not assert on time:
``benchmarks/bench_service.py`` reports them)."""
from concurrent.futures import ThreadPoolExecutor
import time

import numpy as np
import pytest

from dpxgb_dask.privacy.budget import PrivacyBudget
from dpxgb_dask.service import Client
from dpxgb_dask.service.database import sqlite_url
from dpxgb_dask.service.server import init_owner
from dpxgb_dask.service.store import events_of

ANALYSTS = [f"analyst{i}" for i in range(8)]
N_JOBS = 50
#: The two parameter sets the jobs alternate between.
PARAMS = [{"epsilon": 0.2, "n_estimators": 2, "max_depth": 2},
          {"epsilon": 0.3, "n_estimators": 3, "max_depth": 2, "split_method": "exponential"}]
#: The pause between two rounds of status calls: an analyst's client polls, it does not spin
#: (a loop without one took the CPU the fits run on).
POLL_SECONDS = 0.1
#: The report's fields that certify the privacy (the rest name the fit or its budget).
CERTIFIED = ("delta", "basic", "rdp", "pld", "best", "n_events", "accountant", "epsilon",
             "neighbouring_relation", "not_dp", "is_dp")


def _certified(report):
    return {k: report[k] for k in CERTIFIED}, report["events"]


@pytest.mark.slow
def test_eight_analysts_fifty_fits_at_once(tmp_path, start_service, data_dir, dask_client,
                                           service_schema):
    database = sqlite_url(tmp_path / "load.db")
    running = start_service(database)
    try:
        with Client(running.url, init_owner(database)) as owner:
            owner.register_dataset("adult", str(data_dir / "adult"), "parquet",
                                   service_schema)
            tokens = {name: owner.create_analyst(name)["token"] for name in ANALYSTS}
            for name in ANALYSTS:
                owner.set_budget(name, "adult", 10.0)
        assignments = [(ANALYSTS[i % 8], PARAMS[i % 2]) for i in range(N_JOBS)]

        def submit(assignment):
            name, params = assignment
            with Client(running.url, tokens[name]) as analyst:
                return name, analyst.submit("adult", **params)["id"], params

        with ThreadPoolExecutor(len(ANALYSTS)) as pool:  # all at once
            submitted = list(pool.map(submit, assignments))
        latencies, ended = [], {}
        clients = {name: Client(running.url, token) for name, token in tokens.items()}
        deadline = time.monotonic() + 900
        while len(ended) < N_JOBS and time.monotonic() < deadline:
            for name, job_id, _ in submitted:
                if job_id in ended:
                    continue
                start = time.perf_counter()
                job = clients[name].job(job_id)
                latencies.append(time.perf_counter() - start)
                if job["status"] not in ("queued", "running"):
                    ended[job_id] = job
            time.sleep(POLL_SECONDS)
        print(f"\nstatus calls while {N_JOBS} fits ran: {len(latencies)}, p50 "
              f"{1e3 * np.percentile(latencies, 50):.1f} ms, p95 "
              f"{1e3 * np.percentile(latencies, 95):.1f} ms, max {1e3 * max(latencies):.1f} ms")
        assert sorted(j["status"] for j in ended.values()) == ["finished"] * N_JOBS

        # each budget: exactly its accountant's total over the analyst's jobs' releases
        alone = {}
        for name in ANALYSTS:
            mine = [(job_id, params) for who, job_id, params in submitted if who == name]
            models = {job_id: clients[name]._call("GET", f"/v1/jobs/{job_id}/model")
                      for job_id, _ in mine}
            expected = PrivacyBudget("check", 10.0, 1e-6, "pld")
            for job_id, _ in mine:
                expected.reserve(job_id, events_of(models[job_id]))
            budget = clients[name].budgets()["adult"]
            assert budget["spent"] == pytest.approx(expected.spent(), rel=1e-9, abs=1e-12)
            assert budget["n_jobs"] == len(mine)
            # each model's report: that of a model of the same parameters fitted alone
            for job_id, params in mine:
                key = tuple(sorted(params.items()))
                if key not in alone:
                    alone[key] = _fitted_alone(dask_client, data_dir, service_schema, params)
                totals, rows = _certified(clients[name].report(job_id))
                assert totals == alone[key][0]
                # (a level's node count, n_parallel, is the tree's shape: a DP release of
                # its own fit, which parallel composition does not charge for)
                differ = [(i, k, a[k], b[k]) for i, (a, b) in enumerate(zip(rows, alone[key][1]))
                          for k in a if a[k] != b[k] and k != "n_parallel"]
                assert not differ and len(rows) == len(alone[key][1]), differ[:3]
        for c in clients.values():
            c.close()
    finally:
        running.stop()


def _fitted_alone(client, data_dir, schema, params):
    """The certified part of the privacy report of a fit with ``params`` on the dataset,
    made directly on the cluster (no service, nothing else running)."""
    import warnings

    from dpxgb_dask.service.runner import read_dataset
    from dpxgb_dask.service.schemas import DatasetSchema, JobParams, train_params
    from dpxgb_dask.training import train

    class Registered:
        location, format = str(data_dir / "adult"), "parquet"

    Registered.schema = schema
    resolved = train_params(DatasetSchema.model_validate(schema),
                            JobParams.model_validate(params))
    X, y = read_dataset(Registered)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster = train(resolved, X, y, client=client)
    return _certified(booster.privacy_report())
