"""The release plan (boosting/plan.py): calibration to a total (ε, δ) under each accountant, and the
ε of a plan as a function of its scale."""
import numpy as np
import pytest

from dpxgb_dask.boosting import calibration as calibration_module
from dpxgb_dask.params import PRESETS, resolve_params
from dpxgb_dask.boosting.calibration import calibrate_budget_scale, make_plan
from dpxgb_dask.boosting.plan import ReleasePlan
from dpxgb_dask.privacy.accountants import PLDAccountant, RDPAccountant, get_accountant
from dpxgb_dask.privacy.validation import BudgetError, PrivacyLeakWarning

BOUNDS = np.tile([0.0, 1.0], (4, 1))


@pytest.mark.parametrize("accountant", ["basic", "rdp", "pld"])
@pytest.mark.parametrize("preset, epsilon, delta", [
    (None, 0.3, 1e-6), (None, 4.0, 1e-5), ("dp-xgboost", 4.0, 1e-6),
    ("s-bdt", 0.3, 1e-6), ("maddock", 4.0, 1e-6), ("dpboost", 0.3, 1e-5),
])
def test_calibration_round_trip_within_rtol(preset, epsilon, delta, accountant):
    params = resolve_params("binary:logistic", preset=preset, epsilon=epsilon, delta=delta,
                            accountant=accountant, n_estimators=12, max_depth=3,
                            feature_bounds=BOUNDS)
    plan = make_plan(params, 4)
    # the ledger rebuilt from the plan's noise parameters only
    spent = get_accountant(accountant).get_epsilon(plan.ledger(), delta)
    assert (1 - 1e-2) * epsilon <= spent <= epsilon


@pytest.mark.parametrize("accountant", [RDPAccountant(), PLDAccountant()], ids=["rdp", "pld"])
def test_epsilon_is_monotone_and_continuous_in_the_scale(accountant):
    """Choosing "amplified or not" per term once made RDP jump from 2.13 to 4.29 between
    two close scales; the plan's ε must grow in comparable steps on a fine grid."""
    params = resolve_params("binary:logistic", preset="dp-xgboost", n_estimators=20,
                            max_depth=4, subsample=0.2, feature_bounds=BOUNDS)
    for scales in (np.linspace(0.55, 0.75, 21), np.linspace(1.0, 3.0, 21)):
        values = [accountant.get_epsilon(ReleasePlan(params, 4, s).ledger(), 1e-6)
                  for s in scales]
        steps = np.diff(values)
        assert steps.min() > 0, values
        assert steps.max() < 2 * np.median(steps), values


def test_calibration_refuses_an_accountant_that_jumps_over_the_target(monkeypatch):
    class Jumpy:
        """ε of the first release's ε, times 10 above 0.5: no scale spends 3."""

        def get_epsilon(self, ledger, delta):
            eps = sum(e.epsilon for e in ledger)
            return eps if eps < 0.5 else 10 * eps

    params = resolve_params("binary:logistic", preset="dp-xgboost", epsilon=3.0,
                            accountant="basic", n_estimators=5, feature_bounds=BOUNDS)
    monkeypatch.setattr(calibration_module, "get_accountant", lambda name: Jumpy())
    with pytest.raises(BudgetError, match="jumps over the target"):
        calibrate_budget_scale(params, 4)
    monkeypatch.undo()
    assert 3.0 * (1 - 1e-2) <= get_accountant("basic").get_epsilon(
        ReleasePlan(params, 4, calibrate_budget_scale(params, 4)).ledger(), 0.0) <= 3.0


def test_the_plan_never_spends_more_than_the_fixed_releases_allow():
    params = resolve_params("binary:logistic", epsilon=1.0, bounds_epsilon=1.0,
                            n_estimators=5)
    with pytest.raises(BudgetError, match="bounds_epsilon"):
        calibrate_budget_scale(params, 4)


