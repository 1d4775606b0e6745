"""Randomness for DP noise: keyed ChaCha20 streams, secure by default, replayable by key.

Design
------
A :class:`NoiseSource` holds a 256-bit master key. Each release asks it for a
:class:`RandomStream` keyed by ``(tree, depth, purpose, index)``:

    stream_key = SHAKE-256("dpxgb_dask.stream.v1" || master_key || encode(tree, depth, purpose, index))

(32 bytes). A stream serves *requests* ``j = 0, 1, 2, ...`` (one per call that draws), and
request ``j`` has lanes ``c = 0, 1, ...``, each a ChaCha20 keystream (RFC 8439, 20 rounds,
through OpenSSL in the ``cryptography`` package):

    lane(j, c) = ChaCha20(key = stream_key, block counter from 0,
                          nonce = le64(j) || le32(c))     (the 12-byte IETF nonce)

so the noise of a release is a pure function of the master key and the release's key: a
release that is recomputed after a failure (``stream(..., replay=True)``) draws exactly the
same noise and therefore reveals nothing new. Nothing depends on global state, call order
across streams, the clock, the worker or the number of threads. ``random_bytes`` and
``uint64`` read lane 0 of a request; the samplers of :mod:`~dpxgb_dask.privacy.samplers`
read lane ``c`` for their ``c``-th chunk of 4096 values, so the chunks can be drawn in
parallel. A lane holds 2**38 bytes, far more than any release reads.

Test vectors (``tests/unit/privacy/test_randomness.py`` checks them)::

    # the keystream: RFC 8439 §2.4.2 (key 00 01 .. 1f, nonce 00 00 00 00 00 00 00 4a
    # 00 00 00 00, block counter 1)
    chacha20_keystream(bytes(range(32)), request, lane, n) with the RFC's nonce
        -> 22 4f 51 f3 40 1b d9 e1 2f de 27 6f b8 63 1d ed ...
    RandomStream(bytes(range(32))).random_bytes(16).hex()   # request 0, lane 0
        == "39fd2b7dd9c5196a8dbd0377b8dc4a49"
    # the key derivation and the keystream together
    NoiseSource(seed=2**200 + 7).stream(tree=0, depth=2, purpose="split").random_bytes(16).hex()
        == "1049bf3f819706188aeebe466ff91fed"

* Secure (default): the master key comes from :func:`os.urandom` (the OS CSPRNG) and never
  leaves the process. ChaCha20 is a stream cipher whose keystream is indistinguishable from
  random without the key, and SHAKE-256 keyed this way is a pseudo-random function (the
  construction of NIST SP 800-185 KMAC/cSHAKE), so every lane is computationally
  indistinguishable from fresh OS randomness. The keystream runs at several GB/s
  (vectorised ChaCha20 in OpenSSL), far faster than the samplers read it.
* Seeded: the master key is SHAKE-256 of the user's seed. The stream for
  ``(seed, tree, depth, purpose)`` is then reproducible across processes and machines.
  The noise is only as secret as the seed: a short or published seed lets anyone remove
  the noise, hence the :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning` for seeds
  under 128 bits. That check measures the seed's *length* (bit length of the int, 8 bits per
  byte), not its entropy: ``2**200`` or 32 zero bytes pass it and are still trivially
  guessable. Only a seed drawn from a CSPRNG and kept secret protects the noise.

Key reuse
---------
Two releases that use the same stream key get *identical* noise, and the difference of two
such releases is noise-free. A :class:`NoiseSource` therefore remembers every key it has
issued and refuses to issue one again (``ValueError``) unless the caller states that it is
deliberately replaying the same release, ``stream(..., replay=True)``; such a replayed
release must not be recorded in the ledger as a new release (see
:meth:`~dpxgb_dask.privacy.ledger.Ledger.record`, ``replay=True``). Each stream has a public
identifier :attr:`RandomStream.stream_id` (a one-way digest of its key) that the ledger
stores to recognise replays.

Why not NumPy's Philox keyed by a hash? Philox is counter-based too, but it is not a
cryptographic generator: its outputs are not designed to hide its key, and a DP release that
lets an attacker predict the noise of another release is not DP. ChaCha20 is counter-based
(the nonce and the block counter above) and cryptographically strong.

Samplers consume only uniform integers from a stream (:meth:`RandomStream.uint64`,
:meth:`RandomStream.uniform_below`, :meth:`RandomStream.bernoulli`, or the lanes);
no floating-point uniform enters the noise of the Laplace and Gaussian mechanisms.
"""

