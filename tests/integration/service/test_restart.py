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
         "--scheduler", scheduler, "--port", str(port), "--concurrency", "1",
         "--status-quantum", "0"],
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


def _expected_spent(database, ids, models, job):
    """What a budget of ε 10 (PLD, δ 1e-6) has spent on the jobs ``ids``: the releases of
    those with a model, the whole plan of the others."""
    store = Store(Database(database))
    _, plan = planned_events(store.dataset("adult"), job)
    store.db.close()
    expected = PrivacyBudget("check", 10.0, 1e-6, "pld")
    for i in ids:
        expected.reserve(i, events_of(models[i]) if i in models else plan)
    return expected.spent()


def _wait(predicate, timeout=300):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.1)


@pytest.mark.slow
def test_a_killed_service_loses_no_budget_job_or_model(tmp_path, cluster, data_dir,
                                                      service_schema, stored_status):
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
                  and stored_status(database, ids[1]) == "running")
            before = {j["id"]: j for j in alice.jobs()}
            first_model = alice._call("GET", f"/v1/jobs/{ids[0]}/model")
        process.send_signal(signal.SIGKILL)  # mid-fit: job 1 runs, jobs 2-4 wait
        process.wait(timeout=30)
        # (an analyst sees a running job as queued: its start would time the jobs before it)
        assert [before[i]["status"] for i in ids[1:]] == ["queued"] * 4

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
        assert spent == pytest.approx(_expected_spent(database, ids, models, JOB), rel=1e-9)
    finally:
        process.kill()
        process.wait(timeout=30)
        log.close()


def _spawn(directory, *argv):
    """Run Dask's command line (``dask ...``) with this interpreter, whatever is on PATH."""
    assert argv[0] == "dask"
    return subprocess.Popen([sys.executable, "-m", "dask", *argv[1:]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=directory)


@pytest.mark.slow
def test_a_scheduler_restart_mid_load_loses_no_budget_job_or_model(tmp_path, data_dir,
                                                                  service_schema,
                                                                  stored_status):
    """The scheduler is killed mid-fit (and its workers with it, as Kubernetes would
    restart their pods), then started again at the same address: the service's client
    reconnects, the job that was running fails with its whole plan charged, the queued
    ones run, and no record, model or charge is lost."""
    from distributed import Client as DaskClient

    from dpxgb_dask.service.server import ServiceThread

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"

    def start_cluster():
        scheduler = _spawn(tmp_path, "dask", "scheduler", "--host", "127.0.0.1",
                           "--port", str(port), "--no-dashboard")
        workers = _spawn(tmp_path, "dask", "worker", address, "--nworkers", "2",
                         "--nthreads", "1", "--no-dashboard")
        return scheduler, workers

    processes = start_cluster()
    database = sqlite_url(tmp_path / "service.db")
    owner_token = init_owner(database)
    client = DaskClient(address, set_as_default=False, timeout="60s")
    running = None
    try:
        client.wait_for_workers(2, timeout=60)
        running = ServiceThread(database, client, concurrency=1, status_quantum=0)
        with Client(running.url, owner_token) as owner:
            owner.register_dataset("adult", str(data_dir / "adult"), "parquet", service_schema)
            token = owner.create_analyst("alice")["token"]
            owner.set_budget("alice", "adult", 10.0)
        job = dict(JOB, n_estimators=30)
        with Client(running.url, token) as alice:
            ids = [alice.submit("adult", **job)["id"] for _ in range(4)]
            _wait(lambda: alice.job(ids[0])["status"] == "finished"
                  and stored_status(database, ids[1]) == "running")
            first_model = alice._call("GET", f"/v1/jobs/{ids[0]}/model")
            for process in processes:  # mid-fit: job 1 runs, jobs 2 and 3 wait
                process.kill()
                process.wait(timeout=30)
            processes = start_cluster()
            _wait(lambda: all(alice.job(i)["status"] not in ("queued", "running")
                              for i in ids), timeout=600)
            after = {j["id"]: j for j in alice.jobs()}
            print("\nafter the scheduler's restart:",
                  [(after[i]["status"], after[i]["error"]) for i in ids])
            assert set(after) == set(ids)
            assert alice._call("GET", f"/v1/jobs/{ids[0]}/model") == first_model
            assert after[ids[1]]["status"] in ("failed", "finished")
            if after[ids[1]]["status"] == "failed":
                assert after[ids[1]]["spent_epsilon"] == after[ids[1]]["planned_epsilon"]
            assert [after[i]["status"] for i in ids[2:]] == ["finished"] * 2
            models = {i: alice._call("GET", f"/v1/jobs/{i}/model")
                      for i in ids if after[i]["status"] == "finished"}
            spent = alice.budgets()["adult"]["spent"]
        assert spent == pytest.approx(_expected_spent(database, ids, models, job), rel=1e-9)
    finally:
        if running is not None:
            running.stop()
        client.close()
        for process in processes:
            process.kill()
            process.wait(timeout=30)
