"""Keyed ChaCha20 streams: test vectors, determinism, key separation, exact uniform integers."""

import numpy as np
import pytest
from scipy import stats

from dpxgb_dask.privacy import NoiseSource, PrivacyLeakWarning, RandomStream, as_stream

SEED = 2**200 + 12345  # >= 128 bits: no PrivacyLeakWarning


def test_stream_is_pure_function_of_seed_and_key():
    a = NoiseSource(SEED)
    b = NoiseSource(SEED)
    # different request order across streams must not matter
    b.stream(tree=9, depth=9, purpose="leaf").uint64(100)
    x = a.stream(tree=3, depth=1, purpose="split").uint64(50)
    y = b.stream(tree=3, depth=1, purpose="split").uint64(50)
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "other",
    [
        dict(tree=4, depth=1, purpose="split"),
        dict(tree=3, depth=2, purpose="split"),
        dict(tree=3, depth=1, purpose="leaf"),
        dict(tree=3, depth=1, purpose="split", index=1),
        dict(tree=None, depth=1, purpose="split"),
    ],
)
def test_distinct_keys_give_distinct_streams(other):
    src = NoiseSource(SEED)
    x = src.stream(tree=3, depth=1, purpose="split").uint64(4)
    y = src.stream(**other).uint64(4)
    assert not np.array_equal(x, y)


def test_key_encoding_is_unambiguous():
    src = NoiseSource(SEED)
    # the same digits in another field, or glued into the purpose, must not collide
    x = src.stream(tree=1, purpose="a").uint64(2)
    y = src.stream(purpose="1a").uint64(2)
    z = src.stream(depth=1, purpose="a").uint64(2)
    w = src.stream(tree=1, depth=0, purpose="a").uint64(2)
    assert len({tuple(v) for v in (x, y, z, w)}) == 4


def test_different_seeds_differ_and_secure_sources_differ():
    x = NoiseSource(SEED).stream(purpose="s").uint64(4)
    y = NoiseSource(SEED + 1).stream(purpose="s").uint64(4)
    assert not np.array_equal(x, y)
    s1, s2 = NoiseSource(), NoiseSource()
    assert not s1.seeded
    assert not np.array_equal(s1.stream(purpose="s").uint64(4), s2.stream(purpose="s").uint64(4))


def test_secure_source_replays_a_release_within_its_lifetime():
    src = NoiseSource()
    first = src.stream(tree=0, depth=0, purpose="split")
    x = first.uint64(8)
    again = src.stream(tree=0, depth=0, purpose="split", replay=True)
    np.testing.assert_array_equal(x, again.uint64(8))
    assert again.stream_id == first.stream_id


def test_stream_key_reuse_is_refused():
    # reviewer's repro a8.py: the same key for two releases gave identical noise, silently
    src = NoiseSource(SEED)
    a = src.stream(purpose="leaf/grad", tree=0)
    with pytest.raises(ValueError, match="already issued"):
        src.stream(purpose="leaf/grad", tree=0)
    with pytest.raises(ValueError, match="replay"):
        src.stream(purpose="leaf/grad", tree=0, replay="yes")
    b = src.stream(purpose="leaf/grad", tree=0, index=1)
    assert a.stream_id != b.stream_id and len(a.stream_id) == 32
    # another source (another process) replaying the same seed is not affected
    c = NoiseSource(SEED).stream(purpose="leaf/grad", tree=0)
    assert c.stream_id == a.stream_id
    # the identifier reveals neither the key nor the noise
    assert a.stream_id not in (a._key.hex(), a.uint64(4).tobytes().hex())


def test_stream_counter_advances():
    s = NoiseSource(SEED).stream(purpose="p")
    a, b = s.uint64(3), s.uint64(3)
    assert s.blocks_drawn == 2 and not np.array_equal(a, b)


@pytest.mark.parametrize("seed", [0, 42, 2**64, b"short"])
def test_short_seed_warns(seed):
    with pytest.warns(PrivacyLeakWarning, match="bits"):
        NoiseSource(seed)