from __future__ import annotations

import hashlib
import numbers
import os
import sys
import warnings

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from . import _samplers
from .validation import PrivacyLeakWarning

__all__ = ["NoiseSource", "RandomStream", "as_stream", "keyed_uniforms"]

_MASTER_DOMAIN = b"dpxgb_dask.seed.v1"
#: Domain of the sources of public choices (``secret=False``): their streams never equal a
#: secret source's, even under the same seed and key.
_PUBLIC_MASTER_DOMAIN = b"dpxgb_dask.public-seed.v1"
_STREAM_DOMAIN = b"dpxgb_dask.stream.v1"
_STREAM_ID_DOMAIN = b"dpxgb_dask.stream-id.v1"
_MAX_UNIFORM_BOUND = 1 << 63
_MAX_LANE = (1 << 32) - 1


def chacha20_keystream(key, request, lane, n_bytes):
    """The first ``n_bytes`` of lane ``lane`` of request ``request`` of the stream ``key``.

    Parameters
    ----------
    key : bytes
        32-byte stream key.
    request : int
        In [0, 2**64).
    lane : int
        In [0, 2**32).
    n_bytes : int
        At most 2**38 (the 2**32 blocks of 64 bytes of one ChaCha20 nonce).

    Returns
    -------
    bytes
        ``ChaCha20(key, counter 0, nonce le64(request) || le32(lane))`` keystream, i.e. the
        encryption of ``n_bytes`` zero bytes.
    """
    return _lane_encryptor(key, request, lane).update(bytes(n_bytes))


def _lane_encryptor(key, request, lane, block=0):
    # cryptography takes OpenSSL's 16-byte IV: the 32-bit block counter, then the nonce
    iv = (int(block).to_bytes(4, "little") + int(request).to_bytes(8, "little")
          + int(lane).to_bytes(4, "little"))
    return Cipher(algorithms.ChaCha20(key, iv), mode=None).encryptor()


#: uint64 words of one lane (2**32 blocks of 8 words).
_LANE_WORDS = 1 << 35


def keyed_uniforms(key, first, count):
    """Uniform numbers in [0, 1) at positions ``first`` .. ``first + count - 1`` of the
    stream ``key``: a pure function of (key, position), whatever the calls' split.

    Position ``i`` is word ``i mod 2**35`` of lane ``i // 2**35`` of request 0 (the
    little-endian uint64 words of the ChaCha20 keystream, as :func:`chacha20_keystream`
    reads it), its top 53 bits times 2**-53. A row ``i`` of a subsample joins when its
    number is below the rate, so the secret sample (amplification needs it secret) comes
    from the same cryptographic keystream as the noise.

    Parameters
    ----------
    key : bytes
        32-byte secret key.
    first, count : int
        ``first >= 0``, ``count >= 0``.

    Returns
    -------
    ndarray of float64, shape (count,)
    """
    first, count = int(first), int(count)
    if first < 0 or count < 0:
        raise ValueError(f"first and count must be >= 0, got {first} and {count}")
    out = np.empty(count, dtype=np.float64)
    done = 0
    while done < count:
        lane, word = divmod(first + done, _LANE_WORDS)
        n = min(count - done, _LANE_WORDS - word)
        block, skip = divmod(word, 8)  # (8 words per 64-byte block)
        raw = _lane_encryptor(key, 0, lane, block).update(_zero_bytes(8 * (skip + n)))
        words = np.frombuffer(raw, dtype="<u8")[skip:]
        out[done:done + n] = (words >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)
        done += n
    return out