@pytest.mark.parametrize("preset", [None, *PRESETS])
def test_every_sensitivity_of_the_plan_comes_from_the_sensitivity_module(preset):
    from dpxgb_dask.privacy import sensitivity

    params = resolve_params("binary:logistic", preset=preset, epsilon=1.0, n_estimators=3,
                            max_depth=3, feature_bounds=BOUNDS)
    plan = make_plan(params, 4)
    h = params.hessian_bound if params.newton else 1.0
    expected = {
        ("sketch", "laplace"): sensitivity.gradient_histogram_l1_sensitivity(1.0, 4),
        ("sketch", "gaussian"): sensitivity.gradient_histogram_l2_sensitivity(0.0, h, 4),
        ("split", "gaussian"): sensitivity.gradient_histogram_l2_sensitivity(
            params.gradient_bound, h, 4),
    }
    if params.gain_sensitivity == "dpboost":
        with pytest.warns(PrivacyLeakWarning):
            expected["split", "exponential"] = sensitivity.dpboost_gain_sensitivity(
                params.gradient_bound, params.reg_lambda)
    else:
        expected["split", "exponential"] = sensitivity.dpxgboost_gain_sensitivity(
            params.gradient_bound)
    for release in plan.releases.values():
        key = (release.purpose, release.mechanism)
        if key in expected:
            assert release.sensitivity == expected[key], key


def test_the_budget_scale_is_rounded_down_onto_its_grid():
    """Issue 45: the calibrated scale has 16 mantissa bits, so two machines whose
    accountants disagree in the last digits get the same scale (and noise multipliers)."""
    import math

    from dpxgb_dask.boosting.calibration import SCALE_GRID_BITS, snap_to_scale_grid

    rng = np.random.default_rng(5)
    for s in np.exp(rng.uniform(-12, 12, size=2000)):
        snapped = snap_to_scale_grid(float(s))
        assert snapped <= s and (s - snapped) / s < 2.0**(1 - SCALE_GRID_BITS)
        assert snap_to_scale_grid(snapped) == snapped
        mantissa, _ = math.frexp(snapped)
        assert (mantissa * 2**SCALE_GRID_BITS).is_integer()
    params = resolve_params("binary:logistic", epsilon=1.0, feature_bounds=BOUNDS)
    scale = calibrate_budget_scale(params, 4)
    assert snap_to_scale_grid(scale) == scale


@pytest.mark.parametrize("power, offset", [(0.5, 0.002), (1.0, 0.02), (2.0, 0.0004),
                                           (1.0, -0.003)])
def test_the_refinement_lands_on_the_grid_just_below_the_root(power, offset):
    """Issue 40: from the coarse answer (``offset``: how far the fine excess lies below
    it, in log ε; negative: above), Newton steps on the scale grid reach a scale whose
    excess is just below 0, in a few calls of the (slow) reporting accountant: close
    enough that a fit asked for ε = 1 states 1.0 (five digits, rounded up)."""
    import math

    from dpxgb_dask.boosting.calibration import (_SPENT_SHORT, _refine_on_grid,
                                                 snap_to_scale_grid)

    rtol, root = 1e-3, 0.0123
    calls = []

    def excess(s):  # log(ε/target) of a power law ε ∝ s**power, slightly curved
        calls.append(s)
        x = math.log(s / root)
        return power * x + 0.05 * x * x

    start = root * math.exp(-offset / power)  # the coarse search's answer
    coarse_slope = power * 1.02  # (the coarse accountant's, a little off)
    s, f = _refine_on_grid(excess, start, coarse_slope, rtol)
    assert snap_to_scale_grid(s) == s and f == excess(s)
    assert -_SPENT_SHORT * rtol <= f <= 0.0 and math.exp(f) > 0.99999
    assert len(calls) <= (3 if offset > 0 else 6) + 1  # (+1: the check above)


def test_a_calibration_asked_for_twice_at_once_is_computed_once(monkeypatch):
    """Issue 40: a fit's client plans while its rows load, and a LocalCluster's scheduler
    (in the same process) asks for the same plan: one calibration, not two at once."""
    import threading

    params = resolve_params("binary:logistic", epsilon=0.37, feature_bounds=BOUNDS,
                            n_estimators=7)
    calls = []
    original = calibration_module.calibrate_budget_scale

    def counted(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(calibration_module, "calibrate_budget_scale", counted)
    calibration_module._cached_budget_scale.cache_clear()
    plans = []
    threads = [threading.Thread(target=lambda: plans.append(make_plan(params, 4)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len({plan.budget_scale for plan in plans}) == 1
