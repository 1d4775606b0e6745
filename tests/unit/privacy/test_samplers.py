"""Exact samplers against their exact reference distributions (chi-square / binomial / KS),
and the compiled samplers against their Python twins (same values, same stream position).

``DPXGB_SAMPLER_DRAWS=K`` multiplies the draws of every statistical test by K (default 1),
for a stronger check after a change to the samplers or to how releases draw their noise.
"""

import math
import os

import numpy as np
import pytest
from scipy import stats

from dpxgb_dask.privacy import NoiseSource, naive_samplers, samplers
from dpxgb_dask.privacy.samplers import (
    bernoulli_exp2_neg,
    bernoulli_exp_neg,
    bernoulli_ln2,
    discrete_gaussian,
    discrete_laplace,
    exponential_choice_base2,
)

SEED = 2**128 + 99
ALPHA = 1e-4  # per-test significance; all tests use fixed seeds, so they are deterministic
#: Multiplier of every statistical test's draws (``DPXGB_SAMPLER_DRAWS``).
DRAWS = int(os.environ.get("DPXGB_SAMPLER_DRAWS", "1"))


def draws(n):
    """``n`` draws, times the DRAWS multiplier."""
    return n * DRAWS


def stream(name, index=0):
    return NoiseSource(SEED).stream(purpose=name, index=index)


def binned_chisquare(samples, support, pmf, min_expected=20.0):
    """Chi-square of integer samples against an exact pmf, merging bins into >= min_expected."""
    n = samples.size
    counts = np.zeros(support.size + 1)
    idx = np.searchsorted(support, samples)
    inside = (idx < support.size) & (support[np.minimum(idx, support.size - 1)] == samples)
    np.add.at(counts, idx[inside], 1)
    counts[-1] = n - inside.sum()
    expected = np.append(pmf, max(0.0, 1.0 - pmf.sum())) * n
    obs_bins, exp_bins, o, e = [], [], 0.0, 0.0
    for oi, ei in zip(counts, expected):
        o, e = o + oi, e + ei
        if e >= min_expected:
            obs_bins.append(o)
            exp_bins.append(e)
            o, e = 0.0, 0.0
    obs_bins[-1] += o
    exp_bins[-1] += e
    exp_bins = np.array(exp_bins) * (n / np.sum(exp_bins))
    return stats.chisquare(obs_bins, exp_bins).pvalue


@pytest.mark.parametrize(
    "num,den", [(0, 1), (1, 3), (1, 1), (5, 2), (36, 5), (2**40, 2**41 + 1), (3, 2**61), (2**60, 2**61 + 1)]
)
def test_bernoulli_exp_neg_matches_exp(num, den):
    # (2**60, 2**61 + 1): gamma ~ 1/2, so about 1/2 of the trials reach K = 2, where
    # den * K >= 2**62 takes the split branch Bernoulli(num/den) AND Bernoulli(1/K)
    n = draws(1_000_000)
    x = bernoulli_exp_neg(np.full(n, num), den, stream("bexp", num))
    p = math.exp(-num / den)
    if p == 1.0:
        assert x.all()
    else:
        assert stats.binomtest(int(x.sum()), n, p).pvalue > ALPHA


def test_bernoulli_exp_neg_validates():
    s = stream("bexp-bad")
    with pytest.raises(ValueError, match="denominator"):
        bernoulli_exp_neg([1], 0, s)
    with pytest.raises(ValueError, match="numerator"):
        bernoulli_exp_neg([-1], 3, s)


def dlap_pmf(y, t):
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(y) / t)


@pytest.mark.parametrize("t", [1, 2, 7, 100])
def test_discrete_laplace_small_scales_chi_square(t):
    n = draws(1_000_000)
    y = discrete_laplace(t, n, stream("dlap", t))
    support = np.arange(-40 * t, 40 * t + 1)
    assert binned_chisquare(y, support, dlap_pmf(support, t)) > ALPHA


def test_discrete_laplace_large_scale_is_laplace_on_grid():
    t = 2**22
    y = discrete_laplace(t, draws(1_000_000), stream("dlap-large"))
    # at this scale the discrete Laplace equals the continuous one on the integers (relative 2**-22)
    assert stats.kstest(y / t, stats.laplace.cdf).pvalue > ALPHA