_zeros = b""


def _zero_bytes(n_bytes):
    """A read-only view of ``n_bytes`` zero bytes (one buffer, grown as needed)."""
    global _zeros
    if len(_zeros) < n_bytes:
        _zeros = bytes(max(n_bytes, 2 * len(_zeros)))
    return memoryview(_zeros)[:n_bytes]


def _encode_field(value):
    """Unambiguous, type-tagged, length-prefixed encoding of one key field."""
    if value is None:
        tag, payload = b"n", b""
    elif isinstance(value, bool):
        raise TypeError("stream key fields must be None, int or str, not bool")
    elif isinstance(value, numbers.Integral):
        value = int(value)
        payload = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
        tag = b"i"
    elif isinstance(value, str):
        tag, payload = b"s", value.encode("utf-8")
    elif isinstance(value, bytes):
        tag, payload = b"b", value
    else:
        raise TypeError(f"stream key fields must be None, int, str or bytes, got {type(value).__name__}")
    return tag + len(payload).to_bytes(8, "big") + payload


def _seed_bytes(seed):
    if isinstance(seed, bool):
        raise ValueError("seed must be a non-negative int or bytes, got a bool")
    if isinstance(seed, numbers.Integral):
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"seed must be a non-negative int or bytes, got {seed}")
        return _encode_field(seed), seed.bit_length()
    if isinstance(seed, (bytes, bytearray)):
        return _encode_field(bytes(seed)), 8 * len(seed)
    raise ValueError(f"seed must be a non-negative int or bytes, got {type(seed).__name__}")


