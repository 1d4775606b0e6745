"""Slow Python twins of the compiled exact samplers (``dpxgb_dask.privacy._samplers``).

The algorithms of :mod:`dpxgb_dask.privacy.samplers` (where they are described and their
arguments are checked) written one value at a time with Python integers, reading the same
lanes of the same ChaCha20 request in the same order (``_Lane``). The compiled samplers
therefore return the same integers for one stream key and leave the stream at the same
counter; the tests compare them. Only the tests call these.

:func:`keyed_uniforms` is the twin of :func:`~dpxgb_dask.privacy.randomness.keyed_uniforms`
(which starts the cipher at the block of its first position): it reads each lane's
keystream from its start.
"""

from __future__ import annotations

import math

import numpy as np

from .randomness import chacha20_keystream

#: Values per lane, as in the compiled samplers.
CHUNK_VALUES = 4096
_SAFE = 1 << 62
_WORD = 1 << 64


class _Lane:
    """Lane ``c`` of request ``j`` of a stream, read as words and bits (unbounded)."""

    def __init__(self, stream, request, lane):
        self.stream, self.request, self.lane = stream, request, lane
        self.words = stream.lane_words(request, lane, 64)
        self.pos = 0
        self.cache = 0
        self.n_cached = 0

    def word(self):
        """The next 64-bit word."""
        if self.pos == self.words.size:
            # a longer read of the lane starts with the words already read
            self.words = self.stream.lane_words(self.request, self.lane, 2 * self.words.size)
        self.pos += 1
        return int(self.words[self.pos - 1])

    def bit(self):
        """The next bit of the cached word, least significant first."""
        if self.n_cached == 0:
            self.cache, self.n_cached = self.word(), 64
        out = self.cache & 1
        self.cache >>= 1
        self.n_cached -= 1
        return out

    def below(self, n):
        """Uniform on [0, n): Lemire's multiply-and-reject."""
        m = self.word() * n
        if m % _WORD < n:
            threshold = (_WORD - n) % n
            while m % _WORD < threshold:
                m = self.word() * n
        return m >> 64

    def bernoulli(self, num, den):
        """Bernoulli(num/den): below(den) < num, no draw when certain."""
        if num == 0:
            return False
        if num >= den:
            return True
        return self.below(den) < num

    def bernoulli_ln2(self):
        """Bernoulli(ln 2): K flips up to the first 1, accepted with 1/K."""
        k = 1
        while self.bit() == 0:
            k += 1
        return self.bernoulli(1, k)

    def exp_neg_unit(self, num, den, k=1, times_ln2=False):
        """Bernoulli(exp(-num/den)), num <= den (CKS Algorithm 1), K from k; exponent times ln 2 if asked."""
        while True:
            if den * k < _SAFE:
                a = self.bernoulli(num, den * k)
            else:
                a = self.bernoulli(num, den) and self.bernoulli(1, k)
            if a and times_ln2:
                a = self.bernoulli_ln2()
            if not a:
                return k % 2 == 1
            k += 1

    def exp_minus_one(self):
        """Bernoulli(exp(-1)): K >= k + 1 iff U < 12!/k! for U uniform below 12!, then Algorithm 1 from K = 13."""
        u = self.below(math.factorial(12))
        k = 1
        while k <= 12 and u < math.factorial(12) // math.factorial(k):
            k += 1
        if k <= 12:
            return k % 2 == 1
        return self.exp_neg_unit(1, 1, k=13)

    def exp_neg(self, num, den):
        """Bernoulli(exp(-num/den)) for any num >= 0."""
        whole, frac = divmod(num, den)
        for _ in range(whole):
            if not self.exp_minus_one():
                return False
        return self.exp_neg_unit(frac, den)

    def laplace(self, t):
        """Discrete Laplace of scale t (CKS Algorithm 2)."""
        while True:
            u = self.below(t)
            if not self.exp_neg(u, t):
                continue
            v = 0
            while self.exp_minus_one():
                v += 1
            x = u + t * v
            negative = self.bit()
            if negative and x == 0:
                continue
            return -x if negative else x

    def gaussian(self, t, m):
        """Discrete Gaussian with σ² = t·m (CKS Algorithm 3)."""
        while True:
            y = self.laplace(t)
            if self.exp_neg((abs(y) - m) ** 2, 2 * t * m):
                return y


def _draw(stream, size, draw):
    """``draw(lane, i)`` for i < size, value i reading lane i // CHUNK_VALUES of one request."""
    out = np.empty(int(size), dtype=np.int64)
    if out.size == 0:
        return out
    request = stream.take_request()
    lane = None
    for i in range(out.size):
        if i % CHUNK_VALUES == 0:
            lane = _Lane(stream, request, i // CHUNK_VALUES)
        out[i] = draw(lane, i)
    return out


def _ints(values):
    return [int(v) for v in np.asarray(values, dtype=np.int64).ravel()]


def uniform_below(stream, bound, size=None):
    """Twin of :meth:`dpxgb_dask.privacy.randomness.RandomStream.uniform_below`."""
    if size is not None and np.ndim(bound) == 0:
        return _draw(stream, size, lambda lane, i: lane.below(int(bound)))
    bounds = _ints(bound)
    return _draw(stream, len(bounds), lambda lane, i: lane.below(bounds[i]))


def bernoulli_exp_neg(numerator, denominator, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.bernoulli_exp_neg`."""
    num = _ints(numerator)
    return _draw(stream, len(num), lambda lane, i: lane.exp_neg(num[i], int(denominator))).astype(bool)


def bernoulli_exp2_neg(numerator, log2_denominator, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.bernoulli_exp2_neg`."""
    num, den = _ints(numerator), 1 << int(log2_denominator)
    return _draw(stream, len(num), lambda lane, i: lane.exp_neg_unit(num[i], den, times_ln2=True)).astype(bool)


def bernoulli_ln2(size, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.bernoulli_ln2`."""
    return _draw(stream, size, lambda lane, i: lane.bernoulli_ln2()).astype(bool)


def discrete_laplace(scale, size, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.discrete_laplace`."""
    return _draw(stream, size, lambda lane, i: lane.laplace(int(scale)))


def discrete_gaussian(scale, mean_shift, size, stream):
    """Twin of :func:`dpxgb_dask.privacy.samplers.discrete_gaussian`."""
    return _draw(stream, size, lambda lane, i: lane.gaussian(int(scale), int(mean_shift)))


def keyed_uniforms(key, first, count):
    """Positions ``first`` .. ``first + count - 1`` of the stream ``key``, one at a time:
    word ``i mod 2**35`` of lane ``i // 2**35`` of request 0, read from the lane's start,
    its top 53 bits over 2**53."""
    lane_words = 1 << 35
    out = []
    for i in range(first, first + count):
        lane, word = divmod(i, lane_words)
        raw = chacha20_keystream(key, 0, lane, 8 * (word + 1))[8 * word:]
        out.append((int.from_bytes(raw, "little") >> 11) / 2**53)
    return np.array(out, dtype=np.float64)
