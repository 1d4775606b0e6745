"""XGBoost's ``base_margin``: each row's margins start at its base margin instead of the base
score, in training and in predictions (``train``, the estimators, Booster.predict, dask
inputs and evaluation sets). The sensitivities do not change (gradients are clipped at any
margin) and no initial score is released."""
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import log_loss, roc_auc_score

from dpxgb_dask import DPXGBClassifier, train
from dpxgb_dask.partition.aggregates import round_loss_sums
from dpxgb_dask.partition.state import PartitionState, make_part
from dpxgb_dask.partition.messages import Prepare
from dpxgb_dask.evaluation import evaluate
from dpxgb_dask.inputs import Targets
from dpxgb_dask.model.metrics import round_margins
from dpxgb_dask.objective import BASE_MARGIN_BOUND, Objective
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import check_bounds_policy, train_in_process

SEED = 2**200 + 99
BOUNDS = [[-4.0, 4.0]] * 3


def _data(n, seed):
    """Labels from X[:, 0] and a hidden score h that X does not hold: a base margin of h
    carries what the features cannot."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    hidden = 2.0 * rng.normal(size=n)
    y = (X[:, 0] + hidden + rng.normal(size=n) > 0).astype(float)
    return X, y, hidden


def _params(objective="binary:logistic", **extra):
    if objective == "reg:squarederror":
        extra.setdefault("label_bounds", (-6.0, 6.0))
    if objective == "multi:softprob":
        extra.setdefault("num_class", 3)
    return check_bounds_policy(resolve_params(
        objective, epsilon=1.0, n_estimators=10, feature_bounds=BOUNDS, random_state=SEED,
        reproducible_noise=True, **extra), 3)


def test_make_part_keeps_base_margins_in_their_public_domain():
    binary = Objective("binary:logistic")
    margins = np.array([0.5, np.nan, np.inf, -np.inf])
    part = make_part(np.zeros((4, 1)), Targets.checked(np.ones(4), None, margins), binary)
    np.testing.assert_array_equal(part.margins, [0.5, 0.0, BASE_MARGIN_BOUND,
                                                 -BASE_MARGIN_BOUND])
    assert part.weights is None  # (NaN shares: an unweighted fit)
    regression = Objective("reg:squarederror", (0.0, 10.0))
    part = make_part(np.zeros((3, 1)), Targets.checked(np.ones(3), np.array([1.0, 0.5, 0.0]),
                                                      np.array([-3.0, np.nan, 4.0])),
                     regression)
    np.testing.assert_array_equal(part.margins, [0.0, 5.0, 4.0])  # NaN: the centre
    np.testing.assert_array_equal(part.weights, [1.0, 0.5, 0.0])
    # the training scale, as the labels: (m - 5) / 5
    state = PartitionState(part, regression, 0)
    state.prepare(Prepare(np.array([[-1.0, 1.0]]), [np.array([0.0])], 2, 0.0, {0: 0}))
    np.testing.assert_array_equal(state.margins, [-1.0, 0.0, -0.2])
    multiclass = Objective("multi:softprob", n_classes=3)
    part = make_part(np.zeros((2, 1)), Targets.checked(np.zeros(2), None, np.ones((2, 3))),
                     multiclass)
    assert part.margins.shape == (2, 3)
    with pytest.raises(ValueError, match="base_margin must have 3 column"):
        make_part(np.zeros((2, 1)), Targets.checked(np.zeros(2), None, np.ones(2)), multiclass)


@pytest.mark.parametrize("objective, zero_margin", [
    ("binary:logistic", 0.0), ("reg:squarederror", 0.0), ("multi:softprob", 0.0)])
def test_a_base_margin_at_the_zero_score_gives_the_zero_score_fit(objective, zero_margin):
    """Rows that start at the margin a zero initial score gives train the same model, with
    the same releases: the base margin only moves where the gradients are taken."""
    X, y, _ = _data(2000, 1)
    if objective == "multi:softprob":
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
        margins = np.zeros((2000, 3))
    else:
        margins = np.full(2000, zero_margin)
    if objective == "reg:squarederror":
        y = 2 * X[:, 0]  # label_bounds (-6, 6): their centre 0 is the zero score's margin
    with_margins, fit = train_in_process(_params(objective), X, y, n_partitions=2,
                                         base_margin=margins)
    zero, zero_fit = train_in_process(_params(objective, init_score="zero"), X, y,
                                      n_partitions=2)
    assert [e.purpose for e in fit.ledger.events] == [e.purpose for e in zero_fit.ledger.events]
    assert "init_score" not in [e.purpose for e in fit.ledger.events]
    for field in ("feature", "threshold", "value", "cover"):
        np.testing.assert_array_equal(with_margins.nodes[field], zero.nodes[field])
    assert with_margins.params["init_score"] == "zero"


def test_predictions_start_at_the_base_margin(tmp_path):
    X, y, hidden = _data(3000, 2)
    booster, _ = train_in_process(_params(), X, y, base_margin=hidden)
    trees = booster.predict(X, output_margin=True) - booster.base_score
    margin = booster.predict(X, output_margin=True, base_margin=hidden)
    np.testing.assert_allclose(margin, hidden + trees, rtol=0, atol=1e-12)
    np.testing.assert_allclose(booster.predict(X, base_margin=hidden),
                               1 / (1 + np.exp(-margin)), rtol=1e-12)
    np.testing.assert_allclose(booster[:4].predict(X, base_margin=hidden, output_margin=True),
                               round_margins(booster, X, base_margin=hidden)[3], atol=1e-12)
    # XGBoost reads the export's base margins the same way
    xgboost = pytest.importorskip("xgboost", reason="the export check needs xgboost")
    booster.save_model(tmp_path / "model.json", format="xgboost")
    exported = xgboost.Booster(model_file=str(tmp_path / "model.json"))
    np.testing.assert_allclose(
        exported.predict(xgboost.DMatrix(X, base_margin=hidden), output_margin=True), margin,
        rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match=r"base_margin must have shape \(3000,\)"):
        booster.predict(X, base_margin=hidden[:10])
    with pytest.raises(ValueError, match="not to pred_leaf or pred_contribs"):
        booster.predict(X, base_margin=hidden, pred_contribs=True)


def test_the_base_margin_carries_what_the_features_cannot(client):
    X, y, hidden = _data(20000, 3)
    X_test, y_test, hidden_test = _data(5000, 4)
    model = DPXGBClassifier(epsilon=1.0, n_estimators=20, classes=[0, 1],
                            feature_bounds=BOUNDS, client=client)
    with_margin = model.fit(X, y, base_margin=hidden).predict_proba(
        X_test, base_margin=hidden_test)[:, 1]
    assert "init_score" not in [e["purpose"] for e in model.privacy_report()["events"]]
    without = DPXGBClassifier(epsilon=1.0, n_estimators=20, classes=[0, 1],
                              feature_bounds=BOUNDS, client=client).fit(X, y)
    auc_with = roc_auc_score(y_test, with_margin)
    auc_without = roc_auc_score(y_test, without.predict_proba(X_test)[:, 1])
    assert auc_with > auc_without + 0.1, (auc_with, auc_without)  # about 0.93 and 0.72
    # and the features still learn: better than the base margin alone (0.891; with 20
    # trees the default's mixed trees score 0.911-0.918 over 5 noise seeds in process, its
    # one-feature trees alone 0.917-0.923)
    assert auc_with > roc_auc_score(y_test, hidden_test) + 0.01


@pytest.mark.parametrize("kind", ["dask_array", "dask_frame"])
def test_dask_base_margins_train_and_predict_as_in_memory(client, kind):
    X, y, hidden = _data(4000, 5)
    params = {"epsilon": 1.0, "n_estimators": 6, "feature_bounds": BOUNDS,
              "random_state": SEED, "reproducible_noise": True, "objective": "reg:squarederror",
              "label_bounds": (-8.0, 8.0)}
    target = X[:, 0] + hidden
    in_memory = train(params, X, target, client=client, n_partitions=2, base_margin=hidden)
    if kind == "dask_array":
        dX = da.from_array(X, chunks=(2000, 3))
        dy, dm = da.from_array(target, chunks=2000), da.from_array(hidden, chunks=2000)
    else:
        frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=target, m=hidden)
        ddf = dd.from_pandas(frame, npartitions=2)
        dX, dy, dm = ddf[["a", "b", "c"]], ddf["y"], ddf["m"]
    on_dask = train(params, dX, dy, client=client, base_margin=dm)
    for field in ("feature", "threshold", "value"):
        np.testing.assert_array_equal(on_dask.nodes[field], in_memory.nodes[field])
    predicted = np.asarray(on_dask.predict(dX, base_margin=dm).compute()).reshape(-1)
    np.testing.assert_allclose(predicted, in_memory.predict(X, base_margin=hidden), atol=1e-12)


def test_eval_sets_score_from_their_base_margins(client):
    X, y, hidden = _data(6000, 6)
    X_val, y_val, hidden_val = _data(2000, 7)
    model = DPXGBClassifier(epsilon=1.0, n_estimators=8, classes=[0, 1], feature_bounds=BOUNDS,
                            client=client)
    model.fit(X, y, base_margin=hidden, eval_set=[(X_val, y_val)],
              base_margin_eval_set=[hidden_val], eval_set_public=True)
    booster = model.get_booster()
    probability = booster.predict(X_val, base_margin=hidden_val)
    assert model.evals_result_["validation_0"]["logloss"][-1] == pytest.approx(
        log_loss(y_val, probability), rel=1e-9)
    # a private set's exact query starts from its base margins too
    part = make_part(X_val, Targets.checked(y_val, None, hidden_val), Objective("binary:logistic"))
    sums = round_loss_sums(part, booster, ["error"], 8)
    exact = evaluate(booster, [(X_val, y_val, hidden_val)], ["error"])["validation_0"]["error"]
    np.testing.assert_allclose(sums[:-1] / sums[-1], exact, atol=1e-9)
    model.fit(X, y, base_margin=hidden, eval_set=[(X_val, y_val)],
              base_margin_eval_set=[hidden_val])
    assert len(model.evals_result_["validation_0"]["logloss"]) == 8


def test_weights_and_base_margins_travel_together():
    X, y, hidden = _data(3000, 8)
    weights = np.random.default_rng(9).uniform(0, 2, size=3000)
    p = _params(weight_bound=2.0)
    booster, fit = train_in_process(p, X, y, n_partitions=2, sample_weight=weights,
                                    base_margin=hidden)
    assert booster.params["weight_bound"] == 2.0 and booster.params["init_score"] == "zero"
    assert np.isfinite(booster.predict(X, base_margin=hidden)).all()


@pytest.mark.parametrize("base_margin, message", [
    (np.zeros(10), r"base_margin must have shape \(600,\)"),
    (np.zeros((600, 2)), r"base_margin must have shape \(600,\)"),
    (da.zeros(600, chunks=300), "base_margin must be a dask collection exactly when y is one"),
])
def test_bad_base_margins_are_refused_naming_them(client, base_margin, message):
    X, y, _ = _data(600, 10)
    model = DPXGBClassifier(epsilon=1.0, n_estimators=3, classes=[0, 1], feature_bounds=BOUNDS,
                            client=client)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y, base_margin=base_margin)
    with pytest.raises(ValueError, match="base_margin_eval_set must have one entry per"):
        model.fit(X, y, eval_set=[(X, y)], base_margin_eval_set=[])
