"""Empirical privacy loss of each mechanism on neighbouring inputs (>= 2e5 draws each).

For datasets D, D' whose query answers differ by exactly the sensitivity (the worst case),
the mechanism is run 200 000 times on each and the privacy loss is estimated from the
outputs:

* pure-ε mechanisms (Laplace, exponential): ε̂ = max over histogram bins holding at least
  1 000 draws on both sides of |log(count_D / count_D')|. The standard error of one
  log-ratio is at most sqrt(2/1000) ≈ 0.045, so we allow a tolerance of 0.15·ε
  (ε = 1, about 3.3 standard errors for the largest of ~20 bins);
* Gaussian ((ε, δ)-DP): ε̂(δ) = max over half-lines S (the optimal sets, since the privacy
  loss is monotone) of log((P̂_D(S) - δ) / P̂_D'(S)), over S with >= 1 000 draws; tolerance
  0.1·ε (the estimate's standard error is about 0.02 here).

Each test also checks the estimate reaches most of the claimed loss, so a mechanism that
silently added far more noise than claimed would fail too. All draws use fixed seeds.
"""


import math

import dp_accounting
import numpy as np
import pytest
from scipy.special import softmax

from dpxgb_dask.privacy import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Ledger,
    NoiseSource,
    PLDAccountant,
    leaf_balanced_sigmas,
)
from dpxgb_dask.privacy.filter import RowFilter, filter_term

SEED = 2**130 + 3
N = 200_000
MIN_COUNT = 1_000


def stream(name, index):
    return NoiseSource(SEED).stream(purpose=name, index=index)


def pure_epsilon_hat(a, b, edges):
    ca, _ = np.histogram(a, edges)
    cb, _ = np.histogram(b, edges)
    keep = (ca >= MIN_COUNT) & (cb >= MIN_COUNT)
    assert keep.sum() >= 10
    return float(np.max(np.abs(np.log(ca[keep] / cb[keep]))))


def approx_epsilon_hat(a, b, delta):
    """max over half-lines S of log((P_a(S) - delta) / P_b(S)), both orientations (S with
    at least MIN_COUNT draws of ``b``)."""
    best, n = -np.inf, len(a)
    for x, y in ((a, b), (-a, -b)):
        grid = np.quantile(y, np.linspace(0.0, 1.0 - MIN_COUNT / n, 400))
        xs, ys = np.sort(x), np.sort(y)
        pa = 1.0 - np.searchsorted(xs, grid, side="left") / n
        pb = 1.0 - np.searchsorted(ys, grid, side="left") / n
        ok = (pb * n >= MIN_COUNT) & (pa > delta)
        best = max(best, float(np.max(np.log((pa[ok] - delta) / pb[ok]))))
    return best


@pytest.mark.parametrize("x0", [0.0, 0.123456789])
def test_laplace_empirical_epsilon(x0):
    eps, sens = 1.0, 1.0
    mech = LaplaceMechanism(sens, eps)
    a = mech.release(np.full(N, x0), stream("lap-a", int(x0 * 1e9)))
    b = mech.release(np.full(N, x0 + sens), stream("lap-b", int(x0 * 1e9)))
    scale = mech.noise_scale
    edges = np.arange(x0 - 8 * scale, x0 + sens + 8 * scale, scale / 4)
    eps_hat = pure_epsilon_hat(a, b, edges)
    assert 0.85 * eps <= eps_hat <= 1.15 * eps


def test_laplace_vector_l1_empirical_epsilon():
    # a row changing 2 coordinates by 0.5 each (L1 = 1): loss = |sum of 1-D losses|
    eps = 1.0
    mech = LaplaceMechanism(1.0, eps, coords_per_row=2)
    a = mech.release(np.zeros((N, 2)), stream("lapv-a", 0))
    b = mech.release(np.full((N, 2), 0.5), stream("lapv-b", 0))
    # the loss is exactly eps on the quadrant where both coordinates are below 0: 2-D bins
    scale = mech.noise_scale
    edges = np.arange(-6 * scale, 0.5 + 6 * scale, scale / 2)
    ca, _, _ = np.histogram2d(a[:, 0], a[:, 1], [edges, edges])
    cb, _, _ = np.histogram2d(b[:, 0], b[:, 1], [edges, edges])
    keep = (ca >= MIN_COUNT) & (cb >= MIN_COUNT)
    eps_hat = float(np.max(np.abs(np.log(ca[keep] / cb[keep]))))
    assert 0.85 * eps <= eps_hat <= 1.15 * eps


def test_gaussian_empirical_epsilon_delta():
    sens, z, delta = 1.0, 1.0, 0.05
    mech = GaussianMechanism(sens, noise_multiplier=z)
    a = mech.release(np.full(N, sens), stream("gauss-a", 0))
    b = mech.release(np.zeros(N), stream("gauss-b", 0))
    eps_hat = approx_epsilon_hat(a, b, delta)
    ledger = Ledger()
    ledger.record("leaf", **mech.ledger_fields())
    eps_claimed = PLDAccountant().get_epsilon(ledger, delta)
    # exact value for the continuous Gaussian with mu = 1 at delta = 0.05 is about 1.55
    assert 0.9 * eps_claimed <= eps_hat <= 1.1 * eps_claimed


