"""Exact integer samplers (Canonne, Kamath & Steinke 2020), an exact base-2 exponential-mechanism
sampler, and a (non-exact) Gumbel sampler.

The Laplace and Gaussian mechanisms of this package add *integer* noise on a fixed-point
grid. The samplers below draw that noise exactly, from uniform integers only, with no
floating-point operation anywhere on the path: every probability is a ratio of integers,
every Bernoulli trial compares an exactly uniform integer with a numerator. This closes the
attack of Mironov (2012, "On significance of the least significant bits for differential
privacy"), which reads the input back from the pattern of floating-point values a textbook
``x + laplace()`` can and cannot produce.

Implementation
--------------
The functions below check their arguments and run the compiled samplers of
``_samplers.pyx``: CKS Algorithms 1-3 one value at a time in C, without the GIL, each
value reading the ChaCha20 lane of its chunk of 4096 values
(:mod:`~dpxgb_dask.privacy.randomness`). Chunks are drawn in parallel on ``n_threads``
threads (default: :func:`noise_threads`) with the same result for any thread count. Their
Python twins in :mod:`~dpxgb_dask.privacy.naive_samplers` run the same loops on the same
lanes, so for one stream key both return the same integers (the tests compare them).
``benchmarks/bench_samplers.py`` measures the throughput (values per second per core).

Exponential mechanism: exact sampling (no δ)
---------------------------------------------
The exponential mechanism's selection is drawn *exactly* by :func:`exponential_choice_base2`:
P(j) ∝ 2^(-β_j) with rational β_j = λ·d_j (λ = numerator / 2**q, d_j >= 0 integers, the
rounded utilities' distances to the best candidate). Writing β_j = c_j + f_j (integer and
fractional parts), a candidate is proposed with probability ∝ 2^(-c_j) -- dyadic weights,
so this is an exactly uniform integer compared with exact integer cumulative sums -- and
accepted with probability 2^(-f_j) = exp(-f_j·ln 2), an exact Bernoulli by CKS Algorithm 1
whose coins Bernoulli(f_j·ln2/K) are products of Bernoulli(f_j/K) and an exact
Bernoulli(ln 2) (ln 2 = Σ_k 2^-k / k: draw k with probability 2^-k, accept with 1/k;
Flajolet, Pelletier & Soria 2011, "On Buffon machines and numbers"). Accepted candidates
have probability exactly ∝ 2^(-c_j)·2^(-f_j) = 2^(-β_j); every candidate, however far
behind, keeps its exact positive probability (candidates too far behind for 64-bit weights
are proposed through one unit "tail" slot each and accepted with 2^-(c_j - H): its c_j - H
fair coins all heads, flipped 64 at a time, one word per tail proposal of a round, until
the first tail). Each round accepts with probability >= 1/2, so the expected work is
two vectorised rounds.

This replaces the Gumbel-max sampler used before, whose Gumbel variates came from 52-bit
uniforms and were truncated to [-3.6, 36.7]: a candidate more than about 40 nats behind
had probability exactly 0, an unaccounted δ of up to n_candidates·2^-52 per selection.
That sampler is gone.

References
----------
C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy.
NeurIPS 2020 (arXiv:2004.00010), Algorithms 1 (Bernoulli(exp(-γ))), 2 (discrete Laplace)
and 3 (discrete Gaussian).
C. Ilvento. Implementing the Exponential Mechanism with Base-2 Differential Privacy.
CCS 2020 (base-2 weights to make the exponential mechanism exactly implementable).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from . import _samplers


__all__ = [
    "bernoulli_exp2_neg",
    "bernoulli_exp_neg",
    "bernoulli_ln2",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential_choice_base2",
    "noise_threads",
]

_INT64_SAFE = 1 << 62
_THREADS_VARIABLE = "DPXGB_NOISE_THREADS"


def noise_threads():
    """Threads that draw a large release's noise: ``DPXGB_NOISE_THREADS``, else the cores
    this process may run on.

    Returns
    -------
    int
        At least 1. The draws do not depend on it (each chunk reads its own lane).

    Raises
    ------
    ValueError
        If ``DPXGB_NOISE_THREADS`` is set to anything but an integer >= 1.
    """
    value = os.environ.get(_THREADS_VARIABLE)
    if value is not None:
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError(f"{_THREADS_VARIABLE} must be an integer >= 1, got {value!r}")
        return int(value)
    return _usable_cores()


@functools.lru_cache(maxsize=1)
def _usable_cores():
    """The cores this process may run on, asked once (a system call per release otherwise)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _threads(n_threads):
    if n_threads is None:
        return noise_threads()
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(f"n_threads must be None or an integer >= 1, got {n_threads!r}")
    return int(n_threads)


def _check_size(size):
    size = int(size)
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    return size


