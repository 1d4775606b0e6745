"""S-BDT's individual Rényi filter (``privacy/filter.py``): each row's charge against a
row-by-row computation with ``dp_accounting``, the worst row against the ledger, the
accounting of a filtered ledger, and statistically: a row's charge is its real loss."""
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

from dpxgb_dask.privacy import (BasicAccountant, GaussianMechanism, Ledger, PLDAccountant,
                                RDPAccountant, leaf_balanced_sigmas)
from dpxgb_dask.privacy.budget import fit_events
from dpxgb_dask.privacy.filter import (TABLE_POINTS, RowFilter, choose_filter, filter_term,
                                       subsampled_gaussian_rdp, tree_divergences)

G_STAR, H_STAR, RATIO, Z = 0.8, 0.25, 0.1, 3.0


def leaf_terms(z=Z):
    sigma_g, sigma_h = leaf_balanced_sigmas(z, G_STAR, H_STAR, RATIO)
    return (filter_term(GaussianMechanism(G_STAR, sigma=sigma_g, coords_per_row=1), 1, 0),
            filter_term(GaussianMechanism(H_STAR, sigma=sigma_h, coords_per_row=1), 0, 1))


def histogram_term(n_features=4, depth=3, z=5.0):
    sens = math.sqrt(n_features * (G_STAR**2 + H_STAR**2))
    mech = GaussianMechanism(sens, noise_multiplier=z, coords_per_row=2 * n_features)
    return filter_term(mech, n_features, n_features, count=depth)


def naive_charge(g, u, terms, order, rate):
    """One row's divergence at ``order``: every mechanism a Gaussian of noise multiplier
    z / r (its share r of the worst case, rounding margin included), composed, sampled."""
    events = []
    for term in terms:
        norm = math.sqrt(term.gradient_coords * g * g + term.denominator_coords * u * u)
        share = ((norm / term.resolution + term.margin)
                 / (term.sensitivity / term.resolution + term.margin))
        z = 1.0 / math.sqrt(term.weight)  # weight = count / z²: count releases of z·sqrt(count)
        events.append(dp_accounting.GaussianDpEvent(z / share))
    event = dp_accounting.ComposedDpEvent(events)
    if rate < 1.0:
        event = dp_accounting.PoissonSampledDpEvent(rate, event)
    accountant = dp_accounting.rdp.RdpAccountant([order])
    return float(accountant.compose(event)._rdp[0])


@pytest.mark.parametrize("rate", [1.0, 0.2])
def test_charges_match_a_row_by_row_computation(rate):
    terms = leaf_terms() + (histogram_term(),)
    rho_worst = 0.5 * sum(t.weight for t in terms)
    order = 12.0
    row_filter = RowFilter.build("rows", order, 10.0, rate, rho_worst, counts=False)
    worst = naive_charge(G_STAR, H_STAR, terms, order, rate)
    rng = np.random.default_rng(0)
    g = rng.uniform(-G_STAR, G_STAR, 200)
    u = rng.uniform(0, H_STAR, 200)
    g[:3], u[:3] = [G_STAR, -G_STAR, 0.0], [H_STAR, H_STAR, 0.0]
    fast = row_filter.charges(g, u, terms, worst)
    slow = np.array([naive_charge(a, b, terms, order, rate) for a, b in zip(g, u)])
    assert np.all(fast >= slow * (1 - 1e-9))  # never less than the row's divergence
    assert fast[0] == fast[1] == worst        # the worst row pays the tree's divergence
    if rate == 1.0:
        np.testing.assert_allclose(fast, slow, rtol=1e-9)
    else:
        # at most one table step of ρ above (the divergence is increasing in ρ)
        step = rho_worst / (TABLE_POINTS - 1)
        rho = np.array([0.5 * sum(t.weight * float(t.share(a, b)) ** 2 for t in terms)
                        for a, b in zip(g, u)])
        upper = subsampled_gaussian_rdp(order, np.minimum(rho + step, rho_worst), rate)
        assert np.all(fast <= upper * (1 + 1e-9))
        assert np.median(fast / slow) < 1.01
    # a zero row pays its rounding margin only (sampled: the table's first step)
    assert 0.0 < fast[2] <= (1e-6 * worst if rate == 1.0 else row_filter.table[1])


