"""Distributed training speed: wall time per tree and per level, bytes gathered per level.

Usage::

    python benchmarks/bench_train.py [--rows 1000000] [--features 50] [--trees 20]
                                     [--depth 6] [--methods default noisy_histogram exponential]

Synthetic data (``make_classification``), 2 workers x 1 thread (a LocalCluster), public
bounds. "default" grows data-independent random trees (one leaf release per tree, no
per-level histograms); "noisy_histogram" (Maddock's Hist) and "exponential" (DP-XGBoost)
build, reduce and release the histograms of every level. Bytes gathered are those of the
reduced aggregates the coordinator receives (one per level, plus one per tree for leaves).
"""
import argparse
import time
import warnings

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--methods", nargs="+", default=["default", "noisy_histogram", "exponential"])
    args = parser.parse_args()

    from distributed import Client, LocalCluster
    from sklearn.datasets import make_classification

    from dpxgb_dask import train

    warnings.simplefilter("ignore", category=UserWarning)
    X, y = make_classification(n_samples=args.rows, n_features=args.features, n_informative=20,
                               random_state=0)
    bounds = np.tile([-8.0, 8.0], (args.features, 1))
    extra = {
        "default": {},
        "noisy_histogram": {"split_method": "noisy_histogram", "split_candidates": "uniform"},
        "exponential": {"split_method": "exponential", "leaf_method": "laplace", "newton": False,
                        "split_candidates": "uniform", "accountant": "basic"},
    }
    print(f"{args.rows} rows x {args.features} features, {args.trees} trees, depth {args.depth}, "
          "2 workers x 1 thread")
    print(f"{'method':<16} {'fit (s)':>8} {'per tree (s)':>13} {'per level (ms)':>15} "
          f"{'level p90 (ms)':>15} {'bytes/level':>12} {'total gathered':>15}")
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        for method in args.methods:
            params = {"feature_bounds": bounds, "epsilon": 1.0, "n_estimators": args.trees,
                      "max_depth": args.depth, "max_bin": 64, **extra[method]}
            t0 = time.perf_counter()
            _, timings = train(params, X, y, client=client, return_timings=True)
            fit = time.perf_counter() - t0
            per_tree = np.mean(timings["tree"])
            levels = np.array(timings["level"]) * 1e3
            per_level = np.array(timings["bytes_per_level"])
            bytes_level = f"{per_level.mean() / 1e6:.2f} MB" if per_level.size else "-"
            print(f"{method:<16} {fit:>8.1f} {per_tree:>13.3f} {levels.mean():>15.1f} "
                  f"{np.percentile(levels, 90):>15.1f} {bytes_level:>12} "
                  f"{timings['bytes_gathered'] / 1e6:>12.1f} MB", flush=True)


if __name__ == "__main__":
    main()
