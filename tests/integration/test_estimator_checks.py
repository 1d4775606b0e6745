"""scikit-learn's estimator checks on both estimators (on the session's cluster).

Declared departures: ``poor_score`` (DP noise on the checks' 200 rows keeps R² below 0.5
and accuracy below 0.83 at the default budget), and ``non_deterministic`` on an estimator
without ``reproducible_noise`` (every fit draws fresh secret noise). The checks run on
estimators that opt in to reproducible noise, so that the determinism checks run too, and
at the default configuration (ε = 1, fresh noise), where the checks that compare two fits
with the same ``random_state`` are expected to fail: ``random_state`` keys the public tree
structure, never the noise, unless the user opts in (:data:`FRESH_NOISE_CHECKS`).
"""
import warnings

import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor
from dpxgb_dask.privacy.validation import PrivacyLeakWarning

# Public bounds cannot be known for the checks' many generated datasets: a DP estimate of
# them (bounds_epsilon) serves every shape.
ESTIMATORS = [
    DPXGBClassifier(epsilon=8.0, bounds_epsilon=0.5, n_estimators=20, max_depth=3,
                    random_state=0, reproducible_noise=True),
    DPXGBRegressor(epsilon=8.0, bounds_epsilon=0.5, label_bounds=(-5.0, 5.0),
                   n_estimators=20, max_depth=3, random_state=0, reproducible_noise=True),
]


#: The checks that fit twice with the same random_state and expect the same predictions
#: (scikit-learn runs them whatever ``non_deterministic`` says), with why they differ.
FRESH_NOISE_CHECKS = {
    name: "every fit draws fresh secret DP noise: random_state keys the public structure "
          "only, unless reproducible_noise=True"
    for name in ("check_fit_idempotent", "check_supervised_y_2d",
                 "check_classifier_data_not_an_array", "check_regressor_data_not_an_array",
                 "check_regressors_int")}

#: The default configuration (ε = 1, 5 trees, fresh noise), with a DP estimate of the bounds.
DEFAULT_ESTIMATORS = [
    DPXGBClassifier(epsilon=1.0, bounds_epsilon=0.5, n_estimators=5),
    DPXGBRegressor(epsilon=1.0, bounds_epsilon=0.5, label_bounds=(-5.0, 5.0), n_estimators=5),
]


#: The checks that fit with sample weights, refused without the public bound of the
#: weights (``weight_bound``), which only the user can give (the weighted estimators below
#: run them).
WEIGHTED_CHECKS = {
    name: "sample_weight needs weight_bound, the public upper bound of the weights"
    for name in ("check_sample_weights_list", "check_sample_weights_not_an_array",
                 "check_sample_weights_not_overwritten", "check_sample_weights_pandas_series",
                 "check_sample_weights_shape", "check_sample_weight_equivalence_on_dense_data",
                 "check_sample_weight_equivalence_on_sparse_data",
                 "check_classifiers_one_label_sample_weights")}


def _expected_failures(estimator):
    failures = {} if estimator.reproducible_noise else dict(FRESH_NOISE_CHECKS)
    if estimator.get_params().get("weight_bound") is None:
        failures.update(WEIGHTED_CHECKS)
    return failures


#: With weights: the public bound of the checks' weights (they use weights up to 3 or so).
WEIGHTED_ESTIMATORS = [
    DPXGBClassifier(epsilon=8.0, bounds_epsilon=0.5, n_estimators=20, max_depth=3,
                    random_state=0, reproducible_noise=True, weight_bound=4.0),
    DPXGBRegressor(epsilon=8.0, bounds_epsilon=0.5, label_bounds=(-5.0, 5.0),
                   n_estimators=20, max_depth=3, random_state=0, reproducible_noise=True,
                   weight_bound=4.0),
]


