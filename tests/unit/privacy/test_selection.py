"""Private selection (Papernot & Steinke 2022): the number of runs, the RDP of the best of
them, how a ledger holds a selection, and what a released best run loses empirically."""
import math

import dp_accounting
from dp_accounting import dp_event
import numpy as np
import pytest
from scipy import stats

from dpxgb_dask.privacy import (GaussianMechanism, Ledger, NoiseSource, PrivacyEvent,
                                RDPAccountant, get_accountant, privacy_report)
from dpxgb_dask.privacy.budget import fit_events
from dpxgb_dask.privacy.selection import SelectionCount, repeat_and_select_rdp

from .test_empirical_dp import approx_epsilon_hat

SEED = 2**130 + 11


def _single_curve(event):
    accountant = RDPAccountant()
    return accountant.orders, np.array(accountant._fresh().compose(event).rdp)


@pytest.mark.parametrize("mean, shape", [(1.5, 1.0), (3.0, 1.0), (5.0, 0.5), (10.0, 2.0),
                                         (2.0, 0.05)])
@pytest.mark.parametrize("event", [dp_accounting.GaussianDpEvent(2.5),
                                   dp_accounting.LaplaceDpEvent(1.0)], ids=["gauss", "laplace"])
def test_repeat_and_select_rdp_is_dp_accountings_theorem_2(mean, shape, event):
    """Our Theorem 2 against dp_accounting's RepeatAndSelectDpEvent (an independent
    implementation of the same theorem)."""
    orders, single = _single_curve(event)
    reference = dp_accounting.rdp.RdpAccountant(list(orders))
    reference.compose(dp_event.RepeatAndSelectDpEvent(event, mean, shape))
    ours = repeat_and_select_rdp(orders, single, mean, shape)
    np.testing.assert_allclose(ours, reference._rdp, rtol=1e-8)


def test_repeat_and_select_costs_more_than_one_run_and_grows_with_the_runs():
    orders, single = _single_curve(dp_accounting.GaussianDpEvent(3.0))
    curves = [repeat_and_select_rdp(orders, single, mean, 1.0) for mean in (1.0, 2.0, 5.0, 20.0)]
    assert np.all(curves[0] >= single)
    for low, high in zip(curves, curves[1:]):
        assert np.all(high >= low) and np.any(high > low)
    # monotone in the order, as any RDP curve
    by_order = np.argsort(orders)
    assert np.all(np.diff(curves[2][by_order]) >= -1e-12)


@pytest.mark.parametrize("mean, shape", [(1.0, 1.0), (3.0, 1.0), (4.0, 0.5), (6.0, 3.0)])
def test_selection_count_has_its_mean_and_sums_to_one(mean, shape):
    count = SelectionCount(mean, shape)
    k = np.arange(0, 20_000)
    pmf = count.pmf(k)
    assert pmf[0] == 0.0
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-9)
    assert math.isclose((k * pmf).sum(), mean, rel_tol=1e-8)
    assert count.expected(count.gamma, shape) >= mean  # the conservative end


@pytest.mark.parametrize("mean, shape", [(3.0, 1.0), (4.0, 0.5)])
def test_selection_count_draws_follow_the_truncated_negative_binomial(mean, shape):
    count = SelectionCount(mean, shape)
    source = NoiseSource(SEED)
    draws = np.array([count.draw(source.stream(purpose="runs", index=i)) for i in range(20_000)])
    assert draws.min() >= 1
    top = 12
    observed = np.bincount(np.minimum(draws, top), minlength=top + 1)[1:]
    expected_p = count.pmf(np.arange(1, top + 1))
    expected_p[-1] = 1.0 - expected_p[:-1].sum()  # the tail at >= top
    _, p_value = stats.chisquare(observed, expected_p * len(draws))
    assert p_value > 1e-3


@pytest.mark.parametrize("bad, message", [
    (dict(mean=0.5), "mean must be"), (dict(mean=float("inf")), "mean must be"),
    (dict(shape=0.0), "shape"), (dict(shape=-1.0), "shape"), (dict(shape=float("inf")), "shape"),
])
def test_selection_count_refuses_bad_parameters_naming_them(bad, message):
    with pytest.raises(ValueError, match=message):
        SelectionCount(**dict(dict(mean=3.0, shape=1.0), **bad))


