# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled exact samplers: the algorithms of :mod:`dpxgb_dask.privacy.samplers`, one value
at a time, on bits read lazily from a ChaCha20 keystream, without the GIL.

How a call draws
----------------
A call takes one request ``j`` of the stream (:meth:`RandomStream.take_request`) and splits
its ``size`` values into chunks of ``CHUNK_VALUES``. Chunk ``c`` reads only lane ``c`` of the
request, the keystream ``ChaCha20(key, nonce = (j, c))`` (see
:mod:`dpxgb_dask.privacy.randomness`), so a chunk's values are a pure function of the key,
``j`` and ``c``: the chunks run in parallel (``prange``) and the result is the same for any
number of threads. Each value is drawn by its own sequential loop (CKS Algorithms 1-3), which
reads the lane in order through a ``Bits`` reader:

* ``word``: the next 64-bit little-endian word of the lane;
* ``bit``: the next bit of a cached word, least significant first (a new word when the
  cache is empty);
* ``below(n)``: uniform on [0, n) by Lemire's multiply-and-reject (one word, a second one
  with probability < n / 2**64);
* ``bernoulli(num, den)``: exact Bernoulli(num/den) as ``below(den) < num``.

The keystream of each lane is generated (with the GIL, by ``cryptography``) before the
chunk runs, sized from the sampler's average use; a chunk that reaches the end of its
buffer stops, and is run again from the start of its lane with a buffer four times larger.
Both runs read the same prefix of the same lane, so the result is that of an unbounded
lane: the buffer size never changes a value.

