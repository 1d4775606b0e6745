"""The privacy budget across fits on a cluster: checked before the rows load, reserved
before the first release, charged with the releases made, kept in a file that outlives
the scheduler, readable from Python and the CLI."""
import json
import warnings

import dask
import numpy as np
import pytest

from dpxgb_dask import BudgetError, NoBudgetWarning, budget_status, create_budget, train
from dpxgb_dask.privacy.accountants import get_accountant
from dpxgb_dask.privacy.budget import fit_events
from dpxgb_dask.privacy.ledger import Ledger

SMALL = dict(n_estimators=6, max_depth=3)


@pytest.fixture
def budget_file(tmp_path):
    path = tmp_path / "budgets.json"
    with dask.config.set({"dpxgb.budget-file": str(path)}):
        yield path


def _worker_fits(client):
    def held():
        from dpxgb_dask.cluster import worker

        return sum(len(fits) for fits in worker._REGISTRY.values())

    return sum(client.run(held).values())


def _events(booster):
    return Ledger.from_dict(booster.ledger["events"]).events


def test_fits_are_charged_and_a_fit_past_the_budget_is_refused_before_reading_a_row(
        client, budget_file, classification_data, monkeypatch):
    X, y, bounds = classification_data
    status = create_budget("adult", epsilon=1.0, delta=1e-6, client=client)
    assert status["spent"] == 0.0 and status["n_fits"] == 0
    params = {"feature_bounds": bounds, "budget": "adult", **SMALL}
    first = train({**params, "epsilon": 0.8}, X, y, client=client)

    from dpxgb_dask.cluster import client as cluster_client

    loads = []
    monkeypatch.setattr(cluster_client, "load_partitions",
                        lambda *a, **k: loads.append(1) or pytest.fail("rows loaded"))
    with pytest.raises(BudgetError, match=r"budget 'adult' refuses this fit.*Nothing was spent"):
        train({**params, "epsilon": 0.8}, X, y, client=client)
    assert loads == [] and _worker_fits(client) == 0
    monkeypatch.undo()

    small = train({**params, "epsilon": 0.1}, X, y, client=client)
    status = budget_status("adult", client=client)
    assert status["n_fits"] == 2 and [f["state"] for f in status["fits"]] == ["finished"] * 2
    expected = get_accountant("pld").get_epsilon(
        Ledger(fit_events(_events(first), "a") + fit_events(_events(small), "b")), 1e-6)
    assert status["spent"] == pytest.approx(expected, rel=1e-9)
    assert 0.8 < status["spent"] <= 1.0
    # the model says what it was charged to, and the report shows it
    record = small.ledger["budget"]
    assert record["name"] == "adult" and record["spent"] == pytest.approx(status["spent"])
    assert record["this_fit"] == pytest.approx(0.1, rel=2e-3)
    assert small.privacy_report()["budget"] == record
    assert first.ledger["budget"]["spent"] == pytest.approx(0.8, rel=2e-3)
    # the file holds what the scheduler said
    on_disk = json.loads(budget_file.read_text())
    assert [b["name"] for b in on_disk["budgets"]] == ["adult"]


def test_two_fits_racing_for_the_last_of_a_budget_cannot_both_win(client, budget_file,
                                                                  classification_data):
    """Both pass the check made before loading; the scheduler's reservation, made before
    the first release on its single event loop, lets exactly one through."""
    from concurrent.futures import ThreadPoolExecutor

    X, y, bounds = classification_data
    create_budget("race", epsilon=1.0, client=client)
    params = {"feature_bounds": bounds, "budget": "race", "epsilon": 0.8, **SMALL}
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(train, params, X, y, client=client) for _ in range(2)]
        outcomes = [f.exception() for f in futures]
    assert sum(o is None for o in outcomes) == 1
    assert any(isinstance(o, BudgetError) for o in outcomes)
    status = budget_status("race", client=client)
    assert status["n_fits"] == 1 and status["spent"] <= 1.0
    assert _worker_fits(client) == 0


def test_an_unknown_budget_is_refused_naming_the_known_ones(client, budget_file,
                                                             classification_data):
    X, y, bounds = classification_data
    create_budget("bank", epsilon=2.0, client=client)
    with pytest.raises(ValueError, match=r"budget 'adlut' does not exist.*'bank'"):
        train({"feature_bounds": bounds, "budget": "adlut", **SMALL}, X, y, client=client)
    with pytest.raises(ValueError, match="already exists"):
        create_budget("bank", epsilon=20.0, client=client)
    assert _worker_fits(client) == 0


