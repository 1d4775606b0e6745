"""Warm start (train(xgb_model=)): a fit continues a model from its margins, with its
bounds and cuts, and the continued model's ledger composes both parts."""
import numpy as np
import pytest

from dpxgb_dask.inputs import Targets
from dpxgb_dask import DPXGBClassifier, DPXGBRegressor, budget_status, create_budget, train
from dpxgb_dask.model.booster import Booster
from dpxgb_dask.objective import Objective, to_training_units
from dpxgb_dask.partition.state import load_partition
from dpxgb_dask.partition.messages import Prepare
from dpxgb_dask.params import resolve_params
from dpxgb_dask.model.certificate import check_privacy_claims
from dpxgb_dask.privacy.accountants import get_accountant
from dpxgb_dask.privacy.budget import fit_events
from dpxgb_dask.privacy.ledger import Ledger
from dpxgb_dask.training import continuation_params, train_in_process
from dpxgb_dask.model.certificate import stated_total

BOUNDS = np.tile([-4.0, 4.0], (4, 1))


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0] - X[:, 1])
    return X, signal


def _first(objective, **extra):
    X, signal = _data(3000, 0)
    y = (signal > 0).astype(float) if objective == "binary:logistic" else np.clip(signal, -3, 3)
    if objective == "reg:squarederror":
        extra.setdefault("label_bounds", (-3.0, 3.0))
    params = resolve_params(objective, feature_bounds=BOUNDS, epsilon=1.0, n_estimators=20,
                            max_depth=3, **extra)
    return train_in_process(params, X, y)[0], X, y


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
def test_the_continued_fit_starts_from_the_models_margins(objective):
    model, X, y = _first(objective)
    obj = Objective(objective, model.label_bounds)
    start = to_training_units(model, obj)
    state = load_partition(X, Targets(y), obj, 0)
    # the missing values' bin is max_bin (no categorical features), as the coordinator's
    state.prepare(Prepare(model.feature_bounds, list(model.cuts), model.params["max_bin"],
                          start.base_score, {0: 0}, init_model=start))
    offset, scale = obj.label_offset_scale
    np.testing.assert_allclose(state.margins, (model.predict_margin(X) - offset) / scale,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
def test_a_continued_model_holds_both_parts_and_composes_its_ledger(objective, tmp_path):
    model, X, y = _first(objective)
    more = resolve_params(objective, epsilon=0.5, n_estimators=10, max_depth=3,
                          label_bounds=model.label_bounds)
    params = continuation_params(more, model, None, 4)
    continued, coordinator = train_in_process(params, X, y, xgb_model=model)
    assert continued.n_trees == 30
    n_first = len(model.nodes["value"])
    for name, values in model.nodes.items():
        np.testing.assert_array_equal(continued.nodes[name][:n_first], values)
    assert continued.base_score == model.base_score
    # one ledger: the first part's releases, then the new part's, numbered after them
    events = Ledger.from_dict(continued.ledger["events"]).events
    first = Ledger.from_dict(model.ledger["events"]).events
    assert events == tuple(first) + tuple(coordinator.ledger.events)
    assert {e.tree for e in events[len(first):] if e.tree is not None} == set(range(20, 30))
    # no bounds, initial-score or candidate release in the new part: all of it for trees
    assert {e.purpose for e in coordinator.ledger.events} <= {"leaf", "split",
                                                             "leaf_sum", "leaf_count"}
    pld = get_accountant("pld").get_epsilon(Ledger(events), model.ledger["delta"])
    assert continued.ledger["epsilon"] == stated_total(pld)
    assert 1.0 < continued.ledger["epsilon"] < 1.5
    assert continued.ledger["continued"]["from_trees"] == 20
    check_privacy_claims(continued.ledger, continued.params)
    continued.save_model(tmp_path / "m.json")
    again = Booster.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(again.predict(X), continued.predict(X))


def test_reproducible_noise_is_never_reused_by_the_continuation():
    """Review finding: the continuation numbered its trees from 0 again, so with
    reproducible noise its tree 0 reused the first part's rows and noise."""
    seed = 2**200 + 5
    X, signal = _data(3000, 0)
    y = (signal > 0).astype(float)
    fields = dict(feature_bounds=BOUNDS, max_depth=3, random_state=seed,
                  reproducible_noise=True, subsample=0.5)
    model, first_fit = train_in_process(
        resolve_params("binary:logistic", epsilon=1.0, n_estimators=20, **fields), X, y)
    more = resolve_params("binary:logistic", epsilon=0.5, n_estimators=20,
                          **dict(fields, feature_bounds=None))
    continued, coordinator = train_in_process(continuation_params(more, model, None, 4), X, y,
                                              xgb_model=model)
    # the same master key (reproducible noise), yet no stream key in common
    first, then = first_fit.streams, coordinator.streams
    assert first.noise._issued and then.noise._issued
    assert not first.noise._issued & then.noise._issued
    assert not first.structure._issued & then.structure._issued
    assert {e.subsample for e in coordinator.ledger.events} == {f"tree:{t}"
                                                               for t in range(20, 40)}
    # the random structures of the new trees are not the first part's again
    frame = continued.trees_to_dataframe()
    first = frame[frame.tree < 20].groupby("tree")["threshold"].apply(tuple).tolist()
    later = frame[frame.tree >= 20].groupby("tree")["threshold"].apply(tuple).tolist()
    assert first != later


def test_a_model_that_does_not_fit_is_refused():
    model, X, y = _first("binary:logistic")
    more = resolve_params("binary:logistic", epsilon=0.5, n_estimators=5)
    cases = [
        (dict(params=resolve_params("reg:squarederror", label_bounds=(0, 1))), "trained for"),
        (dict(n_features=5), "features"),
        (dict(names=["a", "b", "c", "d"]), None),  # the model has no names: accepted
        (dict(params=resolve_params("binary:logistic", feature_bounds=BOUNDS * 2)),
         "feature_bounds must be left out"),
        (dict(params=resolve_params("binary:logistic", bounds_epsilon=0.5)),
         "bounds_epsilon does not apply"),
        (dict(params=resolve_params("binary:logistic", preset="dpboost")), "ensemble_size"),
    ]
    for case, pattern in cases:
        call = lambda: continuation_params(case.get("params", more), model,  # noqa: E731
                                           case.get("names"), case.get("n_features", 4))
        if pattern is None:
            call()
        else:
            with pytest.raises(ValueError, match=pattern):
                call()
    named = Booster.from_dict(dict(model.to_dict(), feature_names=["a", "b", "c", "d"]))
    with pytest.raises(ValueError, match="columns differ"):
        continuation_params(more, named, ["a", "b", "x", "d"], 4)
    regression = _first("reg:squarederror")[0]
    with pytest.raises(ValueError, match="label_bounds must equal"):
        continuation_params(resolve_params("reg:squarederror", label_bounds=(-5, 5)),
                            regression, None, 4)


def test_a_budget_is_charged_with_the_new_part_only(client, tmp_path):
    import dask

    X, signal = _data(3000, 1)
    y = (signal > 0).astype(float)
    with dask.config.set({"dpxgb.budget-file": str(tmp_path / "b.json")}):
        create_budget("warm", epsilon=3.0, client=client)
        first = train({"feature_bounds": BOUNDS, "epsilon": 1.0, "n_estimators": 10,
                       "budget": "warm"}, X, y, client=client)
        continued = train({"epsilon": 0.5, "n_estimators": 5, "budget": "warm"}, X, y,
                          client=client, xgb_model=first)
        status = budget_status("warm", client=client)
    assert continued.n_trees == 15 and status["n_fits"] == 2
    new_part = Ledger.from_dict(continued.ledger["events"]).events[
        len(first.ledger["events"]["events"]):]
    expected = get_accountant("pld").get_epsilon(Ledger(
        fit_events(Ledger.from_dict(first.ledger["events"]).events, "a")
        + fit_events(new_part, "b")), 1e-6)
    assert status["spent"] == pytest.approx(expected, rel=1e-9)
    assert continued.ledger["epsilon"] == pytest.approx(expected, rel=1e-4)  # (stated)
    assert continued.ledger["epsilon"] >= expected


def test_the_estimators_continue_a_fitted_model(client):
    X, signal = _data(3000, 2)
    y = (signal > 0).astype(float)
    first = DPXGBClassifier(feature_bounds=BOUNDS, classes=[0, 1], n_estimators=10,
                            client=client).fit(X, y)
    more = DPXGBClassifier(classes=[0, 1], n_estimators=5, epsilon=0.5, client=client)
    more.fit(X, y, xgb_model=first)
    assert more.booster_.n_trees == 15
    assert more.privacy_report()["epsilon"] > first.privacy_report()["epsilon"]
    regressor = DPXGBRegressor(feature_bounds=BOUNDS, label_bounds=(-3, 3), n_estimators=5,
                               client=client).fit(X, np.clip(signal, -3, 3))
    again = DPXGBRegressor(label_bounds=(-3, 3), n_estimators=5, client=client)
    again.fit(X, np.clip(signal, -3, 3), xgb_model=regressor.booster_)
    assert again.booster_.n_trees == 10


def test_the_cli_continues_a_saved_model(client, tmp_path, capsys):
    import pandas as pd

    from dpxgb_dask.cli import main
    from dpxgb_dask.model.booster import load_model

    X, signal = _data(2000, 3)
    table = pd.DataFrame(np.nan_to_num(X), columns=list("abcd"))
    table["y"] = (signal > 0).astype(float)
    data = tmp_path / "d.csv"
    table.to_csv(data, index=False)
    (tmp_path / "b.json").write_text('{"a": [-4, 4], "b": [-4, 4], "c": [-4, 4], "d": [-4, 4]}')
    address = client.scheduler.address
    assert main(["train", str(data), "--label", "y", "--bounds", str(tmp_path / "b.json"),
                 "--n-estimators", "5", "--quiet", "--scheduler", address,
                 "--out", str(tmp_path / "first.json")]) == 0
    assert main(["train", str(data), "--label", "y", "--xgb-model", str(tmp_path / "first.json"),
                 "--n-estimators", "3", "--epsilon", "0.5", "--quiet", "--scheduler", address,
                 "--out", str(tmp_path / "more.json")]) == 0
    assert load_model(tmp_path / "more.json").n_trees == 8