def test_discrete_laplace_symmetric_and_exact_zero_mass():
    t = 3
    n = draws(2_000_000)
    y = discrete_laplace(t, n, stream("dlap-zero"))
    assert stats.binomtest(int((y == 0).sum()), n, float(dlap_pmf(0, t))).pvalue > ALPHA
    assert stats.binomtest(int((y > 0).sum()), int((y != 0).sum()), 0.5).pvalue > ALPHA


def test_discrete_laplace_validates_scale():
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace(0, 3, stream("x"))
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace(2**51, 3, stream("x"))


def dgauss_pmf(support, sigma2):
    logits = -(support.astype(float) ** 2) / (2 * sigma2)
    w = np.exp(logits - logits.max())
    return w / w.sum()


@pytest.mark.parametrize("t,m", [(1, 1), (2, 2), (3, 5), (11, 10), (40, 39)])
def test_discrete_gaussian_chi_square(t, m):
    sigma2 = t * m
    n = draws(1_000_000)
    y = discrete_gaussian(t, m, n, stream("dg", t))
    half = int(12 * math.sqrt(sigma2)) + 2
    support = np.arange(-half, half + 1)
    assert binned_chisquare(y, support, dgauss_pmf(support, sigma2)) > ALPHA


def test_discrete_gaussian_proposal_scale_does_not_matter():
    # CKS Algorithm 3 is exact for any integer proposal scale t (t = floor(sigma) + 1 is
    # only the efficient choice): sigma^2 = 12 from (t, m) = (3, 4), (2, 6) and (12, 1)
    support = np.arange(-30, 31)
    for t, m in [(3, 4), (2, 6), (12, 1)]:
        y = discrete_gaussian(t, m, draws(600_000), stream("dg-t", t))
        assert binned_chisquare(y, support, dgauss_pmf(support, 12.0)) > ALPHA


def test_discrete_gaussian_large_scale_ks():
    t, m = 2**22 + 1, 2**22
    y = discrete_gaussian(t, m, draws(1_000_000), stream("dg-large"))
    assert stats.kstest(y / math.sqrt(t * m), stats.norm.cdf).pvalue > ALPHA


def test_discrete_gaussian_wide_acceptance_exponent_is_exact():
    # with sigma = 2**30 about 2% of the discrete Laplace proposals have |Y| - m >= 2**32,
    # whose square (|Y| - m)**2 exceeds 64 bits and takes the 128-bit branch of the compiled
    # sampler: the output must still be Gaussian and match the Python twin draw for draw
    t = m = 2**30
    y = discrete_gaussian(t, m, draws(1_000_000), stream("dg-big"))
    assert stats.kstest(y / 2.0**30, stats.norm.cdf).pvalue > ALPHA
    twin_stream, compiled_stream = stream("dg-big-twin"), stream("dg-big-twin")
    expected = naive_samplers.discrete_gaussian(t, m, 3000, twin_stream)
    np.testing.assert_array_equal(discrete_gaussian(t, m, 3000, compiled_stream), expected)


def test_discrete_gaussian_validates():
    with pytest.raises(ValueError, match="scale"):
        discrete_gaussian(0, 1, 2, stream("x"))
    with pytest.raises(ValueError, match="mean_shift"):
        discrete_gaussian(2**40, 2**40, 2, stream("x"))
    with pytest.raises(ValueError, match="almost never be accepted"):
        discrete_gaussian(2**40, 1, 2, stream("x"))


def test_bernoulli_ln2():
    n = draws(1_000_000)
    x = bernoulli_ln2(n, stream("ln2"))
    assert stats.binomtest(int(x.sum()), n, math.log(2)).pvalue > ALPHA
    assert bernoulli_ln2(0, stream("ln2-0")).shape == (0,)


