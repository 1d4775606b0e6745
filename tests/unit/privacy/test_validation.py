"""Argument checks, typed warnings and the errors of the privacy layer."""

import math
import subprocess
import sys
import warnings

import pytest

from dpxgb_dask.privacy import (
    EPSILON_WARNING_THRESHOLD,
    BudgetError,
    LargeEpsilonWarning,
    PrivacyLeakWarning,
    check_delta,
    check_epsilon,
    check_positive,
    check_sampling_rate,
    warn_if_large_epsilon,
)


@pytest.mark.parametrize("value", [0, 0.0, -1.0, math.inf, math.nan, "1", None, True])
def test_check_epsilon_refuses_non_positive_and_non_finite(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)


def test_check_epsilon_names_argument_and_range():
    with pytest.raises(ValueError, match=r"eps_leaf must be a finite number > 0, got -2"):
        check_epsilon(-2, "eps_leaf")
    assert check_epsilon(3) == 3.0 and isinstance(check_epsilon(3), float)


@pytest.mark.parametrize("value", [-1e-9, 1.0, 1.5, math.nan, math.inf])
def test_check_delta_refuses_outside_half_open_unit_interval(value):
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        check_delta(value)


@pytest.mark.parametrize("value", [0.0, 1e-12, 0.999999])
def test_check_delta_accepts_range(value):
    assert check_delta(value) == value


@pytest.mark.parametrize("value", [0.0, -0.1, 1.0000001, math.nan])
def test_check_sampling_rate_refuses_outside_zero_one(value):
    with pytest.raises(ValueError, match=r"sampling_rate must be in \(0, 1\]"):
        check_sampling_rate(value)


def test_check_sampling_rate_accepts_one():
    assert check_sampling_rate(1) == 1.0


def test_check_positive():
    with pytest.raises(ValueError, match="sensitivity"):
        check_positive(0.0, "sensitivity")
    assert check_positive(2, "x") == 2.0


def test_privacy_leak_warning_is_user_warning_and_never_silenced():
    assert issubclass(PrivacyLeakWarning, UserWarning)
    assert issubclass(LargeEpsilonWarning, PrivacyLeakWarning)
    assert issubclass(BudgetError, Exception)

    def leak():
        warnings.warn("leak", PrivacyLeakWarning)

    with warnings.catch_warnings(record=True) as caught:
        # a fresh catch_warnings keeps the module-level "always" filter in place
        warnings.simplefilter("default")
        warnings.simplefilter("always", PrivacyLeakWarning)
        for _ in range(3):
            leak()
    assert len(caught) == 3


def test_always_filter_is_registered_at_import(tmp_path):
    # a fresh interpreter, outside pytest's own warning capture: the same call site warns
    # every time, where Python's default filter would show it once
    code = (
        "import warnings\n"
        "import dpxgb_dask.privacy as p\n"
        "for _ in range(3):\n"
        "    warnings.warn('leak', p.PrivacyLeakWarning)\n"
    )
    # cwd outside the checkout, so the child imports the installed (compiled) package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stderr.count("PrivacyLeakWarning: leak") == 3


def test_large_epsilon_warning_above_ten():
    assert EPSILON_WARNING_THRESHOLD == 10.0
    with pytest.warns(LargeEpsilonWarning, match="epsilon=10.5"):
        assert warn_if_large_epsilon(10.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_if_large_epsilon(10.0)
