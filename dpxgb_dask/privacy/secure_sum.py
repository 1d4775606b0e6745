"""Pairwise masking for secure aggregation: the coordinator learns a sum of int64 vectors, not its terms.

Protocol
--------
In cross-silo training, ``n >= 2`` data holders (silos) each hold an int64 vector ``x_i`` of
the same shape (a histogram on a fixed-point grid plus the silo's share of the distributed
discrete Gaussian noise). The coordinator must learn ``sum_i x_i`` and nothing else. This
module implements the pairwise masks of Bonawitz et al. [1]_ without their dropout recovery:

1. Per fit, each silo makes a fresh X25519 key pair (:class:`SiloKeyPair`) and sends its
   public key to the coordinator (signed by the silo's long-term identity, if it has one:
   :mod:`~dpxgb_dask.privacy.silo_identity`), which relays the list of all public keys, in
   silo order, to every silo (which checks the signatures against its configured peers).
2. Silo ``i`` computes, for every other silo ``j``, the X25519 shared secret with ``j`` and
   derives the pairwise key ``k_ij = k_ji`` with HKDF-SHA256 (:meth:`SiloKeyPair.masks`)::

       k_ij = HKDF-SHA256(ikm = X25519(sk_i, pk_j), salt = none, length = 32,
                          info = "dpxgb_dask.secure-sum.v1" || len || context
                                 || SHA-256(pk_0 || ... || pk_{n-1})
                                 || le32(lo) || pk_lo || le32(hi) || pk_hi)

   where ``lo = min(i, j)``, ``hi = max(i, j)`` (the canonical order makes both ends derive
   the same key) and ``context`` binds the keys to one fit (e.g. the fit's id).
3. For release ``label`` (a counter, one per aggregated vector), silo ``i`` sends::

       y_i = x_i + sum_{j > i} PRG(k_ij, label) - sum_{j < i} PRG(k_ij, label)   (mod 2**64)

   (:meth:`PairwiseMasks.mask`, :func:`mask_values`), where ``PRG(k, label)`` is the ChaCha20
   keystream (RFC 8439) under key ``k`` and nonce ``le64(label) || le32(0)``, read as
   little-endian uint64 words (:func:`~dpxgb_dask.privacy.randomness.chacha20_keystream`).
4. Each pair's mask is added by one end and subtracted by the other, so the masks cancel in
   ``sum_i y_i`` and the coordinator recovers ``sum_i x_i`` mod 2**64 (:func:`unmask_sum`),
   which is the exact sum read as two's complement int64 whenever ``|sum_i x_i| < 2**63``
   (the caller bounds its values publicly: a cross-silo fit's silos clip theirs to
   2**62 / n_silos grid steps, and the noise shares stay far below the rest).

There is no dropout recovery and no unmasking of a lost silo's masks: if any silo's vector
is missing, the masks do not cancel, the round fails and is not retried with the same label.

Threat model
------------
* Honest-but-curious coordinator and silos: everyone follows the protocol and tries to learn
  more from what they see. A single masked vector ``y_i`` is uniform on ``Z_{2**64}`` per
  word (computationally: its mask includes at least one ChaCha20 keystream under a key that
  only silos ``i`` and ``j`` know), so the coordinator learns nothing of ``x_i`` beyond the
  sum. A coalition of the coordinator and ``n - 2`` silos learns the remaining two silos'
  sum only, and a coalition including all silos but one learns that silo's vector from the
  sum, as any sum reveals.
* The public keys are relayed by the coordinator. Unauthenticated, they let a malicious
  coordinator mount a man-in-the-middle attack: it hands silo ``i`` a list in which the
  other silos' keys are replaced by keys of its own, learns all of silo ``i``'s pairwise
  keys and unmasks ``x_i`` exactly (or adds fake silos, whose share of the noise is then
  missing from ``x_i``). Binding the keys to the whole list of public keys (the SHA-256 in
  ``info``) only makes the masks of silos that were shown different lists fail to cancel.
  Authenticated keys close it: each silo's operator holds a long-term Ed25519 identity
  and configures its peers' identity public keys out of band; a silo signs its fresh
  X25519 key with its identity and derives masks only from a list whose every other key
  is signed by one of its configured peers, each exactly once, and by no one else
  (:mod:`~dpxgb_dask.privacy.silo_identity`). The coordinator can then neither replace,
  add nor drop a silo.
* The masks hide the silos' vectors from the coordinator; they do not make the sum
  differentially private. The DP guarantee comes from the noise shares inside the ``x_i``.
* A mask reused for two releases leaks the difference of the two vectors
  (``y - y' = x - x'``), so :class:`PairwiseMasks` refuses a label it has already served,
  and a :class:`SiloKeyPair` derives its masks only once per context.

References
----------
.. [1] K. Bonawitz, V. Ivanov, B. Kreuter, A. Marcedone, H. B. McMahan, S. Patel, D. Ramage,
   A. Segal, K. Seth. "Practical Secure Aggregation for Privacy-Preserving Machine
   Learning". Proceedings of the 2017 ACM SIGSAC Conference on Computer and Communications
   Security (CCS), pp. 1175-1191, 2017.
"""

