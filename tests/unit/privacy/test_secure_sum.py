"""Pairwise masking of secure aggregation: masks cancel, one masked vector looks uniform,
labels and key pairs give fresh masks, the private key stays put, arguments are checked;
the silos' keys signed by their identities, and a roster other than the peers refused."""

import copy
import pickle

import numpy as np
import pytest

from dpxgb_dask.privacy.secure_sum import (
    PairwiseMasks,
    SiloKeyPair,
    mask_values,
    unmask_sum,
)
from dpxgb_dask.privacy.silo_identity import SignedKey, SiloIdentity, authenticated_keys

CONTEXT = b"fit-0001"


def fit_masks(n_silos, context=CONTEXT):
    """Every silo's PairwiseMasks for one fit of ``n_silos`` fresh key pairs."""
    silos = [SiloKeyPair() for _ in range(n_silos)]
    keys = [s.public_bytes for s in silos]
    return [s.masks(i, keys, context) for i, s in enumerate(silos)]


def wrapped_sum(arrays):
    total = np.zeros(arrays[0].shape, dtype=np.uint64)
    for a in arrays:
        np.add(total, a, out=total)
    return total


@pytest.mark.parametrize("n_silos", [2, 3, 8])
def test_masks_of_all_silos_cancel_exactly(n_silos):
    masks = fit_masks(n_silos)
    for label in (0, 1, 2**64 - 1):
        per_silo = [m.mask(label, 1000) for m in masks]
        assert all(p.dtype == np.uint64 and p.shape == (1000,) for p in per_silo)
        # each mask is far from zero, and all of them together are exactly zero
        assert all(np.count_nonzero(p) > 990 for p in per_silo)
        np.testing.assert_array_equal(wrapped_sum(per_silo), np.zeros(1000, dtype=np.uint64))


@pytest.mark.parametrize("n_silos", [2, 3, 8])
def test_masked_sum_equals_plain_sum_even_near_the_int64_range(n_silos):
    rng = np.random.default_rng(20260101 + n_silos)
    size = 500
    big = 2**62
    values = []
    for i in range(n_silos):
        # words near +-2**62 with alternating signs, so that the true sums stay in int64
        sign = 1 if i % 2 == 0 else -1
        v = sign * (big - rng.integers(0, 2**20, size=size, dtype=np.int64))
        values.append(v.astype(np.int64))
    if n_silos == 2:
        # the extremes of int64: 2**62 - 1 + 2**62 = 2**63 - 1, and -2**62 - 2**62 = -2**63
        values[0][:2] = [big - 1, -big]
        values[1][:2] = [big, -big]
    masks = fit_masks(n_silos)
    masked = [mask_values(v, m, label=7) for v, m in zip(values, masks)]
    got = unmask_sum(masked)
    expected = [sum(int(v[k]) for v in values) for k in range(size)]  # Python ints: exact
    assert got.dtype == np.int64 and got.shape == (size,)
    assert got.tolist() == expected
    if n_silos == 2:
        assert got[:2].tolist() == [2**63 - 1, -2**63]


def test_masking_keeps_the_shape_and_sums_2d_histograms():
    masks = fit_masks(3)
    rng = np.random.default_rng(5)
    values = [rng.integers(-1000, 1000, size=(4, 6)) for _ in masks]
    masked = [mask_values(v, m, label=0) for v, m in zip(values, masks)]
    assert all(y.shape == (4, 6) and y.dtype == np.uint64 for y in masked)
    np.testing.assert_array_equal(unmask_sum(masked), sum(values))


def test_a_sum_outside_int64_wraps_as_documented():
    masks = fit_masks(2)
    values = [np.array([2**62], dtype=np.int64), np.array([2**62], dtype=np.int64)]
    masked = [mask_values(v, m, label=0) for v, m in zip(values, masks)]
    assert unmask_sum(masked).tolist() == [-2**63]  # 2**63 mod 2**64, read as int64


def test_a_missing_silo_leaves_the_sum_masked():
    masks = fit_masks(3)
    values = [np.arange(100, dtype=np.int64) for _ in masks]
    masked = [mask_values(v, m, label=0) for v, m in zip(values, masks)]
    partial = unmask_sum(masked[:2])
    assert np.count_nonzero(partial != 2 * np.arange(100)) > 95


