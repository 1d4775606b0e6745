# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled exact samplers: the algorithms of :mod:`dpxgb_dask.privacy.samplers`, in C loops.

Same algorithms and the same requests to the stream as the NumPy twins in
:mod:`dpxgb_dask.privacy.naive_samplers`: every round asks the stream for a block of the
same size, in the same order, and treats the words the same way, so for one stream key
both return the same integers and leave the stream at the same counter (the tests compare
them). A seeded fit therefore draws the same noise with either. What changes is the cost
of a round: a few C loops over the elements still running instead of a dozen NumPy calls.

The uniform words come from ``stream.random_bytes`` (SHAKE-256 of key and counter, see
:mod:`dpxgb_dask.privacy.randomness`): one Python call per block, as before.

Every function below draws from a ``_Words`` wrapper of the stream and writes into
caller-owned buffers; sizes that reach zero draw nothing, as in NumPy (an empty request
does not advance the stream's counter there either).
"""
from libc.stdint cimport int64_t, uint64_t, uint32_t, uint8_t
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.bytes cimport PyBytes_AS_STRING
from libc.string cimport memcpy

import sys

import numpy as np

# The stream's words are little-endian; on a little-endian host they are copied as they are.
cdef bint LITTLE_ENDIAN = sys.byteorder == "little"

cdef int64_t INT64_SAFE = (<int64_t>1) << 62
# |a| below this keeps a*a below 2**63
cdef int64_t SQUARE_SAFE = 3037000499
# Bernoulli(exp(-1)): one uniform U on [0, 12!) decides the rounds K = 1..13 at once
cdef int64_t E1_LAST = 12
cdef int64_t E1_FACT = 479001600  # 12!
# E1_THRESHOLDS[k - 1] = 12!/(k-1)! for k = 1..13, descending
cdef int64_t E1_THRESHOLDS[13]
E1_THRESHOLDS[0] = E1_FACT
for _k in range(1, 13):
    E1_THRESHOLDS[_k] = E1_THRESHOLDS[_k - 1] // _k


cdef void* _alloc(Py_ssize_t n_bytes) except NULL:
    cdef void* p = PyMem_Malloc(n_bytes if n_bytes > 0 else 1)
    if p == NULL:
        raise MemoryError()
    return p


cdef enum:
    MAX_SCRATCH = 8  # scratch arrays one sampler call may take


cdef class _Scratch:
    """The scratch arrays of one sampler call: taken one by one, freed together when the
    call returns or raises (the object is dropped then)."""
    cdef void* blocks[MAX_SCRATCH]
    cdef int n_blocks

    cdef void* take(self, Py_ssize_t n_bytes) except NULL:
        if self.n_blocks == MAX_SCRATCH:
            raise MemoryError(f"a sampler call takes at most {MAX_SCRATCH} scratch arrays")
        cdef void* p = _alloc(n_bytes)
        self.blocks[self.n_blocks] = p
        self.n_blocks += 1
        return p

    def __dealloc__(self):
        cdef int i
        for i in range(self.n_blocks):
            PyMem_Free(self.blocks[i])


cdef inline Py_ssize_t _keep_where(Py_ssize_t* active, const uint8_t* flag, bint want,
                                   Py_ssize_t n) noexcept nogil:
    """Keep the entries ``active[i]`` whose ``flag[i]`` is ``want``, in order, at the
    front of ``active``; return how many."""
    cdef Py_ssize_t i, c = 0
    for i in range(n):
        if (flag[i] != 0) == want:
            active[c] = active[i]
            c += 1
    return c


cdef inline int _bit_length(uint64_t v) noexcept nogil:
    cdef int n = 0
    while v:
        v >>= 1
        n += 1
    return n


cdef class _Words:
    """Uniform words from a RandomStream, one ``random_bytes`` block per request."""
    cdef object stream
    cdef object _random_bytes

    def __cinit__(self, stream):
        self.stream = stream
        self._random_bytes = stream.random_bytes

    cdef int words32(self, uint32_t* out, Py_ssize_t n) except -1:
        cdef bytes block = self._random_bytes(4 * n)
        cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(block)
        cdef Py_ssize_t i
        if LITTLE_ENDIAN:
            memcpy(out, b, 4 * n)
            return 0
        for i in range(n):
            out[i] = (<uint32_t>b[4 * i] | (<uint32_t>b[4 * i + 1] << 8)
                      | (<uint32_t>b[4 * i + 2] << 16) | (<uint32_t>b[4 * i + 3] << 24))
        return 0

    cdef int words64(self, uint64_t* out, Py_ssize_t n) except -1:
        cdef bytes block = self._random_bytes(8 * n)
        cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(block)
        cdef Py_ssize_t i
        cdef int j
        cdef uint64_t w
        if LITTLE_ENDIAN:
            memcpy(out, b, 8 * n)
            return 0
        for i in range(n):
            w = 0
            for j in range(7, -1, -1):
                w = (w << 8) | b[8 * i + j]
            out[i] = w
        return 0

    cdef int below(self, uint64_t bound, Py_ssize_t n, int64_t* out) except -1:
        """``RandomStream.uniform_below(bound, n)``: masked rejection, 32-bit words below 2**32."""
        if n == 0:
            return 0
        cdef int n_bits = _bit_length(bound - 1)
        cdef uint64_t mask = ((<uint64_t>1) << n_bits) - 1 if n_bits < 64 else <uint64_t>(-1)
        cdef bint narrow = bound < ((<uint64_t>1) << 32)
        cdef _Scratch scratch = _Scratch()
        cdef uint64_t* words = <uint64_t*> scratch.take(n * sizeof(uint64_t))
        cdef uint32_t* words32 = <uint32_t*> scratch.take(n * sizeof(uint32_t))
        cdef Py_ssize_t* bad = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
        cdef Py_ssize_t i, n_bad = 0, k
        cdef uint64_t v
        if narrow:
            self.words32(words32, n)
            for i in range(n):
                words[i] = words32[i]
        else:
            self.words64(words, n)
        for i in range(n):
            v = words[i] & mask
            out[i] = <int64_t>v
            if v >= bound:
                bad[n_bad] = i
                n_bad += 1
        while n_bad:
            if narrow:
                self.words32(words32, n_bad)
                for i in range(n_bad):
                    words[i] = words32[i]
            else:
                self.words64(words, n_bad)
            k = 0
            for i in range(n_bad):
                v = words[i] & mask
                out[bad[i]] = <int64_t>v
                if v >= bound:
                    bad[k] = bad[i]
                    k += 1
            n_bad = k
        return 0

    cdef int below_each(self, const int64_t* bound, Py_ssize_t n, int64_t* out) except -1:
        """``RandomStream.uniform_below(bound_array)``: one 64-bit draw per bound (>= 1)."""
        if n == 0:
            return 0
        cdef _Scratch scratch = _Scratch()
        cdef uint64_t* words = <uint64_t*> scratch.take(n * sizeof(uint64_t))
        cdef uint64_t* mask = <uint64_t*> scratch.take(n * sizeof(uint64_t))
        cdef Py_ssize_t* bad = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
        cdef Py_ssize_t i, n_bad = 0, k
        cdef uint64_t v, m
        cdef int shift
        for i in range(n):
            m = <uint64_t>bound[i] - 1
            shift = 1
            while shift <= 32:
                m |= m >> shift
                shift <<= 1
            mask[i] = m
        self.words64(words, n)
        for i in range(n):
            v = words[i] & mask[i]
            out[i] = <int64_t>v
            if v >= <uint64_t>bound[i]:
                bad[n_bad] = i
                n_bad += 1
        while n_bad:
            self.words64(words, n_bad)
            k = 0
            for i in range(n_bad):
                v = words[i] & mask[bad[i]]
                out[bad[i]] = <int64_t>v
                if v >= <uint64_t>bound[bad[i]]:
                    bad[k] = bad[i]
                    k += 1
            n_bad = k
        return 0

    cdef int bits(self, Py_ssize_t n, uint8_t* out) except -1:
        """``RandomStream.random_bits(n)``: fair coins, most significant bit of each byte first."""
        if n == 0:
            return 0
        cdef bytes block = self._random_bytes((n + 7) // 8)
        cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(block)
        cdef Py_ssize_t i
        for i in range(n):
            out[i] = (b[i >> 3] >> (7 - (i & 7))) & 1
        return 0


cdef int _ln2(_Words w, Py_ssize_t n, uint8_t* out) except -1:
    """Bernoulli(ln 2): K fair flips up to the first head, accept with 1/K."""
    if n == 0:
        return 0
    cdef _Scratch scratch = _Scratch()
    cdef int64_t* k = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef int64_t* u = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef Py_ssize_t* active = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
    cdef uint8_t* heads = <uint8_t*> scratch.take(n)
    cdef Py_ssize_t i, n_active = n
    for i in range(n):
        k[i] = 1
        active[i] = i
    while n_active:
        w.bits(n_active, heads)
        n_active = _keep_where(active, heads, False, n_active)
        for i in range(n_active):
            k[active[i]] += 1
    w.below_each(k, n, u)
    for i in range(n):
        out[i] = u[i] == 0
    return 0


cdef int _exp_neg_unit(_Words w, const int64_t* num, Py_ssize_t n, int64_t den, int64_t k0,
                       bint times_ln2, uint8_t* out) except -1:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS Algorithm 1), K resumed at k0;
    with ``times_ln2`` the exponent is (num/den)·ln 2."""
    if n == 0:
        return 0
    cdef _Scratch scratch = _Scratch()
    cdef int64_t* k = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef int64_t* u = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef int64_t* u2 = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef Py_ssize_t* active = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* chosen = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
    cdef uint8_t* a = <uint8_t*> scratch.take(n)
    cdef uint8_t* coin = <uint8_t*> scratch.take(n)
    cdef Py_ssize_t i, n_active = n, c
    cdef int64_t kk = k0
    for i in range(n):
        k[i] = k0
        active[i] = i
    while n_active:
        if den <= (INT64_SAFE - 1) // kk:
            w.below(<uint64_t>(den * kk), n_active, u)
            for i in range(n_active):
                a[i] = u[i] < num[active[i]]
        else:
            # Bernoulli(num/(den K)) = Bernoulli(num/den) AND Bernoulli(1/K)
            w.below(<uint64_t>den, n_active, u)
            w.below(<uint64_t>kk, n_active, u2)
            for i in range(n_active):
                a[i] = (u[i] < num[active[i]]) and u2[i] == 0
        if times_ln2:
            c = 0
            for i in range(n_active):
                if a[i]:
                    chosen[c] = i
                    c += 1
            _ln2(w, c, coin)
            for i in range(c):
                a[chosen[i]] = coin[i]
        n_active = _keep_where(active, a, True, n_active)
        kk += 1
        for i in range(n_active):
            k[active[i]] = kk
    for i in range(n):
        out[i] = (k[i] & 1) == 1
    return 0


cdef int _exp_minus_one(_Words w, Py_ssize_t n, uint8_t* out) except -1:
    """Bernoulli(exp(-1)): K reaches k iff U < 12!/(k-1)!, for U uniform on [0, 12!)."""
    if n == 0:
        return 0
    cdef _Scratch scratch = _Scratch()
    cdef int64_t* u = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef Py_ssize_t* tail = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
    cdef int64_t* ones = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef uint8_t* tail_out = <uint8_t*> scratch.take(n)
    cdef Py_ssize_t i, n_tail = 0
    cdef int64_t kk
    w.below(<uint64_t>E1_FACT, n, u)
    for i in range(n):
        # K = the number of thresholds 12!/(k-1)!, k = 1..13, strictly above U
        kk = 2  # 12!/0! = 12!/1! = 12! > U always
        while kk <= E1_LAST and E1_THRESHOLDS[kk] > u[i]:
            kk += 1
        out[i] = (kk & 1) == 1
        if kk == E1_LAST + 1:
            tail[n_tail] = i
            ones[n_tail] = 1
            n_tail += 1
    if n_tail:
        _exp_neg_unit(w, ones, n_tail, 1, E1_LAST + 1, False, tail_out)
        for i in range(n_tail):
            out[tail[i]] = tail_out[i]
    return 0


cdef int _exp_neg(_Words w, const int64_t* num, Py_ssize_t n, int64_t den, uint8_t* out) except -1:
    """Bernoulli(exp(-num/den)), num >= 0: exp(-1)^floor(γ) AND exp(-frac(γ))."""
    cdef _Scratch scratch = _Scratch()
    cdef int64_t* whole = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef int64_t* frac = <int64_t*> scratch.take(n * sizeof(int64_t))
    cdef Py_ssize_t* active = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
    cdef uint8_t* ok = <uint8_t*> scratch.take(n)
    cdef Py_ssize_t i, n_active = 0, c, r
    for i in range(n):
        whole[i] = num[i] // den
        frac[i] = num[i] - whole[i] * den
        out[i] = 1
        if whole[i] > 0:
            active[n_active] = i
            n_active += 1
    while n_active:
        _exp_minus_one(w, n_active, ok)
        c = 0
        for i in range(n_active):
            r = active[i]
            if not ok[i]:
                out[r] = 0
            whole[r] -= 1
            if ok[i] and whole[r] > 0:
                active[c] = r
                c += 1
        n_active = c
    c = 0
    for i in range(n):
        if out[i] and frac[i] > 0:
            active[c] = i
            whole[c] = frac[i]  # reused: the fractional numerators of the survivors
            c += 1
    if c:
        _exp_neg_unit(w, whole, c, den, 1, False, ok)
        for i in range(c):
            out[active[i]] = ok[i]
    return 0


cdef int _geometric_exp_neg_one(_Words w, Py_ssize_t n, int64_t* v) except -1:
    """V with P(V = v) = (1 - e^-1) e^-v: successes of Bernoulli(e^-1) before a failure."""
    cdef _Scratch scratch = _Scratch()
    cdef Py_ssize_t* active = <Py_ssize_t*> scratch.take(n * sizeof(Py_ssize_t))
    cdef uint8_t* ok = <uint8_t*> scratch.take(n)
    cdef Py_ssize_t i, n_active = n, c
    for i in range(n):
        v[i] = 0
        active[i] = i
    while n_active:
        _exp_minus_one(w, n_active, ok)
        c = 0
        for i in range(n_active):
            if ok[i]:
                v[active[i]] += 1
                active[c] = active[i]
                c += 1
        n_active = c
    return 0


cdef int _laplace(_Words w, int64_t t, Py_ssize_t size, int64_t* out) except -1:
    """Discrete Laplace of integer scale t (CKS Algorithm 2), ``size`` samples into ``out``."""
    cdef _Scratch scratch = _Scratch()
    cdef Py_ssize_t* pending = <Py_ssize_t*> scratch.take(size * sizeof(Py_ssize_t))
    cdef int64_t* u = <int64_t*> scratch.take(size * sizeof(int64_t))
    cdef int64_t* x = <int64_t*> scratch.take(size * sizeof(int64_t))
    cdef int64_t* g = <int64_t*> scratch.take(size * sizeof(int64_t))
    cdef uint8_t* keep = <uint8_t*> scratch.take(size)
    cdef uint8_t* negative = <uint8_t*> scratch.take(size)
    cdef Py_ssize_t i, n_pending = size, n_kept, c, j
    for i in range(size):
        pending[i] = i
    while n_pending:
        w.below(<uint64_t>t, n_pending, u)
        _exp_neg(w, u, n_pending, t, keep)
        n_kept = 0
        for i in range(n_pending):
            if keep[i]:
                x[n_kept] = u[i]
                n_kept += 1
        _geometric_exp_neg_one(w, n_kept, g)
        for i in range(n_kept):
            x[i] += t * g[i]
        w.bits(n_kept, negative)
        c = 0
        j = 0
        for i in range(n_pending):
            if keep[i]:
                if negative[j] and x[j] == 0:  # "-0" is rejected
                    pending[c] = pending[i]
                    c += 1
                else:
                    out[pending[i]] = -x[j] if negative[j] else x[j]
                j += 1
            else:
                pending[c] = pending[i]
                c += 1
        n_pending = c
    return 0


cdef bint _exp_neg_big(_Words w, object a, int64_t den) except -1:
    """Bernoulli(exp(-a*a/den)) with Python integers, for |a| too large for int64 squares."""
    cdef uint8_t ok
    cdef int64_t frac_num
    whole, frac = divmod(a * a, den)
    while whole > 0:
        _exp_minus_one(w, 1, &ok)
        if not ok:
            return False
        whole -= 1
    if frac == 0:
        return True
    frac_num = frac
    _exp_neg_unit(w, &frac_num, 1, den, 1, False, &ok)
    return ok


cdef int _gaussian(_Words w, int64_t t, int64_t m, Py_ssize_t size, int64_t* out) except -1:
    """Discrete Gaussian with σ² = t·m (CKS Algorithm 3), ``size`` samples into ``out``."""
    cdef int64_t den = 2 * t * m
    cdef _Scratch scratch = _Scratch()
    cdef Py_ssize_t* pending = <Py_ssize_t*> scratch.take(size * sizeof(Py_ssize_t))
    cdef Py_ssize_t* small = <Py_ssize_t*> scratch.take(size * sizeof(Py_ssize_t))
    cdef int64_t* y = <int64_t*> scratch.take(size * sizeof(int64_t))
    cdef int64_t* a = <int64_t*> scratch.take(size * sizeof(int64_t))
    cdef int64_t* squares = <int64_t*> scratch.take(size * sizeof(int64_t))
    cdef uint8_t* accept = <uint8_t*> scratch.take(size)
    cdef uint8_t* small_accept = <uint8_t*> scratch.take(size)
    cdef Py_ssize_t i, n_pending = size, n_small, c
    for i in range(size):
        pending[i] = i
    while n_pending:
        _laplace(w, t, n_pending, y)
        n_small = 0
        for i in range(n_pending):
            a[i] = (y[i] if y[i] >= 0 else -y[i]) - m
            if -SQUARE_SAFE < a[i] < SQUARE_SAFE:
                small[n_small] = i
                squares[n_small] = a[i] * a[i]
                n_small += 1
        _exp_neg(w, squares, n_small, den, small_accept)
        c = 0
        for i in range(n_pending):
            if c < n_small and small[c] == i:
                accept[i] = small_accept[c]
                c += 1
        for i in range(n_pending):
            if not (-SQUARE_SAFE < a[i] < SQUARE_SAFE):
                accept[i] = _exp_neg_big(w, a[i], den)
        c = 0
        for i in range(n_pending):
            if accept[i]:
                out[pending[i]] = y[i]
            else:
                pending[c] = pending[i]
                c += 1
        n_pending = c
    return 0


# -- entry points (arguments validated by dpxgb_dask.privacy.samplers and .randomness; the
# checks below only keep a direct call from looping forever or dividing by zero) ----------

cdef _positive(int64_t value, name):
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


def uniform_below(uint64_t bound, Py_ssize_t size, stream):
    """``size`` uniform integers on [0, bound), 1 <= bound < 2**63, ndarray of int64."""
    _positive(<int64_t>bound, "bound")
    out = np.empty(size, dtype=np.int64)
    cdef int64_t[::1] o = out
    if size:
        _Words(stream).below(bound, size, &o[0])
    return out


def uniform_below_each(const int64_t[::1] bound, stream):
    """One uniform integer on [0, bound[i]) per bound (each >= 1), ndarray of int64."""
    cdef Py_ssize_t n = bound.shape[0], i
    for i in range(n):
        _positive(bound[i], "bound")
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    if n:
        _Words(stream).below_each(&bound[0], n, &o[0])
    return out


def bernoulli_exp_neg(const int64_t[::1] numerator, int64_t denominator, stream):
    """Bernoulli(exp(-numerator/denominator)), ndarray of bool, shape (numerator.size,)."""
    _positive(denominator, "denominator")
    cdef Py_ssize_t n = numerator.shape[0]
    out = np.empty(n, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    if n:
        _exp_neg(_Words(stream), &numerator[0], n, denominator, &o[0])
    return out.view(bool)


def bernoulli_exp2_neg(const int64_t[::1] numerator, int64_t denominator, stream):
    """Bernoulli(2^-(numerator/denominator)) for 0 <= numerator < denominator, bool (n,)."""
    _positive(denominator, "denominator")
    cdef Py_ssize_t n = numerator.shape[0], i, c = 0
    out = np.ones(n, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    cdef int64_t[::1] positive = np.empty(n, dtype=np.int64)
    cdef Py_ssize_t[::1] where = np.empty(n, dtype=np.intp)
    cdef uint8_t[::1] coins = np.empty(n, dtype=np.uint8)
    for i in range(n):
        if numerator[i] > 0:
            where[c] = i
            positive[c] = numerator[i]
            c += 1
    if c:
        _exp_neg_unit(_Words(stream), &positive[0], c, denominator, 1, True, &coins[0])
        for i in range(c):
            o[where[i]] = coins[i]
    return out.view(bool)


def bernoulli_ln2(Py_ssize_t size, stream):
    """Bernoulli(ln 2) trials, ndarray of bool, shape (size,)."""
    out = np.empty(size, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    if size:
        _ln2(_Words(stream), size, &o[0])
    return out.view(bool)


def discrete_laplace(int64_t scale, Py_ssize_t size, stream):
    """Discrete Laplace samples of integer scale t, ndarray of int64, shape (size,)."""
    _positive(scale, "scale")
    out = np.empty(size, dtype=np.int64)
    cdef int64_t[::1] o = out
    if size:
        _laplace(_Words(stream), scale, size, &o[0])
    return out


def discrete_gaussian(int64_t scale, int64_t mean_shift, Py_ssize_t size, stream):
    """Discrete Gaussian samples with σ² = scale·mean_shift, ndarray of int64, shape (size,)."""
    _positive(scale, "scale")
    _positive(mean_shift, "mean_shift")
    out = np.empty(size, dtype=np.int64)
    cdef int64_t[::1] o = out
    if size:
        _gaussian(_Words(stream), scale, mean_shift, size, &o[0])
    return out
