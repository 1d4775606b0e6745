"""Sensitivity formulas against brute force on neighbouring datasets (add/remove one row)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpxgb_dask.privacy import (
    PrivacyLeakWarning,
    dpboost_gain_sensitivity,
    dpxgboost_gain_sensitivity,
    geometric_leaf_clip_threshold,
    gradient_histogram_l1_sensitivity,
    gradient_histogram_l2_sensitivity,
    leaf_balanced_sigmas,
    leaf_value_sensitivity,
)

NO_CLIP = 1e9  # a leaf_bound that never binds

DETERMINISTIC = settings(derandomize=True, max_examples=300, deadline=None)


def child_term(s, n, lam):
    return s * s / (n + lam)


@DETERMINISTIC
@given(
    n=st.integers(0, 5000),
    frac=st.floats(-1, 1),
    gs=st.floats(-1, 1),
    lam=st.floats(0, 10),
    g_star=st.floats(0.01, 100),
)
def test_gain_change_never_exceeds_three_g_star_squared(n, frac, gs, lam, g_star):
    if n + lam == 0:
        return
    s = frac * n * g_star
    change = abs(child_term(s + gs * g_star, n + 1, lam) - child_term(s, n, lam))
    assert change <= dpxgboost_gain_sensitivity(g_star) * (1 + 1e-12)


def test_three_g_star_squared_is_the_supremum():
    lam, g = 0.1, 1.0
    worst = [abs(child_term(n * g - g, n + 1, lam) - child_term(n * g, n, lam)) for n in (10, 1000, 10**6)]
    assert worst[0] < worst[1] < worst[2] < 3.0 and worst[2] > 2.9999


def test_dpboost_gain_bound_is_violated_and_warns():
    lam = 0.1
    with pytest.warns(PrivacyLeakWarning, match="underestimates"):
        claimed = dpboost_gain_sensitivity(1.0, lam)
    assert claimed == pytest.approx((3 * lam + 2) / ((lam + 1) * (lam + 2)))
    # the counterexample of the docstring: 100 rows with g = +1, add one row with g = -1
    actual = abs(child_term(99.0, 101, lam) - child_term(100.0, 100, lam))
    assert actual == pytest.approx(2.956, abs=1e-3)
    assert actual > 2.9 * claimed


def leaf_value(s, n, lam):
    return -s / (n + lam)


@DETERMINISTIC
@given(n=st.integers(0, 3000), frac=st.floats(-1, 1), gs=st.floats(-1, 1), lam=st.floats(0, 10))
def test_leaf_value_sensitivity(n, frac, gs, lam):
    if n + lam == 0:
        return
    g_star = 1.7
    s = frac * n * g_star
    change = abs(leaf_value(s + gs * g_star, n + 1, lam) - leaf_value(s, n, lam))
    assert change <= leaf_value_sensitivity(g_star, lam, 0.0, NO_CLIP) * (1 + 1e-12)
    # DP-XGBoost eq. (6): the exact worst case for this n
    assert change <= (2 * n + lam) * g_star / ((n + lam) * (n + 1 + lam)) * (1 + 1e-12)


@DETERMINISTIC
@given(n_min=st.integers(1, 500), extra=st.integers(0, 1000), frac=st.floats(-1, 1), gs=st.floats(-1, 1),
       lam=st.floats(0, 10))
def test_leaf_value_sensitivity_with_a_floor(n_min, extra, frac, gs, lam):
    """Leaves of at least n_min rows (no floor in force): DP-XGBoost eq. (7) holds too."""
    n = n_min + extra
    s = frac * n
    change = abs(leaf_value(s + gs, n + 1, lam) - leaf_value(s, n, lam))
    assert change <= leaf_value_sensitivity(1.0, lam, n_min, NO_CLIP) * (1 + 1e-12)


def test_leaf_sensitivity_values():
    assert leaf_value_sensitivity(2.0, 1.0, 0.0, NO_CLIP) == 1.0  # DPBoost Lemma 2
    assert leaf_value_sensitivity(1.0, 0.0, 9, NO_CLIP) == pytest.approx(0.2)  # 2g*/(N+1)
    assert leaf_value_sensitivity(1.0, 0.0, 1, NO_CLIP) == 1.0  # capped by g*/(1+lambda)
    assert leaf_value_sensitivity(1.0, 0.0, 0.0, 0.1) == pytest.approx(0.2)  # 2 leaf_bound


def test_geometric_leaf_clipping():
    assert geometric_leaf_clip_threshold(1.0, 0.1, 0) == 1.0
    assert geometric_leaf_clip_threshold(2.0, 0.5, 3) == 0.25
    # DPBoost Corollary 2: clipped to g*(1-eta)^t, a leaf moves by min(g*/(1+lambda), 2 g*(1-eta)^t)
    for t in (0, 10):
        clip = geometric_leaf_clip_threshold(1.0, 0.3, t)
        assert leaf_value_sensitivity(1.0, 0.1, 0.0, clip) == pytest.approx(
            min(1 / 1.1, 2 * 0.7**t))
    with pytest.raises(ValueError, match="learning_rate"):
        geometric_leaf_clip_threshold(1.0, 1.5, 0)
    with pytest.raises(ValueError, match="tree_index"):
        geometric_leaf_clip_threshold(1.0, 0.5, -1)


def test_histogram_sensitivities():
    # Maddock et al. §4.2: binary cross-entropy, g* = 1, h* = 1/4 -> Delta_2^2 = 17/16
    assert gradient_histogram_l2_sensitivity(1.0, 0.25) ** 2 == pytest.approx(17 / 16)
    assert gradient_histogram_l2_sensitivity(1.0, 0.25, n_features=10) ** 2 == pytest.approx(170 / 16)
    assert gradient_histogram_l1_sensitivity(0.5, n_features=8) == 4.0
    # Hessian sums alone (the iterative-Hessian sketch): sqrt(F) h*
    assert gradient_histogram_l2_sensitivity(0.0, 0.25, n_features=16) == pytest.approx(1.0)


def test_histogram_l2_sensitivity_brute_force():
    rng = np.random.default_rng(5)
    n_features, n_bins, g_star, h_star = 6, 8, 1.0, 0.25
    bound = gradient_histogram_l2_sensitivity(g_star, h_star, n_features)
    for _ in range(200):
        bins = rng.integers(0, n_bins, size=n_features)
        g, h = rng.uniform(-g_star, g_star), rng.uniform(0, h_star)
        diff = np.zeros((n_features, n_bins, 2))
        diff[np.arange(n_features), bins] = (g, h)
        assert np.linalg.norm(diff) <= bound + 1e-12


def test_leaf_balanced_sigmas_are_as_private_as_one_gaussian():
    z, g, h = 2.0, 1.0, 0.25
    for r in (0.1, 0.5, 0.9):
        sg, sh = leaf_balanced_sigmas(z, g, h, r)
        assert (g / sg) ** 2 + (h / sh) ** 2 == pytest.approx(1 / z**2)
    sg, sh = leaf_balanced_sigmas(z, g, h, 0.5)
    assert sg / g == pytest.approx(sh / h)  # r = 0.5: no rebalancing
    # a larger r (the denominator's share) gives the Hessian sum less noise
    assert leaf_balanced_sigmas(z, g, h, 0.9)[1] < sh < leaf_balanced_sigmas(z, g, h, 0.1)[1]
    # Maddock et al.'s spherical noise: r = h*^2 / (g*^2 + h*^2) gives sigma_G = sigma_H
    sg, sh = leaf_balanced_sigmas(z, g, h, h**2 / (g**2 + h**2))
    assert sg == pytest.approx(sh) == pytest.approx(z * math.sqrt(g**2 + h**2))
    with pytest.raises(ValueError, match="ratio"):
        leaf_balanced_sigmas(z, g, h, 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dpxgboost_gain_sensitivity(0.0),
        lambda: leaf_value_sensitivity(1.0, -1.0, 0.0, 1.0),
        lambda: leaf_value_sensitivity(1.0, 1.0, -1.0, 1.0),
        lambda: leaf_value_sensitivity(1.0, 1.0, 0.0, 0.0),
        lambda: gradient_histogram_l2_sensitivity(1.0, -0.1),
        lambda: gradient_histogram_l2_sensitivity(0.0, 0.0),
        lambda: gradient_histogram_l1_sensitivity(1.0, n_features=0),
    ],
)
def test_sensitivity_argument_errors(call):
    with pytest.raises(ValueError):
        call()
