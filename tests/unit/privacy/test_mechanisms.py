"""Laplace, Gaussian and exponential mechanisms: distributions, grid, API (their speed:
``benchmarks/bench_samplers.py``)."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import softmax

from dpxgb_dask.privacy import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    NoiseSource,
    RandomStream,
    combined_noise_multiplier,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
)

SEED = 2**128 + 7
ALPHA = 1e-4


def stream(name, **key):
    return NoiseSource(SEED).stream(purpose=name, **key)


def test_laplace_noise_is_laplace_with_requested_scale():
    # 100 000 independent scalar releases in one call: each row changes one entry
    mech = LaplaceMechanism(sensitivity=2.0, epsilon=0.5, coords_per_row=1)
    x = np.full(100_000, 3.25)
    y = mech.release(x, stream("lap"))
    b = mech.noise_scale
    assert b == pytest.approx(2.0 / 0.5, rel=1e-5) and b >= 2.0 / 0.5
    assert stats.kstest((y - 3.25) / b, stats.laplace.cdf).pvalue > ALPHA


def test_laplace_output_on_grid_and_shape_preserved():
    mech = LaplaceMechanism(1.0, 1.0)
    x = np.random.default_rng(0).normal(size=(4, 5, 6))
    assert mech.coords_per_row is None
    y = mech.release(x, stream("grid"))
    assert y.shape == x.shape and y.dtype == np.float64
    k = y / mech.resolution
    np.testing.assert_array_equal(k, np.round(k))
    assert mech.resolution == 2.0**-20


def test_laplace_epsilon_accounting_is_conservative():
    for sens, eps, k in [(1.0, 1.0, 1), (3.7, 0.01, 10), (0.02, 50.0, 1), (1e6, 2.0, 1000)]:
        mech = LaplaceMechanism(sens, eps, coords_per_row=k)
        assert mech.epsilon_effective <= eps
        # the continuous proxy used by RDP/PLD (sensitivity + 1 grid step) is also within eps
        assert mech._accounted_sensitivity / mech.integer_scale <= eps
        assert mech.noise_scale == pytest.approx(sens / eps, rel=1e-3)


def test_laplace_rounding_sensitivity_bound_holds():
    # one row changes k coordinates by at most sens in total: the integer query moves by
    # at most floor(sens/g) + k in L1
    rng = np.random.default_rng(1)
    mech = LaplaceMechanism(1.0, 1.0, coords_per_row=5)
    g = mech.resolution
    bound = math.floor(1.0 / g) + 5
    for _ in range(2000):
        x = rng.normal(size=5) * 100
        d = rng.dirichlet(np.ones(5)) * rng.choice([-1, 1], size=5)
        kx = np.rint(x / g)
        kx2 = np.rint((x + d) / g)
        assert np.abs(kx - kx2).sum() <= bound


def test_gaussian_noise_is_gaussian_with_requested_sigma():
    mech = GaussianMechanism(sensitivity=1.5, sigma=4.0, coords_per_row=1)
    y = mech.release(np.full(100_000, -2.0), stream("gauss"))
    sd = math.sqrt(mech.integer_scale * mech.integer_shift) * mech.resolution
    assert sd == pytest.approx(4.0, rel=1e-5) and sd >= 4.0
    assert stats.kstest((y + 2.0) / sd, stats.norm.cdf).pvalue > ALPHA
    assert mech.noise_multiplier == pytest.approx(4.0 / 1.5)
    assert mech.noise_multiplier_effective >= mech.noise_multiplier


def test_gaussian_noise_multiplier_form_and_conservative_rounding():
    for sens, z, k in [(1.0, 1.0, 1), (math.sqrt(200 * 17 / 16), 2.0, 200), (1e-3, 50.0, 4000)]:
        mech = GaussianMechanism(sens, noise_multiplier=z, coords_per_row=k)
        assert mech.sigma == pytest.approx(z * sens)
        assert mech.noise_multiplier_effective >= z
        assert mech.noise_multiplier_effective == pytest.approx(z, rel=1e-3)


def test_gaussian_argument_errors():
    with pytest.raises(ValueError, match="exactly one"):
        GaussianMechanism(1.0)
    with pytest.raises(ValueError, match="exactly one"):
        GaussianMechanism(1.0, sigma=1.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="coords_per_row"):
        GaussianMechanism(1.0, sigma=1.0, coords_per_row=0)
    with pytest.raises(ValueError, match="sensitivity"):
        LaplaceMechanism(0.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        LaplaceMechanism(1.0, 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_refused(bad):
    with pytest.raises(ValueError, match="finite"):
        laplace_mechanism(np.array([1.0, bad]), 1.0, 1.0, rng=stream("nan"))
    with pytest.raises(ValueError, match="finite"):
        gaussian_mechanism(np.array([1.0, bad]), 1.0, sigma=1.0, rng=stream("nan"))


def test_values_beyond_the_grid_are_clipped_not_refused():
    # an error here would depend on the private value; clipping is 1-Lipschitz
    y = laplace_mechanism(np.array([1e30, -1e300, 3.0]), 1.0, 1.0, rng=stream("big"), coords_per_row=1)
    g = LaplaceMechanism(1.0, 1.0).resolution
    assert abs(y[0] - 2.0**61 * g) < 2**30 * g and abs(y[1] + 2.0**61 * g) < 2**30 * g
    assert abs(y[2] - 3.0) < 100
    z = gaussian_mechanism(np.array([1e308]), 1.0, sigma=1e-3, rng=stream("big-g"))
    assert np.isfinite(z).all()
    with pytest.raises(ValueError) as info:
        laplace_mechanism(np.array([np.nan, 123.456]), 1.0, 1.0)
    assert "123.456" not in str(info.value)


def test_default_coords_per_row_is_the_array_size():
    # reviewer's repro a5.py: with coords_per_row left at 1 for a 100-coordinate histogram,
    # rounding moved the integer query by more than the accounted sensitivity (eps > 1)
    mech = LaplaceMechanism(100.0, 1.0)
    g = mech.resolution
    n = np.full(100, 16384.0)
    n[0] = 16383.0
    x = np.full(100, 0.499 * g)
    x2 = x + (n + 0.005) * g
    assert np.abs(x2 - x).sum() <= 100.0  # a valid neighbour: L1 change within the sensitivity
    mech.release(x, stream("a5"))
    assert mech.coords_in_use == 100
    change = np.abs(np.rint(x2 / g) - np.rint(x / g)).sum()
    assert change / mech.integer_scale <= 1.0
    assert (change + 1) / mech.integer_scale <= 1.0  # continuous proxy with its margin
    # Gaussian: sqrt(k) steps for k = the size
    gm = GaussianMechanism(1.0, noise_multiplier=1.0)
    gm.release(np.zeros((4, 25)), stream("a5-g"))
    assert gm.coords_in_use == 100
    assert gm._accounted_sensitivity >= 1.0 / gm.resolution + 10.0 + 1.0
    assert gm.noise_multiplier_effective >= 1.0
    # explicit values keep working, and attributes exist before any release
    assert LaplaceMechanism(100.0, 1.0, coords_per_row=100).integer_scale == mech.integer_scale
    with pytest.raises(ValueError, match="call release"):
        LaplaceMechanism(100.0, 1.0).noise_scale
    with pytest.raises(ValueError, match="coords_per_row"):
        LaplaceMechanism(1.0, 1.0, coords_per_row=True)


def test_mechanisms_reproduce_with_seed_and_differ_by_key():
    x = np.zeros((3, 4))
    a = laplace_mechanism(x, 1.0, 1.0, rng=stream("r", tree=0, depth=1))
    b = laplace_mechanism(x, 1.0, 1.0, rng=stream("r", tree=0, depth=1))
    c = laplace_mechanism(x, 1.0, 1.0, rng=stream("r", tree=0, depth=2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    g1 = gaussian_mechanism(x, 1.0, sigma=2.0, rng=stream("g"))
    g2 = gaussian_mechanism(x, 1.0, sigma=2.0, rng=stream("g"))
    np.testing.assert_array_equal(g1, g2)


def test_secure_default_rng():
    x = np.zeros(1000)
    assert not np.array_equal(laplace_mechanism(x, 1.0, 1.0), laplace_mechanism(x, 1.0, 1.0))


def test_ledger_fields():
    assert LaplaceMechanism(2.0, 0.5).ledger_fields()["epsilon"] == 0.5
    f = GaussianMechanism(2.0, sigma=3.0).ledger_fields()
    assert f["mechanism"] == "gaussian" and f["noise_multiplier"] == 1.5
    assert ExponentialMechanism(3.0, 0.1).ledger_fields() == {
        "mechanism": "exponential",
        "sensitivity": 3.0,
        "epsilon": 0.1,
    }


def test_exponential_mechanism_frequencies_match_softmax():
    eps, sens = 1.5, 0.5
    u = np.array([0.0, 0.3, 1.0, -2.0, 0.9])
    n = 100_000
    mech = ExponentialMechanism(sens, eps)
    choice = mech.select(np.tile(u, (n, 1)), rng=stream("em"))
    counts = np.bincount(choice, minlength=u.size)
    expected = softmax(eps * u / (2 * sens)) * n
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_exponential_mechanism_monotonic_form():
    u = np.array([0.0, 1.0])
    n = 100_000
    choice = exponential_mechanism(np.tile(u, (n, 1)), 1.0, 1.0, monotonic=True, rng=stream("em-mono"))
    p1 = 1 / (1 + math.exp(-1.0))
    assert stats.binomtest(int((choice == 1).sum()), n, p1).pvalue > ALPHA


def test_exponential_mechanism_mask_and_empty_rows():
    u = np.array([[5.0, 100.0, 1.0], [np.nan, 1.0, 2.0], [1.0, 2.0, 3.0]])
    mask = np.array([[True, False, True], [False, True, True], [False, False, False]])
    rng = stream("em-mask")
    for _ in range(200):
        c = exponential_mechanism(u, 1.0, 1.0, mask=mask, rng=rng)
        assert c[0] in (0, 2) and c[1] in (1, 2) and c[2] == -1


def test_exponential_mechanism_huge_utilities_do_not_overflow():
    u = np.array([[1e300, -1e300, 1e300 - 1e285]])
    c = exponential_mechanism(u, 1.0, 1.0, rng=stream("em-huge"))
    assert c[0] in (0, 2)


class _MaxStream(RandomStream):
    """A stream whose uniform integers are always the largest allowed (its words all ones)."""

    def uniform_below(self, bound, size=None):
        if size is not None and np.ndim(bound) == 0:
            return np.full(int(size), int(bound) - 1, dtype=np.int64)
        return np.asarray(bound, dtype=np.int64).ravel() - 1

    def uint64(self, size):
        return np.full(int(size), 2**64 - 1, dtype=np.uint64)


@pytest.mark.parametrize("behind", [41.0, 60.0, 400.0])
def test_exponential_mechanism_far_behind_candidate_is_possible(behind):
    # with the old Gumbel sampler (Gumbel variates truncated to [-3.6, 36.7]) a candidate
    # more than ~40.3 nats behind had probability exactly 0; now every candidate has its
    # exact positive probability, so some stream of random bits selects it
    mech = ExponentialMechanism(1.0, 2.0)  # log-weight = u, nats
    u = np.array([behind, 0.0])
    assert mech.select(u, rng=_MaxStream(b"k" * 32)) == 1


def test_exponential_mechanism_weights_are_exact_on_the_grid():
    # P(j) ∝ 2^(λ K_j), λ = n / 2**q <= eps / (2 Δ_K ln 2) with Δ_K = floor(Δ/g) + 1
    mech = ExponentialMechanism(0.5, 1.5)
    delta_k = math.floor(0.5 / mech.resolution) + 1
    lam = mech.weight_numerator / 2**mech.weight_log2_denominator
    assert lam * math.log(2) * delta_k <= 1.5 / 2
    assert lam * math.log(2) * delta_k == pytest.approx(1.5 / 2, rel=1e-9)
    mono = ExponentialMechanism(0.5, 1.5, monotonic=True)
    lam_m = mono.weight_numerator / 2**mono.weight_log2_denominator
    assert lam_m * math.log(2) * delta_k <= 1.5 and lam_m == pytest.approx(2 * lam, rel=1e-9)
    # tiny epsilon: weights round down towards uniform, never up
    tiny = ExponentialMechanism(1.0, 1e-300)
    assert tiny.weight_numerator == 0
    c = tiny.select(np.tile([0.0, 5.0], (20_000, 1)), rng=stream("em-tiny"))
    assert stats.binomtest(int((c == 1).sum()), c.size, 0.5).pvalue > ALPHA


def test_exponential_mechanism_one_d_and_validation():
    assert isinstance(exponential_mechanism(np.array([0.0, 1.0]), 1.0, 1.0, rng=stream("1d")), int)
    with pytest.raises(ValueError, match="finite"):
        exponential_mechanism(np.array([[np.nan, 1.0]]), 1.0, 1.0)
    with pytest.raises(ValueError, match="boolean"):
        exponential_mechanism(np.zeros((2, 2)), 1.0, 1.0, mask=np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        exponential_mechanism(np.zeros((2, 2)), 1.0, 1.0, mask=np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="n_nodes"):
        exponential_mechanism(np.zeros((2, 2, 2)), 1.0, 1.0)


def test_combined_noise_multiplier():
    assert combined_noise_multiplier(2.0) == 2.0
    assert combined_noise_multiplier(1.0, 1.0) == pytest.approx(1 / math.sqrt(2))
    with pytest.raises(ValueError):
        combined_noise_multiplier()


@pytest.mark.parametrize("make", [
    lambda: GaussianMechanism(3.0, noise_multiplier=0.8, coords_per_row=6),
    lambda: GaussianMechanism(3.0, noise_multiplier=0.8),
    lambda: LaplaceMechanism(2.0, 0.5, coords_per_row=4),
])
def test_noise_drawn_beforehand_gives_the_same_release(make):
    # the coordinator draws a level's noise while the workers compute its histograms
    values = np.random.default_rng(0).normal(size=(3, 4, 5)) * 100
    direct = make().release(values, stream("early-noise"))
    mechanism = make()
    noise = mechanism.draw_noise(values.size, stream("early-noise"))
    np.testing.assert_array_equal(mechanism.release(values, noise=noise), direct)
    with pytest.raises(ValueError, match="noise must have shape"):
        mechanism.release(values, noise=noise[:-1])


# -- the exponential mechanism's grid and a common term (review of the samplers, finding 1)


def test_a_common_term_left_in_the_utilities_can_exceed_the_grid_sensitivity():
    # Δ = 3 g*² with frac(Δ / g_u) = 0.75 >= 1/2. Two candidates whose own terms move by
    # +a and -a (|a| <= Δ), in a node whose common (parent) term moves by d: rounded with
    # the common term in, the two K_j move apart by 2 Δ_K + 1, so no common integer shift
    # keeps both within Δ_K (epsilon exceeded by the factor (Δ_K + 1) / Δ_K); rounded
    # without it, each moves by at most Δ_K
    g_star = math.sqrt((1 + 0.75 * 2**-20) / 3)
    sensitivity = 3 * g_star**2
    mech = ExponentialMechanism(sensitivity, 1.0)
    g_u, delta_k = mech.resolution, mech.sensitivity_steps
    assert math.modf(sensitivity / g_u)[0] >= 0.5
    rng = np.random.default_rng(7)
    n = 200_000
    x = rng.uniform(-50, 50, (n, 2)) * g_u          # the candidates' own terms on D
    a = rng.uniform(0.5, 1.0, n) * sensitivity      # how far one row moves them
    x_next = x + np.stack([a, -a], axis=1)

    def spread(before, after):
        moved = mech.grid_utilities(after) - mech.grid_utilities(before)
        # the smallest max |moved - shift| over integer shifts
        return int(np.ceil((moved.max(axis=-1) - moved.min(axis=-1)) / 2).max())

    assert np.abs(mech.grid_utilities(x_next) - mech.grid_utilities(x)).max() <= delta_k
    assert spread(x, x_next) <= delta_k
    # with the common term: own terms at +0.49 and -0.49 steps, moved by ±Δ; the common
    # term moves from 0 to 0.3 steps
    own = np.array([0.49, -0.49]) * g_u
    own_next = own + np.array([sensitivity, -sensitivity])
    assert spread(own, own_next) <= delta_k
    assert spread(own - 0.0, own_next - 0.3 * g_u) == delta_k + 1
