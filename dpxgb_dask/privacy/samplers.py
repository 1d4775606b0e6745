"""Exact integer samplers (Canonne, Kamath & Steinke 2020) and a Gumbel sampler, vectorised.

The Laplace and Gaussian mechanisms of this package add *integer* noise on a fixed-point
grid. The samplers below draw that noise exactly, from uniform integers only, with no
floating-point operation anywhere on the path: every probability is a ratio of integers,
every Bernoulli trial compares an exactly uniform integer with a numerator. This closes the
attack of Mironov (2012, "On significance of the least significant bits for differential
privacy"), which reads the input back from the pattern of floating-point values a textbook
``x + laplace()`` can and cannot produce.

References
----------
C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy.
NeurIPS 2020 (arXiv:2004.00010), Algorithms 1 (Bernoulli(exp(-γ))), 2 (discrete Laplace)
and 3 (discrete Gaussian).
"""

from __future__ import annotations

import math

import numpy as np


__all__ = [
    "bernoulli_exp_neg",
    "discrete_gaussian",
    "discrete_laplace",
    "gumbel",
]

_INT64_SAFE = 1 << 62
# |a| below this keeps a*a below 2**63, the int64 limit
_SQUARE_SAFE = 3_037_000_499


def _bernoulli_exp_neg_unit(num, den, stream, k0=1):
    """Bernoulli(exp(-num/den)) for int64 array 0 <= num <= den, scalar den (CKS Algorithm 1).

    K = 1; repeat { A ~ Bernoulli(γ/K); if A == 0 stop; K += 1 }; return [K is odd].
    P(K odd) = Σ_k (-γ)^k / k! = exp(-γ). ``k0`` resumes the loop at K = k0 (the caller
    has already decided rounds 1..k0-1). All elements still running share the same K, so
    each round is one vectorised comparison against a single bound.
    """
    k = np.full(num.size, k0, dtype=np.int64)
    active = np.arange(num.size)
    kk = k0
    while active.size:
        if den * kk < _INT64_SAFE:
            a = stream.uniform_below(den * kk, active.size) < num[active]
        else:
            # Bernoulli(num/(den K)) = Bernoulli(num/den) AND Bernoulli(1/K), independent
            a = (stream.uniform_below(den, active.size) < num[active]) & (
                stream.uniform_below(kk, active.size) == 0
            )
        active = active[a]
        kk += 1
        k[active] = kk
    return (k & 1) == 1


