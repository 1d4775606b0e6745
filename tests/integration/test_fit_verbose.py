"""XGBoost's ``fit(..., verbose=)`` on the estimators: the evaluation log of an eval_set
(XGBoost's lines, the numbers of ``evals_result_``), every n-th round, the progress display
without an eval_set, and the values refused."""
import numpy as np
import pytest

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor

BOUNDS = [[-4.0, 4.0]] * 3


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def _classifier(client, seed, **params):
    return DPXGBClassifier(epsilon=2.0, max_depth=2, classes=[0, 1], feature_bounds=BOUNDS,
                           random_state=seed, client=client, **params)


def _expected_lines(evals_result, rounds):
    """XGBoost's evaluation log lines of ``rounds`` from ``evals_result``."""
    return [f"[{r}]" + "".join(f"\t{data}-{metric}:{scores[r]:.5f}"
                               for data, metrics in evals_result.items()
                               for metric, scores in metrics.items())
            for r in rounds]


def test_verbose_true_prints_each_round_of_evals_result_in_xgboosts_format(client, seed,
                                                                          capsys):
    X, y = _data(300, 0)
    X_val, y_val = _data(200, 1)
    model = _classifier(client, seed, n_estimators=5, eval_metric=["logloss", "error"])
    model.fit(X, y, eval_set=[(X, y), (X_val, y_val)], eval_set_public=True, verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(model.evals_result_["validation_0"]["logloss"]) == 5
    assert lines == _expected_lines(model.evals_result_, range(5))
    assert lines[0].startswith("[0]\tvalidation_0-logloss:")
    assert lines[0].split("\t")[1:] == [
        f"validation_0-logloss:{model.evals_result_['validation_0']['logloss'][0]:.5f}",
        f"validation_0-error:{model.evals_result_['validation_0']['error'][0]:.5f}",
        f"validation_1-logloss:{model.evals_result_['validation_1']['logloss'][0]:.5f}",
        f"validation_1-error:{model.evals_result_['validation_1']['error'][0]:.5f}"]
    # a fit parameter, not the estimator's: get_params and clone see the constructor's
    assert model.get_params()["verbose"] is False


def test_verbose_n_prints_every_nth_round_and_the_last(client, seed, capsys):
    X, y = _data(300, 2)
    model = _classifier(client, seed, n_estimators=6)
    model.fit(X, y, eval_set=[(X, y)], eval_set_public=True, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines == _expected_lines(model.evals_result_, [0, 2, 4, 5])


def test_the_log_is_xgboosts_evaluation_monitors(client, seed, capsys):
    xgboost = pytest.importorskip("xgboost", reason="compared with XGBoost's own log")
    X, y = _data(300, 3)
    model = _classifier(client, seed, n_estimators=7, eval_metric=["error", "logloss"])
    for period in (1, 3):
        model.fit(X, y, eval_set=[(X, y), (X[:100], y[:100])], eval_set_public=True,
                  verbose=period)
        printed = capsys.readouterr().out.splitlines()
        logged = []
        monitor = xgboost.callback.EvaluationMonitor(period=period, logger=logged.append)
        for r in range(7):
            monitor.after_iteration(None, r, {
                data: {metric: scores[:r + 1] for metric, scores in metrics.items()}
                for data, metrics in model.evals_result_.items()})
        monitor.after_training(None)
        assert printed == [message.strip() for message in logged]


def test_a_private_eval_set_prints_its_released_scores(client, seed, capsys):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 3))
    target = np.clip(X[:, 0], -2.0, 2.0)
    model = DPXGBRegressor(epsilon=4.0, n_estimators=4, max_depth=2, feature_bounds=BOUNDS,
                           label_bounds=(-2.0, 2.0), random_state=seed, client=client)
    model.fit(X, target, eval_set=[(X[:200], target[:200])], verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines == _expected_lines(model.evals_result_, range(4))
    assert lines[0].startswith("[0]\tvalidation_0-rmse:")


def test_fit_verbose_overrides_the_constructors(client, seed, capsys):
    X, y = _data(300, 5)
    quiet = _classifier(client, seed, n_estimators=3, verbose=True)
    quiet.fit(X, y, eval_set=[(X, y)], eval_set_public=True, verbose=False)
    captured = capsys.readouterr()
    assert captured.out == "" and "dpxgb" not in captured.err  # no log, no progress
    assert quiet.get_params()["verbose"] is True
    # without an eval_set, verbose=True is the progress display (the constructor's meaning)
    shown = _classifier(client, seed, n_estimators=3)
    shown.fit(X, y, verbose=True)
    captured = capsys.readouterr()
    assert captured.out == "" and "dpxgb: done, 3 trees" in captured.err


@pytest.mark.parametrize("verbose", ["yes", -1, 1.5, [1]])
def test_a_verbose_that_is_no_bool_or_count_is_refused(verbose):
    X, y = _data(50, 6)
    model = DPXGBClassifier(n_estimators=2, classes=[0, 1], feature_bounds=BOUNDS)
    with pytest.raises((TypeError, ValueError),
                       match=r"verbose must be a bool or a non-negative int.*got"):
        model.fit(X, y, eval_set=[(X, y)], eval_set_public=True, verbose=verbose)
    assert not hasattr(model, "booster_")  # refused before the fit