class NoiseSource:
    """Factory of keyed random streams for DP noise.

    Parameters
    ----------
    seed : int or bytes or None, default None
        ``None`` (default): a fresh 256-bit key from :func:`os.urandom`; every fit gets
        different noise, and recomputing a release within this source's lifetime returns the
        same noise. An int >= 0 or bytes: deterministic streams, a pure function of
        ``(seed, tree, depth, purpose, index)``. Seeds shorter than 128 bits trigger a
        :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning` because they can be guessed. The check measures the
        seed's length (the int's bit length, or 8 bits per byte), not its entropy: a long but
        guessable seed such as ``2**200`` does not warn and is not secret either.
    secret : bool, default True
        False for a source of public, data-independent choices only (e.g. the structure of
        a random tree, which the model publishes anyway): a short seed then does not warn,
        and the streams are derived in another domain, so that publishing them reveals
        nothing of a secret source's streams under the same seed. Never draw DP noise or a
        secret subsample from such a source.

    Notes
    -----
    The source remembers the keys it has issued (32-byte digests, a few dozen bytes per
    release) and raises ``ValueError`` when a key is requested a second time, because two
    releases with the same key carry identical noise. Pass ``replay=True`` to
    :meth:`stream` to replay a release on purpose (e.g. to recompute it after a failure);
    the replayed release must then not be recorded as a new release.

    Examples
    --------
    >>> source = NoiseSource(seed=2**200 + 7)
    >>> a = source.stream(tree=0, depth=2, purpose="split").uint64(3)
    >>> b = NoiseSource(seed=2**200 + 7).stream(tree=0, depth=2, purpose="split").uint64(3)
    >>> bool((a == b).all())
    True
    """

    def __init__(self, seed=None, *, secret=True):
        if seed is None:
            self._master = os.urandom(32)
            self._seeded = False
        else:
            encoded, n_bits = _seed_bytes(seed)
            if secret and n_bits < 128:
                warnings.warn(
                    f"the noise seed has only {n_bits} bits: anyone who guesses it can recompute "
                    "and subtract the DP noise; use seed=None (secure) or a secret seed of at "
                    "least 128 bits",
                    PrivacyLeakWarning,
                    stacklevel=2,
                )
            domain = _MASTER_DOMAIN if secret else _PUBLIC_MASTER_DOMAIN
            self._master = hashlib.shake_256(domain + encoded).digest(32)
            self._seeded = True
        self._issued = set()

    @property
    def seeded(self):
        """bool: True if the streams are derived from a user seed (reproducible)."""
        return self._seeded

    def __repr__(self):
        return f"NoiseSource(seeded={self._seeded})"

    def stream(self, *, purpose, tree=None, depth=None, index=0, replay=False,
               sequential=False):
        """Return the random stream of one release.

        Parameters
        ----------
        purpose : str
            What the noise is for, e.g. ``"sketch"``, ``"split"``, ``"leaf/grad"``. Two
            releases that must have independent noise need different keys.
        tree : int or None
            Tree index, or None for fit-level releases.
        depth : int or None
            Depth within the tree, or None.
        index : int, default 0
            Extra disambiguator (e.g. the chunk of a release split over several calls).
        replay : bool, default False
            Set to True to obtain again the stream of a key this source has already issued,
            i.e. to replay the same release with the same noise. Without it, a second
            request for the same key raises ``ValueError``.
        sequential : bool, default False
            A :class:`SequentialStream` (one cipher context for many small draws) instead
            of a :class:`RandomStream`.

        Returns
        -------
        RandomStream
            A fresh stream positioned at block 0. Its bytes are a pure function of the
            master key and ``(tree, depth, purpose, index)``, so a replayed stream produces
            exactly the bytes of the original one.

        Raises
        ------
        ValueError
            If ``purpose`` is empty, or the key ``(tree, depth, purpose, index)`` was already
            issued by this source and ``replay`` is False.
        """
        if not isinstance(purpose, str) or not purpose:
            raise ValueError(f"purpose must be a non-empty str, got {purpose!r}")
        if not isinstance(replay, bool):
            raise ValueError(f"replay must be a bool, got {replay!r}")
        fields = b"".join(_encode_field(v) for v in (tree, depth, purpose, index))
        key = hashlib.shake_256(_STREAM_DOMAIN + self._master + fields).digest(32)
        if key in self._issued and not replay:
            raise ValueError(
                f"the stream key (tree={tree!r}, depth={depth!r}, purpose={purpose!r}, index={index!r}) "
                "was already issued by this NoiseSource: two releases with the same key get identical "
                "noise. Give the second release a distinct key (e.g. another index), or pass "
                "replay=True if it deliberately recomputes the same release"
            )
        self._issued.add(key)
        return SequentialStream(key) if sequential else RandomStream(key)


