"""Accountants: DP-XGBoost's closed form, agreement with dp_accounting run directly, and the
discreteness margin that lets continuous curves bound the discrete mechanisms."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy.special import logsumexp
from scipy.stats import norm

from dpxgb_dask.privacy import (
    BasicAccountant,
    BestOfAccountant,
    Ledger,
    PLDAccountant,
    RDPAccountant,
    amplified_epsilon,
    composition_terms,
    get_accountant,
    privacy_report,
)

ADD_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def dpxgboost_ledger(n_trees, eps_tree, depth, gamma):
    """DP-XGBoost §4.4: eps/3 sketch, eps/(3h) per depth (exponential), eps/3 leaves."""
    ledger = Ledger()
    for t in range(n_trees):
        ledger.record("sketch", "laplace", 1.0, epsilon=eps_tree / 3, tree=t, sampling_rate=gamma,
                      parallel_over="bins", n_parallel=32)
        for d in range(depth):
            ledger.record("split", "exponential", 3.0, epsilon=eps_tree / (3 * depth), tree=t, depth=d,
                          sampling_rate=gamma, parallel_over="nodes", n_parallel=2**d)
        ledger.record("leaf", "laplace", 0.5, epsilon=eps_tree / 3, tree=t, sampling_rate=gamma,
                      parallel_over="leaves", n_parallel=2**depth)
    return ledger


@pytest.mark.parametrize("n_trees, eps, gamma", [(20, 1.0, 0.1), (7, 3.0, 1.0), (50, 0.5, 0.02)])
def test_basic_equals_dpxgboost_closed_form(n_trees, eps, gamma):
    ledger = dpxgboost_ledger(n_trees, eps, 4, gamma)
    expected = n_trees * math.log(1 + gamma * (math.exp(eps) - 1))
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(expected, rel=1e-12)


def test_amplification_applies_to_the_tree_composite_not_each_release():
    ledger = Ledger()
    ledger.record("a", "laplace", 1.0, epsilon=0.5, tree=0, sampling_rate=0.1)
    ledger.record("b", "laplace", 1.0, epsilon=0.5, tree=0, sampling_rate=0.1)
    per_event = 2 * amplified_epsilon(0.5, 0.1)
    correct = amplified_epsilon(1.0, 0.1)
    assert correct > per_event
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(correct)
    # a different subsample id for the second release makes them independent samples
    other = Ledger(ledger.events[:1])
    other.record("b", "laplace", 1.0, epsilon=0.5, tree=0, sampling_rate=0.1, subsample="tree:0/b")
    assert BasicAccountant().get_epsilon(other, 0.0) == pytest.approx(per_event)


def test_subsample_rate_mismatch_refused():
    ledger = Ledger()
    ledger.record("a", "laplace", 1.0, epsilon=0.5, tree=0, sampling_rate=0.1)
    ledger.record("b", "laplace", 1.0, epsilon=0.5, tree=0, sampling_rate=0.2)
    with pytest.raises(ValueError, match="disagree on sampling_rate"):
        BasicAccountant().get_epsilon(ledger, 0.0)


def test_parallel_composition_is_explicit_and_not_a_discount():
    # n_parallel documents disjointness: the event costs eps whatever n_parallel is
    a, b = Ledger(), Ledger()
    a.record("split", "exponential", 1.0, epsilon=0.3, depth=5, parallel_over="nodes", n_parallel=32)
    b.record("split", "exponential", 1.0, epsilon=0.3, depth=5)
    for acct in (BasicAccountant(), RDPAccountant(), PLDAccountant()):
        assert acct.get_epsilon(a, 1e-6) == acct.get_epsilon(b, 1e-6)


def test_report_of_ledgers_that_differ_in_n_parallel_only_is_accounted_once():
    # two fits of one configuration whose random trees have different numbers of leaves
    from dpxgb_dask.privacy.accountants import _ledger_report

    def fit_ledger(leaves):
        ledger = Ledger()
        for t, n in enumerate(leaves):
            ledger.record("leaf", "gaussian", 1.0, noise_multiplier=7.0, tree=t,
                          sampling_rate=0.5, parallel_over="leaves", n_parallel=n)
        return ledger

    first, second = fit_ledger([64, 40, 3]), fit_ledger([17, 64, 1])
    before = _ledger_report.cache_info()
    report = privacy_report(first, 1e-6)
    assert privacy_report(second, 1e-6) == report
    after = _ledger_report.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)
    assert report["n_events"] == 3
    for name in ("basic", "rdp", "pld"):  # (what the key leaves out, no accountant reads)
        assert get_accountant(name).get_epsilon(second, 1e-6) == report[name]


def dpboost_ledger(n_ensembles, trees_per_ensemble, eps_tree):
    ledger = Ledger()
    for e in range(n_ensembles):
        for k in range(trees_per_ensemble):
            t = e * trees_per_ensemble + k
            for d in range(3):
                ledger.record("split", "exponential", 3.0, epsilon=eps_tree / 6, tree=t, depth=d,
                              disjoint_group=f"ensemble:{e}", disjoint_part=k)
            # geometric leaf clipping: the sensitivity shrinks with t, the epsilon does not
            ledger.record("leaf", "laplace", 2 * 0.9**t, epsilon=eps_tree / 2, tree=t,
                          disjoint_group=f"ensemble:{e}", disjoint_part=k)
    return ledger


def test_disjoint_parts_compose_in_parallel():
    ledger = dpboost_ledger(n_ensembles=3, trees_per_ensemble=5, eps_tree=0.4)
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(3 * 0.4)
    terms = composition_terms(ledger)
    assert len(terms) == 3 and all(len(t.parts) == 5 for t in terms)
    # RDP / PLD of identical parts: one part per ensemble, i.e. 3 trees in sequence
    seq = Ledger()
    for t in range(3):
        for d in range(3):
            seq.record("split", "exponential", 3.0, epsilon=0.4 / 6, tree=t, depth=d)
        seq.record("leaf", "laplace", 1.0, epsilon=0.4 / 2, tree=t)
    for acct in (RDPAccountant(), PLDAccountant()):
        assert acct.get_epsilon(ledger, 1e-6) == pytest.approx(acct.get_epsilon(seq, 1e-6), rel=1e-9)


def test_unequal_disjoint_parts_basic_takes_max_and_others_stay_valid():
    ledger = Ledger()
    ledger.record("leaf", "laplace", 1.0, epsilon=0.3, tree=0, disjoint_group="g", disjoint_part=0)
    ledger.record("leaf", "laplace", 1.0, epsilon=0.5, tree=1, disjoint_group="g", disjoint_part=1)
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(0.5)
    single = Ledger()
    single.record("leaf", "laplace", 1.0, epsilon=0.5)
    for acct in (RDPAccountant(), PLDAccountant()):
        assert acct.get_epsilon(ledger, 1e-6) >= acct.get_epsilon(single, 1e-6)


def maddock_ledger(n_trees, depth, gamma, z_split, z_leaf, z_init):
    ledger = Ledger()
    ledger.record("init_score", "gaussian", 1.0, noise_multiplier=z_init)
    for t in range(n_trees):
        for d in range(depth):
            ledger.record("split", "gaussian", 1.03, noise_multiplier=z_split, tree=t, depth=d,
                          sampling_rate=gamma, parallel_over="nodes", n_parallel=2**d)
        ledger.record("leaf", "gaussian", 1.03, noise_multiplier=z_leaf, tree=t, sampling_rate=gamma,
                      parallel_over="leaves", n_parallel=2**depth)
    return ledger


@pytest.mark.parametrize("gamma", [1.0, 0.05])
def test_rdp_matches_dp_accounting_run_directly(gamma):
    n_trees, depth, zs, zl, zi, delta = 40, 4, 6.0, 3.0, 8.0, 1e-6
    ledger = maddock_ledger(n_trees, depth, gamma, zs, zl, zi)
    tree = dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(zs), depth),
         dp_accounting.GaussianDpEvent(zl)]
    )
    if gamma < 1:
        tree = dp_accounting.PoissonSampledDpEvent(gamma, tree)
    event = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(zi), dp_accounting.SelfComposedDpEvent(tree, n_trees)]
    )
    acct = RDPAccountant()
    direct = dp_accounting.rdp.RdpAccountant(list(acct.orders), ADD_REMOVE).compose(event).get_epsilon(delta)
    assert acct.get_epsilon(ledger, delta) == pytest.approx(direct, rel=1e-9)


def test_rdp_pure_mechanisms_match_direct_events():
    ledger = Ledger()
    ledger.record("leaf", "laplace", 1.0, epsilon=0.2, count=3)
    ledger.record("split", "exponential", 3.0, epsilon=0.1, depth=0)
    ledger.record("split", "exponential", 3.0, epsilon=0.1, depth=1)
    event = dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1 / 0.2), 3),
        dp_accounting.SelfComposedDpEvent(dp_accounting.ZCDpEvent(rho=0.1**2 / 8), 2),
    ])
    acct = RDPAccountant()
    direct = dp_accounting.rdp.RdpAccountant(list(acct.orders), ADD_REMOVE).compose(event).get_epsilon(1e-5)
    assert acct.get_epsilon(ledger, 1e-5) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("gamma", [1.0, 0.05])
def test_pld_matches_dp_accounting_run_directly(gamma):
    n_trees, depth, zs, zl, zi, delta = 40, 4, 6.0, 3.0, 8.0, 1e-6
    ledger = maddock_ledger(n_trees, depth, gamma, zs, zl, zi)
    # the composite of Gaussians on one subsample is one Gaussian with 1/z^2 = sum 1/z_i^2
    z_tree = 1 / math.sqrt(depth / zs**2 + 1 / zl**2)
    tree = dp_accounting.GaussianDpEvent(z_tree)
    if gamma < 1:
        tree = dp_accounting.PoissonSampledDpEvent(gamma, tree)
    event = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(zi), dp_accounting.SelfComposedDpEvent(tree, n_trees)]
    )
    direct = dp_accounting.pld.PLDAccountant(ADD_REMOVE).compose(event).get_epsilon(delta)
    assert PLDAccountant().get_epsilon(ledger, delta) == pytest.approx(direct, rel=1e-6)


def test_pld_laplace_and_exponential_match_direct():
    ledger = Ledger()
    for t in range(10):
        ledger.record("leaf", "laplace", 1.0, epsilon=0.3, tree=t, sampling_rate=0.2)
    ledger.record("split", "exponential", 3.0, epsilon=0.25, count=4)
    direct = dp_accounting.pld.PLDAccountant(ADD_REMOVE).compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.2, dp_accounting.LaplaceDpEvent(1 / 0.3)), 10)
    )
    # the exponential mechanism enters as the epsilon-DP worst-case pair (0.25 lies on the
    # 1e-4 loss grid, where connect-the-dots and rounding up coincide)
    em = pld_lib.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(0.25, 0.0)).self_compose(4)
    expected = direct._pld.compose(em).get_epsilon_for_delta(1e-6)
    assert PLDAccountant().get_epsilon(ledger, 1e-6) == pytest.approx(expected, rel=1e-9)


def exact_pure_composition_delta(eps, k, x):
    """Exact delta(x) of k-fold composition of the eps-DP dominating pair (Kairouz et al. 2015)."""
    from scipy.special import comb

    l = np.arange(k + 1)
    terms = comb(k, l) * np.maximum(0.0, np.exp((k - l) * eps) - np.exp(x + l * eps))
    return float(np.sum(terms) / (1 + math.exp(eps)) ** k)


def test_pure_subsample_uses_amplified_epsilon_when_better():
    ledger = dpxgboost_ledger(30, 1.0, 3, 0.05)
    eps_amp = amplified_epsilon(1.0, 0.05)
    # PLD: the pessimistic PLD of 30 eps'-DP pairs, checked against the exact composition
    pld_eps = PLDAccountant().get_epsilon(ledger, 1e-6)
    assert exact_pure_composition_delta(eps_amp, 30, pld_eps) <= 1e-6 * (1 + 1e-9)
    assert exact_pure_composition_delta(eps_amp, 30, pld_eps - 30 * 1e-4) > 1e-6
    # RDP: per order, the smaller of the amplified (eps'^2/2-zCDP) and plain curves
    orders = RDPAccountant().orders

    def curve(event):
        return np.array(dp_accounting.rdp.RdpAccountant(list(orders), ADD_REMOVE).compose(event)._rdp)

    plain = curve(dp_accounting.ComposedDpEvent(
        [dp_accounting.LaplaceDpEvent(3.0), dp_accounting.LaplaceDpEvent(3.0)]
        + [dp_accounting.ZCDpEvent(rho=(1 / 9) ** 2 / 8)] * 3))
    amplified = curve(dp_accounting.ZCDpEvent(rho=eps_amp**2 / 2))
    total = 30 * np.minimum(plain, amplified)
    expected = dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon(orders, total, 1e-6)[0]
    assert RDPAccountant().get_epsilon(ledger, 1e-6) == pytest.approx(expected, rel=1e-9)
    # and both improve on basic composition here
    basic = BasicAccountant().get_epsilon(ledger, 1e-6)
    assert pld_eps < basic


def test_pure_pld_is_connect_the_dots_and_continuous():
    acct = PLDAccountant()
    for eps, k in [(0.37, 20), (0.01234, 100), (1.00005, 5)]:
        pld = acct._pure_pld(eps).self_compose(k)
        for x in (0.3, 1.0, 2.0):
            exact = exact_pure_composition_delta(eps, k, x)
            assert exact - 1e-15 <= pld.get_delta_for_epsilon(x) <= exact + 1e-3
    # rounding the loss up to the grid makes steps of k*h; connect-the-dots does not
    values = [acct._pure_pld(e).self_compose(20).get_epsilon_for_delta(1e-6) for e in np.linspace(0.05, 0.0502, 21)]
    steps = np.diff(values)
    assert np.all(steps > 0) and steps.max() < 1.5 * steps.min()


def test_mixed_subsample_is_accounted_without_amplification():
    mixed = Ledger()
    mixed.record("split", "exponential", 3.0, epsilon=0.2, tree=0, depth=0, sampling_rate=0.1)
    mixed.record("leaf", "gaussian", 1.0, noise_multiplier=2.0, tree=0, sampling_rate=0.1)
    plain = Ledger()
    plain.record("split", "exponential", 3.0, epsilon=0.2, tree=0, depth=0)
    plain.record("leaf", "gaussian", 1.0, noise_multiplier=2.0, tree=0)
    for acct in (RDPAccountant(), PLDAccountant()):
        assert acct.get_epsilon(mixed, 1e-6) == pytest.approx(acct.get_epsilon(plain, 1e-6), rel=1e-12)


def test_basic_gaussian_conversion_uses_exact_gaussian_curve():
    ledger = Ledger()
    ledger.record("leaf", "gaussian", 1.0, noise_multiplier=2.0)
    ledger.record("split", "gaussian", 1.0, noise_multiplier=3.0)
    expected = dp_accounting.get_epsilon_gaussian(2.0, 5e-7) + dp_accounting.get_epsilon_gaussian(3.0, 5e-7)
    assert BasicAccountant().get_epsilon(ledger, 1e-6) == pytest.approx(expected)
    assert BasicAccountant().get_epsilon(ledger, 0.0) == math.inf


def test_best_of_and_report():
    ledger = maddock_ledger(10, 3, 0.1, 5.0, 3.0, 10.0)
    report = privacy_report(ledger, 1e-6)
    assert report["best"] == min(report["basic"], report["rdp"], report["pld"])
    assert report["pld"] <= report["rdp"] * 1.05 and report["rdp"] < report["basic"]
    best = BestOfAccountant(BasicAccountant(), RDPAccountant())
    assert best.get_epsilon(ledger, 1e-6) == min(report["basic"], report["rdp"])
    assert get_accountant("best").get_epsilon(ledger, 1e-6) == pytest.approx(report["best"])
    with pytest.raises(ValueError, match="accountant must be one of"):
        get_accountant("moments")


def test_get_delta_is_inverse_of_get_epsilon():
    ledger = maddock_ledger(10, 3, 0.1, 5.0, 3.0, 10.0)
    for acct in (RDPAccountant(), PLDAccountant()):
        eps = acct.get_epsilon(ledger, 1e-5)
        assert acct.get_delta(ledger, eps) == pytest.approx(1e-5, rel=0.05)
    pure = dpxgboost_ledger(5, 1.0, 2, 1.0)
    assert BasicAccountant().get_delta(pure, 5.0 + 1e-9) == 0.0
    assert BasicAccountant().get_delta(pure, 4.0) == 1.0


def test_empty_ledger_costs_nothing():
    for acct in (BasicAccountant(), RDPAccountant(), PLDAccountant()):
        assert acct.get_epsilon(Ledger(), 1e-6) == pytest.approx(0.0, abs=1e-9)


# -- discreteness margin: continuous curves with one extra grid step bound the discrete ones


def dlap_logpmf(y, t):
    q = math.exp(-1 / t)
    return math.log((1 - q) / (1 + q)) - np.abs(y) / t


def laplace_rdp(alpha, eps):
    # Mironov 2017, Table II, in log-space
    return np.logaddexp(math.log(alpha / (2 * alpha - 1)) + (alpha - 1) * eps,
                        math.log((alpha - 1) / (2 * alpha - 1)) - alpha * eps) / (alpha - 1)


@pytest.mark.parametrize("shift, t", [(1, 1), (1, 2), (3, 2), (10, 7), (5, 50), (100, 3), (1000, 1000), (64, 4096)])
def test_discrete_laplace_is_dominated_by_continuous_with_margin(shift, t):
    support = np.arange(-80 * t - shift, 80 * t + 2 * shift + 1)
    lp, lq = dlap_logpmf(support, t), dlap_logpmf(support - shift, t)
    eps = (shift + 1) / t
    for alpha in (1.1, 1.5, 2, 4, 16, 64, 256):
        discrete = logsumexp(alpha * lp + (1 - alpha) * lq) / (alpha - 1)
        assert discrete <= laplace_rdp(alpha, eps) + 1e-12
    p, q = np.exp(lp), np.exp(lq)
    for e in np.linspace(0, shift / t, 7):
        assert np.sum(np.maximum(0, p - math.exp(e) * q)) <= max(0.0, 1 - math.exp((e - eps) / 2)) + 1e-12


@pytest.mark.parametrize("shift, sigma", [(1, 1.0), (1, 0.5), (2, 3.0), (5, 5.0), (1, 10.0), (30, 20.0), (1000, 1000.0)])
def test_discrete_gaussian_is_dominated_by_continuous_with_margin(shift, sigma):
    support = np.arange(-int(40 * sigma) - shift, int(40 * sigma) + 2 * shift + 1)
    logits = -(support.astype(float) ** 2) / (2 * sigma**2)
    lp = logits - logsumexp(logits)
    lq = np.roll(lp, shift)  # pmf centred at +shift on the same support
    lq[:shift] = -np.inf
    p, q = np.exp(lp), np.exp(lq)
    mu = (shift + 1) / sigma
    for e in np.linspace(0, 3 * mu + mu * mu / 2, 9):
        continuous = norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
        assert np.sum(np.maximum(0, q - math.exp(e) * p)) <= continuous + 1e-12


# -- one Poisson subsample must live in one place (review finding 1)


@pytest.mark.parametrize(
    "second, match",
    [
        (dict(disjoint_group="g", disjoint_part=0), "free events and events of disjoint_group"),
        (dict(subsample="S", disjoint_group="g2", disjoint_part=0), "several disjoint groups"),
        (dict(subsample="S", disjoint_group="g1", disjoint_part=1), "several parts"),
    ],
)
def test_subsample_spanning_several_places_is_refused(second, match):
    # reviewer's repro a1.py: amplifying the pieces of one sample separately reported 0.317
    # for two eps=1 Laplace releases on one Poisson(0.1) sample, whose true eps is >= 0.494
    ledger = Ledger()
    first = dict(tree=0, sampling_rate=0.1)
    if "subsample" in second:
        first.update(subsample="S", disjoint_group="g1", disjoint_part=0)
    ledger.record("a", "laplace", 1.0, epsilon=1.0, **first)
    ledger.record("b", "laplace", 1.0, epsilon=1.0, tree=0, depth=0, sampling_rate=0.1, **second)
    for acct in (BasicAccountant(), RDPAccountant(), PLDAccountant()):
        with pytest.raises(ValueError, match=match):
            acct.get_epsilon(ledger, 1e-5)


def test_subsample_inside_one_part_is_amplified_once():
    ledger = Ledger()
    for name in ("a", "b"):
        ledger.record(name, "laplace", 1.0, epsilon=1.0, tree=0, sampling_rate=0.1,
                      disjoint_group="g", disjoint_part=0)
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(amplified_epsilon(2.0, 0.1))


# -- basic composition: delta shares of Gaussians inside disjoint groups (review finding 4)


def test_basic_delta_split_counts_gaussians_inside_parallel_parts():
    free, grouped = Ledger(), Ledger()
    for d in range(10):
        free.record("h", "gaussian", 1.0, noise_multiplier=5.0, tree=0, depth=d)
        grouped.record("h", "gaussian", 1.0, noise_multiplier=5.0, tree=0, depth=d,
                       disjoint_group="g", disjoint_part=0)
    # part 1 has fewer Gaussians: the group needs max(10, 3) shares, not 1
    for d in range(3):
        grouped.record("h", "gaussian", 1.0, noise_multiplier=5.0, tree=1, depth=d,
                       disjoint_group="g", disjoint_part=1)
    expected = 10 * dp_accounting.get_epsilon_gaussian(5.0, 1e-5 / 10)
    assert BasicAccountant().get_epsilon(free, 1e-5) == pytest.approx(expected)
    assert BasicAccountant().get_epsilon(grouped, 1e-5) == pytest.approx(expected)
    # a free Gaussian next to the group: 11 shares in total
    grouped.record("init", "gaussian", 1.0, noise_multiplier=5.0)
    expected = 11 * dp_accounting.get_epsilon_gaussian(5.0, 1e-5 / 11)
    assert BasicAccountant().get_epsilon(grouped, 1e-5) == pytest.approx(expected)


# (monotonicity of ε in the plan's noise scale: tests/unit/boosting/test_plan.py)


# -- vector discrete Gaussian: the product of 1-D dominating pairs, checked in 2-D and 3-D
# (review finding 8; the proof is in accountants.py's docstring)


@pytest.mark.parametrize("shift, sigma", [((1, 1), 1.0), ((2, 1), 1.5), ((3, 4), 3.0), ((1, 0), 0.7), ((5, 5), 8.0),
                                          ((1, 1, 1), 1.0), ((2, 0, 1), 1.5), ((1, 2, 2), 2.5)])
def test_vector_discrete_gaussian_is_dominated_by_continuous_with_margin(shift, sigma):
    # P = N_Z(0, sigma^2)^d, Q = N_Z(v, sigma^2)^d on Z^d; the continuous 1-D pair with
    # shift ||v|| + sqrt(k) (k: the coordinates v changes), the margin the Gaussian
    # mechanism accounts, must dominate every hockey-stick divergence, in both directions
    half = int(12 * sigma) + 8
    axis = np.arange(-half, half + 1)
    logits = -(axis.astype(float) ** 2) / (2 * sigma**2)
    lp1 = logits - logsumexp(logits)
    lp = np.zeros(())
    lq = np.zeros(())
    for v in shift:
        lq1 = np.roll(lp1, v)
        lq1[:v] = -np.inf
        lp = np.add.outer(lp, lp1)
        lq = np.add.outer(lq, lq1)
    p, q = np.exp(lp), np.exp(lq)
    mu = (math.sqrt(sum(v * v for v in shift)) + math.sqrt(sum(v != 0 for v in shift))) / sigma
    for e in np.linspace(0, 3 * mu + mu * mu / 2, 9):
        continuous = norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
        assert np.sum(np.maximum(0, q - math.exp(e) * p)) <= continuous + 1e-12
        assert np.sum(np.maximum(0, p - math.exp(e) * q)) <= continuous + 1e-12


# -- PLD against dp_accounting with hand-built events (review finding 10)


def test_pld_matches_dp_accounting_with_every_gaussian_separate():
    # gamma = 1: every release is its own GaussianDpEvent, no effective-multiplier shortcut
    n_trees, depth, zs, zl, zi, delta = 10, 3, 6.0, 3.0, 8.0, 1e-6
    ledger = maddock_ledger(n_trees, depth, 1.0, zs, zl, zi)
    events = [dp_accounting.GaussianDpEvent(zi)]
    for _ in range(n_trees):
        events += [dp_accounting.GaussianDpEvent(zs) for _ in range(depth)] + [dp_accounting.GaussianDpEvent(zl)]
    direct = dp_accounting.pld.PLDAccountant(ADD_REMOVE).compose(dp_accounting.ComposedDpEvent(events))
    assert PLDAccountant().get_epsilon(ledger, delta) == pytest.approx(direct.get_epsilon(delta), rel=1e-3)


def test_subsampled_gaussian_composite_matches_2d_integration():
    # two Gaussian releases (z1, z2) on one Poisson(gamma) subsample: the hockey-stick
    # divergence of the 2-D mixture pair, integrated numerically on a grid, must match the
    # accountant's PLD (which reduces the composite to one Gaussian) and never exceed it
    gamma, z1, z2 = 0.3, 1.5, 2.0
    ledger = Ledger()
    ledger.record("a", "gaussian", 1.0, noise_multiplier=z1, tree=0, sampling_rate=gamma)
    ledger.record("b", "gaussian", 1.0, noise_multiplier=z2, tree=0, depth=0, sampling_rate=gamma)
    h = 0.02
    x = np.arange(-12 * z1, 12 * z1 + 1, h)
    y = np.arange(-12 * z2, 12 * z2 + 1, h)
    q = norm.pdf(x, 0, z1)[:, None] * norm.pdf(y, 0, z2)[None, :] * h * h
    shifted = norm.pdf(x, 1, z1)[:, None] * norm.pdf(y, 1, z2)[None, :] * h * h
    p = (1 - gamma) * q + gamma * shifted
    acct = PLDAccountant()
    for eps in (0.1, 0.5, 1.0):
        numeric = max(np.sum(np.maximum(0, p - math.exp(eps) * q)), np.sum(np.maximum(0, q - math.exp(eps) * p)))
        claimed = acct.get_delta(ledger, eps)
        assert numeric <= claimed * (1 + 1e-3) + 1e-9
        assert claimed == pytest.approx(numeric, rel=2e-2, abs=1e-7)
