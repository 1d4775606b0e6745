"""A service killed mid-load (SIGKILL, its process gone with its Dask client) and started
again on the same database loses no budget, job record or model: finished jobs keep their
models, the job that was running stays charged with its whole plan (``interrupted``), and
the queued jobs run after the restart."""
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from dpxgb_dask.privacy.budget import PrivacyBudget
from dpxgb_dask.service import Client
from dpxgb_dask.service.database import Database, sqlite_url
from dpxgb_dask.service.runner import planned_events
from dpxgb_dask.service.server import init_owner
from dpxgb_dask.service.store import Store, events_of

JOB = {"epsilon": 0.2, "n_estimators": 4, "max_depth": 3}


def _serve(database, scheduler, log):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "dpxgb_dask.cli", "serve", "--database", database,
         "--scheduler", scheduler, "--port", str(port), "--concurrency", "1"],
        stdout=log, stderr=subprocess.STDOUT, cwd=os.path.dirname(log.name))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(url + "/openapi.json", timeout=2)
            return process, url
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not start: {open(log.name).read()}")
            time.sleep(0.2)


def _wait(predicate, timeout=300):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.1)


@pytest.mark.slow
def test_a_killed_service_loses_no_budget_job_or_model(tmp_path, cluster, data_dir,
                                                      service_schema):
    database = sqlite_url(tmp_path / "service.db")
    owner_token = init_owner(database)
    log = open(tmp_path / "service.log", "w")
    process, url = _serve(database, cluster.scheduler_address, log)
    try:
        with Client(url, owner_token) as owner:
            owner.register_dataset("adult", str(data_dir / "adult"), "parquet", service_schema)
            token = owner.create_analyst("alice")["token"]
            owner.set_budget("alice", "adult", 10.0)
        with Client(url, token) as alice:
            ids = [alice.submit("adult", **JOB)["id"] for _ in range(5)]
            _wait(lambda: alice.job(ids[0])["status"] == "finished"
                  and alice.job(ids[1])["status"] == "running")
            before = {j["id"]: j for j in alice.jobs()}
            first_model = alice._call("GET", f"/v1/jobs/{ids[0]}/model")
        process.send_signal(signal.SIGKILL)  # mid-fit: job 1 runs, jobs 2-4 wait
        process.wait(timeout=30)
        assert before[ids[1]]["status"] == "running"
        assert [before[i]["status"] for i in ids[2:]] == ["queued"] * 3

        process, url = _serve(database, cluster.scheduler_address, log)
        with Client(url, token) as alice:
            _wait(lambda: all(j["status"] not in ("queued", "running") for j in alice.jobs()))
            after = {j["id"]: j for j in alice.jobs()}
            assert set(after) == set(ids)
            assert after[ids[0]] == before[ids[0]]
            assert alice._call("GET", f"/v1/jobs/{ids[0]}/model") == first_model
            assert after[ids[1]]["status"] == "interrupted"
            assert after[ids[1]]["spent_epsilon"] == after[ids[1]]["planned_epsilon"]
            assert [after[i]["status"] for i in ids[2:]] == ["finished"] * 3
            models = {i: alice._call("GET", f"/v1/jobs/{i}/model")
                      for i in ids if after[i]["status"] == "finished"}
            spent = alice.budgets()["adult"]["spent"]
        # the budget: the finished jobs' releases and the interrupted job's whole plan
        store = Store(Database(database))
        _, plan = planned_events(store.dataset("adult"), JOB)
        store.db.close()
        expected = PrivacyBudget("check", 10.0, 1e-6, "pld")
        for i in ids:
            expected.reserve(i, events_of(models[i]) if i in models else plan)
        assert spent == pytest.approx(expected.spent(), rel=1e-9)
    finally:
        process.kill()
        process.wait(timeout=30)
        log.close()
