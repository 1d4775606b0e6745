import numpy as np
import pytest

from dpxgb_dask._core import empty_histograms
from dpxgb_dask._core.common import HISTOGRAM_DTYPE
from dpxgb_dask._core.histogram import (
    add_histograms,
    build_node_histograms,
    build_root_histogram,
    subtract_histograms,
)
from dpxgb_dask._core.naive import histogram as naive

FIELDS = ("sum_gradients", "sum_hessians", "count")


def _root(X_binned, g, h, n_bins, n_threads=2):
    hist = np.empty((X_binned.shape[1], n_bins), dtype=HISTOGRAM_DTYPE)
    hist[...] = (np.nan, np.nan, 7)  # garbage: the kernel must overwrite every cell
    build_root_histogram(X_binned, g, h, hist, n_threads)
    return hist


def _nodes(X_binned, g, h, rows, slots, n_slots, n_bins, n_threads=2):
    hist = np.empty((n_slots, X_binned.shape[1], n_bins), dtype=HISTOGRAM_DTYPE)
    hist[...] = (np.nan, np.nan, 7)
    build_node_histograms(X_binned, g, h, rows.astype(np.int32), slots.astype(np.int32),
                          hist, n_threads)
    return hist


def assert_hist_equal(actual, expected, exact=True):
    np.testing.assert_array_equal(actual["count"], expected["count"])
    for name in ("sum_gradients", "sum_hessians"):
        if exact:
            np.testing.assert_array_equal(actual[name], expected[name])
        else:
            np.testing.assert_allclose(actual[name], expected[name], rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("n_samples", [0, 1, 3, 4, 5, 257])
@pytest.mark.parametrize("n_bins", [2, 17, 256])
def test_root_matches_naive_twin(n_samples, n_bins, binned_problem):
    rng = np.random.default_rng(n_samples * 1000 + n_bins)
    X_binned, g, h = binned_problem(rng, n_samples, 4, n_bins)
    # Same summation order as the twin, so float64 sums agree bit for bit.
    assert_hist_equal(_root(X_binned, g, h, n_bins), naive.build_root_histogram(X_binned, g, h, n_bins))


@pytest.mark.parametrize("n_samples", [0, 1, 300])
@pytest.mark.parametrize("n_slots", [1, 5, 32])
def test_node_histograms_match_naive_twin(n_samples, n_slots, binned_problem):
    rng = np.random.default_rng(n_samples + n_slots)
    X_binned, g, h = binned_problem(rng, n_samples, 5, 64)
    rows = np.flatnonzero(rng.random(n_samples) < 0.7)
    slots = rng.integers(0, n_slots, size=rows.size)
    expected = naive.build_node_histograms(X_binned, g, h, rows, slots, n_slots, 64)
    assert_hist_equal(_nodes(X_binned, g, h, rows, slots, n_slots, 64), expected)


def test_empty_slots_are_zeroed(binned_problem):
    rng = np.random.default_rng(3)
    X_binned, g, h = binned_problem(rng, 50, 3, 8)
    hist = _nodes(X_binned, g, h, np.arange(50), np.zeros(50), n_slots=3, n_bins=8)
    assert hist[1:]["count"].sum() == 0
    assert np.all(hist[1:]["sum_gradients"] == 0) and np.all(hist[1:]["sum_hessians"] == 0)


def test_all_missing_feature_lands_in_missing_bin(binned_problem):
    rng = np.random.default_rng(4)
    X_binned, g, h = binned_problem(rng, 100, 3, 16)
    X_binned[:, 1] = 15
    hist = _root(X_binned, g, h, 16)
    assert hist[1, 15]["count"] == 100
    assert hist[1, :15]["count"].sum() == 0
    np.testing.assert_allclose(hist[1, 15]["sum_gradients"], g.astype(np.float64).sum())


def test_sample_order_independence(binned_problem):
    rng = np.random.default_rng(5)
    X_binned, g, h = binned_problem(rng, 2000, 4, 32)
    rows = np.arange(2000)
    slots = rng.integers(0, 4, size=2000)
    perm = rng.permutation(2000)
    a = _nodes(X_binned, g, h, rows, slots, 4, 32)
    b = _nodes(X_binned, g, h, rows[perm], slots[perm], 4, 32)
    assert_hist_equal(a, b, exact=False)
    # Permuting the rows of the data itself (with their gradients) changes nothing either.
    c = _root(np.asfortranarray(X_binned[perm]), g[perm], h[perm], 32)
    assert_hist_equal(c, _root(X_binned, g, h, 32), exact=False)


def test_root_equals_single_slot_node_build(binned_problem):
    rng = np.random.default_rng(6)
    X_binned, g, h = binned_problem(rng, 1001, 6, 256)
    node = _nodes(X_binned, g, h, np.arange(1001), np.zeros(1001), 1, 256)[0]
    assert_hist_equal(_root(X_binned, g, h, 256), node)


def test_thread_count_does_not_change_sums(binned_problem):
    rng = np.random.default_rng(7)
    X_binned, g, h = binned_problem(rng, 5000, 7, 256)
    assert_hist_equal(_root(X_binned, g, h, 256, n_threads=1), _root(X_binned, g, h, 256, n_threads=2))


def test_subtraction_gives_the_sibling(binned_problem):
    rng = np.random.default_rng(8)
    X_binned, g, h = binned_problem(rng, 3000, 5, 64)
    parent_slot = rng.integers(0, 3, size=3000)          # three parents ...
    goes_left = rng.random(3000) < 0.3                   # ... each split in two
    rows = np.arange(3000)
    parent = _nodes(X_binned, g, h, rows, parent_slot, 3, 64)
    left = _nodes(X_binned, g, h, rows[goes_left], parent_slot[goes_left], 3, 64)
    right = _nodes(X_binned, g, h, rows[~goes_left], parent_slot[~goes_left], 3, 64)
    sibling = empty_histograms(3, 5, 64)
    subtract_histograms(parent, left, sibling, 2)
    assert_hist_equal(sibling, right, exact=False)
    assert_hist_equal(sibling, naive.subtract_histograms(parent, left))
    # In place (sibling aliasing parent) is allowed.
    subtract_histograms(parent, left, parent, 2)
    assert_hist_equal(parent, sibling)


def test_subtraction_of_empty_histograms():
    a = empty_histograms(0, 3, 8)
    subtract_histograms(a, a, a, 1)
    with pytest.raises(ValueError, match="same shape"):
        subtract_histograms(empty_histograms(1, 3, 8), empty_histograms(2, 3, 8),
                            empty_histograms(1, 3, 8), 1)


def test_errors_name_the_offending_argument(binned_problem):
    rng = np.random.default_rng(9)
    X_binned, g, h = binned_problem(rng, 10, 2, 16)
    hist = empty_histograms(2, 2, 16)
    with pytest.raises(ValueError, match="n_bins"):
        build_root_histogram(X_binned, g, h, empty_histograms(1, 2, 8)[0], 1)
    with pytest.raises(ValueError, match="sample_indices"):
        build_node_histograms(X_binned, g, h, np.array([10], np.int32), np.array([0], np.int32), hist, 1)
    with pytest.raises(ValueError, match="sample_slots"):
        build_node_histograms(X_binned, g, h, np.array([1], np.int32), np.array([2], np.int32), hist, 1)
    with pytest.raises(ValueError, match="gradients"):
        build_root_histogram(X_binned, g[:5], h, hist[0], 1)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("bad_row", [2, 9])  # in the unrolled loop, in its tail
def test_a_bin_past_the_histogram_is_refused_by_every_kernel(bad_row, n_threads):
    X_binned = np.asfortranarray(np.zeros((10, 2), dtype=np.uint8))
    X_binned[bad_row, 1] = 8
    g = np.ones(10, np.float32)
    with pytest.raises(ValueError, match="n_bins = 8"):
        build_root_histogram(X_binned, g, g, empty_histograms(1, 2, 8)[0], n_threads)
    with pytest.raises(ValueError, match="n_bins = 8"):
        build_node_histograms(X_binned, g, g, np.array([0, bad_row], np.int32),
                              np.array([0, 1], np.int32), empty_histograms(2, 2, 8), n_threads)
    # a row that is not counted is not checked
    build_node_histograms(X_binned, g, g, np.array([0, 1], np.int32),
                          np.array([0, 1], np.int32), empty_histograms(2, 2, 8), 1)


def test_addition_gives_the_sum_of_partial_histograms(binned_problem):
    rng = np.random.default_rng(9)
    X_binned, g, h = binned_problem(rng, 3000, 5, 64)
    slot = rng.integers(0, 3, size=3000)
    first_half = rng.random(3000) < 0.4
    rows = np.arange(3000)
    a = _nodes(X_binned, g, h, rows[first_half], slot[first_half], 3, 64)
    b = _nodes(X_binned, g, h, rows[~first_half], slot[~first_half], 3, 64)
    total = empty_histograms(3, 5, 64)
    add_histograms(a, b, total, 2)
    assert_hist_equal(total, naive.add_histograms(a, b))
    assert_hist_equal(total, _nodes(X_binned, g, h, rows, slot, 3, 64), exact=False)
    add_histograms(a, b, a, 1)  # in place (the total aliasing an addend)
    assert_hist_equal(a, total)
    with pytest.raises(ValueError, match="same shape"):
        add_histograms(empty_histograms(1, 3, 8), empty_histograms(1, 3, 9),
                       empty_histograms(1, 3, 8), 1)