The slow twins in :mod:`dpxgb_dask.privacy.naive_samplers` are the same loops in Python on
the same lanes; the tests compare them value for value.
"""
from libc.stdint cimport int64_t, uint64_t, uint8_t
from cython.parallel cimport prange

import numpy as np

from .._core.common cimport mul_high

cdef extern from *:
    """
    /* a*a = whole*den + frac, whole as (high, low) words; returns frac */
    static inline uint64_t dpxgb_square_divmod(uint64_t a, uint64_t den, uint64_t* whole_high,
                                               uint64_t* whole_low) {
        if ((a >> 32) == 0) {
            uint64_t square = a * a;
            *whole_high = 0;
            *whole_low = square / den;
            return square % den;
        }
        unsigned __int128 square = (unsigned __int128)a * a;
        unsigned __int128 whole = square / den;
        *whole_high = (uint64_t)(whole >> 64);
        *whole_low = (uint64_t)whole;
        return (uint64_t)(square - whole * den);
    }
    """
    uint64_t square_divmod "dpxgb_square_divmod" (uint64_t a, uint64_t den, uint64_t* whole_high,
                                                  uint64_t* whole_low) noexcept nogil

#: Values per chunk (one lane of the keystream each). Public: it fixes which lane a value reads.
CHUNK_VALUES = 4096
cdef Py_ssize_t CHUNK = 4096
cdef uint64_t SAFE = (<uint64_t>1) << 62
# exp_minus_one: E1_THRESHOLDS[k] = 12!/k! for k = 1..12
cdef int E1_LAST = 12
cdef uint64_t E1_FACT = 479001600
cdef uint64_t E1_THRESHOLDS[13]
E1_THRESHOLDS[0] = E1_FACT
for _k in range(1, 13):
    E1_THRESHOLDS[_k] = E1_THRESHOLDS[_k - 1] // _k

# kinds of draw (one per entry point)
cdef enum:
    KIND_BELOW = 0          # uniform on [0, a_i)
    KIND_BERN_EXP_NEG = 1   # Bernoulli(exp(-a_i / p))
    KIND_BERN_EXP2_NEG = 2  # Bernoulli(2^-(a_i / p)), 0 <= a_i < p
    KIND_BERN_LN2 = 3       # Bernoulli(ln 2)
    KIND_LAPLACE = 4        # discrete Laplace, scale p
    KIND_GAUSSIAN = 5       # discrete Gaussian, sigma^2 = p * q

#: Initial keystream words per value of each kind: a little above the average use, so that
#: almost no chunk has to be run again.
_WORDS_PER_VALUE = {KIND_BELOW: 1.05, KIND_BERN_EXP_NEG: 1.3, KIND_BERN_EXP2_NEG: 2.0,
                    KIND_BERN_LN2: 0.6, KIND_LAPLACE: 6.5, KIND_GAUSSIAN: 10.5}


cdef struct Bits:
    const uint64_t* words
    Py_ssize_t n_words
    Py_ssize_t pos
    uint64_t cache
    int n_cached
    bint exhausted


cdef inline uint64_t word(Bits* b) noexcept nogil:
    if b.pos >= b.n_words:
        b.exhausted = True
        return 0
    b.pos += 1
    return b.words[b.pos - 1]


cdef inline int bit(Bits* b) noexcept nogil:
    cdef int out
    if b.n_cached == 0:
        b.cache = word(b)
        b.n_cached = 64
    out = <int>(b.cache & 1)
    b.cache >>= 1
    b.n_cached -= 1
    return out


cdef inline uint64_t below(Bits* b, uint64_t n) noexcept nogil:
    """Uniform on [0, n), 1 <= n: Lemire (2019), multiply-high with rejection of the low part."""
    cdef uint64_t low
    cdef uint64_t high = mul_high(word(b), n, &low)
    cdef uint64_t threshold
    if low < n:
        threshold = (<uint64_t>0 - n) % n  # 2**64 mod n
        while low < threshold and not b.exhausted:
            high = mul_high(word(b), n, &low)
    return high


cdef inline bint bernoulli(Bits* b, uint64_t num, uint64_t den) noexcept nogil:
    """Bernoulli(num/den) exactly, 1 <= den < 2**63: ``below(den) < num``; no draw when the
    answer is certain (num = 0 or num >= den)."""
    if num == 0:
        return False
    if num >= den:
        return True
    return below(b, den) < num


cdef inline bint ln2_coin(Bits* b) noexcept nogil:
    """Bernoulli(ln 2) = Σ_k 2^-k / k: K fair flips up to the first 1, accepted with 1/K."""
    cdef uint64_t k = 1
    while bit(b) == 0 and not b.exhausted:
        k += 1
    return bernoulli(b, 1, k)


cdef inline bint exp_neg_unit(Bits* b, uint64_t num, uint64_t den, uint64_t k,
                              bint times_ln2) noexcept nogil:
    """Bernoulli(exp(-γ)), γ = num/den in [0, 1] (CKS Algorithm 1) with K resumed at ``k``:
    K grows while Bernoulli(γ/K) succeeds; True when K stops odd. With ``times_ln2`` the
    exponent is γ·ln 2 and each coin is Bernoulli(γ/K) AND Bernoulli(ln 2)."""
    cdef bint a
    cdef uint64_t den_k
    while not b.exhausted:
        # den·k < 2**62, tested with a product (a division per coin would cost more than the coin)
        if mul_high(den, k, &den_k) == 0 and den_k < SAFE:
            a = bernoulli(b, num, den_k)
        else:
            # Bernoulli(num/(den K)) = Bernoulli(num/den) AND Bernoulli(1/K)
            a = bernoulli(b, num, den) and bernoulli(b, 1, k)
        if a and times_ln2:
            a = ln2_coin(b)
        if not a:
            break
        k += 1
    return (k & 1) == 1


cdef inline bint exp_minus_one(Bits* b) noexcept nogil:
    """Bernoulli(exp(-1)): CKS Algorithm 1 at γ = 1, whose K reaches k + 1 with probability
    1/k!; one U uniform below 12! decides K up to 13 (K >= k + 1 iff U < 12!/k!), and a K
    that reaches 13 continues the algorithm from there."""
    cdef uint64_t u = below(b, E1_FACT)
    cdef int k = 1
    while k <= E1_LAST and u < E1_THRESHOLDS[k]:
        k += 1
    if k <= E1_LAST:
        return (k & 1) == 1
    return exp_neg_unit(b, 1, 1, E1_LAST + 1, False)


cdef inline bint exp_neg_parts(Bits* b, uint64_t whole_high, uint64_t whole_low, uint64_t frac,
                               uint64_t den) noexcept nogil:
    """Bernoulli(exp(-γ)), γ = whole + frac/den with whole = whole_high·2**64 + whole_low:
    exp(-1)^whole AND exp(-frac/den) (CKS Algorithm 1)."""
    while whole_high or whole_low:
        if not exp_minus_one(b) or b.exhausted:
            return False
        if whole_low == 0:
            whole_high -= 1
        whole_low -= 1
    return exp_neg_unit(b, frac, den, 1, False)


cdef inline bint exp_neg(Bits* b, uint64_t num, uint64_t den) noexcept nogil:
    """Bernoulli(exp(-num/den)) for num >= 0."""
    if num < den:
        return exp_neg_unit(b, num, den, 1, False)
    return exp_neg_parts(b, 0, num // den, num % den, den)


cdef inline int64_t laplace(Bits* b, uint64_t t) noexcept nogil:
    """Discrete Laplace of scale t (CKS Algorithm 2, s = 1): U uniform below t kept with
    exp(-U/t), plus t·V for V geometric with ratio e^-1, a random sign, "-0" rejected."""
    cdef uint64_t u, v, x
    cdef int negative
    while not b.exhausted:
        u = below(b, t)
        if not exp_neg(b, u, t):
            continue
        v = 0
        while exp_minus_one(b) and not b.exhausted:
            v += 1
        # x < 2**63 unless v >= 2**13 at the largest scale t = 2**50: probability e**-8192
        x = u + t * v
        negative = bit(b)
        if negative and x == 0:
            continue
        return -<int64_t>x if negative else <int64_t>x
    return 0


cdef inline int64_t gaussian(Bits* b, uint64_t t, uint64_t m) noexcept nogil:
    """Discrete Gaussian with σ² = t·m (CKS Algorithm 3): Y ~ Laplace(t) accepted with
    exp(-(|Y| - m)² / (2tm))."""
    cdef int64_t y
    cdef uint64_t magnitude, a, whole_high, whole_low, frac
    while not b.exhausted:
        y = laplace(b, t)
        magnitude = <uint64_t>(y if y >= 0 else -y)
        a = magnitude - m if magnitude >= m else m - magnitude
        frac = square_divmod(a, 2 * t * m, &whole_high, &whole_low)
        if exp_neg_parts(b, whole_high, whole_low, frac, 2 * t * m):
            return y
    return 0


cdef inline int64_t draw_one(int kind, Bits* b, int64_t a, uint64_t p, uint64_t q) noexcept nogil:
    if kind == KIND_BELOW:
        return <int64_t>below(b, <uint64_t>a)
    if kind == KIND_BERN_EXP_NEG:
        return exp_neg(b, <uint64_t>a, p)
    if kind == KIND_BERN_EXP2_NEG:
        return exp_neg_unit(b, <uint64_t>a, p, 1, True)
    if kind == KIND_BERN_LN2:
        return ln2_coin(b)
    if kind == KIND_LAPLACE:
        return laplace(b, p)
    return gaussian(b, p, q)


cdef void run_chunk(int kind, const uint64_t* words, Py_ssize_t n_words, const int64_t* a,
                    bint per_value, uint64_t p, uint64_t q, Py_ssize_t start, Py_ssize_t stop,
                    int64_t* out, uint8_t* exhausted) noexcept nogil:
    cdef Bits b
    cdef Py_ssize_t i
    b.words = words
    b.n_words = n_words
    b.pos = 0
    b.cache = 0
    b.n_cached = 0
    b.exhausted = False
    for i in range(start, stop):
        out[i] = draw_one(kind, &b, a[i] if per_value else a[0], p, q)
        if b.exhausted:
            exhausted[0] = 1
            return
    exhausted[0] = 0


cdef _draw(int kind, const int64_t[::1] a, bint per_value, uint64_t p, uint64_t q,
           Py_ssize_t size, stream, int n_threads):
    """``size`` values of one kind, chunked into lanes of one request of ``stream``."""
    out = np.empty(size, dtype=np.int64)
    if size == 0:
        return out
    cdef int64_t[::1] o = out
    request = stream.take_request()
    cdef Py_ssize_t n_chunks = (size + CHUNK - 1) // CHUNK
    cdef Py_ssize_t first_words = int(_WORDS_PER_VALUE[kind] * min(size, CHUNK)) + 64
    cdef Py_ssize_t batch = max(4 * n_threads, 16)  # lanes held in memory at once
    cdef Py_ssize_t start, n_todo, n_words, i, c
    cdef Py_ssize_t[::1] todo
    cdef uint64_t[:, ::1] words
    cdef uint8_t[::1] exhausted
    cdef int threads
    for start in range(0, n_chunks, batch):
        todo = np.arange(start, min(start + batch, n_chunks), dtype=np.intp)
        n_todo = todo.shape[0]
        n_words = first_words
        while n_todo:
            lanes = np.empty((n_todo, n_words), dtype=np.uint64)
            words = lanes
            exhausted = np.zeros(n_todo, dtype=np.uint8)
            threads = <int>max(1, min(n_threads, n_todo))
            with nogil:
                for i in prange(n_todo, num_threads=threads, schedule="dynamic"):
                    c = todo[i]
                    # the keystream of a lane is filled in the thread that draws from it
                    # (OpenSSL runs without the GIL, so the lanes are filled in parallel too)
                    with gil:
                        stream.fill_lane(request, c, lanes[i])
                    run_chunk(kind, &words[i, 0], n_words, &a[0], per_value, p, q,
                              c * CHUNK, min(size, (c + 1) * CHUNK), &o[0], &exhausted[i])
            # a lane that ran out is drawn again from its start with four times the words
            c = 0
            for i in range(n_todo):
                if exhausted[i]:
                    todo[c] = todo[i]
                    c += 1
            n_todo = c
            n_words *= 4
    return out


# -- entry points (arguments validated by dpxgb_dask.privacy.samplers and .randomness; the
# checks below only keep a direct call from looping forever or dividing by zero) ----------

cdef _positive(int64_t value, name):
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


cdef int64_t[::1] _NO_VALUES = np.zeros(1, dtype=np.int64)


def uniform_below(uint64_t bound, Py_ssize_t size, stream, int n_threads=1):
    """``size`` uniform integers on [0, bound), 1 <= bound < 2**63, ndarray of int64."""
    _positive(<int64_t>bound, "bound")
    return _draw(KIND_BELOW, np.array([bound], dtype=np.int64), False, 0, 0, size, stream, n_threads)


def uniform_below_each(const int64_t[::1] bound, stream, int n_threads=1):
    """One uniform integer on [0, bound[i]) per bound (each >= 1), ndarray of int64."""
    cdef Py_ssize_t n = bound.shape[0], i
    for i in range(n):
        _positive(bound[i], "bound")
    if n == 0:
        return np.empty(0, dtype=np.int64)
    return _draw(KIND_BELOW, bound, True, 0, 0, n, stream, n_threads)


def bernoulli_exp_neg(const int64_t[::1] numerator, int64_t denominator, stream, int n_threads=1):
    """Bernoulli(exp(-numerator/denominator)), ndarray of bool, shape (numerator.size,)."""
    _positive(denominator, "denominator")
    if numerator.shape[0] == 0:
        return np.empty(0, dtype=bool)
    return _draw(KIND_BERN_EXP_NEG, numerator, True, <uint64_t>denominator,
                 0, numerator.shape[0], stream, n_threads).astype(bool)


def bernoulli_exp2_neg(const int64_t[::1] numerator, int64_t denominator, stream, int n_threads=1):
    """Bernoulli(2^-(numerator/denominator)) for 0 <= numerator < denominator, bool (n,)."""
    _positive(denominator, "denominator")
    if numerator.shape[0] == 0:
        return np.empty(0, dtype=bool)
    return _draw(KIND_BERN_EXP2_NEG, numerator, True, <uint64_t>denominator,
                 0, numerator.shape[0], stream, n_threads).astype(bool)


def bernoulli_ln2(Py_ssize_t size, stream, int n_threads=1):
    """Bernoulli(ln 2) trials, ndarray of bool, shape (size,)."""
    return _draw(KIND_BERN_LN2, _NO_VALUES, False, 0, 0, size, stream, n_threads).astype(bool)


def discrete_laplace(int64_t scale, Py_ssize_t size, stream, int n_threads=1):
    """Discrete Laplace samples of integer scale t, ndarray of int64, shape (size,)."""
    _positive(scale, "scale")
    return _draw(KIND_LAPLACE, _NO_VALUES, False, <uint64_t>scale, 0, size, stream, n_threads)


def discrete_gaussian(int64_t scale, int64_t mean_shift, Py_ssize_t size, stream, int n_threads=1):
    """Discrete Gaussian samples with σ² = scale·mean_shift, ndarray of int64, shape (size,)."""
    _positive(scale, "scale")
    _positive(mean_shift, "mean_shift")
    return _draw(KIND_GAUSSIAN, _NO_VALUES, False, <uint64_t>scale, <uint64_t>mean_shift, size,
                 stream, n_threads)