def test_a_partially_random_level_loses_what_its_ledger_claims():
    """Partially random splits release each feature's left / right / missing sums at its
    drawn threshold. A worst-case row (g*, h*), missing in one feature, moves exactly one
    cell of each feature: the claimed sensitivity sqrt(F (g*² + h*²)), no more. The loss
    of the whole release, read along the direction the row moves it (the optimal test
    for a Gaussian), is the accountant's ε of its ledger entry."""
    from dpxgb_dask.boosting import gains
    from dpxgb_dask.privacy.mechanisms import histogram_mechanism
    from dpxgb_dask._core import empty_histograms

    g_star, h_star, n_features, n_bins = 1.0, 0.25, 3, 7
    rng = np.random.default_rng(4)
    base = empty_histograms(1, n_features, n_bins)
    base["sum_gradients"] = rng.normal(size=base.shape)
    base["sum_hessians"] = rng.uniform(0, 2, size=base.shape)
    added = base.copy()
    for f, b in enumerate((1, n_bins - 1, 4)):  # feature 1 missing
        added["sum_gradients"][0, f, b] += g_star
        added["sum_hessians"][0, f, b] += h_star
    thresholds = np.array([[2, 0, 3]])

    def released_cells(h):
        cells = gains.collapse_at_thresholds(h, thresholds)
        return np.concatenate([cells["sum_gradients"].ravel(), cells["sum_hessians"].ravel()])

    x, x_nb = released_cells(base), released_cells(added)
    mech = histogram_mechanism(n_features, g_star, h_star, 1.0)
    move = x_nb - x
    assert np.linalg.norm(move) == pytest.approx(mech.sensitivity, rel=1e-12)
    unit = move / np.linalg.norm(move)
    a = (mech.release(np.tile(x_nb, (N, 1)), stream("pr-a", 0)) - x) @ unit
    b = (mech.release(np.tile(x, (N, 1)), stream("pr-b", 0)) - x) @ unit
    delta = 0.05
    eps_hat = approx_epsilon_hat(a, b, delta)
    ledger = Ledger()
    ledger.record("split", **mech.ledger_fields())
    eps_claimed = PLDAccountant().get_epsilon(ledger, delta)
    assert 0.9 * eps_claimed <= eps_hat <= 1.1 * eps_claimed


def test_exponential_empirical_epsilon():
    eps, sens = 1.0, 2.0
    u = np.zeros(10)
    # neighbour: candidate 0 gains the full sensitivity, every other candidate loses it
    u_nb = u - sens
    u_nb[0] = u[0] + sens
    mech = ExponentialMechanism(sens, eps)
    ca = np.bincount(mech.select(np.tile(u, (N, 1)), rng=stream("em-a", 0)), minlength=10)
    cb = np.bincount(mech.select(np.tile(u_nb, (N, 1)), rng=stream("em-b", 0)), minlength=10)
    p, q = softmax(eps * u / (2 * sens)), softmax(eps * u_nb / (2 * sens))
    eps_true = float(np.max(np.abs(np.log(p / q))))
    assert eps_true <= eps
    keep = (ca >= MIN_COUNT) & (cb >= MIN_COUNT)
    eps_hat = float(np.max(np.abs(np.log(ca[keep] / cb[keep]))))
    assert eps_hat <= 1.15 * eps
    assert abs(eps_hat - eps_true) <= 0.1


def test_a_row_loses_what_the_individual_filter_charges_it():
    """Statistical: one leaf's (G, H) released 200 000 times by the mechanisms the fit uses,
    with and without a row of gradient g*/4 and hessian h*/2: the empirical ε at δ of
    the likelihood-ratio statistic stays within, and reaches most of, the ε of the row's
    charge (a Gaussian of zCDP coefficient ρ_i, ``RowFilter.charges`` at γ = 1)."""
    delta, z, ratio, g_star, h_star = 1e-3, 1.5, 0.1, 0.8, 0.25
    sigma_g, sigma_h = leaf_balanced_sigmas(z, g_star, h_star, ratio)
    mech_g = GaussianMechanism(g_star, sigma=sigma_g, coords_per_row=1)
    mech_h = GaussianMechanism(h_star, sigma=sigma_h, coords_per_row=1)
    g_row, h_row = g_star / 4, h_star / 2
    base_g, base_h = np.full(N, 12.5), np.full(N, 30.0)
    out = []
    for i, (add_g, add_h) in enumerate(((0.0, 0.0), (g_row, h_row))):
        noisy_g = mech_g.release(base_g + add_g, stream("filter-g", i))
        noisy_h = mech_h.release(base_h + add_h, stream("filter-h", i))
        # the optimal test: the whitened projection on the row's contribution
        out.append((noisy_g - 12.5) * g_row / sigma_g**2 + (noisy_h - 30.0) * h_row / sigma_h**2)
    terms = (filter_term(mech_g, 1, 0), filter_term(mech_h, 0, 1))
    order = 8.0
    charge = RowFilter.build("rows", order, 1.0, 1.0, 1.0, counts=False).charges(
        np.array([g_row]), np.array([h_row]), terms, math.inf)[0]
    rho = charge / order
    claimed = dp_accounting.get_epsilon_gaussian(1.0 / math.sqrt(2.0 * rho), delta)
    estimate = approx_epsilon_hat(out[1], out[0], delta)
    assert estimate <= 1.1 * claimed
    assert estimate >= 0.7 * claimed
    worst = dp_accounting.get_epsilon_gaussian(z, delta)
    assert claimed < 0.5 * worst  # the row is charged well below the worst case
