"""Slow NumPy twins of the compiled exact samplers (``dpxgb_dask.privacy._samplers``).

The algorithms of :mod:`dpxgb_dask.privacy.samplers` (where they are described and their
arguments are checked) in vectorised NumPy: each round is a handful of array operations
over the elements still running. The compiled samplers make the same requests to the
stream in the same order, so for one stream key both return the same integers and leave
the stream at the same counter; the tests compare them. Only the tests call these.
"""

from __future__ import annotations

import math

import numpy as np

_INT64_SAFE = 1 << 62
# |a| below this keeps a*a below 2**63, the int64 limit
_SQUARE_SAFE = 3_037_000_499


def uniform_below(stream, bound, size=None):
    """Twin of :meth:`dpxgb_dask.privacy.randomness.RandomStream.uniform_below`."""
    if size is not None and np.ndim(bound) == 0:
        bound, size = int(bound), int(size)
        if bound < 2**32:
            # 32-bit words halve the hashing work for the small bounds that dominate
            words, dtype = _words32, np.uint32
        else:
            words, dtype = _words64, np.uint64
        mask = dtype((1 << (bound - 1).bit_length()) - 1)
        b = dtype(bound)
        out = words(stream, size) & mask
        bad = np.flatnonzero(out >= b)
        while bad.size:
            redraw = words(stream, bad.size) & mask
            out[bad] = redraw
            bad = bad[redraw >= b]
        return out.astype(np.int64)
    bound = np.ascontiguousarray(np.asarray(bound, dtype=np.int64)).ravel()
    b = bound.view(np.uint64)
    # mask = 2**ceil(log2(bound)) - 1, computed with integer bit smearing
    mask = b - np.uint64(1)
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(shift)
    out = _words64(stream, bound.size) & mask
    bad = np.flatnonzero(out >= b)
    while bad.size:
        redraw = _words64(stream, bad.size) & mask[bad]
        out[bad] = redraw
        bad = bad[redraw >= b[bad]]
    return out.view(np.int64)


def _words32(stream, size):
    if size == 0:
        return np.zeros(0, dtype=np.uint32)
    return np.frombuffer(stream.random_bytes(4 * size), dtype="<u4")


def _words64(stream, size):
    if size == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.frombuffer(stream.random_bytes(8 * size), dtype="<u8")


def _bernoulli_exp_neg_unit(num, den, stream, k0=1, times_ln2=False):
    """Bernoulli(exp(-num/den)) for int64 array 0 <= num <= den (CKS Algorithm 1), K from k0;
    with ``times_ln2`` the exponent is (num/den)·ln 2."""
    k = np.full(num.size, k0, dtype=np.int64)
    active = np.arange(num.size)
    kk = k0
    while active.size:
        if den * kk < _INT64_SAFE:
            a = uniform_below(stream, den * kk, active.size) < num[active]
        else:
            # Bernoulli(num/(den K)) = Bernoulli(num/den) AND Bernoulli(1/K), independent
            a = (uniform_below(stream, den, active.size) < num[active]) & (
                uniform_below(stream, kk, active.size) == 0
            )
        if times_ln2:
            idx = np.flatnonzero(a)
            a[idx] = bernoulli_ln2(idx.size, stream)
        active = active[a]
        kk += 1
        k[active] = kk
    return (k & 1) == 1


_E1_LAST = 12
_E1_FACT = math.factorial(_E1_LAST)
_E1_THRESHOLDS_ASCENDING = np.array(
    [_E1_FACT // math.factorial(j) for j in range(_E1_LAST, -1, -1)], dtype=np.int64
)


def _bernoulli_exp_minus_one(size, stream):
    """Bernoulli(exp(-1)): K reaches k iff U < 12!/(k-1)!, U uniform on [0, 12!)."""
    u = uniform_below(stream, _E1_FACT, size)
    k = (_E1_LAST + 1) - np.searchsorted(_E1_THRESHOLDS_ASCENDING, u, side="right")
    out = (k & 1) == 1
    tail = np.flatnonzero(k == _E1_LAST + 1)
    if tail.size:
        out[tail] = _bernoulli_exp_neg_unit(
            np.ones(tail.size, dtype=np.int64), 1, stream, k0=_E1_LAST + 1
        )
    return out


def bernoulli_exp_neg(numerator, denominator, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.bernoulli_exp_neg`."""
    num = np.ascontiguousarray(np.asarray(numerator, dtype=np.int64)).ravel()
    den = int(denominator)
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
    """V with P(V = v) = (1 - e^-1) e^-v: successes of Bernoulli(e^-1) before a failure."""
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        ok = _bernoulli_exp_minus_one(active.size, stream)
        v[active[ok]] += 1
        active = active[ok]
    return v


def discrete_laplace(scale, size, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.discrete_laplace`."""
    t = int(scale)
    size = int(size)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        n = pending.size
        u = uniform_below(stream, t, n)
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
    """Scalar Bernoulli(exp(-a*a/den)) with Python integers, for |a| too large for int64."""
    a2 = int(a) * int(a)
    whole, frac = divmod(a2, int(den))
    for _ in range(whole):
        if not _bernoulli_exp_minus_one(1, stream)[0]:
            return False
    if frac == 0:
        return True
    return bool(_bernoulli_exp_neg_unit(np.array([frac], np.int64), int(den), stream)[0])


def discrete_gaussian(scale, mean_shift, size, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.discrete_gaussian`."""
    t = int(scale)
    m = int(mean_shift)
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


def bernoulli_ln2(size, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.bernoulli_ln2`."""
    size = int(size)
    k = np.ones(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        heads = stream.random_bits(active.size)
        active = active[~heads]
        k[active] += 1
    if size == 0:
        return np.zeros(0, dtype=bool)
    return uniform_below(stream, k) == 0


def bernoulli_exp2_neg(numerator, log2_denominator, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.bernoulli_exp2_neg`."""
    num = np.ascontiguousarray(np.asarray(numerator, dtype=np.int64)).ravel()
    den = 1 << int(log2_denominator)
    out = np.ones(num.size, dtype=bool)
    idx = np.flatnonzero(num > 0)
    if idx.size:
        out[idx] = _bernoulli_exp_neg_unit(num[idx], den, stream, times_ln2=True)
    return out
