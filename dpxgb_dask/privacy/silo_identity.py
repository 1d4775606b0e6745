"""A silo's long-term identity: its fresh key of each fit, signed, and checked by its peers.

Secure aggregation (:mod:`~dpxgb_dask.privacy.secure_sum`) derives each pair of silos' masks
from the X25519 keys that the coordinator relays. Unauthenticated, those keys let whoever
relays them stand in for a silo, or add silos of its own, and unmask a silo's value with
only its share of the noise. Here each silo's operator holds a long-term Ed25519 identity
(:class:`SiloIdentity`, RFC 8032 through OpenSSL in ``cryptography``) and configures, out
of band, the identity public keys of the silos it aggregates with (its peers). Per fit:

1. the silo signs its fresh X25519 public key ``pk`` for the fit ``context``::

       signature = Ed25519-Sign(identity, "dpxgb_dask.secure-sum.key.v1"
                                          || be64(len(context)) || context || pk)

   and sends ``(pk, identity public key, signature)`` (:class:`SignedKey`);
2. the coordinator relays every silo's :class:`SignedKey`, in silo order;
3. each silo derives its masks only if every other key is signed, for this fit, by one of
   its peers, each peer exactly once and nobody else (:func:`authenticated_keys`).

Then the coordinator can neither replace a key (it lacks the peer's identity), add a silo
(no peer signed it), drop one (the count is the operator's), nor replay a key signed for
another fit. The peers are still trusted to add their noise shares.
"""
import dataclasses
import os

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                               Ed25519PublicKey)
from cryptography.hazmat.primitives.serialization import (Encoding, NoEncryption,
                                                          PrivateFormat, PublicFormat,
                                                          load_pem_private_key)

__all__ = ["SignedKey", "SiloIdentity", "authenticated_keys"]

_SIGNATURE_DOMAIN = b"dpxgb_dask.secure-sum.key.v1"
_PUBLIC_KEY_BYTES, _IDENTITY_BYTES, _SIGNATURE_BYTES = 32, 32, 64


def _length_prefixed(data):
    return len(data).to_bytes(8, "big") + data


@dataclasses.dataclass(frozen=True)
class SignedKey:
    """A silo's fresh X25519 public key for one fit, as it sends it to the coordinator.

    Parameters
    ----------
    public_key : bytes
        The raw 32-byte X25519 public key
        (:attr:`~dpxgb_dask.privacy.secure_sum.SiloKeyPair.public_bytes`).
    identity : bytes or None
        The raw 32-byte Ed25519 public key of the silo's long-term identity
        (:attr:`SiloIdentity.public_bytes`); None from a silo without one.
    signature : bytes or None
        The identity's 64-byte Ed25519 signature of ``public_key`` for the fit
        (:meth:`SiloIdentity.sign`); None exactly when ``identity`` is.
    """

    public_key: bytes
    identity: bytes = None
    signature: bytes = None

    def __post_init__(self):
        # (rebuilt from a peer's message: check every field before anyone reads it)
        if not isinstance(self.public_key, bytes) or len(self.public_key) != _PUBLIC_KEY_BYTES:
            raise ValueError(f"public_key must be {_PUBLIC_KEY_BYTES} bytes (a raw X25519 public "
                             "key)")
        if (self.identity is None) != (self.signature is None):
            raise ValueError("identity and signature must both be given or both be None")
        if self.identity is not None and not (
                isinstance(self.identity, bytes) and len(self.identity) == _IDENTITY_BYTES
                and isinstance(self.signature, bytes)
                and len(self.signature) == _SIGNATURE_BYTES):
            raise ValueError(f"identity must be {_IDENTITY_BYTES} bytes (a raw Ed25519 public "
                             f"key) and signature {_SIGNATURE_BYTES} bytes")


def _signed_message(public_key, context):
    return _SIGNATURE_DOMAIN + _length_prefixed(context) + public_key


