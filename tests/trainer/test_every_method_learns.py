"""No degenerate fit (issue 27, item 2): every split method and every preset learns on
generated data with 10, 50 and 200 features at ε 0.5, 1 and 10, and a larger ε does not
give a worse model beyond the seeds' spread.

The task: standard normal features, the label drawn from a logistic model of the first ten
(or all, with ten features) with weights ±1 (holdout AUC of the true model about 0.90),
public bounds (-6, 6), 30,000 training and 10,000 holdout rows. Each method runs with its
own defaults (a preset's tree count capped at 100), in-process. The noise is keyed by a
fixed seed (``reproducible_noise``) so that every cell gives the same model on every run.
"""
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import check_bounds_policy, train_in_process

#: (name, preset, split method) of every way a user picks how the trees split.
METHODS = [("default", None, None), ("exponential", None, "exponential"),
           ("noisy_histogram", None, "noisy_histogram"),
           ("partially_random", None, "partially_random"),
           ("dp-xgboost", "dp-xgboost", None), ("dpboost", "dpboost", None),
           ("maddock", "maddock", None), ("s-bdt", "s-bdt", None)]
EPSILONS = (0.5, 1.0, 10.0)
#: "Clearly above 0.5": the holdout AUC every cell must reach (a constant model scores 0.5;
#: the standard error of an AUC near 0.55 on 10,000 rows is about 0.006).
LEARNS = 0.55
#: A larger ε may score lower than a smaller one by at most this much: the seeds' spread
#: (the default with 200 features at ε 0.5 scored 0.64-0.76 over 5 seeds, std 0.04).
SPREAD = 0.05

#: The presets whose papers' configuration does not learn on these tables at ε <= 1, kept
#: as published: with 30,000 rows their per-level exponential mechanism over thousands of
#: candidates is close to uniform and their Laplace leaf values are mostly noise. Their own
#: published numbers agree: DP-XGBoost reports 24.0% Adult test error at ε = 1, where a
#: constant model errs on 24.6% of adult.test (benchmarks/results/adult.md has both presets
#: at every ε). Strict: the test fails when one of them starts to learn on every cell.
PAPERS_THAT_DO_NOT_LEARN_HERE = {"dp-xgboost", "dpboost"}


def _task(n_features, seed=27):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40_000, n_features))
    informative = min(10, n_features)
    margin = X[:, :informative] @ np.resize([1.0, -1.0], informative)
    y = (rng.random(len(X)) < 1.0 / (1.0 + np.exp(-margin))).astype(float)
    return X[:30_000], y[:30_000], X[30_000:], y[30_000:]


def _cases():
    for name, preset, split_method in METHODS:
        marks = [pytest.mark.xfail(strict=True, reason=f"{name}: the paper's configuration "
                                   "is noise-dominated at ε <= 1 on 30,000 rows")] \
            if name in PAPERS_THAT_DO_NOT_LEARN_HERE else []
        for n_features in (10, 50, 200):
            yield pytest.param(name, preset, split_method, n_features, marks=marks,
                               id=f"{name}-{n_features}")


@pytest.mark.parametrize("name, preset, split_method, n_features", list(_cases()))
def test_every_method_learns_at_every_epsilon(name, preset, split_method, n_features):
    X, y, X_test, y_test = _task(n_features)
    aucs = {}
    for epsilon in EPSILONS:
        given = dict(epsilon=epsilon, feature_bounds=np.tile([-6.0, 6.0], (n_features, 1)),
                     random_state=2**140 + n_features, reproducible_noise=True)
        if split_method is not None:
            given["split_method"] = split_method
        params = resolve_params("binary:logistic", preset=preset, **given)
        if params.n_estimators > 100:
            params = resolve_params("binary:logistic", preset=preset, n_estimators=100,
                                    **given)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reproducible_noise and the presets warn
            booster, _ = train_in_process(check_bounds_policy(params, n_features), X, y)
        margins = booster.predict_margin(X_test)
        aucs[epsilon] = roc_auc_score(y_test, margins)
        # (at once: a cell that does not learn at a small ε fails without the larger ones)
        assert aucs[epsilon] >= LEARNS, \
            f"{name} at ε = {epsilon} with {n_features} features: {aucs}"
    for k, small in enumerate(EPSILONS):
        for large in EPSILONS[k + 1:]:
            assert aucs[large] >= aucs[small] - SPREAD, \
                f"{name} with {n_features} features is worse at ε = {large}: {aucs}"
