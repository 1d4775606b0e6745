"""XGBoost's API where it has a DP meaning: every training parameter as a constructor
keyword (XGBoost's names too), conflicting values refused, get_booster(), apply(),
predict(output_margin=, iteration_range=) and Booster slicing by rounds."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor, train
from dpxgb_dask.params import resolve_params
from dpxgb_dask.params.names import canonical_names, merge_keywords
from dpxgb_dask.training import train_in_process

BOUNDS = [[-4.0, 4.0]] * 3


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def test_training_parameters_are_constructor_keywords_kept_by_clone_and_set_params():
    model = DPXGBClassifier(epsilon=2.0, split_method="noisy_histogram", n_jobs=1,
                            classes=[0, 1], feature_bounds=BOUNDS)
    params = model.get_params()
    assert params["split_method"] == "noisy_histogram" and params["n_jobs"] == 1
    copy = clone(model)
    assert copy.get_params() == params and copy.split_method == "noisy_histogram"
    copy.set_params(split_method="partially_random", accountant="rdp")
    assert copy.get_params()["split_method"] == "partially_random"
    assert copy.get_params()["accountant"] == "rdp"
    assert model.get_params()["split_method"] == "noisy_histogram"  # (the original untouched)


def test_a_keyword_parameter_trains(client):
    X, y = _data()
    model = DPXGBClassifier(epsilon=2.0, n_estimators=4, split_method="exponential",
                            accountant="rdp", eta=0.2, classes=[0, 1], feature_bounds=BOUNDS,
                            client=client).fit(X, y)
    p = model.get_booster().params
    assert p["split_method"] == "exponential" and p["accountant"] == "rdp"
    assert p["learning_rate"] == 0.2 and p["leaf_method"] == "noisy_average"  # its defaults


@pytest.mark.parametrize("kwargs, message", [
    # the issue's reproducer: the constructor's 30 trees silently won over dp_params' 5
    (dict(n_estimators=30, dp_params={"n_estimators": 5}),
     r"n_estimators is given twice: n_estimators=30 as a keyword and 5 in dp_params"),
    (dict(split_method="random", dp_params={"split_method": "noisy_histogram"}),
     "split_method is given twice"),
    (dict(preset="dpboost", dp_params={"preset": "s-bdt"}), "preset is given twice"),
    (dict(eta=0.1, learning_rate=0.2), r"learning_rate is given twice: .*eta=0\.1"),
    (dict(split_methd="random"), r"unknown parameters \['split_methd'\]"),
    (dict(num_class=3), r"unknown parameters \['num_class'\]"),  # (from classes=)
])
def test_conflicting_or_unknown_parameters_are_refused_before_any_fit(kwargs, message):
    X, y = _data(200)
    with pytest.raises(ValueError, match=message):
        DPXGBClassifier(classes=[0, 1], feature_bounds=BOUNDS, **kwargs).fit(X, y)


def test_equal_values_given_twice_agree():
    assert merge_keywords({"n_estimators": 5, "eta": None}, {"n_estimators": 5,
                                                             "eta": 0.3}) == \
        {"n_estimators": 5, "learning_rate": 0.3}
    assert canonical_names({"lambda": 2.0, "seed": 3}) == {"reg_lambda": 2.0,
                                                           "random_state": 3}
    assert merge_keywords({"feature_bounds": np.array(BOUNDS)},
                          {"feature_bounds": BOUNDS})["feature_bounds"] is not None


def test_train_takes_xgboost_names():
    p = resolve_params("binary:logistic", eta=0.25, **{"lambda": 3.0}, n_jobs=2,
                       feature_bounds=BOUNDS)
    assert (p.learning_rate, p.reg_lambda, p.n_threads) == (0.25, 3.0, 2)
    with pytest.raises(ValueError, match="reg_lambda is given twice"):
        resolve_params("binary:logistic", reg_lambda=1.0, **{"lambda": 3.0},
                       feature_bounds=BOUNDS)


@pytest.fixture(scope="module", params=["binary:logistic", "multi:softprob"])
def booster(request):
    X, y = _data(3000)
    extra = {}
    if request.param == "multi:softprob":
        y, extra = np.digitize(X[:, 0], [-0.5, 0.5]), {"num_class": 3}
    p = resolve_params(request.param, epsilon=4.0, n_estimators=12, feature_bounds=BOUNDS,
                       **extra)
    return train_in_process(p, X, y.astype(float))[0], X


def test_a_booster_sliced_by_rounds_adds_up_to_the_model(booster):
    model, X = booster
    assert model.n_rounds == 12 and model.n_trees == 12 * model.n_outputs
    first, rest = model[:5], model[5:]
    assert first.n_rounds == 5 and rest.n_rounds == 7 and model[:] == model
    full = model.predict(X, output_margin=True)
    start = model.base_score
    np.testing.assert_allclose(full - start, (first.predict(X, output_margin=True) - start)
                               + (rest.predict(X, output_margin=True) - start), atol=1e-12)
    np.testing.assert_array_equal(model.predict(X, iteration_range=(0, 5)), first.predict(X))
    np.testing.assert_array_equal(model.predict(X, iteration_range=(0, 0)), model.predict(X))
    np.testing.assert_array_equal(model.predict(X, pred_leaf=True, iteration_range=(5, 12)),
                                  rest.predict(X, pred_leaf=True))
    assert model[:5].ledger == model.ledger  # a part of a released model: post-processing
    with pytest.raises(ValueError, match=r"iteration_range must be .* <= 12"):
        model.predict(X, iteration_range=(0, 13))
    with pytest.raises(TypeError, match="sliced by boosting rounds"):
        model[3]


def test_estimators_give_their_booster_leaves_margins_and_round_ranges(client):
    X, y = _data()
    model = DPXGBClassifier(epsilon=2.0, n_estimators=6, classes=[0, 1],
                            feature_bounds=BOUNDS, client=client).fit(X, y)
    booster = model.get_booster()
    assert booster is model.booster_
    np.testing.assert_array_equal(model.apply(X), booster.predict(X, pred_leaf=True))
    np.testing.assert_array_equal(model.predict(X, output_margin=True),
                                  model.decision_function(X))
    np.testing.assert_allclose(model.predict_proba(X, iteration_range=(0, 3))[:, 1],
                               booster[:3].predict(X))
    np.testing.assert_array_equal(model.apply(X, iteration_range=(2, 4)),
                                  booster[2:4].predict(X, pred_leaf=True))
    regressor = DPXGBRegressor(epsilon=2.0, n_estimators=6, feature_bounds=BOUNDS,
                               label_bounds=(0.0, 1.0), client=client).fit(X, y)
    np.testing.assert_array_equal(regressor.predict(X, output_margin=True),
                                  regressor.get_booster().predict(X, output_margin=True))
    np.testing.assert_array_equal(regressor.predict(X, iteration_range=(0, 2)),
                                  regressor.get_booster()[:2].predict(X))


def test_train_with_an_xgboost_dict(client):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster = train({"objective": "binary:logistic", "eta": 0.5, "max_depth": 2,
                         "n_estimators": 3, "feature_bounds": BOUNDS, "seed": 7}, X, y,
                        client=client)
    assert booster.params["learning_rate"] == 0.5 and booster.params["max_depth"] == 2