def _selection_ledger(multipliers, mean=3.0, shape=1.0, name="s"):
    ledger = Ledger()
    for part, z in enumerate(multipliers):
        ledger.record("leaf", "gaussian", 1.0, noise_multiplier=z, tree=0, selection=name,
                      selection_part=part)
        ledger.record("leaf", "gaussian", 1.0, noise_multiplier=z, tree=1, selection=name,
                      selection_part=part)
    ledger.record("selection", "repeat_and_select", 1.0, selection=name, selection_mean=mean,
                  selection_shape=shape)
    return ledger


def test_a_selection_costs_its_worst_configuration_under_theorem_2():
    """The candidate draws a configuration: its curve is the per-order maximum of theirs."""
    delta, accountant = 1e-6, RDPAccountant()
    mixed = _selection_ledger([2.0, 3.0])
    worst_alone = _selection_ledger([2.0, 2.0])
    assert math.isclose(accountant.get_epsilon(mixed, delta),
                        accountant.get_epsilon(worst_alone, delta), rel_tol=1e-12)
    orders, single = _single_curve(dp_accounting.GaussianDpEvent(2.0 / math.sqrt(2)))
    expected = dp_accounting.rdp.compute_epsilon(
        orders, repeat_and_select_rdp(orders, single, 3.0, 1.0), delta)[0]
    assert math.isclose(accountant.get_epsilon(mixed, delta), expected, rel_tol=1e-9)


def test_a_selection_composes_with_the_other_releases():
    delta, accountant = 1e-6, RDPAccountant()
    selection = _selection_ledger([2.0, 3.0])
    both = Ledger(list(selection.events))
    both.record("bounds", "gaussian", 1.0, noise_multiplier=4.0)
    alone = Ledger()
    alone.record("bounds", "gaussian", 1.0, noise_multiplier=4.0)
    total = accountant._total_curve(both)
    np.testing.assert_allclose(total, accountant._total_curve(selection)
                               + accountant._total_curve(alone))
    assert accountant.get_epsilon(both, delta) > accountant.get_epsilon(selection, delta)


def test_only_the_rdp_accountant_certifies_a_selection():
    ledger = _selection_ledger([2.0, 3.0])
    report = privacy_report(ledger, 1e-6)
    assert report["basic"] == math.inf and report["pld"] == math.inf
    assert math.isfinite(report["rdp"]) and report["best"] == report["rdp"]
    assert get_accountant("pld").get_delta(ledger, 1.0) == 1.0
    assert get_accountant("best").get_epsilon(ledger, 1e-6) == report["rdp"]


def test_a_selection_ledger_round_trips_and_its_entry_is_no_release():
    ledger = _selection_ledger([2.0, 3.0, 4.0])
    again = Ledger.from_json(ledger.to_json())
    assert again.events == ledger.events
    entry = ledger.events[-1]
    assert entry.is_selection_entry and entry.selection_part is None
    # events written without selection fields keep their bytes
    plain = Ledger()
    plain.record("leaf", "gaussian", 1.0, noise_multiplier=2.0, tree=0)
    assert "selection" not in plain.to_json()


@pytest.mark.parametrize("fields, message", [
    (dict(mechanism="repeat_and_select", selection="s", selection_mean=3.0),
     "selection_mean and selection_shape"),
    (dict(mechanism="repeat_and_select", selection="s", selection_mean=3.0,
          selection_shape=1.0, noise_multiplier=2.0), "no epsilon or noise_multiplier"),
    (dict(mechanism="repeat_and_select", selection="s", selection_mean=0.5,
          selection_shape=1.0), "mean must be"),
    (dict(mechanism="repeat_and_select", selection="s", selection_mean=3.0,
          selection_shape=1.0, selection_part=0), "no selection_part"),
    (dict(mechanism="gaussian", noise_multiplier=2.0, selection="s"), "selection_part"),
    (dict(mechanism="gaussian", noise_multiplier=2.0, selection_part=1), "selection_part"),
    (dict(mechanism="gaussian", noise_multiplier=2.0, selection_mean=3.0),
     "belong to a repeat_and_select"),
    (dict(mechanism="gaussian", noise_multiplier=2.0, selection="s", selection_part=0,
          individual_filter="f"), "Rényi filters"),
    (dict(mechanism="gaussian", noise_multiplier=2.0, selection="", selection_part=0),
     "selection must be"),
])
def test_selection_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        PrivacyEvent(purpose="x", sensitivity=1.0, **fields)


