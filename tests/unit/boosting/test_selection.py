"""Private selection among configurations (``train(select=)``, ``boosting/selection.py``):
held-out rows, the selection's ledger and calibration, what reaches the client, and the
requests the scheduler refuses."""
import math
import os

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpxgb_dask.inputs import Targets
from dpxgb_dask import DPXGBClassifier, train
from dpxgb_dask.partition import state as partition
from dpxgb_dask.partition.aggregates import held_out_loss_sums, round_loss_sums
from dpxgb_dask.boosting.candidates import uniform_cuts
from dpxgb_dask.partition.messages import Prepare
from dpxgb_dask.partition.rows import row_uniforms
from dpxgb_dask.boosting.selection import (FAMILIES, SelectionPlan, SelectionSpec,
                                           resolve_selection)
from dpxgb_dask.boosting.streams import FitStreams
from dpxgb_dask.cluster.fit_request import FitRequest
from dpxgb_dask.model.booster import Booster
from dpxgb_dask.objective import Objective
from dpxgb_dask.params import resolve_params
from dpxgb_dask.privacy import Ledger, RDPAccountant
from dpxgb_dask.privacy.budget import fit_events
from dpxgb_dask.training import select_in_process
from dpxgb_dask.model.certificate import stated_total

SEED = 2**200 + 4242


