"""scikit-learn's estimator checks on both estimators (on the session's cluster).

Declared departures: ``regressor_tags.poor_score`` on the regressor (DP noise on the
checks' 200 rows keeps R² below 0.5), and ``non_deterministic`` on an estimator without
``reproducible_noise`` (every fit draws fresh secret noise). The checks run on estimators
that opt in to reproducible noise, so that the determinism checks run too.
"""
import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

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


@parametrize_with_checks(ESTIMATORS)
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