def test_one_silos_masked_vector_is_not_its_values_and_looks_uniform():
    masks = fit_masks(3)
    n_words = 2**16
    # a worst case for hiding: a constant, highly structured vector of small values
    values = np.full(n_words, 3, dtype=np.int64)
    masked = mask_values(values, masks[1], label=0)
    assert np.count_nonzero(masked == values.view(np.uint64)) < 5  # P(one equal word) = 2**-64
    bits = np.unpackbits(masked.view(np.uint8)).reshape(n_words, 64)
    means = bits.mean(axis=0)
    # each bit's mean has standard deviation 1 / 512 over 2**16 words: +-0.02 is 10 sigma
    assert np.all(np.abs(means - 0.5) < 0.02), means
    # and the bytes: chi-square with 255 degrees of freedom (mean 255, sd 22.6); 450 is far
    # beyond any chance value, while a non-uniform mask (e.g. one missing byte value) fails
    counts = np.bincount(masked.view(np.uint8), minlength=256)
    expected = 8 * n_words / 256
    assert ((counts - expected) ** 2 / expected).sum() < 450


def test_two_labels_give_different_masks():
    masks = fit_masks(2)[0]
    a, b = masks.mask(0, 64), masks.mask(1, 64)
    assert np.count_nonzero(a == b) < 2


def test_a_reused_label_raises_even_through_mask_values():
    masks = fit_masks(2)[0]
    masks.mask(4, 10)
    with pytest.raises(ValueError, match="label 4 was already used"):
        masks.mask(4, 10)
    with pytest.raises(ValueError, match="label 4 was already used"):
        mask_values(np.zeros(3, dtype=np.int64), masks, label=4)
    assert masks.labels_used == {4}
    mask_values(np.zeros(3, dtype=np.int64), masks, label=5)  # a new label is fine
    assert masks.labels_used == {4, 5}


def test_a_key_pair_derives_masks_once_per_context():
    silos = [SiloKeyPair(), SiloKeyPair()]
    keys = [s.public_bytes for s in silos]
    silos[0].masks(0, keys, CONTEXT)
    with pytest.raises(ValueError, match="already derived masks for context"):
        silos[0].masks(0, keys, CONTEXT)
    silos[0].masks(0, keys, b"another fit")


def test_fresh_key_pairs_for_the_same_silo_give_different_masks():
    first = fit_masks(3)[1].mask(0, 64)
    second = fit_masks(3)[1].mask(0, 64)  # same index, context and label, new keys
    assert np.count_nonzero(first == second) < 2


def test_the_context_and_the_roster_enter_the_keys():
    silos = [SiloKeyPair() for _ in range(3)]
    keys = [s.public_bytes for s in silos]
    # silo 2 was told another fit id: its pairs with silos 0 and 1 no longer cancel
    masks = [s.masks(i, keys, b"fit-A" if i < 2 else b"fit-B") for i, s in enumerate(silos)]
    assert np.count_nonzero(wrapped_sum([m.mask(0, 100) for m in masks])) > 95
    # silo 0 saw a roster with a stranger's key instead of silo 2's: even its pair with
    # silo 1, whose keys are in both rosters, gets another key (read in the private state,
    # as the masks also carry the other pairs' streams)
    stranger = SiloKeyPair()
    a = silos[0].masks(0, [keys[0], keys[1], stranger.public_bytes], b"fit-C")
    b = silos[1].masks(1, keys, b"fit-C")
    assert a._pair_keys[1] != b._pair_keys[0]
    # whereas with the same roster and context, both ends hold the same key
    masks = [s.masks(i, keys, b"fit-D") for i, s in enumerate(silos)]
    assert masks[0]._pair_keys[1] == masks[1]._pair_keys[0]
    np.testing.assert_array_equal(wrapped_sum([m.mask(3, 100) for m in masks]), 0)


def test_a_key_pair_and_its_masks_cannot_be_pickled_or_copied():
    silo = SiloKeyPair()
    with pytest.raises(TypeError, match="private key must not leave"):
        pickle.dumps(silo)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.deepcopy(silo)
    masks = fit_masks(2)[0]
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(masks)
    # the private key is not exposed, and the repr shows the public key only
    assert not any("private" in name for name in dir(silo) if not name.startswith("_"))
    assert repr(silo) == f"SiloKeyPair(public_bytes={silo.public_bytes.hex()!r})"
    assert isinstance(silo.public_bytes, bytes) and len(silo.public_bytes) == 32


