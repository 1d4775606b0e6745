"""Weighted quantile sketch kernel against its naive twin and the exact weighted quantiles.

The documented bounds (module docstring of dpxgb_dask._core.sketch), in units of W:
make eps = 0; query cut k is within eps W / 2 of the target rank k W / (n_cuts + 1), for
exact summaries and for the approximate ones a sub-summary of an exact summary is.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpxgb_dask._core import sketch as K
from dpxgb_dask._core.naive import sketch as N

# Rank sums are float64; comparisons between different summation orders get this slack.
REL_TOL = 1e-9

FIELDS = ("value", "rmin", "rmax", "wmin")
HYPOTHESIS = settings(max_examples=150, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------------------
# data generators
# ----------------------------------------------------------------------------------------

VALUE_KINDS = ("continuous", "few_distinct", "one_value", "with_nan", "all_nan", "grid")
WEIGHT_KINDS = ("lognormal", "one_huge", "tied", "integer_with_zeros", "tiny_and_huge", "uniform")


def make_points(rng, n, value_kind, weight_kind):
    if value_kind == "continuous":
        values = rng.normal(size=n) * 10.0
    elif value_kind == "few_distinct":
        values = rng.integers(0, 5, size=n).astype(np.float64)
    elif value_kind == "one_value":
        values = np.full(n, 3.25)
    elif value_kind == "with_nan":
        values = rng.normal(size=n).round(1)
        values[rng.random(n) < 0.3] = np.nan
    elif value_kind == "all_nan":
        values = np.full(n, np.nan)
    else:  # grid: bin centres, as in the DP-histogram use
        values = (np.arange(n) % 64 + 0.5) / 64.0
    if weight_kind == "lognormal":
        weights = rng.lognormal(sigma=3.0, size=n)
    elif weight_kind == "one_huge":
        weights = rng.uniform(0.0, 1.0, size=n)
        if n:
            weights[rng.integers(n)] = 1e6
    elif weight_kind == "tied":
        weights = np.full(n, 0.1)
    elif weight_kind == "integer_with_zeros":
        weights = rng.integers(0, 4, size=n).astype(np.float64)
    elif weight_kind == "tiny_and_huge":
        weights = np.where(rng.random(n) < 0.5, 1e-12, 1e3) * rng.uniform(0.5, 1.0, size=n)
    else:
        weights = rng.uniform(0.0, 1.0, size=n)
    return values, weights


@st.composite
def point_sets(draw, max_n=300, weight_kinds=WEIGHT_KINDS):
    n = draw(st.integers(0, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    value_kind = draw(st.sampled_from(VALUE_KINDS))
    weight_kind = draw(st.sampled_from(weight_kinds))
    return make_points(np.random.default_rng(seed), n, value_kind, weight_kind)


# Small lists straight from hypothesis: shrinks to minimal counterexamples.
small_points = st.lists(
    st.tuples(
        st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.0, np.nan]),
                  st.floats(-1e6, 1e6, allow_nan=False)),
        st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0.0, 1e6)),
    ),
    max_size=25,
).map(lambda pts: (np.array([p[0] for p in pts], dtype=np.float64),
                   np.array([p[1] for p in pts], dtype=np.float64)))


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------

def total(values, weights):
    return N.total_weight(values, weights)


def assert_valid(summary, values, weights):
    W = total(values, weights)
    assert N.validity_violation(summary, values, weights) <= REL_TOL * max(W, 1e-300)


def assert_invariants(s):
    """Invariants every summary of the module keeps (up to rounding)."""
    if s.shape[0] == 0:
        return
    W = s["rmax"][-1]
    tol = REL_TOL * W
    assert np.all(np.diff(s["value"]) > 0)
    assert s["rmin"][0] == 0.0
    assert s["rmax"][0] == s["wmin"][0]                                # first entry exact
    assert abs(s["rmin"][-1] + s["wmin"][-1] - W) <= tol               # last entry exact
    assert np.all(s["wmin"] > 0)
    assert np.all(s["rmin"] + s["wmin"] <= s["rmax"] + tol)
    assert np.all(s["rmin"][1:] >= s["rmin"][:-1] + s["wmin"][:-1] - tol)
    assert np.all(s["rmax"][1:] - s["wmin"][1:] >= s["rmax"][:-1] - tol)


def summary_error(summary):
    """The error eps of a summary in units of W (module docstring of the kernel): the largest
    uncertainty at an entry or in a gap, over W."""
    if summary.shape[0] == 0 or summary["rmax"][-1] <= 0:
        return 0.0
    rmin, rmax, wmin = summary["rmin"], summary["rmax"], summary["wmin"]
    worst = max(float(np.max(rmax - rmin - wmin)), float(rmax[0] - wmin[0]), 0.0)
    if summary.shape[0] > 1:
        worst = max(worst, float(np.max((rmax[1:] - wmin[1:]) - (rmin[:-1] + wmin[:-1]))))
    return worst / rmax[-1]


def sub_summary(summary, rng, keep):
    """A valid approximate summary: the first, the last and ``keep`` random other entries
    of an exact one (each kept entry keeps its bounds)."""
    n = summary.shape[0]
    inner = rng.permutation(np.arange(1, n - 1))[:keep] if n > 2 else np.empty(0, int)
    return summary[np.unique(np.r_[0, inner, n - 1]) if n else np.empty(0, int)].copy()


def assert_same(a, b):
    assert a.dtype == b.dtype == K.SUMMARY_DTYPE
    assert a.shape == b.shape
    for f in FIELDS:
        np.testing.assert_array_equal(a[f], b[f], err_msg=f)


def assert_close(a, b, W):
    assert a.shape == b.shape
    np.testing.assert_array_equal(a["value"], b["value"])
    for f in FIELDS[1:]:
        np.testing.assert_allclose(a[f], b[f], rtol=0, atol=REL_TOL * max(W, 1e-300),
                                   err_msg=f)


def check_cuts(cuts, values, weights, n_cuts, eps):
    """Cuts are strictly increasing data points, each target within eps W / 2 of one."""
    W = total(values, weights)
    assert cuts.dtype == np.float64
    assert cuts.size <= n_cuts
    assert np.all(np.diff(cuts) > 0)
    if W == 0:
        assert cuts.size == 0
        return
    assert cuts.size >= 1 or n_cuts == 0
    v, _ = N._points(values, weights)
    assert np.all(np.isin(cuts, v))
    if n_cuts:
        errors = N.cut_rank_errors(cuts, values, weights, n_cuts)
        assert errors.max() <= eps * W / 2 + REL_TOL * W, (errors.max() / W, eps)


# ----------------------------------------------------------------------------------------
# make
# ----------------------------------------------------------------------------------------

def test_summary_dtype_matches_struct_and_twin():
    assert K.SUMMARY_DTYPE == N.SUMMARY_DTYPE
    assert K.SUMMARY_DTYPE.names == FIELDS
    assert K.SUMMARY_DTYPE.itemsize == 32


@pytest.mark.parametrize("value_kind", VALUE_KINDS)
@pytest.mark.parametrize("weight_kind", WEIGHT_KINDS)
def test_make_matches_naive(value_kind, weight_kind):
    rng = np.random.default_rng(VALUE_KINDS.index(value_kind) * 10 + WEIGHT_KINDS.index(weight_kind))
    values, weights = make_points(rng, 200, value_kind, weight_kind)
    got = K.make_summary(values, weights)
    want = N.make_summary(values, weights)
    W = total(values, weights)
    if weight_kind == "integer_with_zeros":  # integer sums are exact in any order
        assert_same(got, want)
    else:
        assert_close(got, want, W)
    assert_invariants(got)
    assert summary_error(got) <= REL_TOL


@pytest.mark.parametrize("order", ["random", "sorted", "reversed", "all_equal", "organ_pipe",
                                   "few_values_many_weights"])
def test_make_large_inputs_exercise_the_sort(order):
    # n well above the insertion-sort cut-off (16), integer weights: the exact summary is
    # checked against an independent bincount computation.
    rng = np.random.default_rng(7)
    n = 20000
    values = rng.integers(0, 3000, size=n).astype(np.float64)
    if order == "sorted":
        values.sort()
    elif order == "reversed":
        values = np.sort(values)[::-1].copy()
    elif order == "all_equal":
        values[:] = 1.5
    elif order == "organ_pipe":
        half = np.arange(n // 2, dtype=np.float64)
        values = np.concatenate([half, half[::-1]])
    elif order == "few_values_many_weights":
        values = rng.integers(0, 3, size=n).astype(np.float64)
    weights = rng.integers(1, 5, size=n).astype(np.float64)
    got = K.make_summary(values, weights)
    xs, inverse = np.unique(values, return_inverse=True)
    at = np.bincount(inverse, weights=weights)
    np.testing.assert_array_equal(got["value"], xs)
    np.testing.assert_array_equal(got["wmin"], at)
    np.testing.assert_array_equal(got["rmax"], np.cumsum(at))
    np.testing.assert_array_equal(got["rmin"], np.cumsum(at) - at)


@pytest.mark.parametrize("n", [0, 1, 2, 16, 17, 1000])
def test_sort_heapsort_fallback_and_full_sort(n):
    # depth_limit=0 turns the introsort into a pure heapsort (its fallback on adversarial
    # inputs); without the final insertion sort it alone must sort.
    rng = np.random.default_rng(n)
    values = rng.integers(0, max(n // 4, 1), size=n).astype(np.float64)
    weights = rng.integers(0, 3, size=n).astype(np.float64)
    order = np.lexsort((weights, values))
    for depth_limit, final in ((0, n <= 16), (-1, True), (3, True)):
        got_v, got_w = K._sort_points(values, weights, depth_limit, final)
        np.testing.assert_array_equal(got_v, values[order])
        np.testing.assert_array_equal(got_w, weights[order])


def test_make_edge_cases():
    empty = K.make_summary(np.empty(0), np.empty(0))
    assert empty.shape == (0,) and empty.dtype == K.SUMMARY_DTYPE

    one = K.make_summary([2.5], [4.0])
    assert one.tolist() == [(2.5, 0.0, 4.0, 4.0)]

    assert K.make_summary([np.nan, np.nan], [1.0, 2.0]).shape == (0,)
    assert K.make_summary([1.0, 2.0], [0.0, 0.0]).shape == (0,)
    # NaN values and zero weights are skipped, equal values combined.
    s = K.make_summary([1.0, np.nan, 1.0, 3.0, 2.0], [1.0, 5.0, 2.0, 4.0, 0.0])
    assert s.tolist() == [(1.0, 0.0, 3.0, 3.0), (3.0, 3.0, 7.0, 4.0)]
    # -0.0 and 0.0 are one value, stored as +0.0 whatever the order.
    for vals in ([-0.0, 0.0], [0.0, -0.0]):
        z = K.make_summary(vals, [1.0, 2.0])
        assert z.shape == (1,) and z["wmin"][0] == 3.0
        assert not np.signbit(z["value"][0])


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf, -np.inf])
def test_make_rejects_bad_weights(bad):
    with pytest.raises(ValueError, match="weights"):
        K.make_summary([1.0, 2.0], [1.0, bad])


def test_make_rejects_bad_shapes_and_values():
    with pytest.raises(ValueError, match="weights"):
        K.make_summary([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="values"):
        K.make_summary([1.0, np.inf], [1.0, 1.0])
    with pytest.raises(ValueError, match="values"):
        K.make_summary(np.ones((2, 2)), np.ones((2, 2)))


@HYPOTHESIS
@given(pts=point_sets(), data=st.data())
def test_make_is_exact_and_order_independent(pts, data):
    values, weights = pts
    s = K.make_summary(values, weights)
    assert_valid(s, values, weights)
    assert_invariants(s)
    assert summary_error(s) <= REL_TOL
    perm = np.array(data.draw(st.permutations(range(values.size))), dtype=np.intp)
    s_perm = K.make_summary(values[perm], weights[perm])
    assert s_perm.tobytes() == s.tobytes()


@HYPOTHESIS
@given(pts=small_points)
def test_make_small_lists(pts):
    values, weights = pts
    s = K.make_summary(values, weights)
    assert_valid(s, values, weights)
    assert_invariants(s)
    assert_close(s, N.make_summary(values, weights), total(values, weights))


# ----------------------------------------------------------------------------------------
# query
# ----------------------------------------------------------------------------------------

@HYPOTHESIS
@given(pts=point_sets(), n_cuts=st.integers(0, 40))
def test_query_exact_summary_gives_exact_weighted_quantiles(pts, n_cuts):
    values, weights = pts
    s = K.make_summary(values, weights)
    cuts = K.query_cuts(s, n_cuts)
    check_cuts(cuts, values, weights, n_cuts, eps=0.0)
    assert_same_cuts = np.testing.assert_array_equal
    assert_same_cuts(cuts, N.query_cuts(s, n_cuts))
    W = total(values, weights)
    if n_cuts and W > 0 and np.all(weights == np.round(weights)):
        # Integer weights: ranks are exact in any summation order, so the cuts are exactly
        # the weighted quantiles min{x : r+(x) >= k W / (n_cuts + 1)}.
        want = np.unique([N.weighted_quantile(values, weights, t)
                          for t in N.cut_targets(W, n_cuts)])
        assert_same_cuts(cuts, want)


@HYPOTHESIS
@given(pts=point_sets(), n_cuts=st.integers(1, 40), keep=st.integers(0, 30),
       seed=st.integers(0, 2**32 - 1))
def test_query_bound_on_approximate_summaries(pts, n_cuts, keep, seed):
    values, weights = pts
    s = sub_summary(K.make_summary(values, weights), np.random.default_rng(seed), keep)
    assert_valid(s, values, weights)
    cuts = K.query_cuts(s, n_cuts)
    check_cuts(cuts, values, weights, n_cuts, summary_error(s))
    if np.all(weights == np.round(weights)):
        np.testing.assert_array_equal(cuts, N.query_cuts(s, n_cuts))


def test_query_by_hand():
    # Unit weights on 1..9, W = 9: targets 3, 6 -> 3 and 6 (r+(3) = 3 >= 3).
    s = K.make_summary(np.arange(1.0, 10.0), np.ones(9))
    np.testing.assert_array_equal(K.query_cuts(s, 2), [3.0, 6.0])
    # One heavy point takes every target it covers: fewer cuts than asked.
    s = K.make_summary([1.0, 2.0, 3.0], [1.0, 100.0, 1.0])
    np.testing.assert_array_equal(K.query_cuts(s, 10), [2.0])
    # Fewer distinct values than cuts.
    s = K.make_summary([5.0, 7.0], [1.0, 1.0])
    np.testing.assert_array_equal(K.query_cuts(s, 50), [5.0, 7.0])
    assert K.query_cuts(K.make_summary(np.empty(0), np.empty(0)), 5).shape == (0,)
    assert K.query_cuts(s, 0).shape == (0,)
    with pytest.raises(ValueError, match="n_cuts"):
        K.query_cuts(s, -1)


def test_summary_arguments_are_checked():
    s = K.make_summary([1.0, 2.0], [1.0, 1.0])
    with pytest.raises(TypeError, match="SUMMARY_DTYPE"):
        K.query_cuts(np.zeros(3), 2)
    with pytest.raises(ValueError, match="increasing"):
        K.query_cuts(s[::-1], 2)
    bad = s.copy()
    bad["rmax"][0] = np.nan
    with pytest.raises(ValueError, match="rmax"):
        K.query_cuts(bad, 2)