def bernoulli_exp_neg(numerator, denominator, stream, *, n_threads=None):
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
    n_threads : int or None, default None
        Threads drawing the chunks (None: :func:`noise_threads`); the draws do not depend on it.

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
    return _samplers.bernoulli_exp_neg(num, den, stream, _threads(n_threads))


def discrete_laplace(scale, size, stream, *, n_threads=None):
    """Exact discrete Laplace samples, ``P(Y = y) ∝ exp(-|y| / scale)`` for integer y.

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
    n_threads : int or None, default None
        Threads drawing the chunks (None: :func:`noise_threads`); the draws do not depend on it.

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
    return _samplers.discrete_laplace(t, _check_size(size), stream, _threads(n_threads))


def discrete_gaussian(scale, mean_shift, size, stream, *, n_threads=None):
    """Exact discrete Gaussian samples, P(Y = y) ∝ exp(-y² / (2σ²)), with σ² = scale · mean_shift.

    Canonne–Kamath–Steinke (2020), Algorithm 3: Y ~ DiscreteLaplace(t), accepted with
    probability ``exp(-(|Y| - σ²/t)² / (2σ²))``. The algorithm is correct for any integer t > 0
    (t = floor(σ) + 1 makes it efficient); choosing σ² = t·m with integer m makes
    σ²/t = m an integer and the acceptance exponent ``(|Y| - m)² / (2tm)`` a ratio of integers.

    Parameters
    ----------
    scale : int
        The discrete Laplace proposal scale t >= 1 (normally floor(σ) + 1).
    mean_shift : int
        m >= 1, so that σ² = t·m (in squared grid units); t <= 64·m is required.
    size, stream, n_threads
        As for :func:`discrete_laplace`.

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
    return _samplers.discrete_gaussian(t, m, _check_size(size), stream, _threads(n_threads))


def bernoulli_ln2(size, stream, *, n_threads=None):
    """Exact Bernoulli(ln 2) trials.

    ln 2 = Σ_{k>=1} 2^-k / k: draw K with P(K = k) = 2^-k (fair coin flips up to the first
    head) and accept with probability 1/K (Flajolet, Pelletier & Soria 2011).

    Parameters
    ----------
    size : int
        Number of trials.
    stream : RandomStream
        Source of uniform integers.
    n_threads : int or None, default None
        As for :func:`discrete_laplace`.

    Returns
    -------
    ndarray of bool, shape (size,)
    """
    return _samplers.bernoulli_ln2(_check_size(size), stream, _threads(n_threads))


def bernoulli_exp2_neg(numerator, log2_denominator, stream, *, n_threads=None):
    """Exact Bernoulli(2^(-f)) trials for f = numerator / 2**log2_denominator in [0, 1).

    2^-f = exp(-f·ln 2) with f·ln 2 in [0, ln 2): CKS Algorithm 1 with the coins
    Bernoulli(f·ln2/K) = Bernoulli(f/K) AND Bernoulli(ln 2) (:func:`bernoulli_ln2`).

    Parameters
    ----------
    numerator : array_like of int64
        Values in [0, 2**log2_denominator).
    log2_denominator : int
        q in [0, 56].
    stream : RandomStream
    n_threads : int or None, default None
        As for :func:`discrete_laplace`.

    Returns
    -------
    ndarray of bool, shape (numerator.size,)
        True with probability exactly ``2 ** (-numerator / 2**log2_denominator)``.
    """
    num = np.ascontiguousarray(np.asarray(numerator, dtype=np.int64)).ravel()
    q = int(log2_denominator)
    if not 0 <= q <= 56:
        raise ValueError(f"log2_denominator must be an integer in [0, 56], got {log2_denominator!r}")
    den = 1 << q
    if num.size and (num.min() < 0 or num.max() >= den):
        raise ValueError("numerator must be in [0, 2**log2_denominator)")
    return _samplers.bernoulli_exp2_neg(num, den, stream, _threads(n_threads))


def _all_heads(n_flips, stream):
    """For each entry, True with probability exactly 2**-n_flips[i] (``n_flips``: Python
    ints >= 0, of any size): the entry's coins are flipped 64 at a time, one 64-bit word
    per entry still in, until a tail ends it or its coins run out.

    Returns
    -------
    ndarray of bool, shape (len(n_flips),)
    """
    left = [int(k) for k in n_flips]
    heads = np.ones(len(left), dtype=bool)
    active = np.flatnonzero(np.array([k > 0 for k in left], dtype=bool))
    while active.size:
        take = np.array([min(left[i], 64) for i in active.tolist()], dtype=np.uint64)
        # the low `take` bits of a uniform word are `take` fair coins
        wanted = np.where(take == 64, np.uint64(2**64 - 1),
                          (np.uint64(1) << (take % np.uint64(64))) - np.uint64(1))
        all_heads = (stream.uint64(active.size) & wanted) == wanted
        heads[active[~all_heads]] = False
        going = []
        for i in active[all_heads].tolist():
            left[i] -= 64
            if left[i] > 0:
                going.append(i)
        active = np.array(going, dtype=np.int64)
    return heads


