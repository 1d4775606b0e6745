"""XGBoost's eval_set, evals_result_, early_stopping_rounds and best_iteration on public
evaluation sets (post-processing: nothing spent), and callbacks that see public progress
events only. Private evaluation sets: test_private_eval_set.py."""
import numpy as np
import pytest
from sklearn.metrics import log_loss, mean_squared_error

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor
from dpxgb_dask.evaluation import early_stopping, evaluate
from dpxgb_dask.model.metrics import round_margins
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process

BOUNDS = [[-4.0, 4.0]] * 3


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, (np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) > 0).astype(int)


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob",
                                       "reg:squarederror"])
def test_round_margins_are_the_margins_of_each_rounds_model(objective):
    X, y = _data(3000, 0)
    extra = {"label_bounds": (0.0, 1.0)} if objective == "reg:squarederror" else {}
    if objective == "multi:softprob":
        y, extra = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]), {"num_class": 3}
    p = resolve_params(objective, epsilon=2.0, n_estimators=8, feature_bounds=BOUNDS, **extra)
    booster, _ = train_in_process(p, X, y.astype(float))
    margins = round_margins(booster, X[:500])
    assert margins.shape[0] == booster.n_rounds == 8
    for r in range(8):
        np.testing.assert_allclose(margins[r], booster[:r + 1].predict(X[:500],
                                                                       output_margin=True),
                                   rtol=0, atol=1e-12)
    scores = evaluate(booster, [(X[:500], y[:500])],
                      ["rmse"] if objective == "reg:squarederror" else
                      ["mlogloss"] if objective == "multi:softprob" else ["logloss"])
    (series,) = scores["validation_0"].values()
    last = booster.predict(X[:500])
    expected = (np.sqrt(mean_squared_error(y[:500], last)) if objective == "reg:squarederror"
                else log_loss(y[:500], np.column_stack([1 - last, last]) if last.ndim == 1
                              else last, labels=sorted(set(y))))
    assert series[-1] == pytest.approx(expected, rel=1e-9)


def test_early_stopping_follows_xgboosts_rule():
    scores = [0.9, 0.8, 0.7, 0.71, 0.69, 0.70, 0.72, 0.73, 0.60]
    assert early_stopping(scores, 3) == (4, 0.69)  # stops at round 7: 5, 6, 7 no better
    assert early_stopping(scores, 10) == (8, 0.60)  # never stops: the best of all
    assert early_stopping([0.5, 0.6, 0.4], 1, lower_is_better=False) == (1, 0.6)


def test_a_public_eval_set_is_scored_round_by_round_and_picks_the_best_iteration(client):
    X, y = _data(4000, 1)
    X_val, y_val = _data(1500, 2)
    model = DPXGBClassifier(epsilon=1.0, n_estimators=30, max_depth=3, classes=[0, 1],
                            feature_bounds=BOUNDS, client=client, early_stopping_rounds=5,
                            eval_metric=["auc", "logloss"])
    model.fit(X, y, eval_set=[(X[:1000], y[:1000]), (X_val, y_val)], eval_set_public=True)
    result = model.evals_result()
    assert set(result) == {"validation_0", "validation_1"}
    assert set(result["validation_1"]) == {"auc", "logloss"}
    assert all(len(v) == 30 for scores in result.values() for v in scores.values())
    series = result["validation_1"]["logloss"]  # the last set's last metric decides
    assert (model.best_iteration, model.best_score) == early_stopping(series, 5)
    booster = model.get_booster()
    assert booster.n_rounds == 30  # every round was trained (and released)
    best = booster[:model.best_iteration + 1]
    np.testing.assert_array_equal(model.predict_proba(X_val)[:, 1], best.predict(X_val))
    probability = booster[:13].predict(X_val)
    assert series[12] == pytest.approx(log_loss(y_val, np.column_stack(
        [1 - probability, probability])), rel=1e-9)
    # nothing spent on the evaluation: the ledger is a fit's without eval_set
    plain = DPXGBClassifier(epsilon=1.0, n_estimators=30, max_depth=3, classes=[0, 1],
                            feature_bounds=BOUNDS, client=client).fit(X, y)
    assert booster.ledger["epsilon"] == pytest.approx(plain.booster_.ledger["epsilon"])
    assert booster.privacy_report()["n_events"] == plain.booster_.privacy_report()["n_events"]
    assert not hasattr(plain, "evals_result_")
    with pytest.raises(AttributeError):
        plain.best_iteration


def test_regressor_eval_set(client):
    X, y = _data(3000, 3)
    target = np.nan_to_num(X[:, 0])
    model = DPXGBRegressor(epsilon=2.0, n_estimators=10, feature_bounds=BOUNDS,
                           label_bounds=(-4.0, 4.0), eval_metric="mae", client=client)
    model.fit(X, target, eval_set=[(X[:500], target[:500])], eval_set_public=True)
    maes = model.evals_result_["validation_0"]["mae"]
    assert len(maes) == 10 and maes[-1] == pytest.approx(
        np.mean(np.abs(model.predict(X[:500]) - target[:500])), rel=1e-9)


@pytest.mark.parametrize("kwargs, fit_kwargs, message", [
    ({"early_stopping_rounds": 3}, {}, "early_stopping_rounds needs an eval_set"),
    ({"eval_metric": "rmse"}, {"eval_set": "public"}, r"eval_metric must name distinct "
                                                      r"metrics for binary:logistic"),
    ({"early_stopping_rounds": 0}, {"eval_set": "public"}, "positive integer"),
])
def test_bad_evaluation_arguments_are_refused(client, kwargs, fit_kwargs, message):
    X, y = _data(600, 4)
    if "eval_set" in fit_kwargs:
        fit_kwargs = {"eval_set": [(X[:100], y[:100])],
                      "eval_set_public": fit_kwargs["eval_set"] == "public"}
    model = DPXGBClassifier(epsilon=1.0, n_estimators=3, classes=[0, 1], feature_bounds=BOUNDS,
                            client=client, **kwargs)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y, **fit_kwargs)


def test_callbacks_see_the_public_progress_events(client):
    X, y = _data(2000, 5)
    events = []
    model = DPXGBClassifier(epsilon=1.0, n_estimators=6, max_depth=3, classes=[0, 1],
                            feature_bounds=BOUNDS, client=client, callbacks=[events.append])
    model.fit(X, y)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("tree") == 6
    assert events[-1]["epsilon"] == pytest.approx(model.booster_.ledger["epsilon"])
    released = [r for e in events for r in e["releases"]]
    assert len(released) == model.booster_.privacy_report()["n_events"]
    # a release's public description only: mechanism and noise, never a value
    assert all("value" not in r and "values" not in r for r in released)

    def broken(event):
        raise RuntimeError("a bug in the callback")

    with pytest.raises(RuntimeError, match="a bug in the callback"):
        model.set_params(callbacks=[broken]).fit(X, y)