class SiloIdentity:
    """A silo's long-term Ed25519 identity, which its operator keeps and whose public key
    the other silos' operators configure as a peer's.

    It signs the silo's fresh X25519 key of each fit (:meth:`sign`), so that a coordinator
    who relays the keys cannot replace one, add a silo or drop one
    (:func:`authenticated_keys`). Like
    :class:`~dpxgb_dask.privacy.secure_sum.SiloKeyPair` it cannot be pickled or copied.

    Parameters
    ----------
    private_key : cryptography's Ed25519PrivateKey
        Use :meth:`generate` or :meth:`load`.
    """

    __slots__ = ("_private", "_public")

    def __init__(self, private_key):
        if not isinstance(private_key, Ed25519PrivateKey):
            raise TypeError(f"private_key must be an Ed25519PrivateKey, got "
                            f"{type(private_key).__name__}")
        self._private = private_key
        self._public = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @classmethod
    def generate(cls):
        """A new identity from the OS CSPRNG (through OpenSSL)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def load(cls, path):
        """The identity kept in the PEM file at ``path`` (PKCS#8, unencrypted: the file's
        permissions protect it, as an SSH host key's do), as :meth:`write` makes it.

        Raises
        ------
        ValueError
            The file holds no Ed25519 private key.
        """
        with open(path, "rb") as file:
            data = file.read()
        try:
            key = load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            key = None
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError(f"{path} holds no unencrypted PEM Ed25519 private key (make one "
                             "with `dpxgb silo-identity PATH`)")
        return cls(key)

    def write(self, path):
        """Keep the identity in a new PEM file at ``path``, readable by its owner only.

        Raises
        ------
        FileExistsError
            A file is at ``path``: an identity is never overwritten (its peers know it).
        """
        pem = self._private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(pem)

    @property
    def public_bytes(self):
        """bytes: the raw 32-byte Ed25519 public key (its hex goes to the peers' operators)."""
        return self._public

    def __repr__(self):
        return f"SiloIdentity(public_bytes={self._public.hex()!r})"

    def __reduce__(self):
        raise TypeError("a SiloIdentity cannot be pickled or copied: its private key must not "
                        "leave the silo's process")

    def sign(self, public_key, context):
        """``public_key`` (a fresh
        :attr:`~dpxgb_dask.privacy.secure_sum.SiloKeyPair.public_bytes`) signed for the fit
        named by ``context`` (non-empty bytes, e.g. the fit's id).

        The signed message is ``"dpxgb_dask.secure-sum.key.v1" || be64(len(context)) ||
        context || public_key``.

        Returns
        -------
        SignedKey
        """
        if not isinstance(context, bytes) or not context:
            raise ValueError(f"context must be non-empty bytes (e.g. the fit's id), got "
                             f"{context!r}")
        return SignedKey(public_key, self._public,
                         self._private.sign(_signed_message(public_key, context)))


def authenticated_keys(signed_keys, own_index, own_identity, peers, context):
    """The silos' X25519 public keys, in silo order, once every other key is signed by
    exactly one of this silo's configured peers.

    Parameters
    ----------
    signed_keys : sequence of SignedKey
        Every silo's key for the fit, in silo order, as the coordinator relays them.
    own_index : int
        This silo's position in ``signed_keys``.
    own_identity : SiloIdentity
        This silo's identity: ``signed_keys[own_index]`` must carry its public key.
    peers : sequence of bytes
        The raw 32-byte Ed25519 public keys of every other silo, from this silo's operator
        (out of band, never from the coordinator). Distinct.
    context : bytes
        What each silo signed its key for (:meth:`SiloIdentity.sign`: the fit's id).

    Returns
    -------
    list of bytes
        ``[k.public_key for k in signed_keys]``, for
        :meth:`~dpxgb_dask.privacy.secure_sum.SiloKeyPair.masks`.

    Raises
    ------
    PermissionError
        The list is not exactly this silo and its peers, each once: a silo is missing or
        unknown, listed twice, or its signature does not verify (the message says which
        position, never a key it did not know).
    """
    keys = list(signed_keys)
    trusted = {bytes(peer) for peer in peers}
    if len(trusted) != len(peers) or any(len(peer) != _IDENTITY_BYTES for peer in trusted):
        raise ValueError(f"peers must be distinct {_IDENTITY_BYTES}-byte Ed25519 public keys")
    if len(keys) != len(trusted) + 1:
        raise PermissionError(f"this silo aggregates securely with its {len(trusted)} "
                              f"configured peers, {len(trusted) + 1} silos in all; the fit "
                              f"names {len(keys)}")
    if isinstance(own_index, bool) or not isinstance(own_index, int) or not (
            0 <= own_index < len(keys)):
        raise ValueError(f"own_index must be an int in [0, {len(keys) - 1}], got {own_index!r}")
    if keys[own_index].identity != own_identity.public_bytes:
        raise PermissionError(f"the key at position {own_index} (this silo's) is not signed "
                              "by this silo's identity")
    seen = set()
    for j, key in enumerate(keys):
        if j == own_index:
            continue
        if key.identity is None or key.identity not in trusted:
            raise PermissionError(f"the key at position {j} is not signed by a peer this "
                                  "silo's operator configured (dpxgb.silo.peers)")
        if key.identity in seen:
            raise PermissionError(f"the key at position {j} is signed by a peer already "
                                  "listed: each peer takes part once")
        try:
            Ed25519PublicKey.from_public_bytes(key.identity).verify(
                key.signature, _signed_message(key.public_key, context))
        except InvalidSignature:
            raise PermissionError(f"the key at position {j} does not carry a valid signature "
                                  "of its peer for this fit") from None
        seen.add(key.identity)
    return [key.public_key for key in keys]