#: The checks at the default configuration that guard something the reproducible
#: estimators' run above does not (issue 40 dropped the other ~100, the same API checks
#: again): learning at the default budget, and the checks that compare two fits with the
#: same random_state, which must FAIL (strict where they compare continuous outputs).
DEFAULT_CONFIGURATION_CHECKS = {"check_classifiers_train", "check_regressors_train",
                                *FRESH_NOISE_CHECKS}


#: The classifier's checks that compare only predicted labels: two fits with different
#: noise may still predict the same labels for every row of the check's small dataset, so
#: they are not strict (freshness itself is asserted on leaf values in
#: test_dask_training.py).
LABEL_ONLY_CHECKS = {"check_classifier_data_not_an_array", "check_supervised_y_2d"}


def _default_configuration_checks():
    for estimator in DEFAULT_ESTIMATORS:
        failures = _expected_failures(estimator)
        for estimator_, check in estimator_checks_generator(estimator):
            name = getattr(check, "func", check).__name__
            if name not in DEFAULT_CONFIGURATION_CHECKS:
                continue
            strict = not (isinstance(estimator, DPXGBClassifier) and name in LABEL_ONLY_CHECKS)
            marks = [pytest.mark.xfail(reason=failures[name], strict=strict)] \
                if name in failures else []
            yield pytest.param(estimator_, check, marks=marks,
                               id=f"{type(estimator).__name__}-{name}")


@pytest.mark.parametrize("estimator, check", list(_default_configuration_checks()))
def test_scikit_learn_checks_at_the_default_configuration(estimator, check, client):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures,
                         xfail_strict=False)
def test_scikit_learn_estimator_checks(estimator, check, client):
    with warnings.catch_warnings():
        # reproducible_noise with the checks' small random_state (a guessable noise seed)
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


def test_the_checks_ran_with_the_declared_tags():
    from sklearn.utils import get_tags

    assert get_tags(ESTIMATORS[0]).classifier_tags.multi_class is True  # softmax for K >= 3
    assert get_tags(ESTIMATORS[1]).regressor_tags.poor_score is True
    assert get_tags(ESTIMATORS[0]).input_tags.allow_nan is True
    assert get_tags(ESTIMATORS[0]).non_deterministic is False
    assert get_tags(DPXGBClassifier()).non_deterministic is True
    assert get_tags(DPXGBRegressor()).non_deterministic is True
    assert get_tags(DPXGBClassifier()).classifier_tags.poor_score is True


#: Why a weighted row is not exactly its repeated rows: the classifier's fits agree up to
#: the value grid (a share times a gradient is rounded on 2**-20 once, each repeated row's
#: product once: 2e-7 in probabilities); the regressor's default subsample (0.1) draws a
#: weighted row into a tree's Poisson sample as one row, repeated rows independently.
GRID_ROUNDED_CHECKS = {
    "DPXGBClassifier": "equivalent to repeated rows up to the value grid's rounding (2e-7)",
    "DPXGBRegressor": "subsample < 1: a weighted row joins each tree's sample as one row, "
                      "repeated rows join independently"}
EQUIVALENCE_CHECKS = ("check_sample_weight_equivalence_on_dense_data",
                      "check_sample_weight_equivalence_on_sparse_data")


def _weight_checks():
    """The checks of WEIGHTED_ESTIMATORS that fit with weights (the others run above)."""
    for estimator in WEIGHTED_ESTIMATORS:
        for estimator_, check in estimator_checks_generator(estimator):
            name = getattr(check, "func", check).__name__
            if "weight" not in name:
                continue
            reason = GRID_ROUNDED_CHECKS[type(estimator).__name__]
            marks = [pytest.mark.xfail(reason=reason, strict=False)] \
                if name in EQUIVALENCE_CHECKS else []
            yield pytest.param(estimator_, check, marks=marks,
                               id=f"{type(estimator).__name__}-{name}")


@pytest.mark.parametrize("estimator, check", list(_weight_checks()))
def test_scikit_learn_checks_with_weights(estimator, check, client):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)
