import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpxgb_dask._core import pack_cuts
from dpxgb_dask._core.binning import bin_features
from dpxgb_dask._core.naive import binning as naive

MISSING_BIN = 255


def _bin(X, cuts, n_threads=2, missing_bin=MISSING_BIN):
    values, offsets = pack_cuts(cuts)
    out = np.empty(X.shape, dtype=np.uint8, order="F")
    bin_features(X, values, offsets, missing_bin, out, n_threads)
    return out


@pytest.mark.parametrize("n_samples", [0, 1, 7, 500])
@pytest.mark.parametrize("order", ["C", "F"])
def test_matches_naive_twin(n_samples, order, random_cuts):
    rng = np.random.default_rng(n_samples)
    n_features = 6
    cuts = random_cuts(rng, n_features, max_cuts=40)
    X = np.round(rng.normal(size=(n_samples, n_features)), 2)  # rounding creates ties with cuts
    X[rng.random(X.shape) < 0.1] = np.nan
    if n_samples:
        X[0, 0] = np.inf
        X[-1, 1] = -np.inf
    X = np.asarray(X, order=order)
    expected = naive.bin_features(X, cuts, MISSING_BIN)
    np.testing.assert_array_equal(_bin(X, cuts), expected)
    assert _bin(X, cuts).flags.f_contiguous


@pytest.mark.parametrize("order", ["C", "F"])
def test_float32_rows_bin_as_their_exact_float64_values(order, random_cuts):
    rng = np.random.default_rng(11)
    cuts = random_cuts(rng, 5, max_cuts=40)
    X = rng.normal(size=(400, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:5, 0] = np.float32(cuts[0][0]) if len(cuts[0]) else 0.0  # ties with a cut
    X = np.asarray(X, order=order)
    expected = naive.bin_features(X.astype(np.float64), cuts, MISSING_BIN)
    np.testing.assert_array_equal(_bin(X, cuts), expected)


def test_all_missing_feature_and_feature_without_cuts():
    X = np.array([[np.nan, 1.0], [np.nan, -3.0], [np.nan, np.nan]])
    out = _bin(X, [np.array([0.0, 1.0]), np.array([])])
    np.testing.assert_array_equal(out[:, 0], [MISSING_BIN] * 3)
    np.testing.assert_array_equal(out[:, 1], [0, 0, MISSING_BIN])


def test_sample_order_independence(random_cuts):
    rng = np.random.default_rng(1)
    cuts = random_cuts(rng, 4, max_cuts=30)
    X = rng.normal(size=(300, 4))
    perm = rng.permutation(300)
    np.testing.assert_array_equal(_bin(X[perm], cuts), _bin(X, cuts)[perm])


def test_thread_count_does_not_change_bins(random_cuts):
    rng = np.random.default_rng(2)
    cuts = random_cuts(rng, 5, max_cuts=254)
    X = rng.normal(size=(1000, 5))
    np.testing.assert_array_equal(_bin(X, cuts, n_threads=1), _bin(X, cuts, n_threads=2))


@settings(max_examples=200, deadline=None)
@given(
    cuts=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30, unique=True),
    x=st.floats(-2e6, 2e6, allow_nan=False),
    data=st.data(),
)
def test_bin_threshold_equals_raw_threshold(cuts, x, data):
    """bin(x) <= t  <=>  x <= cuts[t]: the identity predict.pyx relies on."""
    cuts = np.array(sorted(cuts))
    t = data.draw(st.integers(0, len(cuts) - 1))
    b = _bin(np.array([[x]]), [cuts])[0, 0]
    assert (b <= t) == (x <= cuts[t])


def test_pack_cuts_rejects_unsorted_or_nonfinite():
    with pytest.raises(ValueError, match="feature 1"):
        pack_cuts([np.array([0.0, 1.0]), np.array([1.0, 0.0])])
    with pytest.raises(ValueError, match="feature 0"):
        pack_cuts([np.array([0.0, np.nan])])
    values, offsets = pack_cuts([])
    assert values.size == 0 and offsets.tolist() == [0]


@pytest.mark.parametrize("n_cuts", [1, 2, 3, 7, 8, 31, 32, 127, 128, 254])
def test_every_cut_count_against_searchsorted(n_cuts):
    # the search takes bit_length(n_cuts) fixed steps over cuts padded with +inf to
    # 2**k - 1 entries: check the padding edges, ties with cuts, infinities and NaN, over
    # several row blocks (700 rows: 256 + 256 + 188)
    rng = np.random.default_rng(n_cuts)
    cuts = np.sort(rng.choice(np.arange(-400, 400) / 8.0, n_cuts, replace=False))
    X = rng.choice(np.concatenate([cuts, cuts + 1 / 16, cuts - 1 / 16,
                                   [-np.inf, np.inf, np.nan, -1e300, 1e300]]), (700, 3))
    out = _bin(X, [cuts] * 3, missing_bin=255)
    expected = np.where(np.isnan(X), 255, np.searchsorted(cuts, X, side="left"))
    np.testing.assert_array_equal(out, expected)


def test_more_cuts_than_bins_is_refused():
    with pytest.raises(ValueError, match="at most 255"):
        _bin(np.zeros((3, 1)), [np.arange(256.0)], missing_bin=255)
