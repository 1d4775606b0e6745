"""The owner runs the service day to day (issue 43, item 6): lists analysts, their spend
and every job; revokes and renews tokens; cancels jobs (a queued one refunded, a running
one stopped with its plan charged and nothing left on the cluster); deletes datasets
(their spend stays on record). Names are unique whatever their case; a budget says the
largest job it still admits under its accountant."""
import time

import httpx
import pytest

#: A job that runs for several seconds on the service tests' 4,000 rows.
LONG_JOB = {"epsilon": 0.5, "n_estimators": 1000, "max_depth": 6}


def _owner(deployment):
    from dpxgb_dask.service import Client

    return Client(deployment["url"], deployment["owner"])


def _wait_for(condition, seconds=120.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    return None


def _fits_on_scheduler(dask_client):
    def running(dask_scheduler=None):
        plugin = dask_scheduler.plugins.get("dpxgb")
        return list(plugin.running) if plugin is not None else []

    return dask_client.run_on_scheduler(running)


def test_the_owner_lists_analysts_their_spend_and_every_job(deployment):
    from dpxgb_dask.service import Client

    with Client(deployment["url"], deployment["alice"]) as alice:
        job = alice.submit("adult", epsilon=0.2, n_estimators=2, max_depth=2)
        alice.wait(job["id"], timeout=300)
        spent = alice.budgets()["adult"]["spent"]
    with _owner(deployment) as owner:
        analysts = {a["name"]: a for a in owner.analysts()}
        jobs = owner.jobs()
    assert {"alice", "bob"} <= set(analysts)
    assert analysts["alice"]["active"] and analysts["alice"]["budgets"]["adult"]["spent"] \
        == pytest.approx(spent)
    assert set(analysts["bob"]["budgets"]) == {"census"}
    mine = [j for j in jobs if j["id"] == job["id"]]
    assert mine and mine[0]["analyst"] == "alice" and mine[0]["status"] == "finished"
    # an analyst still sees its own jobs only, without the analyst's name
    with Client(deployment["url"], deployment["bob"]) as bob:
        assert all("analyst" not in j for j in bob.jobs())
        assert job["id"] not in {j["id"] for j in bob.jobs()}


def test_a_revoked_token_stops_at_once_and_a_renewed_one_works(deployment):
    from dpxgb_dask.service import Client, ServiceError

    with _owner(deployment) as owner:
        token = owner.create_analyst("carol")["token"]
        owner.set_budget("CAROL", "adult", 1.0)  # (names whatever their case)
        with Client(deployment["url"], token) as carol:
            assert set(carol.budgets()) == {"adult"}
            assert owner.revoke_token("carol") == {"name": "carol", "active": False}
            with pytest.raises(ServiceError) as refused:
                carol.budgets()
            assert refused.value.status == 401
        renewed = owner.renew_token("carol")
        assert {a["name"]: a["active"] for a in owner.analysts()}["carol"] is True
    with Client(deployment["url"], renewed["token"]) as carol:
        assert carol.budgets()["adult"]["epsilon"] == 1.0
    with Client(deployment["url"], token) as old:
        with pytest.raises(ServiceError) as refused:
            old.budgets()
        assert refused.value.status == 401


def test_names_are_unique_whatever_their_case(deployment, data_dir, service_schema):
    from dpxgb_dask.service import ServiceError

    with _owner(deployment) as owner:
        for call in (lambda: owner.create_analyst("Alice"),
                     lambda: owner.register_dataset("ADULT", str(data_dir / "adult"),
                                                    "parquet", service_schema)):
            with pytest.raises(ServiceError) as refused:
                call()
            assert refused.value.status == 409
            assert "whatever their case" in str(refused.value.detail)


def test_a_queued_job_cancelled_is_refunded_and_a_running_one_stops_charged(
        deployment, dask_client, stored_status):
    from dpxgb_dask.service import Client, ServiceError

    with Client(deployment["url"], deployment["alice"]) as alice:
        before = alice.budgets()["survey"]["spent"]
        # the runner runs two jobs at once: the third waits in the queue
        running = [alice.submit("survey", **LONG_JOB) for _ in range(2)]
        queued = alice.submit("survey", epsilon=0.1, n_estimators=2, max_depth=2)
        assert _wait_for(lambda: all(stored_status(deployment["database"], j["id"])
                                     == "running" for j in running))
        assert _wait_for(lambda: _fits_on_scheduler(dask_client))
        with_all = alice.budgets()["survey"]["spent"]

        cancelled = alice.cancel(queued["id"])
        assert cancelled["status"] == "cancelled" and cancelled["spent_epsilon"] == 0.0
        assert "nothing was spent" in cancelled["error"]
        with pytest.raises(ServiceError) as ended:
            alice.cancel(queued["id"])
        assert ended.value.status == 409

        with _owner(deployment) as owner:  # (the owner cancels any analyst's job)
            for job in running:
                owner.cancel(job["id"])
        for job in running:
            assert _wait_for(lambda: alice.job(job["id"])["status"] == "cancelled", 60)
            assert "whole plan stays charged" in alice.job(job["id"])["error"]
        # the fits stopped, and the scheduler holds none of them
        assert _wait_for(lambda: not _fits_on_scheduler(dask_client), 60)
        after = alice.budgets()["survey"]
        assert after["spent"] < with_all and after["spent"] > before
        assert {j["job"]: j["state"] for j in after["jobs"]}[queued["id"]] == "stopped"


def test_a_deleted_dataset_runs_nothing_and_keeps_its_spend(deployment, data_dir,
                                                            service_schema):
    from dpxgb_dask.service import Client, ServiceError

    with _owner(deployment) as owner:
        owner.register_dataset("retired", str(data_dir / "census"), "parquet",
                               service_schema)
        owner.set_budget("bob", "retired", 1.0)
        with Client(deployment["url"], deployment["bob"]) as bob:
            job = bob.submit("retired", epsilon=0.3, n_estimators=2, max_depth=2)
            with pytest.raises(ServiceError) as busy:  # (a job is queued or running)
                owner.delete_dataset("retired")
            assert busy.value.status == 409 and "cancel them first" in str(busy.value)
            bob.wait(job["id"], timeout=300)
            spent = bob.budgets()["retired"]["spent"]
            assert owner.delete_dataset("RETIRED") == {"name": "retired", "deleted": True}
            assert "retired" not in {d["name"] for d in bob.datasets()}
            assert "retired" not in bob.budgets()
            with pytest.raises(ServiceError) as gone:
                bob.submit("retired", epsilon=0.1)
            assert gone.value.status == 404
            assert bob.model(job["id"]).n_trees == 2  # (a released model stays its own)
        record = {a["name"]: a for a in owner.analysts()}["bob"]["budgets"]["retired"]
        assert record["spent"] == pytest.approx(spent) and record["n_jobs"] == 1
        with pytest.raises(ServiceError) as taken:
            owner.register_dataset("retired", str(data_dir / "census"), "parquet",
                                   service_schema)
        assert taken.value.status == 409 and "deleted" in str(taken.value)


def test_a_budget_says_the_largest_job_it_admits_under_its_accountant(deployment):
    from dpxgb_dask.service import Client, ServiceError
    from dpxgb_dask.service.runner import LARGEST_JOB_RTOL

    with _owner(deployment) as owner:
        token = owner.create_analyst("dave")["token"]
        owner.set_budget("dave", "census", 1.0)
    with Client(deployment["url"], token) as dave:
        assert dave.largest_job("census")["epsilon"] == 1.0
        for _ in range(3):
            job = dave.submit("census", epsilon=0.3, n_estimators=2, max_depth=2)
            dave.wait(job["id"], timeout=300)
        budget = dave.budgets()["census"]
        largest = dave.largest_job("census")
        # composition under PLD spends less than the sum: more is admitted than "remaining"
        assert largest["epsilon"] > budget["remaining"] > 0
        assert largest["params"]["n_estimators"] == 100
        with pytest.raises(ServiceError) as refused:
            dave.submit("census", epsilon=largest["epsilon"] * (1 + 2 * LARGEST_JOB_RTOL))
        assert refused.value.status == 409
        admitted = dave.submit("census", epsilon=largest["epsilon"])
        assert admitted["planned_epsilon"] <= largest["epsilon"]


def test_the_owner_s_token_on_an_analyst_s_endpoint_says_where_to_look(deployment):
    response = httpx.get(deployment["url"] + "/v1/budgets",
                         headers={"Authorization": f"Bearer {deployment['owner']}"})
    assert response.status_code == 403
    assert "/v1/analysts" in response.json()["detail"]