def test_the_worst_row_of_a_tree_pays_what_the_ledger_charges_the_tree():
    terms = leaf_terms()
    ledger = Ledger()
    for tree in range(3):
        ledger.record("leaf", "gaussian", 1.0, noise_multiplier=Z, tree=tree, sampling_rate=0.3,
                      individual_filter="rows")
    order, budget = choose_filter(ledger, 1e-6)
    worst = tree_divergences(ledger, order)
    assert set(worst) == {0, 1, 2}
    assert sum(worst.values()) == pytest.approx(budget, rel=1e-8) and budget >= sum(worst.values())
    rdp = RDPAccountant()
    i = rdp.orders.index(order)
    assert sum(worst.values()) == pytest.approx(rdp._total_curve(ledger)[i], rel=1e-12)
    row_filter = RowFilter.build("rows", order, budget, 0.3, 0.5 / Z**2, counts=False)
    charge = row_filter.charges(np.array([G_STAR]), np.array([H_STAR]), terms, worst[0])
    assert charge[0] == pytest.approx(worst[0], rel=1e-6)
    # three worst-case trees fit in the budget, the fourth does not
    spent = np.zeros(1)
    for tree in range(3):
        assert row_filter.admit(spent, worst[tree])[0]
        spent += worst[tree]
    assert not row_filter.admit(spent, worst[0])[0]


@pytest.mark.parametrize("counts", [False, True])
def test_pace_finds_the_largest_scale_a_row_can_afford(counts):
    terms = leaf_terms() + (histogram_term(),)
    rho_worst = 0.5 * sum(t.weight for t in terms)
    row_filter = RowFilter.build("rows", 12.0, 10.0, 0.2, rho_worst, counts=counts)
    worst = naive_charge(G_STAR, H_STAR if not counts else 1.0, terms, 12.0, 0.2)
    rng = np.random.default_rng(1)
    g = rng.uniform(-G_STAR, G_STAR, 300)
    u = np.ones(300) if counts else rng.uniform(0, H_STAR, 300)
    allowance = rng.uniform(0, 1.1, 300) * row_filter.charges(g, u, terms, worst)
    scale = row_filter.pace(g, u, terms, worst, allowance)
    assert np.all((scale >= 0) & (scale <= 1))
    paid = row_filter.charges(scale * g, u if counts else scale * u, terms, worst)
    fits = row_filter.charges(np.zeros(300), 0 * u if not counts else u, terms, worst) <= allowance
    assert np.all(paid[fits] <= allowance[fits])
    # maximal: a step of 1e-6 up costs more than the allowance (unless already at 1)
    more = np.minimum(scale + 1e-6, 1.0)
    over = row_filter.charges(more * g, u if counts else more * u, terms, worst)
    inside = fits & (scale < 1.0)
    assert inside.sum() > 50
    assert np.all(over[inside] > allowance[inside])
    full = row_filter.charges(g, u, terms, worst) <= allowance
    assert np.all(scale[full] == 1.0)


def filtered_ledger(n_regular=4, n_extra=6, z=Z, rate=1.0):
    ledger = Ledger()
    ledger.record("init_score", "laplace", 1.0, epsilon=0.05, count=2)
    for tree in range(n_regular + n_extra):
        ledger.record("leaf", "gaussian", 1.0, noise_multiplier=z, tree=tree,
                      sampling_rate=rate, individual_filter="rows")
    regular = Ledger([e for e in ledger if e.tree is None or e.tree < n_regular])
    order, budget = choose_filter(regular, 1e-6)
    ledger.record("individual_filter", "renyi_filter", 1.0, individual_filter="rows",
                  rdp_order=order, rdp_budget=budget)
    return ledger, regular, order, budget


@pytest.mark.parametrize("rate", [1.0, 0.25])
def test_the_rdp_accountant_charges_the_filter_budget_and_the_others_every_release(rate):
    ledger, regular, order, budget = filtered_ledger(rate=rate)
    delta = 1e-6
    unfiltered = Ledger([e for e in ledger if not e.is_filter])
    # RDP: the extra trees cost nothing beyond the regular trees' ε (up to the headroom)
    assert RDPAccountant().get_epsilon(ledger, delta) == pytest.approx(
        RDPAccountant().get_epsilon(regular, delta), rel=1e-6)
    assert RDPAccountant().get_epsilon(ledger, delta) < RDPAccountant().get_epsilon(
        unfiltered, delta)
    init = RDPAccountant(orders=(order,))._total_curve([ledger[0]])[0]
    assert RDPAccountant().get_epsilon(ledger, delta) == pytest.approx(float(
        rdp_lib.compute_epsilon(np.array([order]), np.array([budget + init]), delta)[0]))
    # basic and PLD charge the covered releases in full: the entry changes nothing
    for accountant in (BasicAccountant(), PLDAccountant()):
        assert accountant.get_epsilon(ledger, delta) == accountant.get_epsilon(unfiltered, delta)
    # δ at the filtered ε is the δ asked for (the two directions agree)
    eps = RDPAccountant().get_epsilon(ledger, delta)
    assert RDPAccountant().get_delta(ledger, eps) == pytest.approx(delta, rel=1e-3)