def test_a_fit_that_fails_midway_is_charged_with_the_releases_it_made(
        client, budget_file, classification_data, monkeypatch):
    X, y, bounds = classification_data
    create_budget("b", epsilon=5.0, client=client)
    from dpxgb_dask.boosting.coordinator import Coordinator

    grow = Coordinator._grow_tree

    async def failing(self, t, *args, **kwargs):
        if t == 3:
            raise RuntimeError("injected failure at tree 3")
        return await grow(self, t, *args, **kwargs)

    monkeypatch.setattr(Coordinator, "_grow_tree", failing)  # the scheduler is in-process
    with pytest.raises(RuntimeError, match="injected"):
        train({"feature_bounds": bounds, "budget": "b", "epsilon": 1.0, **SMALL}, X, y,
              client=client)
    fit = budget_status("b", client=client)["fits"][0]
    assert fit["state"] == "failed"
    # some releases were made (trees 0-2), fewer than planned, and they are charged
    assert 0 < fit["n_releases"] and 0 < fit["epsilon"] < 1.0


def test_the_budget_survives_a_scheduler_restart(budget_file, classification_data):
    from distributed import Client, LocalCluster

    X, y, bounds = classification_data
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        create_budget("census", epsilon=3.0, client=client)
        train({"feature_bounds": bounds, "budget": "census", "epsilon": 1.0, **SMALL}, X, y,
              client=client)
        before = budget_status("census", client=client)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        after = budget_status("census", client=client)
    assert after == before and after["spent"] == pytest.approx(1.0, rel=2e-3)


def test_a_fit_without_a_budget_says_so_once(client, classification_data, monkeypatch):
    from dpxgb_dask import training

    X, y, bounds = classification_data
    monkeypatch.setattr(training, "_said_no_budget", False)
    with pytest.warns(NoBudgetWarning, match="names no privacy budget"):
        booster = train({"feature_bounds": bounds, **SMALL}, X, y, client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoBudgetWarning)
        train({"feature_bounds": bounds, **SMALL}, X, y, client=client)
    assert booster.privacy_report()["budget"] is None


def test_a_scheduler_may_require_a_budget(client, budget_file, classification_data,
                                         monkeypatch):
    from dpxgb_dask.cluster import client as cluster_client

    X, y, bounds = classification_data
    monkeypatch.setattr(cluster_client, "load_partitions", lambda *a, **k: pytest.fail("rows loaded"))
    with dask.config.set({"dpxgb.require-budget": True}):
        with pytest.raises(BudgetError, match="requires every fit to name a privacy budget"):
            train({"feature_bounds": bounds, **SMALL}, X, y, client=client)
    assert _worker_fits(client) == 0


def test_a_scheduler_may_keep_budget_creation_to_its_file(client, budget_file, capsys):
    from dpxgb_dask.cli import main

    with dask.config.set({"dpxgb.clients-create-budgets": False}):
        with pytest.raises(PermissionError, match="does not let clients create budgets"):
            create_budget("mine", epsilon=1e6, client=client)
        # the administrator, on the scheduler's machine
        assert main(["budget", "create", "owner", "--epsilon", "2",
                     "--file", str(budget_file)]) == 0
        assert budget_status("owner", client=client)["epsilon"] == 2.0


def test_reproducible_noise_cannot_be_charged_to_a_budget(classification_data):
    X, y, bounds = classification_data
    with pytest.raises(ValueError, match="budget= cannot be combined with reproducible_noise"):
        train({"feature_bounds": bounds, "budget": "b", "random_state": 1,
               "reproducible_noise": True, **SMALL}, X, y)


def test_the_cli_creates_shows_and_reports_budgets(client, budget_file, classification_data,
                                                   tmp_path, capsys):
    import pandas as pd

    from dpxgb_dask.cli import main

    X, y, bounds = classification_data
    address = client.scheduler.address
    assert main(["budget", "create", "cli", "--epsilon", "2", "--scheduler", address]) == 0
    assert "budget 'cli': spent 0 of 2" in capsys.readouterr().out
    table = pd.DataFrame(np.nan_to_num(X), columns=[f"f{i}" for i in range(X.shape[1])])
    table["target"] = y
    data, bounds_file, out = tmp_path / "d.csv", tmp_path / "b.json", tmp_path / "m.json"
    table.to_csv(data, index=False)
    bounds_file.write_text(json.dumps({f"f{i}": [-4, 4] for i in range(X.shape[1])}))
    assert main(["train", str(data), "--label", "target", "--bounds", str(bounds_file),
                 "--n-estimators", "4", "--max-depth", "3", "--budget", "cli", "--quiet",
                 "--scheduler", address, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "budget across fits 'cli': this fit 1, all 1 fits 1 of 2 (pld" in \
        capsys.readouterr().out
    assert main(["budget", "show", "cli", "--scheduler", address]) == 0
    shown = capsys.readouterr().out
    assert "spent 1 of 2 (remaining 1;" in shown and "finished" in shown
    assert main(["budget", "list", "--file", str(budget_file), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in listed] == ["cli"] and listed[0]["n_fits"] == 1
    with pytest.raises(SystemExit, match="needs --epsilon"):
        main(["budget", "create", "x", "--scheduler", address])