from __future__ import annotations

import hashlib
import numbers

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from .randomness import chacha20_keystream

__all__ = ["PairwiseMasks", "SiloKeyPair", "mask_values", "unmask_sum"]

_KEY_DOMAIN = b"dpxgb_dask.secure-sum.v1"
_PUBLIC_KEY_BYTES = 32
_MAX_LABEL = (1 << 64) - 1
#: One ChaCha20 nonce gives 2**32 blocks of 64 bytes, i.e. 2**35 uint64 words.
_MAX_SIZE = 1 << 35


def _check_int(value, name, low, high):
    """``value`` as an int in [low, high], else ValueError naming ``name`` and the range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return int(value)


def _check_public_keys(public_keys, own_index, own_public):
    """The validated list of public keys (see :meth:`SiloKeyPair.masks`)."""
    if isinstance(public_keys, (bytes, bytearray, str)) or not hasattr(public_keys, "__len__"):
        raise ValueError(f"public_keys must be a list of {_PUBLIC_KEY_BYTES}-byte public keys, "
                         f"one per silo in silo order, got {type(public_keys).__name__}")
    keys = list(public_keys)
    if len(keys) < 2:
        raise ValueError(f"public_keys must hold the keys of at least 2 silos, got {len(keys)}: "
                         "a sum over one silo is that silo's vector, which no mask can hide")
    for j, key in enumerate(keys):
        if not isinstance(key, bytes) or len(key) != _PUBLIC_KEY_BYTES:
            got = f"{len(key)} bytes" if isinstance(key, bytes) else type(key).__name__
            raise ValueError(f"public_keys[{j}] must be {_PUBLIC_KEY_BYTES} bytes (a raw X25519 "
                             f"public key, SiloKeyPair.public_bytes), got {got}")
    first = {}
    for j, key in enumerate(keys):
        if key in first:
            # a silo listed twice, or a copied key: its pairs would not be secret between two
            raise ValueError(f"public_keys must be distinct (each silo makes its own fresh "
                             f"SiloKeyPair), got the same key at positions {first[key]} and {j}")
        first[key] = j
    own_index = _check_int(own_index, "own_index", 0, len(keys) - 1)
    if keys[own_index] != own_public:
        raise ValueError(f"public_keys[{own_index}] (own_index) must be this silo's own public "
                         "key, SiloKeyPair.public_bytes: the list or the index is wrong")
    return keys, own_index


def _length_prefixed(data):
    return len(data).to_bytes(8, "big") + data


class SiloKeyPair:
    """One silo's fresh X25519 key pair for one fit.

    The private key is generated from the OS CSPRNG (through OpenSSL) when the object is
    made and never leaves it: there is no accessor, and the object cannot be pickled or
    copied, so it cannot be shipped to another process or stored by accident. Its
    :attr:`public_bytes` go to the coordinator.

    Notes
    -----
    Make a new key pair for every fit: reusing one across fits with the same ``context``
    would reuse its masks. :meth:`masks` is allowed once per ``context`` for the same
    reason.

    Examples
    --------
    >>> silos = [SiloKeyPair() for _ in range(3)]
    >>> keys = [s.public_bytes for s in silos]          # relayed by the coordinator
    >>> masks = [s.masks(i, keys, b"fit-1") for i, s in enumerate(silos)]
    >>> values = [np.array([5, -2]), np.array([1, 1]), np.array([-3, 10])]
    >>> masked = [mask_values(v, m, label=0) for v, m in zip(values, masks)]
    >>> unmask_sum(masked)
    array([3, 9])
    """

    __slots__ = ("_private", "_public", "_contexts")

    def __init__(self):
        self._private = X25519PrivateKey.generate()
        self._public = self._private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self._contexts = set()

    @property
    def public_bytes(self):
        """bytes: the raw 32-byte X25519 public key."""
        return self._public

    def __repr__(self):
        # the public key only: a repr ends up in logs and tracebacks
        return f"SiloKeyPair(public_bytes={self._public.hex()!r})"

    def __reduce__(self):
        # Pickling would copy the private key out of this process (a Dask worker would ship
        # it to the scheduler or a spill file); copy.copy and copy.deepcopy use it as well,
        # and a copy could derive the same masks again.
        raise TypeError("a SiloKeyPair cannot be pickled or copied: its private key must not "
                        "leave the silo's process; make a new SiloKeyPair where it is needed")

    def masks(self, own_index, public_keys, context):
        """Derive this silo's pairwise keys with every other silo.

        Parameters
        ----------
        own_index : int
            This silo's position in ``public_keys``, in [0, len(public_keys)).
        public_keys : sequence of bytes
            The raw 32-byte public keys of all silos, in silo order, this silo's own at
            ``own_index``. At least 2, all distinct; every silo must receive the same list.
        context : bytes
            Non-empty; binds the keys to one fit (e.g. the fit's id). Every silo of the fit
            must pass the same bytes.

        Returns
        -------
        PairwiseMasks
            The masks of this silo for the fit, one stream per release label.

        Raises
        ------
        ValueError
            If an argument is invalid (the message names it), if a public key is a
            low-order point (the shared secret would be all zeros, known to anyone), or if
            this key pair already derived masks for ``context``.
        """
        keys, own_index = _check_public_keys(public_keys, own_index, self._public)
        if not isinstance(context, bytes) or not context:
            raise ValueError(f"context must be non-empty bytes (e.g. the fit's id), got {context!r}")
        if context in self._contexts:
            raise ValueError(f"this SiloKeyPair already derived masks for context {context!r}: "
                             "the same keys would give the same masks again; make a new "
                             "SiloKeyPair for a new fit")
        roster = hashlib.sha256(b"".join(keys)).digest()
        pair_keys = {}
        for j, key in enumerate(keys):
            if j == own_index:
                continue
            try:
                shared = self._private.exchange(X25519PublicKey.from_public_bytes(key))
            except ValueError:
                raise ValueError(f"public_keys[{j}] is not a usable X25519 public key (a "
                                 "low-order point gives an all-zero shared secret)") from None
            lo, hi = min(own_index, j), max(own_index, j)
            info = (_KEY_DOMAIN + _length_prefixed(context) + roster
                    + lo.to_bytes(4, "little") + keys[lo] + hi.to_bytes(4, "little") + keys[hi])
            pair_keys[j] = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                                info=info).derive(shared)
        self._contexts.add(context)
        return PairwiseMasks(own_index, len(keys), pair_keys)


class PairwiseMasks:
    """One silo's masks for one fit: a fresh mask per release label.

    Made by :meth:`SiloKeyPair.masks`; holds the pairwise keys, which are as secret as the
    private key (whoever holds them unmasks the silo's vectors), hence not picklable either.

    Parameters
    ----------
    own_index : int
        The silo's index, in [0, n_silos).
    n_silos : int
        The number of silos, >= 2.
    pair_keys : dict of int to bytes
        ``{j: k_ij}`` for every other silo ``j``, each key 32 bytes.
    """

    __slots__ = ("_own_index", "_n_silos", "_pair_keys", "_used")

    def __init__(self, own_index, n_silos, pair_keys):
        n_silos = _check_int(n_silos, "n_silos", 2, 1 << 32)
        own_index = _check_int(own_index, "own_index", 0, n_silos - 1)
        others = set(range(n_silos)) - {own_index}
        if set(pair_keys) != others or any(
                not isinstance(k, bytes) or len(k) != 32 for k in pair_keys.values()):
            raise ValueError("pair_keys must map every other silo index in [0, n_silos) to a "
                             "32-byte key")
        self._own_index = own_index
        self._n_silos = n_silos
        self._pair_keys = dict(pair_keys)
        self._used = set()

    @property
    def own_index(self):
        """int: the silo's index, in [0, n_silos)."""
        return self._own_index

    @property
    def n_silos(self):
        """int: the number of silos of the fit."""
        return self._n_silos

    def __repr__(self):
        return (f"PairwiseMasks(own_index={self.own_index}, n_silos={self.n_silos}, "
                f"labels_used={len(self._used)})")

    def __reduce__(self):
        # the pairwise keys unmask this silo's vectors, and a copy would forget the labels
        # already used
        raise TypeError("PairwiseMasks cannot be pickled or copied: its pairwise keys must "
                        "not leave the silo's process")

    @property
    def labels_used(self):
        """frozenset of int: the labels this object has already served."""
        return frozenset(self._used)

    def mask(self, label, size):
        """This silo's mask for release ``label``.

        Parameters
        ----------
        label : int
            The release's label (a counter), in [0, 2**64). Each label selects an independent
            keystream (the ChaCha20 nonce) and may be used once.
        size : int
            Number of words, in [0, 2**35].

        Returns
        -------
        ndarray of uint64, shape (size,)
            ``sum_{j > own} PRG(k_ij, label) - sum_{j < own} PRG(k_ij, label)`` mod 2**64.
            The masks of all silos for the same label sum to 0 mod 2**64.

        Raises
        ------
        ValueError
            If ``label`` or ``size`` is out of range, or ``label`` was already used by this
            object (a reused mask reveals the difference of the two masked vectors).
        """
        label = _check_int(label, "label", 0, _MAX_LABEL)
        size = _check_int(size, "size", 0, _MAX_SIZE)
        if label in self._used:
            raise ValueError(f"label {label} was already used by these PairwiseMasks: the same "
                             "mask on two vectors reveals their difference; use a new label "
                             "for every release (labels in [0, 2**64))")
        self._used.add(label)
        out = np.zeros(size, dtype=np.uint64)
        for j, key in sorted(self._pair_keys.items()):
            stream = np.frombuffer(chacha20_keystream(key, label, 0, 8 * size), dtype="<u8")
            # uint64 array arithmetic wraps modulo 2**64, which is the group of the masks
            if j > self._own_index:
                np.add(out, stream, out=out)
            else:
                np.subtract(out, stream, out=out)
        return out


def mask_values(values, masks, label):
    """Mask a silo's int64 vector for release ``label``.

    Parameters
    ----------
    values : array_like of int, any shape
        The silo's vector; a signed integer dtype of at most 64 bits (converted to int64).
    masks : PairwiseMasks
        The silo's masks, from :meth:`SiloKeyPair.masks`.
    label : int
        The release's label, in [0, 2**64), not used before by ``masks``.

    Returns
    -------
    ndarray of uint64, same shape as ``values``
        ``values`` as two's complement words plus ``masks.mask(label, values.size)``,
        mod 2**64. Uniformly distributed on its own (computationally); send it to the
        coordinator.

    Raises
    ------
    ValueError
        If ``values`` is not a signed integer array, or ``label`` is invalid or reused.
    TypeError
        If ``masks`` is not a :class:`PairwiseMasks`.
    """
    if not isinstance(masks, PairwiseMasks):
        raise TypeError(f"masks must be a PairwiseMasks (from SiloKeyPair.masks), got "
                        f"{type(masks).__name__}")
    values = np.asarray(values)
    # floats would be truncated and unsigned words above 2**63 reinterpreted: refuse both
    if values.dtype.kind != "i" or values.dtype.itemsize > 8:
        raise ValueError(f"values must have a signed integer dtype of at most 64 bits (int8 "
                         f"to int64), got {values.dtype}")
    words = values.astype(np.int64).view(np.uint64)
    mask = masks.mask(label, words.size).reshape(words.shape)
    # out=: an ndarray even for 0-d values, where np.add would return a scalar
    return np.add(words, mask, out=np.empty_like(words))


def unmask_sum(masked):
    """The sum of all silos' masked vectors of one release, read as int64.

    Parameters
    ----------
    masked : sequence of ndarray of uint64
        One masked vector per silo (:func:`mask_values`), all of the same shape and all for
        the same label. Every silo of the fit must be present, or the masks do not cancel.

    Returns
    -------
    ndarray of int64, same shape as each ``masked[i]``
        ``sum_i masked[i]`` mod 2**64, read as two's complement. It equals the true sum of
        the silos' values when that sum lies in [-2**63, 2**63); otherwise it is the true
        sum wrapped modulo 2**64 and no error can be raised, since the coordinator sees
        only the wrapped value: bound the values publicly before they are masked.

    Raises
    ------
    ValueError
        If ``masked`` is empty, or an element is not a uint64 array of the common shape.
    """
    if isinstance(masked, np.ndarray) or not hasattr(masked, "__len__") or len(masked) == 0:
        raise ValueError("masked must be a non-empty list of uint64 arrays, one per silo")
    shape = None
    total = None
    for i, vector in enumerate(masked):
        if not isinstance(vector, np.ndarray) or vector.dtype != np.uint64:
            got = vector.dtype if isinstance(vector, np.ndarray) else type(vector).__name__
            raise ValueError(f"masked[{i}] must be an ndarray of uint64 (from mask_values), got {got}")
        if shape is None:
            shape, total = vector.shape, vector.copy()
        elif vector.shape != shape:
            raise ValueError(f"masked[{i}] has shape {vector.shape}, but masked[0] has {shape}: "
                             "all silos must mask vectors of the same shape")
        else:
            np.add(total, vector, out=total)
    return total.view(np.int64)