def test_a_filter_entry_round_trips_and_is_validated():
    ledger, _, order, budget = filtered_ledger()
    back = Ledger.from_json(ledger.to_json())
    assert back.events == ledger.events
    assert back[-1].rdp_order == order and back[-1].rdp_budget == budget
    assert "rdp_order" not in ledger[0].to_dict()  # written only where set
    with pytest.raises(ValueError, match="rdp_order and rdp_budget"):
        ledger.record("individual_filter", "renyi_filter", 1.0, individual_filter="rows")
    with pytest.raises(ValueError, match="rdp_order must be a finite float > 1"):
        ledger.record("individual_filter", "renyi_filter", 1.0, individual_filter="rows",
                      rdp_order=1.0, rdp_budget=1.0)
    with pytest.raises(ValueError, match="belong to a renyi_filter entry"):
        ledger.record("leaf", "gaussian", 1.0, noise_multiplier=1.0, rdp_order=2.0)


def test_filters_of_different_fits_stay_apart_in_a_budget():
    """Two fits charged to one budget: each filter covers its own fit's releases only (the
    names are prefixed), so the second fit's trees are not paid by the first's budget."""
    ledger, regular, _, _ = filtered_ledger()
    one = fit_events(ledger, "a")
    both = Ledger(one + fit_events(ledger, "b"))
    assert {e.individual_filter for e in both if e.individual_filter} == {"a/rows", "b/rows"}
    eps_one = RDPAccountant().get_epsilon(Ledger(one), 1e-6)
    eps_both = RDPAccountant().get_epsilon(both, 1e-6)
    # two filters of one order: both budgets at α
    assert eps_both > eps_one * 1.3
    both_at_order = RDPAccountant()._filter_points(both)
    assert both_at_order == [(ledger[-1].rdp_order, pytest.approx(
        2 * RDPAccountant()._filter_points(Ledger(one))[0][1]))]


def test_filters_of_different_orders_compose_at_the_smaller_order():
    """A filter of order α_f also bounds its releases at every order below α_f (Rényi
    divergence does not decrease with the order): at the smaller order both budgets
    count; at the larger, the other filter's releases are charged their worst case."""
    ledger = Ledger()
    for name, order, budget, z in (("a", 20.0, 0.05, 4.0), ("b", 30.0, 0.08, 5.0)):
        for tree in range(5):
            ledger.record("leaf", "gaussian", 1.0, noise_multiplier=z, tree=tree,
                          subsample=f"{name}{tree}", sampling_rate=0.5, individual_filter=name)
        ledger.record("individual_filter", "renyi_filter", 1.0, individual_filter=name,
                      rdp_order=order, rdp_budget=budget)
    points = dict(RDPAccountant()._filter_points(ledger))
    worst_a_30 = RDPAccountant(orders=(30.0,))._total_curve(
        [e for e in ledger if e.individual_filter == "a" and not e.is_filter])[0]
    worst_b_20 = RDPAccountant(orders=(20.0,))._total_curve(
        [e for e in ledger if e.individual_filter == "b" and not e.is_filter])[0]
    assert points[20.0] == pytest.approx(0.05 + min(0.08, worst_b_20))
    assert points[30.0] == pytest.approx(worst_a_30 + 0.08)


def test_ledgers_the_rdp_accountant_could_misread_are_refused():
    """Review findings: a filter name with two entries (each budget would seem to cover
    the other's releases), and a Poisson subsample partly under a filter (its parts would
    be amplified apart)."""
    twice, _, order, budget = filtered_ledger()
    twice.record("individual_filter", "renyi_filter", 1.0, individual_filter="rows",
                 rdp_order=2 * order, rdp_budget=budget)
    with pytest.raises(ValueError, match=r"individual filters \['rows'\] have several"):
        RDPAccountant().get_epsilon(twice, 1e-6)
    split = Ledger()
    split.record("split", "gaussian", 1.0, noise_multiplier=0.7, tree=0, sampling_rate=0.5,
                 individual_filter="f")
    split.record("leaf", "gaussian", 1.0, noise_multiplier=0.7, tree=0, sampling_rate=0.5)
    split.record("individual_filter", "renyi_filter", 1.0, individual_filter="f",
                 rdp_order=4.0, rdp_budget=1.0)
    with pytest.raises(ValueError, match="subsample 'tree:0' has releases under different"):
        RDPAccountant().get_epsilon(split, 1e-6)


def test_a_rows_share_uses_the_mechanisms_margin():
    # the filter's worst row is the mechanism's accounted sensitivity: Δ/g + 2 sqrt(k)
    from dpxgb_dask.privacy.filter import filter_term
    from dpxgb_dask.privacy.mechanisms import GaussianMechanism

    mechanism = GaussianMechanism(1.0, noise_multiplier=2.0, coords_per_row=16)
    term = filter_term(mechanism, 8, 8)
    assert term.margin == GaussianMechanism.margin_steps(16) == 8.0
    mechanism.draw_noise(4)
    assert mechanism._accounted_sensitivity == pytest.approx(
        mechanism.sensitivity / mechanism.resolution + term.margin, rel=1e-11)
