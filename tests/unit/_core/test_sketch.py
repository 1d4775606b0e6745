"""Weighted quantile sketch kernel against its naive twin and the exact weighted quantiles.

The documented bounds (module docstring of dpxgb_dask._core.sketch), in units of W:
make eps = 0; merge eps <= (eps_a W_a + eps_b W_b) / W; prune to b entries adds <= 1/(b-1);
merge_and_prune of m summaries eps <= sum eps_i W_i / W + max(1, ceil(log2 m)) / (b-1);
query cut k is within eps W / 2 of the target rank k W / (n_cuts + 1), for exact summaries
and for approximate ones (sub-summaries of exact ones, merged and pruned summaries).
"""
import math

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


def split_points(rng, values, weights, n_parts):
    """Random disjoint parts of the points, as rows spread over silos."""
    owner = rng.integers(0, n_parts, size=values.size)
    return [(values[owner == p], weights[owner == p]) for p in range(n_parts)]


def merge_and_prune_bound(errors, totals, size):
    """The documented error bound of merge_and_prune (units of W) for inputs of errors
    ``errors`` and totals ``totals``: their weighted mean plus one 1/(size-1) per level."""
    levels = max(1, math.ceil(math.log2(len(errors))))
    W = sum(totals)
    mean = sum(e * w for e, w in zip(errors, totals)) / W if W > 0 else 0.0
    return mean + levels / (size - 1)


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
# merge
# ----------------------------------------------------------------------------------------

@HYPOTHESIS
@given(a=point_sets(max_n=150), b=point_sets(max_n=150), size_a=st.integers(2, 12),
       size_b=st.integers(2, 12))
def test_merge_matches_naive_and_bound(a, b, size_a, size_b):
    sa = K.prune_summary(K.make_summary(*a), size_a)
    sb = K.prune_summary(K.make_summary(*b), size_b)
    merged = K.merge_summaries(sa, sb)
    # Same formula, same floating-point operations: identical.
    assert_same(merged, N.merge_summaries(sa, sb))
    # Commutative, bit for bit.
    assert K.merge_summaries(sb, sa).tobytes() == merged.tobytes()
    values = np.concatenate([a[0], b[0]])
    weights = np.concatenate([a[1], b[1]])
    assert_valid(merged, values, weights)
    assert_invariants(merged)
    W_a, W_b = total(*a), total(*b)
    if W_a + W_b > 0:
        weighted = (summary_error(sa) * W_a + summary_error(sb) * W_b) / (W_a + W_b)
        assert summary_error(merged) <= weighted + REL_TOL


@HYPOTHESIS
@given(a=point_sets(max_n=120), b=point_sets(max_n=120))
def test_merge_of_exact_summaries_is_exact(a, b):
    merged = K.merge_summaries(K.make_summary(*a), K.make_summary(*b))
    values = np.concatenate([a[0], b[0]])
    weights = np.concatenate([a[1], b[1]])
    assert_close(merged, K.make_summary(values, weights), total(values, weights))
    assert summary_error(merged) <= REL_TOL


@HYPOTHESIS
@given(parts=st.lists(point_sets(max_n=100), min_size=3, max_size=3),
       size=st.integers(2, 10))
def test_merge_associative_up_to_rounding(parts, size):
    sa, sb, sc = (K.prune_summary(K.make_summary(*p), size) for p in parts)
    left = K.merge_summaries(K.merge_summaries(sa, sb), sc)
    right = K.merge_summaries(sa, K.merge_summaries(sb, sc))
    values = np.concatenate([p[0] for p in parts])
    weights = np.concatenate([p[1] for p in parts])
    assert_close(left, right, total(values, weights))
    eps_max = max(summary_error(s) for s in (sa, sb, sc))
    for s in (left, right):
        assert_valid(s, values, weights)
        assert summary_error(s) <= eps_max + REL_TOL


def test_merge_with_empty_and_by_hand():
    a = K.make_summary([1.0, 3.0], [1.0, 2.0])
    empty = K.make_summary(np.empty(0), np.empty(0))
    assert_same(K.merge_summaries(a, empty), a)
    assert_same(K.merge_summaries(empty, a), a)
    assert K.merge_summaries(empty, empty).shape == (0,)
    # A pruned summary of 1..5 (unit weights) keeps 1 and 5; merging with {2: 1} gives the
    # bounds at 2 from the gap (1, 5) of the first summary: r- >= 1, r+ <= 4.
    s = K.prune_summary(K.make_summary([1.0, 2.0, 3.0, 4.0, 5.0], np.ones(5)), 2)
    assert s.tolist() == [(1.0, 0.0, 1.0, 1.0), (5.0, 4.0, 5.0, 1.0)]
    m = K.merge_summaries(s, K.make_summary([2.0], [1.0]))
    assert m.tolist() == [(1.0, 0.0, 1.0, 1.0), (2.0, 1.0, 5.0, 1.0), (5.0, 5.0, 6.0, 1.0)]
    # Read-only inputs (e.g. received from another process) are accepted.
    a.flags.writeable = False
    assert_same(K.merge_summaries(a, a), N.merge_summaries(a, a))