def _keys(n=3):
    silos = [SiloKeyPair() for _ in range(n)]
    return silos, [s.public_bytes for s in silos]


@pytest.mark.parametrize("case, match", [
    ("index out of range", r"own_index must be an int in \[0, 2\]"),
    ("index a bool", r"own_index must be an int"),
    ("one silo", r"public_keys must hold the keys of at least 2 silos"),
    ("bytes, not a list", r"public_keys must be a list"),
    ("short key", r"public_keys\[1\] must be 32 bytes .* got 31 bytes"),
    ("str key", r"public_keys\[2\] must be 32 bytes .* got str"),
    ("duplicate keys", r"public_keys must be distinct"),
    ("own key elsewhere", r"public_keys\[1\] \(own_index\) must be this silo's own"),
    ("low-order key", r"public_keys\[2\] is not a usable X25519 public key"),
    ("empty context", r"context must be non-empty bytes"),
    ("str context", r"context must be non-empty bytes"),
])
def test_masks_validation_names_the_argument(case, match):
    silos, keys = _keys()
    index, context = 0, CONTEXT
    if case == "index out of range":
        index = 3
    elif case == "index a bool":
        index = False
    elif case == "one silo":
        keys = keys[:1]
    elif case == "bytes, not a list":
        keys = keys[0]
    elif case == "short key":
        keys[1] = keys[1][:31]
    elif case == "str key":
        keys[2] = keys[2].hex()
    elif case == "duplicate keys":
        keys[2] = keys[1]
    elif case == "own key elsewhere":
        index = 1
    elif case == "low-order key":
        keys[2] = bytes(32)  # the identity point: shared secret all zeros
    elif case == "empty context":
        context = b""
    elif case == "str context":
        context = "fit-1"
    with pytest.raises(ValueError, match=match):
        silos[0].masks(index, keys, context)


@pytest.mark.parametrize("label, size, match", [
    (-1, 4, r"label must be an int in \[0, 18446744073709551615\]"),
    (2**64, 4, r"label must be an int in \[0, 18446744073709551615\]"),
    (True, 4, r"label must be an int"),
    (1.0, 4, r"label must be an int"),
    (0, -1, r"size must be an int in \[0, 34359738368\]"),
    (0, 2.5, r"size must be an int"),
])
def test_mask_validation_names_the_argument(label, size, match):
    masks = fit_masks(2)[0]
    with pytest.raises(ValueError, match=match):
        masks.mask(label, size)
    assert masks.labels_used == frozenset()  # a refused call uses no label


def test_mask_values_and_unmask_sum_validation_names_the_argument():
    masks = fit_masks(2)[0]
    with pytest.raises(ValueError, match=r"values must have a signed integer dtype .* got float64"):
        mask_values(np.zeros(3), masks, label=0)
    with pytest.raises(ValueError, match=r"values must have a signed integer dtype .* got uint64"):
        mask_values(np.zeros(3, dtype=np.uint64), masks, label=0)
    with pytest.raises(TypeError, match=r"masks must be a PairwiseMasks"):
        mask_values(np.zeros(3, dtype=np.int64), "masks", label=0)
    good = np.zeros(3, dtype=np.uint64)
    with pytest.raises(ValueError, match=r"masked must be a non-empty list"):
        unmask_sum([])
    with pytest.raises(ValueError, match=r"masked must be a non-empty list"):
        unmask_sum(good)
    with pytest.raises(ValueError, match=r"masked\[1\] must be an ndarray of uint64 .* got int64"):
        unmask_sum([good, np.zeros(3, dtype=np.int64)])
    with pytest.raises(ValueError, match=r"masked\[1\] has shape \(4,\), but masked\[0\] has \(3,\)"):
        unmask_sum([good, np.zeros(4, dtype=np.uint64)])


def test_pairwise_masks_constructor_checks_its_keys():
    with pytest.raises(ValueError, match="pair_keys must map every other silo index"):
        PairwiseMasks(0, 3, {1: bytes(32)})
    with pytest.raises(ValueError, match=r"n_silos must be an int in \[2, "):
        PairwiseMasks(0, 1, {})




def _signed_roster(n=3, context=CONTEXT):
    """n silos' identities, key pairs and signed keys for one fit."""
    identities = [SiloIdentity.generate() for _ in range(n)]
    pairs = [SiloKeyPair() for _ in range(n)]
    signed = [i.sign(p.public_bytes, context) for i, p in zip(identities, pairs)]
    return identities, pairs, signed