@pytest.mark.parametrize("build, message", [
    (lambda l: l.record("selection", "repeat_and_select", 1.0, selection="s",
                        selection_mean=2.0, selection_shape=1.0), "several repeat_and_select"),
    (lambda l: l.record("leaf", "gaussian", 1.0, noise_multiplier=2.0, selection="t",
                        selection_part=0), "no repeat_and_select entry"),
    (lambda l: l.record("leaf", "gaussian", 1.0, noise_multiplier=2.0, selection="s",
                        selection_part=5), "configurations 0..n-1"),
])
def test_a_malformed_selection_is_refused(build, message):
    ledger = _selection_ledger([2.0, 3.0])
    build(ledger)
    with pytest.raises(ValueError, match=message):
        RDPAccountant().get_epsilon(ledger, 1e-6)


def test_a_budget_keeps_two_fits_selections_apart():
    """Two fits' selections named alike are two selections in a budget, each charged."""
    delta, accountant = 1e-6, RDPAccountant()
    one = accountant.get_epsilon(_selection_ledger([2.0, 3.0]), delta)
    two = fit_events(_selection_ledger([2.0, 3.0]), "a") + fit_events(
        _selection_ledger([2.0, 3.0]), "b")
    assert {e.selection for e in two} == {"a/s", "b/s"}
    curve_one = accountant._total_curve(_selection_ledger([2.0, 3.0]))
    np.testing.assert_allclose(accountant._total_curve(two), 2 * curve_one)
    assert accountant.get_epsilon(two, delta) > one


def _best_of_runs(count, mechanism, value, n, source, label):
    """n draws of the selection's output on a dataset whose score query is ``value``: the
    best (largest) of K noisy scores, K secret."""
    out = np.empty(n)
    for i in range(n):
        k = count.draw(source.stream(purpose=f"{label}-k", index=i))
        noisy = mechanism.release(np.full(k, value), source.stream(purpose=label, index=i))
        out[i] = noisy.max()
    return out


def test_the_best_of_a_secret_number_of_runs_loses_at_most_what_the_ledger_claims():
    """Empirical privacy of a selection: a run releases a count with Gaussian noise (Δ = 1);
    on neighbouring counts the best of K ~ D_{1,γ} runs must lose no more than the RDP
    accountant's ε at δ (estimated over half-lines with >= 1,000 draws,
    test_empirical_dp.py's estimate; 40,000 draws per side)."""
    z, mean, delta, n = 1.0, 3.0, 1e-3, 40_000
    mechanism = GaussianMechanism(1.0, noise_multiplier=z)
    count = SelectionCount(mean, 1.0)
    source = NoiseSource(SEED)
    a = _best_of_runs(count, mechanism, 0.0, n, source, "a")
    b = _best_of_runs(count, mechanism, 1.0, n, source, "b")
    ledger = Ledger()
    ledger.record("count", "gaussian", 1.0, selection="s", selection_part=0,
                  noise_multiplier=mechanism.ledger_fields()["noise_multiplier"])
    ledger.record("selection", "repeat_and_select", 1.0, selection="s", selection_mean=mean,
                  selection_shape=1.0)
    claimed = RDPAccountant().get_epsilon(ledger, delta)
    # both directions of the neighbouring pair
    estimated = max(approx_epsilon_hat(a, b, delta), approx_epsilon_hat(b, a, delta))
    assert 0.2 < estimated <= claimed, (estimated, claimed)



def test_a_pld_budget_refuses_a_selection_and_says_why():
    from dpxgb_dask.privacy.budget import check_within
    from dpxgb_dask.privacy.validation import BudgetError

    events = _selection_ledger([2.0, 3.0]).events
    with pytest.raises(BudgetError, match="accountant 'rdp' or 'best'"):
        check_within(events, 10.0, 1e-6, get_accountant("pld"))
    assert check_within(events, 10.0, 1e-6, get_accountant("best")) < 10.0


@pytest.mark.parametrize("mean, shape", [(1.0 + 1e-9, 1.0), (1.0 + 1e-9, 50.0), (10.0, 1e4)])
def test_a_draw_takes_k_steps_whatever_the_parameters(mean, shape):
    """By inversion, not rejection: near E[K] = 1 a rejection of k = 0 would take ~1e9
    tries."""
    count = SelectionCount(mean, shape)
    source = NoiseSource(SEED)
    draws = [count.draw(source.stream(purpose="k", index=i)) for i in range(200)]
    assert min(draws) >= 1
    assert abs(np.mean(draws) - mean) < 0.5 * mean


def test_an_order_of_one_does_not_poison_the_curve():
    orders = np.array([1.0, 2.0, 8.0, 64.0])
    curve = np.array([np.inf, 1.0, 4.0, 32.0])
    out = repeat_and_select_rdp(orders, curve, 3.0, 1.0)
    assert not np.isnan(out).any() and np.all(np.isfinite(out))
    assert out[0] == out[1]  # the next order's bound