@pytest.mark.parametrize("num,q", [(0, 3), (1, 1), (3, 2), (2**56 - 1, 56), (12345, 20)])
def test_bernoulli_exp2_neg_matches_power_of_two(num, q):
    n = draws(1_000_000)
    x = bernoulli_exp2_neg(np.full(n, num), q, stream("exp2", num))
    p = 2.0 ** (-num / 2**q)
    if p == 1.0:
        assert x.all()
    else:
        assert stats.binomtest(int(x.sum()), n, p).pvalue > ALPHA
    with pytest.raises(ValueError, match="numerator"):
        bernoulli_exp2_neg([2**q], q, stream("x"))
    with pytest.raises(ValueError, match="log2_denominator"):
        bernoulli_exp2_neg([0], 57, stream("x"))


@pytest.mark.parametrize("head_bits", [None, 1, 3])
def test_exponential_choice_base2_chi_square(head_bits):
    # head_bits=1 and 3 send most candidates through the tail path (unit slots, 64 coins a word)
    d = np.array([0, 1, 2, 3, 5, 8, 13, 21, 34, 200])
    num, q = 3, 2  # lambda = 3/4
    n = draws(1_000_000)
    choice = exponential_choice_base2(np.tile(d, (n, 1)), num, q, stream("em2", head_bits or 0),
                                      head_bits=head_bits)
    p = 2.0 ** (-num * d / 2**q)
    p /= p.sum()
    counts = np.bincount(choice, minlength=d.size)
    keep = p * n >= 20
    expected = np.append(p[keep], p[~keep].sum()) * n
    observed = np.append(counts[keep], counts[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > ALPHA


@pytest.mark.parametrize("n_flips", [0, 1, 2, 5])
def test_all_heads_has_probability_two_to_the_minus_flips(n_flips):
    n = draws(200_000)
    heads = samplers._all_heads([n_flips] * n, stream("heads", n_flips))
    assert heads.shape == (n,) and heads.dtype == bool
    if n_flips == 0:
        assert heads.all()
    else:
        assert stats.binomtest(int(heads.sum()), n, 2.0**-n_flips).pvalue > ALPHA


class _WordsStream:
    """Hands out the given 64-bit words in order, counting the rounds asked for."""

    def __init__(self, words):
        self.words, self.rounds = list(words), 0

    def uint64(self, size):
        self.rounds += 1
        taken, self.words = self.words[:size], self.words[size:]
        return np.array(taken, dtype=np.uint64)


def test_all_heads_flips_past_64_coins_a_word_at_a_time():
    ones = 2**64 - 1
    # 200 coins: 64 + 64 + 64 + 8, every one a head
    every = _WordsStream([ones] * 4)
    assert samplers._all_heads([200], every).tolist() == [True] and every.rounds == 4
    # one tail among the first 64 coins ends the entry at once; 2**70 coins end at a tail
    # in the second word, whatever their count
    mixed = _WordsStream([ones - 8, ones, ones - 1])
    assert samplers._all_heads([64, 2**70], mixed).tolist() == [False, False]
    assert mixed.rounds == 2
    # only the low bits of a short last word count
    assert samplers._all_heads([65], _WordsStream([ones, 1])).tolist() == [True]
    assert samplers._all_heads([66], _WordsStream([ones, 1])).tolist() == [False]


def test_exponential_choice_base2_mask_rows_and_validation():
    d = np.array([[0, 0, 5], [3, 0, 0], [0, 0, 0]])
    valid = np.array([[True, False, True], [False, True, True], [False, False, False]])
    c = exponential_choice_base2(d, 1, 0, stream("em2-mask"), valid=valid)
    assert c[0] in (0, 2) and c[1] in (1, 2) and c[2] == -1
    uniform = exponential_choice_base2(np.tile([0, 50], (draws(400_000), 1)), 0, 0,
                                       stream("em2-uniform"))
    assert stats.binomtest(int(uniform.sum()), uniform.size, 0.5).pvalue > ALPHA
    with pytest.raises(ValueError, match="distance"):
        exponential_choice_base2(np.array([[-1, 0]]), 1, 0, stream("x"))
    with pytest.raises(ValueError, match="distance"):
        exponential_choice_base2(np.zeros((2, 2, 2), np.int64), 1, 0, stream("x"))
    with pytest.raises(ValueError, match="numerator"):
        exponential_choice_base2(np.zeros((1, 2), np.int64), -1, 0, stream("x"))
    with pytest.raises(ValueError, match="log2_denominator"):
        exponential_choice_base2(np.zeros((1, 2), np.int64), 1, 60, stream("x"))
    with pytest.raises(ValueError, match="head_bits"):
        exponential_choice_base2(np.zeros((1, 2), np.int64), 1, 0, stream("x"), head_bits=0)


def test_samplers_reproduce_from_seed():
    a = discrete_laplace(50, 1000, stream("rep"))
    b = discrete_laplace(50, 1000, stream("rep"))
    np.testing.assert_array_equal(a, b)
    c = discrete_gaussian(8, 8, 1000, stream("rep2"))
    d = discrete_gaussian(8, 8, 1000, stream("rep2"))
    np.testing.assert_array_equal(c, d)


# -- the compiled samplers against their NumPy twins: same integers, same stream position --

def _twin_streams(name, index):
    return stream(name, index), stream(name, index)


def _assert_same_draws(name, index, call):
    twin_stream, compiled_stream = _twin_streams(name, index)
    expected = call(naive_samplers, twin_stream)
    got = call(samplers, compiled_stream)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
    assert compiled_stream.blocks_drawn == twin_stream.blocks_drawn


SIZES = [0, 1, 7, 300]
#: Sizes over two lanes of the keystream (4096 values each): the second chunk reads lane 1.
TWO_LANES = [4097]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("t,m", [(1, 1), (3, 4), (12, 1), (100, 2), (2**22 + 1, 2**22),
                                 (2**29, 2**28), (2**30, 2**30)])
def test_compiled_discrete_gaussian_equals_twin(t, m, size):
    _assert_same_draws("twin-dg", t + size, lambda mod, s: mod.discrete_gaussian(t, m, size, s))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("t", [1, 2, 7, 2**20 + 3, 2**40, 2**50])
def test_compiled_discrete_laplace_equals_twin(t, size):
    _assert_same_draws("twin-dl", t + size, lambda mod, s: mod.discrete_laplace(t, size, s))


@pytest.mark.parametrize("den", [1, 3, 2**20 + 7, 2**32 + 1, 2**61 + 1, 2**62 - 1])
def test_compiled_bernoulli_exp_neg_equals_twin(den):
    # up to 4·den: the exp(-1) rounds of the integer part; den near 2**62 takes the split
    # Bernoulli(num/den) AND Bernoulli(1/K) branch of CKS Algorithm 1
    rng = np.random.default_rng(den % 1000)
    num = rng.integers(0, min(4 * den, 2**62), 500, dtype=np.int64)
    num[:5] = [0, den, min(2 * den, 2**62), 1, den - 1]
    _assert_same_draws("twin-be", den % 1000, lambda mod, s: mod.bernoulli_exp_neg(num, den, s))


@pytest.mark.parametrize("q", [0, 1, 5, 30, 56])
def test_compiled_bernoulli_exp2_neg_equals_twin(q):
    rng = np.random.default_rng(q)
    num = rng.integers(0, 2**q, 500, dtype=np.int64)
    num[:2] = [0, 2**q - 1]
    _assert_same_draws("twin-e2", q, lambda mod, s: mod.bernoulli_exp2_neg(num, q, s))


@pytest.mark.parametrize("size", SIZES + TWO_LANES)
def test_compiled_bernoulli_ln2_equals_twin(size):
    _assert_same_draws("twin-ln2", size, lambda mod, s: mod.bernoulli_ln2(size, s))


@pytest.mark.parametrize("sampler", ["gaussian", "laplace"])
def test_compiled_equals_twin_over_two_lanes(sampler):
    def call(mod, s):
        if sampler == "gaussian":
            return mod.discrete_gaussian(2**22 + 1, 2**22, TWO_LANES[0], s)
        return mod.discrete_laplace(2**20 + 3, TWO_LANES[0], s)
    _assert_same_draws("twin-lanes", 0 if sampler == "gaussian" else 1, call)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_draws_do_not_depend_on_the_thread_count(n_threads):
    reference = discrete_gaussian(2**22 + 1, 2**22, 30_000, stream("threads"), n_threads=1)
    got = discrete_gaussian(2**22 + 1, 2**22, 30_000, stream("threads"), n_threads=n_threads)
    np.testing.assert_array_equal(got, reference)


def test_a_lane_that_runs_out_is_drawn_again_with_the_same_result(monkeypatch):
    # the compiled sampler sizes each lane's keystream from the average use; a lane that
    # runs out is drawn again from its start with more words, which must change no value
    from dpxgb_dask.privacy import _samplers

    reference = discrete_gaussian(3, 4, 9000, stream("redo"))
    laplace_reference = discrete_laplace(2**20, 9000, stream("redo-l"))
    tiny = {kind: 0.01 for kind in _samplers._WORDS_PER_VALUE}
    monkeypatch.setattr(_samplers, "_WORDS_PER_VALUE", tiny)
    np.testing.assert_array_equal(discrete_gaussian(3, 4, 9000, stream("redo")), reference)
    np.testing.assert_array_equal(discrete_laplace(2**20, 9000, stream("redo-l")), laplace_reference)


def test_n_threads_is_checked(monkeypatch):
    with pytest.raises(ValueError, match="n_threads"):
        discrete_gaussian(3, 4, 5, stream("x"), n_threads=0)
    monkeypatch.setenv("DPXGB_NOISE_THREADS", "two")
    with pytest.raises(ValueError, match="DPXGB_NOISE_THREADS"):
        samplers.noise_threads()
    monkeypatch.setenv("DPXGB_NOISE_THREADS", "3")
    assert samplers.noise_threads() == 3


def test_compiled_samplers_validate_size():
    with pytest.raises(ValueError, match="size"):
        discrete_gaussian(3, 4, -1, stream("x"))
    with pytest.raises(ValueError, match="size"):
        discrete_laplace(3, -1, stream("x"))
    with pytest.raises(ValueError, match="size"):
        bernoulli_ln2(-1, stream("x"))


@pytest.mark.parametrize("bound", [1, 2, 3, 1000, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1,
                                   2**62 + 12345, 2**63 - 1])
@pytest.mark.parametrize("size", SIZES + TWO_LANES)
def test_compiled_uniform_below_equals_twin(bound, size):
    twin_stream, compiled_stream = _twin_streams("twin-ub", bound % 997 + size)
    expected = naive_samplers.uniform_below(twin_stream, bound, size)
    got = compiled_stream.uniform_below(bound, size)
    np.testing.assert_array_equal(got, expected)
    assert compiled_stream.blocks_drawn == twin_stream.blocks_drawn


def test_compiled_uniform_below_each_equals_twin():
    rng = np.random.default_rng(3)
    bounds = np.concatenate([rng.integers(1, 2**63 - 1, 300, dtype=np.int64),
                             rng.integers(1, 40, 300), [1, 2, 2**63 - 1]]).astype(np.int64)
    twin_stream, compiled_stream = _twin_streams("twin-ube", 0)
    expected = naive_samplers.uniform_below(twin_stream, bounds)
    got = compiled_stream.uniform_below(bounds)
    np.testing.assert_array_equal(got, expected)
    assert np.all((got >= 0) & (got < bounds))
    assert compiled_stream.blocks_drawn == twin_stream.blocks_drawn


def test_compiled_entry_points_refuse_what_would_never_end():
    # called directly, without the checks of samplers.py: bound 0 would loop forever and a
    # zero denominator would divide by zero in C
    from dpxgb_dask.privacy import _samplers

    s = stream("direct")
    for call in (lambda: _samplers.uniform_below(0, 3, s),
                 lambda: _samplers.uniform_below_each(np.array([3, 0], np.int64), s),
                 lambda: _samplers.bernoulli_exp_neg(np.array([1], np.int64), 0, s),
                 lambda: _samplers.bernoulli_exp2_neg(np.array([1], np.int64), 0, s),
                 lambda: _samplers.discrete_laplace(0, 2, s),
                 lambda: _samplers.discrete_gaussian(1, 0, 2, s)):
        with pytest.raises(ValueError, match="must be >= 1"):
            call()