def _product_task(n, seed):
    """A label that depends on the product of two features (no main effect in them)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).clip(-4, 4)
    logit = 2.0 * X[:, 0] * X[:, 1] + 0.5 * X[:, 2]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    return X, y


BOUNDS = np.tile([-4.0, 4.0], (6, 1))


def test_held_out_rows_enter_no_tree_and_are_the_rows_the_score_reads():
    X, y = _product_task(3000, 0)
    objective = Objective.of(resolve_params("binary:logistic", feature_bounds=BOUNDS))
    state = partition.load_partition(X, Targets(y), objective, 1)
    key, fraction = 2**100 + 3, 0.3
    cuts = uniform_cuts(BOUNDS, 16)
    state.prepare(Prepare(BOUNDS, cuts, 16, 0.0, {1: 500}, holdout=(key, fraction)))
    # the slow twin: each global row's own uniform number under the key
    expected = row_uniforms(key, 500, 3000) < fraction
    assert 600 < expected.sum() < 1200
    np.testing.assert_array_equal(state.held_out, expected)
    assert np.isnan(state.y[expected]).all()
    np.testing.assert_array_equal(state.y[~expected], state.labels[~expected])
    booster = _a_model(X, y)
    got = held_out_loss_sums(state, booster, ("logloss", "error"), 1, None)
    kept = partition.RawPart(X[expected], state.raw.y[expected], None, None)
    np.testing.assert_array_equal(got, round_loss_sums(kept, booster, ("logloss", "error"), 1))
    assert got[-1] == expected.sum()
    state.prepare(Prepare(BOUNDS, cuts, 16, 0.0, {1: 500}))  # a plain fit holds out nothing
    np.testing.assert_array_equal(state.y, state.labels)


def _configurations(epsilon=2.0, **given):
    base = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=BOUNDS, **given)
    return base, [base, resolve_params("binary:logistic", epsilon=epsilon,
                                       feature_bounds=BOUNDS, feature_selection="random",
                                       max_depth=3, **given)]


def test_the_selection_is_calibrated_to_the_fits_epsilon_under_rdp():
    _, configurations = _configurations()
    plan = SelectionPlan(configurations, 6, SelectionSpec(mean_runs=3.0))
    total = RDPAccountant().get_epsilon(plan.ledger(), 1e-6)
    assert 2.0 * (1 - 2e-3) <= total <= 2.0
    assert 0.3 < plan.candidate_epsilon / 2.0 < 1.0
    # a run's plan is its configuration's at ε_c, scored on its last model only
    for run_plan in plan.plans:
        assert run_plan.params.accountant == "rdp" and run_plan.scored_rounds == 1
        assert math.isclose(RDPAccountant().get_epsilon(run_plan.ledger(), 1e-6),
                            plan.candidate_epsilon, rel_tol=2e-3)
    entry = plan.ledger().events[-1]
    assert entry.is_selection_entry and entry.selection_mean == 3.0
    # more runs cost more: each run gets less
    more = SelectionPlan(configurations, 6, SelectionSpec(mean_runs=10.0))
    assert more.candidate_epsilon < plan.candidate_epsilon


def test_each_configuration_is_resolved_at_the_epsilon_of_one_run():
    base, _ = _configurations(epsilon=4.0)
    given = {"epsilon": 4.0, "feature_bounds": BOUNDS}

    def resolve(overrides, epsilon):
        return resolve_params("binary:logistic", **{**given, **overrides, "epsilon": epsilon})

    configurations, spec = resolve_selection("shapes", base, 6, resolve)
    assert len(configurations) == len(FAMILIES["shapes"]) and spec == SelectionSpec()
    assert all(c.epsilon == 4.0 for c in configurations)
    run_epsilon = SelectionPlan(configurations, 6, spec).candidate_epsilon
    # the default's λ follows the leaf noise of a run (ε_c), not of the whole ε
    at_run = resolve_params("binary:logistic", epsilon=run_epsilon, feature_bounds=BOUNDS)
    assert configurations[0].reg_lambda > base.reg_lambda
    assert math.isclose(configurations[0].reg_lambda, at_run.reg_lambda, rel_tol=0.05)
    assert configurations[2].feature_selection == "random"


@pytest.mark.parametrize("select, kwargs, says", [
    ("nope", {}, "select's configurations must be one of"),
    ({"configurations": [{}]}, {}, "2 to 16 configurations"),
    ({"configurations": [{}] * 17}, {}, "2 to 16 configurations"),
    ({"configurations": "shapes", "mean_runs": 101}, {}, "mean_runs must be at most 100"),
    ({"configurations": "shapes"}, {"delta": 0.0}, "needs delta > 0"),
    ({"configurations": "shapes", "mean_runs": 0.5}, {}, "mean must be"),
    ({"configurations": "shapes", "holdout": 1.5}, {}, "holdout must be"),
    ({"configurations": "shapes", "shape": 0}, {}, "shape"),
    ({"configurations": [{}, {"epsilon": 9.0}]}, {}, "epsilon"),
    ({"configurations": [{}, {"filter_rounds": 5, "subsample": 0.5}]}, {}, "filter_rounds"),
    ({"configurations": "shapes"}, {"epsilon": 0.01}, "raise epsilon"),
    ({"configurations": "shapes", "turbo": True}, {}, "turbo"),
    ("shapes", {"evals": "EVALS"}, "evals"),
    ("shapes", {"xgb_model": "MODEL"}, "xgb_model"),
    (42, {}, "select must be one of"),
])
def test_a_bad_selection_is_refused_before_any_row_is_read(select, kwargs, says):
    X, y = _product_task(200, 1)
    kwargs = dict(kwargs)
    epsilon = kwargs.pop("epsilon", 1.0)
    extra = {"delta": kwargs.pop("delta")} if "delta" in kwargs else {}
    if kwargs.get("evals") == "EVALS":
        kwargs = {"evals": [(X, y)]}
    if kwargs.get("xgb_model") == "MODEL":
        kwargs = {"xgb_model": _a_model(X, y)}

    class NoClient:  # any use of the cluster would fail the test
        def __getattr__(self, name):
            raise AssertionError(f"the cluster was used: {name}")

    with pytest.raises((ValueError, TypeError), match=says):
        train({"epsilon": epsilon, "feature_bounds": BOUNDS, **extra}, X, y, client=NoClient(),
              select=select, **kwargs)


def _a_model(X, y):
    from dpxgb_dask.training import train_in_process

    return train_in_process(resolve_params("binary:logistic", epsilon=1.0, n_estimators=2,
                                           max_depth=2, feature_bounds=BOUNDS), X, y)[0]


def test_the_held_out_rows_change_no_tree_of_a_run():
    """The same run on labels that differ only on the held-out rows grows the same trees
    (the runs' noise keyed by the seed, the initial score public); its score differs."""
    X, y = _product_task(4000, 6)
    params = dict(epsilon=2.0, feature_bounds=BOUNDS, random_state=SEED,
                  reproducible_noise=True, init_score="zero", n_estimators=20)
    select = {"configurations": [{}, {}], "mean_runs": 1.0, "holdout": 0.25}
    first = resolve_params("binary:logistic", **params)
    held = row_uniforms(FitStreams.for_fit(first)[0].sampling_key("holdout"), 0, 4000) < 0.25
    with pytest.warns(Warning):  # (reproducible noise)
        one, _ = select_in_process(params, X, y, select, n_partitions=3)
        two, _ = select_in_process(params, X, np.where(held, 1.0 - y, y), select, 3)
        other, _ = select_in_process(params, X, np.where(~held, 1.0 - y, y), select, 3)
    assert one.to_dict()["nodes"] == two.to_dict()["nodes"]
    assert one.ledger["selection"]["score"] != two.ledger["selection"]["score"]
    assert one.to_dict()["nodes"] != other.to_dict()["nodes"]


def test_the_scheduler_checks_a_selection_it_is_sent():
    base, configurations = _configurations()
    spec = SelectionSpec(mean_runs=2.0)
    request = FitRequest(fit_id="f" * 32, capability=os.urandom(32),
                         placement={"tcp://w:1": [0]}, sources={}, params=base, n_features=6,
                         feature_names=None, client_id="client", topic=None,
                         reload_topic=None, with_timings=False,
                         selection=(configurations, spec)).to_wire()
    checked = FitRequest.from_wire(request, ["tcp://w:1"])
    got, got_spec = checked.selection
    assert got_spec == spec and [c.to_dict() for c in got] == [c.to_dict()
                                                              for c in configurations]
    other = dict(request, params=request["selection"]["configurations"][1])
    with pytest.raises(ValueError, match="params as its first configuration"):
        FitRequest.from_wire(other, ["tcp://w:1"])
    for bad, says in ((dict(request["selection"], holdout="0.2"), "must be numbers"),
                      ({"configurations": []}, "selection must be"),
                      (dict(request["selection"], configurations=[]), "first configuration"),
                      (dict(request["selection"], mean_runs=0.1), "mean must be")):
        with pytest.raises(ValueError, match=says):
            FitRequest.from_wire(dict(request, selection=bad), ["tcp://w:1"])
    continued = dict(request, init_model=_a_model(*_product_task(200, 2)).to_dict())
    with pytest.raises(ValueError, match="init_model must be None"):
        FitRequest.from_wire(continued, ["tcp://w:1"])


@pytest.mark.slow
def test_a_selection_trains_on_the_cluster_and_only_its_best_run_leaves(client, replies):
    X, y = _product_task(20_000, 3)
    X_test, y_test = _product_task(10_000, 4)
    params = {"epsilon": 4.0, "feature_bounds": BOUNDS, "random_state": SEED,
              "reproducible_noise": True}
    with pytest.warns(Warning):
        selected = train(params, X, y, client=client, select="shapes")
    with pytest.warns(Warning):
        additive = train(dict(params, feature_selection="cyclic"), X, y, client=client)
    fit_answer = next(a for a in replies if isinstance(a, dict) and "model" in a)
    assert set(fit_answer) == {"model", "warnings"}  # no scores, no timings, no other run
    summary = selected.ledger["selection"]
    assert summary["configurations"] == 3 and summary["metric"] == "logloss"
    assert 0.0 < summary["score"] < 1.0
    assert selected.ledger["accountant"] == "rdp"
    assert 4.0 * (1 - 2e-3) <= selected.ledger["epsilon"] <= 4.0
    assert selected.ledger["epsilon_by_accountant"]["pld"] == "inf"
    assert "runs" not in summary and "n_runs" not in summary
    chosen = summary["chosen"]
    assert selected.params["feature_selection"] == FAMILIES["shapes"][chosen].get(
        "feature_selection", "staged")  # (the default's)
    # the product has no main effect: the selection finds a shape that models it, not the
    # additive one-feature trees
    auc_selected = roc_auc_score(y_test, selected.predict(X_test))
    auc_additive = roc_auc_score(y_test, additive.predict(X_test))
    assert chosen in (0, 2) and auc_selected > auc_additive + 0.05, (auc_selected,
                                                                     auc_additive)
    # the model file keeps the selection's certificate
    again = Booster.from_dict(selected.to_dict())
    assert again.ledger["selection"] == summary
    # and a budget charges its whole plan
    events = fit_events(Ledger.from_dict(selected.ledger["events"]).events, "f")
    assert stated_total(RDPAccountant().get_epsilon(events, 1e-6)) == selected.ledger["epsilon"]


@pytest.mark.slow
def test_the_estimator_selects_too(client):
    X, y = _product_task(6_000, 5)
    model = DPXGBClassifier(epsilon=2.0, client=client, feature_bounds=BOUNDS, classes=[0, 1],
                            select={"configurations": [{}, {"feature_selection": "random"}],
                                    "mean_runs": 2.0})
    model.fit(X, y)
    assert model.get_params()["select"]["mean_runs"] == 2.0
    assert model.get_booster().ledger["selection"]["configurations"] == 2
    assert model.predict_proba(X).shape == (6_000, 2)


@pytest.mark.slow
def test_the_command_line_selects(client, tmp_path, capsys, cli_table):
    import json

    from dpxgb_dask.cli import main

    data, bounds = cli_table(*_product_task(4_000, 7))
    choices = tmp_path / "select.json"
    choices.write_text(json.dumps({"configurations": [{}, {"max_depth": 3}],
                                   "mean_runs": 2}))
    out = tmp_path / "model.json"
    common = ["train", str(data), "--label", "target", "--bounds", str(bounds),
              "--epsilon", "1", "--n-estimators", "20", "--scheduler",
              client.scheduler.address, "--quiet"]
    assert main(common + ["--select", str(choices), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "selected configuration" in said and "of 2" in said and "basic composition inf" in said
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    assert "private selection" in report and "repeat_and_select" in report
    assert "epsilon (pld  ) = inf" in report
    with pytest.raises(SystemExit):
        main(common + ["--select", str(tmp_path / "missing.json"), "--out", str(out)])


def test_only_the_best_runs_warnings_reach_the_user(monkeypatch):
    """Another run's warnings would tell of that run (and of K): the selection passes on
    its own and the best run's alone."""
    from dpxgb_dask.boosting import selection as selection_module

    runs = []

    class Marked(selection_module.Coordinator):
        async def fit(self):
            booster = await super().fit()
            self.warnings.append((UserWarning, f"run {len(runs)}"))
            runs.append((booster, self))
            return booster

    monkeypatch.setattr(selection_module, "Coordinator", Marked)
    X, y = _product_task(3000, 8)
    params = dict(epsilon=2.0, feature_bounds=BOUNDS, n_estimators=10)
    booster, run = select_in_process(params, X, y, {"configurations": [{}, {"max_depth": 3}],
                                                    "mean_runs": 6.0})
    said = [message for _, message in run.warnings if message.startswith("run ")]
    (chosen,) = [i for i, (b, _) in enumerate(runs) if b is booster]
    assert said == [f"run {chosen}"]


def test_dp_feature_bounds_leave_a_selection_room():
    """A run's ε must exceed its bounds_epsilon: the calibration starts above it."""
    configurations = [resolve_params("binary:logistic", epsilon=1.0, bounds_epsilon=0.05),
                      resolve_params("binary:logistic", epsilon=1.0, bounds_epsilon=0.05,
                                     max_depth=3)]
    plan = SelectionPlan(configurations, 6, SelectionSpec())
    assert 0.1 < plan.candidate_epsilon < 1.0
    assert RDPAccountant().get_epsilon(plan.ledger(), 1e-6) <= 1.0


def test_with_base_margins_no_configuration_releases_an_initial_score(monkeypatch):
    import dpxgb_dask.training as training

    sent = {}

    class Sent(Exception):
        pass

    def run_fit(*args, selection, **kwargs):
        sent["selection"] = selection
        raise Sent

    monkeypatch.setattr(training, "run_fit", run_fit)
    monkeypatch.setattr(training, "client_or_embedded", lambda client: _Null())
    X, y = _product_task(500, 9)
    with pytest.raises(Sent):
        train({"epsilon": 4.0, "feature_bounds": BOUNDS}, X, y, base_margin=np.zeros(500),
              select="shapes")
    configurations, _ = sent["selection"]
    assert {c.init_score for c in configurations} == {"zero"}


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