def _choice_inputs(distance, valid, numerator, log2_denominator):
    """:func:`exponential_choice_base2`'s arguments checked: (distance as int64, valid as
    bool of its shape, numerator, q)."""
    d = np.asarray(distance)
    if d.ndim != 2 or not np.issubdtype(d.dtype, np.integer):
        raise ValueError(f"distance must be a 2-D integer array, got shape {d.shape} and dtype {d.dtype}")
    d = d.astype(np.int64)
    valid = np.ones(d.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    if valid.shape != d.shape:
        raise ValueError(f"valid must have the shape of distance {d.shape}, got {valid.shape}")
    if np.any(d[valid] < 0):
        raise ValueError("distance must be >= 0 for every valid candidate")
    num = int(numerator)
    q = int(log2_denominator)
    if num < 0 or num >= 1 << 62:
        raise ValueError(f"numerator must be an integer in [0, 2**62), got {numerator!r}")
    if not 0 <= q <= 56:
        raise ValueError(f"log2_denominator must be an integer in [0, 56], got {log2_denominator!r}")
    return d, valid, num, q


def exponential_choice_base2(distance, numerator, log2_denominator, stream, valid=None, *, head_bits=None):
    """Exact draws of one index per row with P(j) ∝ 2^(-λ·distance[j]), λ = numerator / 2**q.

    The sampler of the exponential mechanism (see the module docstring for the algorithm
    and why it is exact).

    Parameters
    ----------
    distance : array_like of int64, shape (n_rows, n_candidates)
        Non-negative integer distances d_j (e.g. best rounded utility minus rounded utility);
        only their differences within a row matter.
    numerator : int
        Non-negative numerator of λ (0 gives the uniform distribution over valid entries).
    log2_denominator : int
        q in [0, 56]; λ = numerator / 2**q.
    stream : RandomStream
        Source of uniform integers.
    valid : array_like of bool, same shape, optional
        Candidates allowed in each row (default all). Rows without any valid candidate get -1.
    head_bits : int, optional
        Candidates with integer exponent c_j >= head_bits go through the tail path (testing
        hook; default: the largest value keeping the row sums of the dyadic weights below 2**63).

    Returns
    -------
    ndarray of int64, shape (n_rows,)
        Chosen column per row, -1 for rows without a valid candidate.
    """
    d, valid, num, q = _choice_inputs(distance, valid, numerator, log2_denominator)
    n_rows, n_cand = d.shape
    choice = np.full(n_rows, -1, dtype=np.int64)
    if n_rows == 0 or n_cand == 0:
        return choice
    # dyadic weights 2**(H - c_j) for c_j < H; the row sums stay below n_cand * 2**H < 2**62
    max_head = 61 - max(0, (n_cand - 1).bit_length())
    head = max_head if head_bits is None else int(head_bits)
    if not 1 <= head <= max_head:
        raise ValueError(f"head_bits must be in [1, {max_head}] for {n_cand} candidates, got {head_bits!r}")
    mask = (1 << q) - 1
    # λ·d_j < H  <=>  d_j < ceil(H·2**q / num); then num·d_j < H·2**q < 2**62 fits in int64
    if num == 0:
        in_head = valid.copy()
    else:
        threshold = -((-head << q) // num)
        in_head = valid & (d < min(threshold, 1 << 62))
    beta = np.where(in_head, d, 0) * np.int64(num)
    c = beta >> np.int64(q)
    frac = beta & np.int64(mask)
    weight = np.where(in_head, np.left_shift(np.int64(1), np.int64(head) - c), 0)
    weight[valid & ~in_head] = 1
    cum = np.cumsum(weight, axis=1)
    total = cum[:, -1]
    pending = np.flatnonzero(total > 0)
    while pending.size:
        u = stream.uniform_below(total[pending])
        j = np.argmax(cum[pending] > u[:, None], axis=1)
        accept = np.ones(pending.size, dtype=bool)
        f = frac[pending, j]
        tail = np.flatnonzero(~in_head[pending, j])
        if tail.size:
            # tail: weight 1 stands for 2**(H - c_j); accept with 2**-(c_j - H), then 2**-f_j
            # (num * d_j may pass 2**63: Python ints)
            b = [num * x for x in d[pending[tail], j[tail]].tolist()]
            accept[tail] = _all_heads([(x >> q) - head for x in b], stream)
            f[tail] = [x & mask for x in b]
        idx = np.flatnonzero(accept)
        accept[idx] = bernoulli_exp2_neg(f[idx], q, stream)
        choice[pending[accept]] = j[accept]
        pending = pending[~accept]
    return choice