def test_a_source_of_public_choices_takes_a_short_seed_silently():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        public = NoiseSource(7, secret=False)
    same = NoiseSource(7, secret=False)
    a = public.stream(purpose="split", tree=0).uint64(4)
    assert np.array_equal(a, same.stream(purpose="split", tree=0).uint64(4))
    # another domain: a published public stream is never a secret source's stream
    with pytest.warns(PrivacyLeakWarning):
        secret = NoiseSource(7)
    assert not np.array_equal(a, secret.stream(purpose="split", tree=0).uint64(4))


@pytest.mark.parametrize("seed", [-1, 1.5, "abc", True])
def test_bad_seed_refused(seed):
    with pytest.raises(ValueError, match="seed"):
        NoiseSource(seed)


def test_purpose_required():
    with pytest.raises(ValueError, match="purpose"):
        NoiseSource(SEED).stream(purpose="")


def test_repr_does_not_show_key():
    assert repr(NoiseSource(SEED)) == "NoiseSource(seeded=True)"


def test_as_stream():
    s = RandomStream(b"k" * 32)
    assert as_stream(s) is s
    assert isinstance(as_stream(None), RandomStream)
    with pytest.raises(TypeError, match="NumPy generators"):
        as_stream(np.random.default_rng(0))


@pytest.mark.parametrize("bound", [1, 2, 7, 1000, 2**32 - 5, 2**32, 2**32 + 3, 2**62 + 11])
def test_uniform_below_is_uniform(bound):
    s = NoiseSource(SEED).stream(purpose="uniform", index=bound)
    n = 600_000
    x = s.uniform_below(bound, n)
    assert x.dtype == np.int64 and x.min() >= 0 and x.max() < bound
    if bound == 1:
        assert (x == 0).all()
        return
    k = min(bound, 16)
    # bins of exactly equal probability: floor(x * k / bound) for small bounds, x % k when k | bound
    bins = x % k if bound % k == 0 else np.floor(x / bound * k).astype(int)
    counts = np.bincount(bins, minlength=k)
    expected = np.array([((j + 1) * bound + k - 1) // k - (j * bound + k - 1) // k for j in range(k)]) / bound * n
    assert stats.chisquare(counts, expected).pvalue > 1e-4


def test_uniform_below_with_per_element_bounds():
    s = NoiseSource(SEED).stream(purpose="uniform-array")
    bounds = np.tile(np.array([3, 5, 2**40 + 1]), 200_000)
    x = s.uniform_below(bounds)
    assert (x < bounds).all() and (x >= 0).all()
    threes = x[0::3]
    assert stats.chisquare(np.bincount(threes, minlength=3)).pvalue > 1e-4


def test_uniform_below_refuses_bad_bounds():
    s = RandomStream(b"k" * 32)
    with pytest.raises(ValueError, match="bound"):
        s.uniform_below(0, 3)
    with pytest.raises(ValueError, match="bound"):
        s.uniform_below(np.array([3, 0]))


def test_bernoulli_exact_rational():
    s = NoiseSource(SEED).stream(purpose="bern")
    n = 1_000_000
    x = s.bernoulli(np.full(n, 3), np.full(n, 7))
    assert stats.binomtest(int(x.sum()), n, 3 / 7).pvalue > 1e-4


def test_keystream_is_rfc_8439_chacha20():
    # RFC 8439 §2.4.2: key 00 01 .. 1f, nonce 00 00 00 00 00 00 00 4a 00 00 00 00, block
    # counter 1; our lanes start at block 0, so the RFC's block is bytes 64.. of the lane
    # whose nonce is le64(request) || le32(lane) = 00 00 00 00 00 00 00 4a || 00 00 00 00
    from dpxgb_dask.privacy.randomness import chacha20_keystream

    request = int.from_bytes(bytes.fromhex("000000000000004a"), "little")
    block = chacha20_keystream(bytes(range(32)), request, 0, 128)[64:80]
    assert block.hex() == "224f51f3401bd9e12fde276fb8631ded"


def test_stream_test_vectors():
    # documented in dpxgb_dask/privacy/randomness.py: the key derivation and the lanes
    assert RandomStream(bytes(range(32))).random_bytes(16).hex() == "39fd2b7dd9c5196a8dbd0377b8dc4a49"
    s = NoiseSource(seed=2**200 + 7).stream(tree=0, depth=2, purpose="split")
    assert s.random_bytes(16).hex() == "1049bf3f819706188aeebe466ff91fed"


def test_lanes_are_prefixes_and_independent():
    s = RandomStream(bytes(range(32)))
    request = s.take_request()
    long, short = s.lane_words(request, 3, 100), s.lane_words(request, 3, 10)
    np.testing.assert_array_equal(long[:10], short)
    assert not np.array_equal(s.lane_words(request, 4, 10), short)
    assert not np.array_equal(s.lane_words(request + 1, 3, 10), short)
    with pytest.raises(ValueError, match="lane"):
        s.lane_words(request, 2**32, 1)


def test_a_sequential_stream_reads_one_keystream_in_order():
    """A random tree's structure is drawn from one cipher context (issue 40): its lanes are
    consecutive runs of ONE ChaCha20 keystream, a longer read of a lane of the current
    request starts with the same words, and the values are uniform and replayable."""
    from dpxgb_dask.privacy.randomness import SequentialStream, chacha20_keystream

    key = bytes(range(32))
    stream = SequentialStream(key)
    request = stream.take_request()
    first = stream.lane_words(request, 0, 4)
    longer = stream.lane_words(request, 0, 8)
    other = stream.lane_words(request, 1, 4)
    keystream = np.frombuffer(chacha20_keystream(key, 0, 0, 8 * 12), dtype="<u8")
    np.testing.assert_array_equal(longer[:4], first)
    np.testing.assert_array_equal(np.concatenate([longer, other]), keystream)  # in order
    with pytest.raises(ValueError, match="latest request"):
        stream.lane_words(request - 1 if request else 5, 0, 2)
    np.testing.assert_array_equal(
        np.frombuffer(stream.random_bytes(16), dtype="<u8"),
        np.frombuffer(chacha20_keystream(key, 0, 0, 8 * 14), dtype="<u8")[12:])

    def draws(s):
        return [s.uniform_below(7, size=5000), s.uniform_below(np.arange(1, 9)),
                s.uint64(77), s.uniform_below(3, size=100_000)]

    a, b = draws(SequentialStream(key)), draws(SequentialStream(key))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert stats.chisquare(np.bincount(a[3], minlength=3)).pvalue > 1e-4
    assert stats.chisquare(np.bincount(a[0], minlength=7)).pvalue > 1e-4
    source = NoiseSource(2**200 + 1, secret=False)
    assert isinstance(source.stream(purpose="t", sequential=True), SequentialStream)


def test_keyed_uniforms_match_their_twin_however_the_positions_are_split():
    """The row subsamples' numbers (issue 42: ChaCha20, not NumPy's Philox): position i of
    the stream, whatever the calls' split, equal to the twin that reads the keystream
    from its start; uniform; another key, other numbers."""
    from dpxgb_dask.privacy import naive_samplers
    from dpxgb_dask.privacy.randomness import keyed_uniforms

    key = bytes(range(32))
    whole = keyed_uniforms(key, 0, 700)
    np.testing.assert_array_equal(whole, naive_samplers.keyed_uniforms(key, 0, 700))
    for first, count in [(0, 1), (1, 7), (7, 9), (13, 300), (699, 1), (5, 0)]:
        np.testing.assert_array_equal(keyed_uniforms(key, first, count),
                                      whole[first:first + count])
    assert stats.kstest(whole, "uniform").pvalue > 1e-4
    assert not np.array_equal(keyed_uniforms(bytes(32), 0, 700), whole)
    with pytest.raises(ValueError, match="first and count must be >= 0"):
        keyed_uniforms(key, -1, 3)


def test_keyed_uniforms_cross_a_lane_at_2_to_the_35():
    """A lane holds 2**35 words; position 2**35 is the first word of lane 1."""
    from dpxgb_dask.privacy.randomness import chacha20_keystream, keyed_uniforms

    key, edge = bytes(range(32)), 1 << 35
    across = keyed_uniforms(key, edge - 3, 6)
    np.testing.assert_array_equal(across, np.concatenate(
        [keyed_uniforms(key, edge - 3, 3), keyed_uniforms(key, edge, 3)]))
    lane_one = np.frombuffer(chacha20_keystream(key, 0, 1, 24), dtype="<u8")
    np.testing.assert_array_equal(across[3:], (lane_one >> np.uint64(11)) / 2**53)
