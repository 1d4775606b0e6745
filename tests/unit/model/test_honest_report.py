"""``privacy_report()["is_dp"]`` and ``not_dp`` name every choice that is not DP: reproducible
noise and category lists read from a pandas dtype too (issue 30, item 4), in the model's
file and in an older file's report, from its parameters."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import dpxgb_dask
from dpxgb_dask import DPXGBClassifier
from dpxgb_dask.privacy.validation import PrivacyLeakWarning

SEED = 2**200 + 31


def _frame(n=1000):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=n),
                      "c": pd.Series(rng.choice(["x", "y", "z"], n)).astype("category")})
    return X, (X["a"] > 0).astype(int)


def _fit(X, y, client, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return DPXGBClassifier(epsilon=1.0, n_estimators=3, classes=[0, 1], client=client,
                               **kwargs).fit(X, y)


def test_reproducible_noise_is_not_dp_in_the_report_and_the_file(client, tmp_path):
    X, y = _frame()
    model = _fit(X[["a"]], y, client, feature_bounds=[(-4, 4)], random_state=SEED,
                 reproducible_noise=True)
    report = model.privacy_report()
    assert report["is_dp"] is False
    assert [c["parameter"] for c in report["not_dp"]] == ["reproducible_noise=True"]
    path = tmp_path / "model.json"
    model.booster_.save_model(path)
    assert [c["purpose"] for c in json.loads(path.read_text())["ledger"]["not_dp"]] == ["noise"]
    # a file written before the report named it still reports it, from its parameters
    older = json.loads(path.read_text())
    older["ledger"]["not_dp"] = []
    path.write_text(json.dumps(older))
    loaded = dpxgb_dask.load_model(path)
    assert loaded.privacy_report()["is_dp"] is False
    assert [c["purpose"] for c in loaded.privacy_report()["not_dp"]] == ["noise"]
    # and a fit with a fresh secret per fit is DP
    assert _fit(X[["a"]], y, client, feature_bounds=[(-4, 4)]).privacy_report()["is_dp"]


@pytest.mark.parametrize("given, is_dp", [(None, False), ({"c": ["x", "y", "z"]}, True)])
def test_category_lists_from_a_pandas_dtype_are_not_dp(client, given, is_dp):
    X, y = _frame()
    model = _fit(X, y, client, feature_bounds={"a": (-4, 4)}, categories=given)
    report = model.privacy_report()
    assert report["is_dp"] is is_dp
    purposes = [c["purpose"] for c in report["not_dp"]]
    assert purposes == ([] if is_dp else ["categories"])
    if not is_dp:
        assert "['c']" in report["not_dp"][0]["parameter"]


def test_a_model_file_states_its_totals_rounded_up_to_five_digits():
    """Issue 45: an accountant's total differs between CPUs in its last digits; the file
    states an upper bound with 5 significant digits, which the claim check accepts."""
    from decimal import Decimal

    from dpxgb_dask.model.certificate import CLAIM_RTOL, STATED_DIGITS, stated_total

    rng = np.random.default_rng(3)
    for value in np.exp(rng.uniform(-10, 6, size=3000)):
        stated = stated_total(float(value))
        assert stated >= value and (stated - value) / value < 10.0**(1 - STATED_DIGITS)
        assert (stated - value) / value <= CLAIM_RTOL
        assert len(Decimal(repr(stated)).normalize().as_tuple().digits) <= STATED_DIGITS
        assert stated_total(stated) == stated
    assert stated_total(0.9999997151484503) == stated_total(0.9999997141780631) == 1.0
    assert stated_total(float("inf")) == float("inf") and stated_total(0.0) == 0.0
