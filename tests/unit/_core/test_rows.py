import numpy as np
import pytest

from dpxgb_dask._core.naive import rows as naive
from dpxgb_dask._core.rows import select_tree_rows

GRID = 2.0**-20


def _inputs(rng, n):
    g = rng.normal(scale=0.8, size=n)
    g[: n // 10] = np.round(g[: n // 10] / GRID + 0.5) * GRID  # ties: half to even
    h = rng.uniform(0.0, 0.4, size=n)
    y = rng.integers(0, 2, size=n).astype(np.float64)
    y[rng.random(n) < 0.05] = np.nan
    g[np.isnan(y)] = np.nan
    if n > 10:  # rounding to -0.0, a labelled row with a NaN margin, hessians at -0.0 and 0
        g[:4], h[:4] = [-1e-9, -0.0, np.nan, 3.0], [-0.0, 0.0, np.nan, 5.0]
        y[:4] = 0.0
    return g, h, y, rng.random(n)


@pytest.mark.parametrize("n", [0, 1, 5000])
@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("drop_outside", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("routed", [False, True])
def test_select_tree_rows_matches_naive_twin(n, sampled, drop_outside, n_threads, routed):
    rng = np.random.default_rng(n + 2 * sampled + drop_outside)
    g, h, y, u = _inputs(rng, n)
    uniforms = u if sampled else np.empty(0)
    low, high = (0.2, 0.7) if sampled else (0.0, 2.0)
    g_max, h_max = np.floor(0.9 / GRID) * GRID, np.floor(0.25 / GRID) * GRID
    leaves = rng.integers(63, 127, size=n).astype(np.int32)
    expected = naive.select_tree_rows(g, h, y, uniforms, low, high, g_max, h_max, GRID,
                                      drop_outside, 0.9, leaves=leaves if routed else None)
    # (without routing the kernel must not read the positions it is given)
    got = (leaves.copy() if routed else np.full(n, 99, np.int32),
           np.empty(n, np.float32), np.empty(n, np.float32))
    select_tree_rows(g, h, y, uniforms, low, high, g_max, h_max, GRID, drop_outside, 0.9,
                     routed, *got, n_threads)
    if routed and n > 10:  # a leaf kept in the tree, its complement outside
        assert set(np.unique(got[0])) & set(leaves) and (got[0] < 0).any()
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))  # -0.0 as numpy gives it
    finite = ~np.isnan(got[1])
    assert np.all(np.abs(got[1][finite]) <= g_max)
    assert np.all((got[2][finite] >= 0) & (got[2][finite] <= h_max))


def test_select_tree_rows_checks_lengths():
    a = np.zeros(3)
    out = (np.empty(3, np.int32), np.empty(3, np.float32), np.empty(3, np.float32))
    with pytest.raises(ValueError, match="uniforms"):
        select_tree_rows(a, a, a, np.zeros(2), 0.0, 1.0, 1.0, 1.0, GRID, False, 1.0, False,
                         *out, 1)
    with pytest.raises(ValueError, match="same length"):
        select_tree_rows(a, np.zeros(2), a, np.empty(0), 0.0, 1.0, 1.0, 1.0, GRID, False, 1.0,
                         False, *out, 1)


@pytest.mark.parametrize("n", [0, 1, 3000])
@pytest.mark.parametrize("clip", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_add_leaf_values_matches_naive_twin(n, clip, n_threads):
    from dpxgb_dask._core.rows import add_leaf_values

    rng = np.random.default_rng(n + clip)
    positions = rng.integers(-63, 63, size=n).astype(np.int32)
    values = rng.normal(scale=0.7, size=63)
    margins = rng.normal(size=n)
    expected = naive.add_leaf_values(positions, values, margins, clip, -1.0, 1.0)
    add_leaf_values(positions, values, margins, clip, -1.0, 1.0, n_threads)
    np.testing.assert_array_equal(margins, expected)


def test_add_leaf_values_refuses_a_node_beyond_the_values():
    from dpxgb_dask._core.rows import add_leaf_values

    with pytest.raises(ValueError, match="beyond"):
        add_leaf_values(np.array([0, 5], np.int32), np.zeros(3), np.zeros(2), False, 0.0, 0.0, 1)
