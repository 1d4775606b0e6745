"""Kernel benchmark: histogram updates per ns per core, the weighted quantile sketch, and
the per-tree passes over the rows (routing through a drawn tree, selecting a tree's rows).

Usage::

    python benchmarks/bench_kernels.py [--n-samples 1000000] [--n-features 50]
                                       [--n-bins 256] [--n-threads 2] [--repeat 5]

One "histogram update" adds one (row, feature) pair to a histogram cell, so a histogram of
``n`` rows and ``F`` features costs ``n * F`` updates. Rates are per core: updates / ns
divided by the number of threads. Times are the best of ``--repeat`` runs.
"""
import argparse
import time

import numpy as np

from dpxgb_dask._core import empty_histograms
from dpxgb_dask._core.histogram import (
    build_node_histograms,
    build_root_histogram,
    subtract_histograms,
)
from dpxgb_dask._core.naive.rows import select_tree_rows as select_tree_rows_numpy
from dpxgb_dask._core.partition import route_to_leaves, rows_of_nodes
from dpxgb_dask._core.rows import add_leaf_values, select_tree_rows
from dpxgb_dask._core.sketch import make_summary, merge_and_prune, query_cuts


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def numpy_bincount_histograms(X_binned, g, h, n_bins, rows=None, slots=None, n_slots=1):
    """Baseline: one ``np.bincount`` per feature and field (single-threaded NumPy)."""
    out = np.empty((n_slots, X_binned.shape[1], n_bins, 3))
    if rows is None:
        for f in range(X_binned.shape[1]):
            col = X_binned[:, f]
            out[0, f, :, 0] = np.bincount(col, weights=g, minlength=n_bins)
            out[0, f, :, 1] = np.bincount(col, weights=h, minlength=n_bins)
            out[0, f, :, 2] = np.bincount(col, minlength=n_bins)
        return out
    g_rows, h_rows = g[rows], h[rows]
    offset = slots.astype(np.int64) * n_bins
    size = n_slots * n_bins
    for f in range(X_binned.shape[1]):
        key = offset + X_binned[rows, f]
        out[:, f, :, 0] = np.bincount(key, weights=g_rows, minlength=size).reshape(n_slots, n_bins)
        out[:, f, :, 1] = np.bincount(key, weights=h_rows, minlength=size).reshape(n_slots, n_bins)
        out[:, f, :, 2] = np.bincount(key, minlength=size).reshape(n_slots, n_bins)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=50)
    parser.add_argument("--n-bins", type=int, default=256)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, F, B, T = args.n_samples, args.n_features, args.n_bins, args.n_threads

    rng = np.random.default_rng(0)
    X_binned = np.asfortranarray(rng.integers(0, B, size=(n, F), dtype=np.uint8))
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(size=n).astype(np.float32)

    # A depth-5 level: 32 nodes of a balanced tree (heap ids 31..62), random row placement.
    depth, n_nodes = 5, 32
    positions = (2**depth - 1 + rng.integers(0, n_nodes, size=n)).astype(np.int32)
    all_slots = np.full(2 ** (depth + 1) - 1, -1, dtype=np.int32)
    all_slots[2**depth - 1:] = np.arange(n_nodes)
    rows_all, slots_all = rows_of_nodes(positions, all_slots)
    # Smaller-child trick: build the 16 left children, subtract them from their parents.
    left_slots = np.full(2 ** (depth + 1) - 1, -1, dtype=np.int32)
    left_ids = np.arange(2**depth - 1, 2 ** (depth + 1) - 1, 2)
    left_slots[left_ids] = np.arange(n_nodes // 2)
    rows_left, slots_left = rows_of_nodes(positions, left_slots)
    parents = empty_histograms(n_nodes // 2, F, B)
    parent_slot_of_row = (positions - (2**depth - 1)) // 2
    build_node_histograms(X_binned, g, h, np.arange(n, dtype=np.int32),
                          parent_slot_of_row.astype(np.int32), parents, T)

    root_hist = empty_histograms(1, F, B)[0]
    level_hist = empty_histograms(n_nodes, F, B)
    left_hist = empty_histograms(n_nodes // 2, F, B)
    right_hist = empty_histograms(n_nodes // 2, F, B)

    def level_with_subtraction():
        build_node_histograms(X_binned, g, h, rows_left, slots_left, left_hist, T)
        subtract_histograms(parents, left_hist, right_hist, T)

    cases = [
        ("root: kernel", n, lambda: build_root_histogram(X_binned, g, h, root_hist, T), T),
        ("root: numpy bincount", n, lambda: numpy_bincount_histograms(X_binned, g, h, B), 1),
        (f"depth {depth}, {n_nodes} nodes: kernel", rows_all.size,
         lambda: build_node_histograms(X_binned, g, h, rows_all, slots_all, level_hist, T), T),
        (f"depth {depth}, {n_nodes} nodes: smaller child + subtraction", rows_all.size,
         level_with_subtraction, T),
        (f"depth {depth}, {n_nodes} nodes: numpy bincount", rows_all.size,
         lambda: numpy_bincount_histograms(X_binned, g, h, B, rows_all, slots_all, n_nodes), 1),
    ]
    print(f"histograms: {n} rows x {F} features x {B} bins, {T} threads, best of {args.repeat}")
    print(f"{'case':<52} {'threads':>7} {'time (ms)':>10} {'updates/ns':>11} {'/ns/core':>9}")
    for name, n_rows, fn, threads in cases:
        seconds = best_time(fn, args.repeat)
        rate = n_rows * F / (seconds * 1e9)
        print(f"{name:<52} {threads:>7} {seconds * 1e3:>10.1f} {rate:>11.3f} {rate / threads:>9.3f}")

    sketches(F, rng, args.repeat)
    tree_rows(X_binned, rng, args.repeat)


def sketches(F, rng, repeat):
    """The weighted quantile sketch per feature: a fit's summary of a noisy histogram and
    its cuts, and a cross-silo coordinator's merge and prune of 8 silos' summaries."""
    # Weighted quantile sketch, as a fit's DP candidates use it: per feature, one summary of
    # the 1024 bin centres of the noisy histogram, queried for max_bin - 1 = 63 cuts.
    centres = np.linspace(-4.0, 4.0, 1024)
    noisy = np.clip(rng.normal(100.0, 30.0, size=(F, 1024)), 0.0, None)

    def sketch():
        return [query_cuts(make_summary(centres, noisy[f]), 63) for f in range(F)]

    seconds = best_time(sketch, repeat)
    print()
    print(f"sketch: {F} features x (summary of 1024 noisy bins + 63 cuts): "
          f"{seconds * 1e3:.2f} ms")

    # Cross-silo candidates: per feature, the coordinator merges 8 silos' summaries of 1024
    # noisy bins each (each silo's bins over its own noisy range, so values rarely coincide
    # and merges reach 2048 entries) and prunes to 256 after every merge.
    # Its own generator: the rows after this one draw the same inputs as before it existed.
    silo_rng = np.random.default_rng(1)
    n_silos, size = 8, 256
    silos = []
    for f in range(F):
        lo, hi = silo_rng.normal(-4.0, 0.1, n_silos), silo_rng.normal(4.0, 0.1, n_silos)
        noisy = np.clip(silo_rng.normal(100.0, 30.0, size=(n_silos, 1024)), 0.0, None)
        silos.append([make_summary(np.linspace(lo[s], hi[s], 1024), noisy[s])
                      for s in range(n_silos)])

    def merge_silos():
        return [merge_and_prune(silos[f], size) for f in range(F)]

    seconds = best_time(merge_silos, repeat)
    print(f"sketch: {F} features x merge_and_prune of {n_silos} summaries of 1024 entries "
          f"to {size}: {seconds * 1e3:.2f} ms")


def tree_rows(X_binned, rng, repeat):
    """The default's per-tree passes over the rows, 1 thread: routing every row through a
    full random tree of depth 6, selecting the tree's rows (all of them) with their
    quantised gradients, and adding the leaf values to the margins."""
    n, F = X_binned.shape
    n_ids = 127
    is_split = np.zeros(n_ids, np.uint8)
    is_split[:63] = 1
    feature = rng.integers(0, F, n_ids).astype(np.int32)
    split_bin = rng.integers(0, 254, n_ids).astype(np.uint8)
    missing_left = rng.integers(0, 2, n_ids).astype(np.uint8)
    category_set = np.zeros((n_ids, 4), np.uint64)
    positions = np.zeros(n, np.int32)

    def route():
        positions[:] = 0
        route_to_leaves(X_binned, positions, is_split, feature, split_bin, missing_left,
                        category_set, 255, 1)

    g = rng.normal(scale=0.5, size=n)
    h = rng.uniform(0.0, 0.25, size=n)
    y = rng.integers(0, 2, n).astype(np.float64)
    out = (np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.float32))
    grid = 2.0**-20
    args = (g, h, y, np.empty(0), 0.0, 2.0, 0.3, 0.25, grid, False, 0.3)
    margins = np.zeros(n)
    values = rng.normal(size=n_ids)
    cases = [
        ("route to the leaves of a depth-6 tree: kernel", route),
        ("select a tree's rows, quantise g and h: kernel", lambda: select_tree_rows(*args, *out, 1)),
        ("select a tree's rows, quantise g and h: numpy twin",
         lambda: select_tree_rows_numpy(*args)),
        ("add the leaf values to the margins: kernel",
         lambda: add_leaf_values(positions, values, margins, False, 0.0, 0.0, 1)),
    ]
    print()
    print(f"per-tree row passes: {n} rows, 1 thread, best of {repeat}")
    print(f"{'case':<52} {'time (ms)':>10} {'ns per row':>11}")
    for name, fn in cases:
        seconds = best_time(fn, repeat)
        print(f"{name:<52} {seconds * 1e3:>10.2f} {seconds * 1e9 / n:>11.2f}")

if __name__ == "__main__":
    main()