class RandomStream:
    """A counter-based stream of uniform random integers (ChaCha20 keyed by the stream key).

    Parameters
    ----------
    key : bytes
        32-byte stream key, normally produced by :meth:`NoiseSource.stream`.

    Notes
    -----
    Each call that draws takes the next request ``j`` (a counter) and reads lanes of it
    (module docstring), so the values depend only on the key and on the sequence of calls and
    their sizes. The samplers of this package make calls whose sizes depend only on their
    inputs' shapes, never on the private data, which makes a replayed release bit-for-bit
    identical.
    """

    __slots__ = ("_key", "_counter")

    def __init__(self, key):
        if not isinstance(key, bytes) or len(key) != 32:
            raise ValueError("key must be 32 bytes")
        self._key = key
        self._counter = 0

    @classmethod
    def secure(cls):
        """Return a stream keyed by 32 fresh bytes from :func:`os.urandom`."""
        return cls(os.urandom(32))

    @property
    def stream_id(self):
        """str: public identifier of this stream, 32 hex digits.

        A one-way digest ``SHAKE-256("dpxgb_dask.stream-id.v1" || key)`` of the stream key:
        equal for two streams with the same key (a replay), different otherwise, and it
        reveals nothing about the key or the noise (SHAKE-256 is a PRF in its key). The
        ledger stores it to tell a replayed release from a new one. For a seeded source
        it lets whoever holds the ledger test guesses of the seed offline, which is no
        more than a short seed already allows (see :class:`NoiseSource`).
        """
        return hashlib.shake_256(_STREAM_ID_DOMAIN + self._key).hexdigest(16)

    @property
    def blocks_drawn(self):
        """int: number of requests served so far (the counter)."""
        return self._counter

    def take_request(self):
        """Return the next request number and advance the counter (for the samplers).

        Returns
        -------
        int
            ``j``; the caller reads its lanes with :meth:`lane_words`.
        """
        request = self._counter
        self._counter += 1
        return request

    def lane_words(self, request, lane, n_words):
        """The first ``n_words`` 64-bit little-endian words of lane ``lane`` of ``request``.

        Parameters
        ----------
        request : int
            A number from :meth:`take_request`.
        lane : int
            In [0, 2**32).
        n_words : int
            At most 2**35.

        Returns
        -------
        ndarray of uint64, shape (n_words,)
            A longer read of the same lane starts with the same words.
        """
        words = np.empty(int(n_words), dtype=np.uint64)
        self.fill_lane(request, lane, words)
        return words

    def fill_lane(self, request, lane, out):
        """Write the first ``out.size`` words of lane ``lane`` of ``request`` into ``out``.

        Parameters
        ----------
        request, lane : int
            As for :meth:`lane_words`.
        out : ndarray of uint64, shape (n_words,), C-contiguous, writable
            Receives the words (64-bit little-endian words of the keystream).
        """
        if not 0 <= lane <= _MAX_LANE:
            raise ValueError(f"lane must be in [0, 2**32), got {lane}")
        _lane_encryptor(self._key, request, lane).update_into(_zero_bytes(8 * out.size),
                                                              memoryview(out).cast("B"))
        if sys.byteorder != "little":
            out.byteswap(inplace=True)

    def random_bytes(self, n_bytes):
        """Return ``n_bytes`` uniformly random bytes (lane 0 of one request)."""
        n_bytes = int(n_bytes)
        if n_bytes < 0:
            raise ValueError(f"n_bytes must be >= 0, got {n_bytes}")
        return chacha20_keystream(self._key, self.take_request(), 0, n_bytes)

    def uint64(self, size):
        """Uniform integers on [0, 2**64).

        Parameters
        ----------
        size : int
            Number of values.

        Returns
        -------
        ndarray of uint64, shape (size,)
        """
        return self._raw(int(size)).copy()

    def _raw(self, size):
        """Read-only uint64 view of one block of ``size`` values."""
        if size == 0:
            return np.zeros(0, dtype=np.uint64)
        return np.frombuffer(self.random_bytes(8 * size), dtype="<u8")

    def uniform_below(self, bound, size=None):
        """Exactly uniform integers on [0, bound) by Lemire's multiply-and-reject.

        Parameters
        ----------
        bound : int or array_like of int
            Upper bounds, each in [1, 2**63). An array gives one draw per element.
        size : int or None
            Number of draws when ``bound`` is a scalar.

        Returns
        -------
        ndarray of int64
            One value per bound (shape of the broadcast ``bound``, or ``(size,)``).

        Notes
        -----
        Each value is ``floor(w · bound / 2**64)`` for a uniform 64-bit word ``w``, whose
        low product part is rejected (and ``w`` drawn again) below ``2**64 mod bound``
        (Lemire 2019, "Fast random integer generation in an interval"): every value has
        probability exactly 1/bound, and a second word is needed with probability below
        bound / 2**64. Compiled (``_samplers.pyx``); the Python twin is
        ``naive_samplers.uniform_below``.
        """
        if size is not None and np.ndim(bound) == 0:
            bound, size = int(bound), int(size)
            if not 1 <= bound < _MAX_UNIFORM_BOUND:
                raise ValueError(f"bound must be in [1, 2**63), got {bound}")
            if size < 0:
                raise ValueError(f"size must be >= 0, got {size}")
            return _samplers.uniform_below(bound, size, self)
        bound = np.ascontiguousarray(np.asarray(bound, dtype=np.int64)).ravel()
        if bound.size and (bound.min() < 1):
            raise ValueError("bound must be >= 1 for every draw")
        return _samplers.uniform_below_each(bound, self)

    def bernoulli(self, numerator, denominator):
        """Exact Bernoulli(numerator / denominator) draws.

        Parameters
        ----------
        numerator : array_like of int
            Values in [0, denominator].
        denominator : array_like of int
            Values in [1, 2**63).

        Returns
        -------
        ndarray of bool
            True with probability exactly ``numerator / denominator``, elementwise.
        """
        num, den = np.broadcast_arrays(np.asarray(numerator, np.int64), np.asarray(denominator, np.int64))
        return self.uniform_below(den) < num.ravel()