def test_signed_keys_from_configured_peers_give_masks_that_cancel():
    identities, pairs, signed = _signed_roster(3)
    masks = []
    for i, (identity, pair) in enumerate(zip(identities, pairs)):
        peers = [other.public_bytes for j, other in enumerate(identities) if j != i]
        keys = authenticated_keys(signed, i, identity, peers[::-1], CONTEXT)  # (any order)
        assert keys == [p.public_bytes for p in pairs]
        masks.append(pair.masks(i, keys, b"masks"))
    np.testing.assert_array_equal(wrapped_sum([m.mask(0, 50) for m in masks]), 0)


@pytest.mark.parametrize("case, match", [
    ("a stranger instead of a peer", r"position 2 is not signed by a peer"),
    ("a fake peer added", r"its 2 configured peers, 3 silos in all; the fit names 4"),
    ("a peer dropped", r"3 silos in all; the fit names 2"),
    ("a peer twice", r"position 2 is signed by a peer already listed"),
    ("unsigned", r"position 1 is not signed by a peer"),
    ("signed for another fit", r"position 1 does not carry a valid signature"),
    ("another key under a peer's signature", r"position 2 does not carry a valid signature"),
    ("own key not own", r"position 0 \(this silo's\) is not signed by this silo's identity"),
])
def test_a_roster_other_than_the_configured_peers_is_refused(case, match):
    identities, pairs, signed = _signed_roster(3)
    peers = [identities[1].public_bytes, identities[2].public_bytes]
    stranger = SiloIdentity.generate()
    if case == "a stranger instead of a peer":
        signed[2] = stranger.sign(SiloKeyPair().public_bytes, CONTEXT)
    elif case == "a fake peer added":
        signed.append(stranger.sign(SiloKeyPair().public_bytes, CONTEXT))
    elif case == "a peer dropped":
        signed.pop()
    elif case == "a peer twice":
        signed[2] = identities[1].sign(SiloKeyPair().public_bytes, CONTEXT)
    elif case == "unsigned":
        signed[1] = SignedKey(pairs[1].public_bytes)
    elif case == "signed for another fit":
        signed[1] = identities[1].sign(pairs[1].public_bytes, b"another fit")
    elif case == "another key under a peer's signature":
        signed[2] = SignedKey(SiloKeyPair().public_bytes, signed[2].identity,
                              signed[2].signature)
    elif case == "own key not own":
        signed[0] = stranger.sign(pairs[0].public_bytes, CONTEXT)
    with pytest.raises(PermissionError, match=match):
        authenticated_keys(signed, 0, identities[0], peers, CONTEXT)


def test_a_signed_key_checks_its_fields():
    key = SiloKeyPair().public_bytes
    for fields, match in [((key[:31],), "public_key must be 32 bytes"),
                          ((key, bytes(32)), "both be given or both be None"),
                          ((key, bytes(31), bytes(64)), "identity must be 32 bytes"),
                          ((key, bytes(32), bytes(63)), "signature 64 bytes")]:
        with pytest.raises(ValueError, match=match):
            SignedKey(*fields)
    with pytest.raises(ValueError, match="peers must be distinct 32-byte"):
        authenticated_keys([], 0, SiloIdentity.generate(), [bytes(32)] * 2, CONTEXT)


def test_an_identity_is_written_once_for_its_owner_and_never_copied(tmp_path):
    identity = SiloIdentity.generate()
    path = tmp_path / "silo.pem"
    identity.write(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert SiloIdentity.load(path).public_bytes == identity.public_bytes
    with pytest.raises(FileExistsError):
        SiloIdentity.generate().write(path)
    assert SiloIdentity.load(path).public_bytes == identity.public_bytes
    for copier in (pickle.dumps, copy.deepcopy):
        with pytest.raises(TypeError, match="private key must not leave"):
            copier(identity)
    assert repr(identity) == f"SiloIdentity(public_bytes={identity.public_bytes.hex()!r})"
    (tmp_path / "not-a-key.pem").write_text("hello")
    with pytest.raises(ValueError, match="holds no unencrypted PEM Ed25519 private key"):
        SiloIdentity.load(tmp_path / "not-a-key.pem")
    with pytest.raises(ValueError, match="context must be non-empty bytes"):
        identity.sign(SiloKeyPair().public_bytes, b"")