# ----------------------------------------------------------------------------------------
# prune
# ----------------------------------------------------------------------------------------

@HYPOTHESIS
@given(pts=point_sets(weight_kinds=("integer_with_zeros",)), size=st.integers(2, 40))
def test_prune_matches_naive_exactly_with_integer_weights(pts, size):
    s = K.make_summary(*pts)
    # Make it approximate first, so prune meets non-exact rank bounds too.
    half = pts[0].size // 2
    approx = K.merge_summaries(K.prune_summary(K.make_summary(pts[0][:half], pts[1][:half]), 7),
                               K.make_summary(pts[0][half:], pts[1][half:]))
    for summary in (s, approx):
        assert_same(K.prune_summary(summary, size), N.prune_summary(summary, size))


@HYPOTHESIS
@given(pts=point_sets(), size=st.integers(2, 40))
def test_prune_bound_and_validity(pts, size):
    values, weights = pts
    s = K.make_summary(values, weights)
    p = K.prune_summary(s, size)
    assert p.shape[0] <= size
    assert_valid(p, values, weights)
    assert_invariants(p)
    if s.shape[0] <= size:
        assert_same(p, s)
    else:
        assert p[0] == s[0] and p[-1] == s[-1]
        assert np.all(np.isin(p["value"], s["value"]))
    assert summary_error(p) <= 1.0 / (size - 1) + REL_TOL
    # Pruning an approximate summary adds at most 1/(b-1) to its error.
    smaller = max(2, size // 2)
    again = K.prune_summary(p, smaller)
    assert_valid(again, values, weights)
    assert summary_error(again) <= summary_error(p) + 1.0 / (smaller - 1) + REL_TOL


def test_prune_bound_is_attained_closely():
    # Dense unit-weight data: the bound 1/(b-1) is nearly reached, so it cannot be tightened
    # into a smaller constant.
    values = np.arange(10000, dtype=np.float64)
    s = K.prune_summary(K.make_summary(values, np.ones_like(values)), 11)
    assert 0.099 <= summary_error(s) <= 0.1 + 1e-12


def test_prune_and_merge_and_prune_reject_bad_arguments():
    s = K.make_summary([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    for bad in (1, 0, -3, 2.5):
        with pytest.raises(ValueError, match="size"):
            K.prune_summary(s, bad)
        with pytest.raises(ValueError, match="size"):
            K.merge_and_prune([s, s], bad)
    assert K.prune_summary(K.make_summary(np.empty(0), np.empty(0)), 2).shape == (0,)
    with pytest.raises(TypeError, match=r"summaries\[1\].*SUMMARY_DTYPE"):
        K.merge_and_prune([s, np.zeros(3)], 4)
    with pytest.raises(ValueError, match=r"summaries\[0\].*increasing"):
        K.merge_and_prune([s[::-1], s], 4)
    with pytest.raises(TypeError, match="sequence"):
        K.merge_and_prune(s, 4)
    with pytest.raises(ValueError, match="increasing"):
        K.merge_summaries(s, s[::-1])
    with pytest.raises(TypeError, match="SUMMARY_DTYPE"):
        K.merge_summaries(np.zeros(2), s)


# ----------------------------------------------------------------------------------------
# merge_and_prune: one summary per silo, merged and pruned by a coordinator
# ----------------------------------------------------------------------------------------

@HYPOTHESIS
@given(parts=st.sampled_from([("integer_with_zeros",), WEIGHT_KINDS]).flatmap(
           lambda kinds: st.lists(point_sets(max_n=80, weight_kinds=kinds), max_size=9)),
       size=st.integers(2, 16), keep=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_merge_and_prune_matches_naive_and_bound(parts, size, keep, seed):
    # Approximate inputs (random sub-summaries of exact ones) of 0 to 9 silos: every tree
    # shape, odd ones out included.
    rng = np.random.default_rng(seed)
    summaries = [sub_summary(K.make_summary(*p), rng, keep) for p in parts]
    got = K.merge_and_prune(summaries, size)
    assert got.shape[0] <= size
    if not parts:
        assert_same(got, N.merge_and_prune(summaries, size))
        return
    values = np.concatenate([p[0] for p in parts])
    weights = np.concatenate([p[1] for p in parts])
    if np.all(weights == np.round(weights)):
        # Integer ranks are exact. Otherwise two entries whose choice errors are equal in
        # exact arithmetic can differ by an ulp: the kernel keeps the leftmost, the naive
        # argmin the smaller after rounding (both within the bound, checked below).
        assert_same(got, N.merge_and_prune(summaries, size))
    assert_valid(got, values, weights)
    assert_invariants(got)
    bound = merge_and_prune_bound([summary_error(s) for s in summaries],
                                  [total(*p) for p in parts], size)
    assert summary_error(got) <= bound + REL_TOL


def check_silo_cuts(values, weights, n_silos, size, n_cuts, rng):
    """Split the points over silos, one exact summary each, merge_and_prune to ``size``,
    query ``n_cuts`` cuts: every target's rank error against the union's exact ranks is
    within the stated bound (eps W / 2 with eps = max(1, ceil(log2 k)) / (size - 1))."""
    parts = split_points(rng, values, weights, n_silos)
    final = K.merge_and_prune([K.make_summary(v, w) for v, w in parts], size)
    assert final.shape[0] <= size
    assert_valid(final, values, weights)
    assert_invariants(final)
    bound = merge_and_prune_bound([0.0] * n_silos, [total(*p) for p in parts], size)
    assert summary_error(final) <= bound + REL_TOL
    cuts = K.query_cuts(final, n_cuts)
    W = total(values, weights)
    check_cuts(cuts, values, weights, n_cuts, summary_error(final))
    if W > 0:
        errors = N.cut_rank_errors(cuts, values, weights, n_cuts)
        assert errors.max() <= bound * W / 2 + REL_TOL * W, (errors.max() / W, bound / 2)
    return final, cuts, W


@pytest.mark.parametrize("n_silos", [2, 4, 8])
@HYPOTHESIS
@given(pts=point_sets(max_n=400), size=st.integers(3, 24), n_cuts=st.integers(1, 32),
       seed=st.integers(0, 2**32 - 1))
def test_silos_merge_and_prune_cuts_within_bound(n_silos, pts, size, n_cuts, seed):
    values, weights = pts
    final, cuts, W = check_silo_cuts(values, weights, n_silos, size, n_cuts,
                                     np.random.default_rng(seed))
    v, w = N._points(values, weights)
    if W > 0 and np.unique(v).size <= size and np.all(w == np.round(w)):
        # Nothing was pruned away, and integer ranks are exact: the cuts are exactly the
        # union's weighted quantiles.
        want = np.unique([N.weighted_quantile(values, weights, t)
                          for t in N.cut_targets(W, n_cuts)])
        np.testing.assert_array_equal(cuts, want)


@pytest.mark.parametrize("n_silos", [2, 4, 8])
def test_silos_of_noisy_histograms(n_silos):
    # What a coordinator meets: each silo a histogram of 1024 bins over its own (noisy)
    # range, with noisy bell-shaped weights clipped at 0; merged and pruned to 64 entries
    # (so every prune drops entries), 63 cuts.
    rng = np.random.default_rng(n_silos)
    hists = []
    for lo, hi in zip(rng.normal(-4.0, 0.1, n_silos), rng.normal(4.0, 0.1, n_silos)):
        centres = np.linspace(lo, hi, 1024)
        noisy = np.clip(1000.0 * np.exp(-centres**2 / 4) + rng.normal(0.0, 30.0, 1024), 0, None)
        hists.append((centres, noisy))
    values = np.concatenate([v for v, _ in hists])
    weights = np.concatenate([w for _, w in hists])
    final = K.merge_and_prune([K.make_summary(v, w) for v, w in hists], 64)
    assert final.shape[0] == 64
    assert_valid(final, values, weights)
    assert_invariants(final)
    bound = merge_and_prune_bound([0.0] * n_silos, [total(v, w) for v, w in hists], 64)
    assert summary_error(final) <= bound + REL_TOL
    W = total(values, weights)
    errors = N.cut_rank_errors(K.query_cuts(final, 63), values, weights, 63)
    assert errors.max() <= bound * W / 2 + REL_TOL * W, (errors.max() / W, bound / 2)


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