class SequentialStream(RandomStream):
    """A :class:`RandomStream` whose lanes are read, in the order they are asked for, from
    ONE ChaCha20 keystream (request 0, lane 0 of the key): one cipher context for many
    small draws, such as the structure of a random tree (a few draws per level).

    Every lane a draw reads is a run of keystream bytes no other lane reads, so the lanes
    are independent and uniform, as in :class:`RandomStream`; a longer read of a lane of
    the current request (a sampler's lane that ran out of words) starts with the same
    words and continues with the next unread bytes. The values are a pure function of the
    key and the sequence of calls and their sizes, as for :class:`RandomStream`, but not
    the same values. Its lanes must be read by one thread: the methods of
    :class:`RandomStream` draw with ``n_threads=1`` (a sampler drawing lanes in parallel
    would read the keystream in the threads' order, and a replay would differ).

    Parameters
    ----------
    key : bytes
        32-byte stream key.
    """

    __slots__ = ("_encryptor", "_lanes")

    def __init__(self, key):
        super().__init__(key)
        self._encryptor = _lane_encryptor(key, 0, 0)
        self._lanes = {}  # lane -> words read so far, for the current request

    def take_request(self):
        """:meth:`RandomStream.take_request`; the lanes of the previous request are
        forgotten (a sampler re-reads only the lanes of its own request)."""
        self._lanes.clear()
        return super().take_request()

    def _next_words(self, n_words):
        words = np.empty(n_words, dtype=np.uint64)
        self._encryptor.update_into(_zero_bytes(8 * n_words), memoryview(words).cast("B"))
        if sys.byteorder != "little":
            words.byteswap(inplace=True)
        return words

    def fill_lane(self, request, lane, out):
        """:meth:`RandomStream.fill_lane`, from the one keystream (see the class notes)."""
        if request != self._counter - 1:
            raise ValueError("a sequential stream reads the lanes of its latest request only")
        if not 0 <= lane <= _MAX_LANE:
            raise ValueError(f"lane must be in [0, 2**32), got {lane}")
        read = self._lanes.get(lane)
        if read is None or read.size < out.size:
            more = self._next_words(out.size - (0 if read is None else read.size))
            read = more if read is None else np.concatenate([read, more])
            self._lanes[lane] = read
        out[:] = read[:out.size]

    def random_bytes(self, n_bytes):
        """Return the next ``n_bytes`` bytes of the keystream."""
        n_bytes = int(n_bytes)
        if n_bytes < 0:
            raise ValueError(f"n_bytes must be >= 0, got {n_bytes}")
        self.take_request()
        return self._encryptor.update(_zero_bytes(n_bytes))


def as_stream(rng):
    """Return ``rng`` if it is a :class:`RandomStream`, or a fresh secure stream for None.

    Parameters
    ----------
    rng : RandomStream or None

    Returns
    -------
    RandomStream
    """
    if rng is None:
        return RandomStream.secure()
    if isinstance(rng, RandomStream):
        return rng
    raise TypeError(
        "rng must be a dpxgb_dask.privacy.RandomStream (from NoiseSource.stream) or None; "
        f"got {type(rng).__name__}. NumPy generators are not accepted for DP noise."
    )