# For γ = 1 the loop above reaches K >= k with probability exactly 1/(k-1)!. One uniform
# integer U on [0, 12!) decides all rounds up to K = 13 at once: K reaches k iff
# U < 12!/(k-1)!, thresholds that are nested and exact because (k-1)! divides 12!.
# U = 0 (probability 1/12!) means K reached 13 and the loop resumes there.
_E1_LAST = 12
_E1_FACT = math.factorial(_E1_LAST)
_E1_THRESHOLDS_ASCENDING = np.array(
    [_E1_FACT // math.factorial(j) for j in range(_E1_LAST, -1, -1)], dtype=np.int64
)


def _bernoulli_exp_minus_one(size, stream):
    """Exact Bernoulli(exp(-1)) trials, ndarray of bool of shape (size,)."""
    u = stream.uniform_below(_E1_FACT, size)
    # K = number of thresholds 12!/(k-1)! (k = 1..13) strictly above u
    k = (_E1_LAST + 1) - np.searchsorted(_E1_THRESHOLDS_ASCENDING, u, side="right")
    out = (k & 1) == 1
    tail = np.flatnonzero(k == _E1_LAST + 1)
    if tail.size:
        out[tail] = _bernoulli_exp_neg_unit(
            np.ones(tail.size, dtype=np.int64), 1, stream, k0=_E1_LAST + 1
        )
    return out


def bernoulli_exp_neg(numerator, denominator, stream):
    """Exact Bernoulli(exp(-γ)) trials for rational γ = numerator / denominator >= 0.

    Implements Canonne–Kamath–Steinke (2020), Algorithm 1: for γ > 1, exp(-γ) is
    exp(-1)^floor(γ) · exp(-(γ - floor(γ))), a conjunction of independent trials.

    Parameters
    ----------
    numerator : array_like of int64
        Non-negative numerators, one trial per element.
    denominator : int
        Common positive denominator, below 2**62.
    stream : RandomStream
        Source of uniform integers.

    Returns
    -------
    ndarray of bool, shape (numerator.size,)
        True with probability exactly ``exp(-numerator / denominator)``.
    """
    num = np.ascontiguousarray(np.asarray(numerator, dtype=np.int64)).ravel()
    den = int(denominator)
    if not 1 <= den < _INT64_SAFE:
        raise ValueError(f"denominator must be an integer in [1, 2**62), got {denominator!r}")
    if num.size and num.min() < 0:
        raise ValueError("numerator must be >= 0")
    whole = num // den
    frac = num - whole * den
    out = np.ones(num.size, dtype=bool)
    active = np.flatnonzero(whole > 0)
    while active.size:
        ok = _bernoulli_exp_minus_one(active.size, stream)
        out[active[~ok]] = False
        whole[active] -= 1
        active = active[ok & (whole[active] > 0)]
    idx = np.flatnonzero(out & (frac > 0))
    if idx.size:
        out[idx] = _bernoulli_exp_neg_unit(frac[idx], den, stream)
    return out


def _geometric_exp_neg_one(size, stream):
    """V with P(V = v) = (1 - e^-1) e^-v: count successes of Bernoulli(e^-1) before a failure."""
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        ok = _bernoulli_exp_minus_one(active.size, stream)
        v[active[ok]] += 1
        active = active[ok]
    return v


def discrete_laplace(scale, size, stream):
    """Exact discrete Laplace samples, P(Y = y) ∝ exp(-|y| / scale) for integer y.

    Canonne–Kamath–Steinke (2020), Algorithm 2 with integer scale t (s = 1):
    U ~ Uniform{0..t-1} kept with probability exp(-U/t), V ~ Geometric(1 - e^-1),
    X = U + tV is Geometric(1 - e^{-1/t}); a random sign is attached and "-0" is rejected.

    Parameters
    ----------
    scale : int
        Integer scale t >= 1 (in grid units), at most 2**50.
    size : int
        Number of samples.
    stream : RandomStream
        Source of uniform integers.

    Returns
    -------
    ndarray of int64, shape (size,)

    Notes
    -----
    The pmf is ``(1 - q) / (1 + q) * q**|y|`` with ``q = exp(-1/t)``; the mechanism adding it
    to an integer query of L1 sensitivity Δ is (Δ/t)-DP (pure).
    """
    t = int(scale)
    if not 1 <= t <= (1 << 50):
        raise ValueError(f"scale must be an integer in [1, 2**50], got {scale!r}")
    size = int(size)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        n = pending.size
        u = stream.uniform_below(t, n)
        keep = bernoulli_exp_neg(u, t, stream)
        u = u[keep]
        x = u + t * _geometric_exp_neg_one(u.size, stream)
        negative = stream.random_bits(u.size)
        good = ~(negative & (x == 0))
        accepted = np.zeros(n, dtype=bool)
        accepted[np.flatnonzero(keep)[good]] = True
        out[pending[accepted]] = np.where(negative, -x, x)[good]
        pending = pending[~accepted]
    return out


def _bernoulli_exp_neg_big(a, den, stream):
    """Scalar exact Bernoulli(exp(-a*a/den)) with Python integers, for |a| too large for int64."""
    a2 = int(a) * int(a)
    whole, frac = divmod(a2, int(den))
    for _ in range(whole):
        if not _bernoulli_exp_minus_one(1, stream)[0]:
            return False
    if frac == 0:
        return True
    return bool(_bernoulli_exp_neg_unit(np.array([frac], np.int64), int(den), stream)[0])


def discrete_gaussian(scale, mean_shift, size, stream):
    """Exact discrete Gaussian samples, P(Y = y) ∝ exp(-y² / (2σ²)), with σ² = scale · mean_shift.

    Canonne–Kamath–Steinke (2020), Algorithm 3: Y ~ DiscreteLaplace(t), accepted with
    probability exp(-(|Y| - σ²/t)² / (2σ²)). The algorithm is correct for any integer t > 0
    (t = floor(σ) + 1 makes it efficient); choosing σ² = t·m with integer m makes
    σ²/t = m an integer and the acceptance exponent (|Y| - m)² / (2tm) a ratio of integers.

    Parameters
    ----------
    scale : int
        The discrete Laplace proposal scale t >= 1 (normally floor(σ) + 1).
    mean_shift : int
        m >= 1, so that σ² = t·m (in squared grid units); t <= 64·m is required.
    size : int
        Number of samples.
    stream : RandomStream
        Source of uniform integers.

    Returns
    -------
    ndarray of int64, shape (size,)

    Notes
    -----
    Adding this noise to an integer query of L2 sensitivity Δ satisfies (Δ²/2σ²)-zCDP
    (CKS 2020, for one dimension; their multivariate bound adds a τ ≤ 10·exp(-2π²σ²) term per
    coordinate in d dimensions, zero in float64 for the σ >= 2**22 used by the mechanisms).
    """
    t = int(scale)
    m = int(mean_shift)
    if not (1 <= t <= (1 << 40) and 1 <= m and 2 * t * m < _INT64_SAFE and t <= 64 * m):
        raise ValueError(
            "need integers 1 <= scale <= 2**40, mean_shift >= 1, 2*scale*mean_shift < 2**62 and "
            "scale <= 64*mean_shift (a proposal much wider than sigma would almost never be accepted), "
            f"got scale={scale!r}, mean_shift={mean_shift!r}"
        )
    den = 2 * t * m
    size = int(size)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        y = discrete_laplace(t, pending.size, stream)
        a = np.abs(y) - m
        accept = np.zeros(pending.size, dtype=bool)
        small = np.abs(a) < _SQUARE_SAFE
        idx = np.flatnonzero(small)
        accept[idx] = bernoulli_exp_neg(a[idx] * a[idx], den, stream)
        for i in np.flatnonzero(~small):
            accept[i] = _bernoulli_exp_neg_big(a[i], den, stream)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def gumbel(size, stream):
    """Standard Gumbel samples -log(-log U) with U on an open 2**-52 grid.

    Parameters
    ----------
    size : int or tuple of int
        Output shape.
    stream : RandomStream
        Source of uniform integers.

    Returns
    -------
    ndarray of float64
        Samples with CDF exp(-exp(-x)), up to the 2**-52 quantisation of U:
        U = (k + 1/2)·2**-52 for k uniform on {0, ..., 2**52 - 1}, so U is never 0 or 1
        and the samples lie in [-3.6, 36.7].
    """
    shape = (size,) if np.ndim(size) == 0 else tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    k = stream.uint64(n) >> np.uint64(12)
    u = (k.astype(np.float64) + 0.5) * 2.0**-52
    return (-np.log(-np.log(u))).reshape(shape)
