"""Execution benchmark: dpxgb_dask next to xgboost.dask on one LocalCluster.

Usage::

    python benchmarks/bench_execution.py [--sections 1 2 3 4 5] [--rows 1000000]
                                         [--scaling 1000000 3000000 10000000] [--repeats 3]
                                         [--workers 2]
                                         [--output benchmarks/results/execution.md]

Every section runs on the same LocalCluster (``--workers`` worker processes x 1 thread, 2 by
default) in one run:

1. Training at ``--rows`` x 50 float32 (``make_classification``, ``n_informative=20``):
   one dask array with one row block on each worker (persisted before any fit) is given
   to xgboost.dask (``DaskQuantileDMatrix`` + ``xgboost.dask.train``: hist, depth 6, 20
   rounds, 64 bins, 1 thread) and to the dpxgb methods random, noisy_histogram,
   exponential and partially_random (20 trees, depth 6) and default (its full ε = 1
   schedule: 450 trees, depth 6). Fit wall time, and the workers' peak RSS during that
   fit (a sampler thread on every worker polls the RSS every 20 ms; the max over workers
   is reported). After a small warm-up fit of each system, ``--repeats`` rounds of one
   fit of each system in turn; the median fit time and the largest peak.
2. Time per tree level and fixed time per fit, 30k x 24 NumPy float64 rows,
   noisy_histogram (20 trees, depth 6), with a profile of the fit's phases; median of
   ``--repeats`` fits.
3. The default fit on UCI Adult (ε = 1, public bounds of ``benchmarks/datasets.py``) next
   to xgboost.dask's 100 rounds of depth 6 (256 bins) on the same dask arrays, persisted
   one row block per worker: fit time (median of ``--repeats``), the scheduler process's
   CPU per tree, and test AUC; then Abalone's default at ε = 0.1 and its time outside the
   trees. Skipped without ``../shared/data``.
4. The default fit at 30k x 24 on an embedded cluster (``client=None`` in a fresh process
   with no Dask client) against the same fit on the running cluster.
5. Scaling: noisy_histogram (20 trees, depth 6) at each ``--scaling`` row count x 50
   float32, rows generated on the workers (``dask.array.random``, logistic labels).
6. The greedy methods on a 15,000 x 54 NumPy table (``make_classification``):
   noisy_histogram with 50 trees of depth 6 and with 100 trees of depth 4, exponential
   with 50 trees of depth 6, next to the default (random trees, its ε = 1 schedule);
   median of ``--repeats`` fits, with the share of the DP releases.

All dpxgb fits use public feature bounds ±8 (±8 holds the synthetic features a priori)
and ε = 1; all but the default use 64 bins (the default keeps its schedule's candidates,
255 uniform cuts at ε = 1). The tables are printed and written to ``--output``, under the
command line that produced them (rewritten after every section).
"""
import argparse
from functools import partial
import json
import os
import shlex
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
from distributed import Client, LocalCluster, WorkerPlugin, wait

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpxgb_dask import train  # noqa: E402

N_FEATURES = 50
SMALL_ROWS, SMALL_FEATURES = 30_000, 24
TREES, DEPTH, MAX_BIN, EPSILON = 20, 6, 64, 1.0
#: xgboost.dask's rounds next to the default on Adult (issue 40's reference)
ADULT_ROUNDS = 100
CLUSTER = dict(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")

#: dpxgb parameter sets per method.
METHOD_PARAMS = {
    "default": {},
    "random": {"split_method": "random"},
    "noisy_histogram": {"split_method": "noisy_histogram", "split_candidates": "uniform"},
    "exponential": {"split_method": "exponential", "leaf_method": "laplace", "newton": False,
                    "split_candidates": "uniform", "accountant": "basic"},
    "partially_random": {"split_method": "partially_random", "split_candidates": "uniform"},
}

SAMPLER_NAME = "bench-peak-rss"
SAMPLE_SECONDS = 0.02


# -- Workers' peak memory --------------------------------------------------------------------

class PeakRSS(WorkerPlugin):
    """A worker's RSS sampler: ``start`` polls the RSS every 20 ms, ``stop`` returns the peak.

    ``start`` first runs the garbage collector and returns freed heap to the OS
    (``malloc_trim``), so one fit's leftovers do not raise the next fit's baseline.
    """

    name = SAMPLER_NAME

    def setup(self, worker):
        self._stopped = threading.Event()
        self._thread = None
        self.peak = 0

    def start(self):
        import ctypes
        import gc

        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass
        self.stop()
        self._stopped = threading.Event()
        self.peak = _rss()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self):
        while not self._stopped.wait(SAMPLE_SECONDS):
            self.peak = max(self.peak, _rss())

    def stop(self):
        """Stop sampling; return the peak RSS in bytes."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.peak = max(self.peak, _rss())
        return self.peak

    def teardown(self, worker):
        self.stop()


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def _start_sampler(dask_worker):
    dask_worker.plugins[SAMPLER_NAME].start()


def _stop_sampler(dask_worker):
    return dask_worker.plugins[SAMPLER_NAME].stop()


def measured(client, fit):
    """Run ``fit()``; return its result, wall seconds and the workers' peak RSS (MiB)."""
    client.run(_start_sampler)
    t0 = time.perf_counter()
    result = fit()
    seconds = time.perf_counter() - t0
    peak = max(client.run(_stop_sampler).values())
    return result, seconds, peak / 2**20


# -- Data ------------------------------------------------------------------------------------

def workers_of(client):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


def classification(n_rows, n_features, dtype=np.float64):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=n_features, n_informative=20,
                               random_state=0)
    return X.astype(dtype), y.astype(dtype)


def scatter_rows(client, X, y):
    """NumPy (X, y) -> dask arrays whose row block i lives on worker i (``client.scatter``)."""
    import dask.array as da

    workers = workers_of(client)
    edges = np.linspace(0, len(y), len(workers) + 1).round().astype(int)
    spans = list(zip(edges[:-1], edges[1:]))
    futures = [client.scatter([X[a:b], y[a:b]], workers=[w])
               for w, (a, b) in zip(workers, spans)]
    wait([f for pair in futures for f in pair])
    X_blocks = [da.from_delayed(fx, (b - a, X.shape[1]), dtype=X.dtype)
                for (fx, _), (a, b) in zip(futures, spans)]
    y_blocks = [da.from_delayed(fy, (b - a,), dtype=y.dtype)
                for (_, fy), (a, b) in zip(futures, spans)]
    return da.concatenate(X_blocks), da.concatenate(y_blocks)


def generate_rows(client, n_rows, n_features, seed=0):
    """Standard-normal float32 X and logistic labels, generated blockwise on the workers:
    row block i is computed and persisted on worker i; the client never holds the rows."""
    import dask.array as da

    workers = workers_of(client)
    rows_per_block = -(-n_rows // len(workers))
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features), chunks=(rows_per_block, n_features),
                            dtype=np.float32)
    weights = np.linspace(-1.0, 1.0, n_features, dtype=np.float32)
    probability = 1.0 / (1.0 + da.exp(-(X @ weights)))
    y = (rng.random(n_rows, chunks=rows_per_block) < probability).astype(np.float32)
    parts = [client.persist([X.blocks[i], y.blocks[i]], workers=[w])
             for i, w in enumerate(workers)]
    wait([block for part in parts for block in part])
    return da.concatenate([p[0] for p in parts]), da.concatenate([p[1] for p in parts])


def check_placement(client, X):
    """Raise unless every worker holds exactly one row block of ``X``."""
    from distributed import futures_of

    holders = [client.who_has(f)[f.key] for f in futures_of(X)]
    if sorted(h[0] for h in holders) != workers_of(client) or any(len(h) != 1 for h in holders):
        raise RuntimeError(f"expected one block per worker, got {holders}")


# -- Fits ------------------------------------------------------------------------------------

def dp_params(method, n_features=None, bounds=None, trees=TREES, depth=DEPTH):
    """A dpxgb fit's parameters; "default" keeps its ε schedule (no trees, depth or bins
    given)."""
    if bounds is None:
        bounds = np.tile([-8.0, 8.0], (n_features, 1))
    params = {"feature_bounds": bounds, "epsilon": EPSILON, **METHOD_PARAMS[method]}
    if method != "default":
        params.update(n_estimators=trees, max_depth=depth, max_bin=MAX_BIN)
    return params


def default_schedule(n_features):
    """The default's trees at ε = EPSILON on ``n_features`` features, as text (e.g. "450
    trees, depth 6, 255 bins")."""
    from dpxgb_dask.params import resolve_params

    p = resolve_params("binary:logistic", epsilon=EPSILON, n_features=n_features)
    return f"{p.n_estimators} trees, depth {p.max_depth}, {p.max_bin} bins"


def fit_dpxgb(client, params, X, y):
    """Return (booster, timings, wall seconds) of one ``dpxgb_dask.train``."""
    t0 = time.perf_counter()
    booster, timings = train(params, X, y, client=client, return_timings=True)
    return booster, timings, time.perf_counter() - t0


def fit_xgboost(client, X, y, rounds=TREES, max_bin=MAX_BIN):
    """xgboost.dask: quantile DMatrix + train (hist, depth 6, ``max_bin`` bins, 1 thread)."""
    import xgboost.dask as dxgb

    dtrain = dxgb.DaskQuantileDMatrix(client, X, y, max_bin=max_bin)
    params = {"tree_method": "hist", "max_depth": DEPTH, "objective": "binary:logistic",
              "max_bin": max_bin, "nthread": 1}
    return dxgb.train(client, params, dtrain, num_boost_round=rounds)["booster"]


def warm_up(client):
    """Small fits of both systems (dask and NumPy inputs), not timed."""
    X, y = classification(2000, N_FEATURES, np.float32)
    Xd, yd = scatter_rows(client, X, y)
    fit_xgboost(client, Xd, yd, rounds=2)
    fit_dpxgb(client, dp_params("noisy_histogram", N_FEATURES, trees=2), Xd, yd)
    fit_dpxgb(client, dp_params("random", N_FEATURES, trees=2), X, y)


# -- Output ----------------------------------------------------------------------------------

def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class Report:
    """Prints each block of Markdown and rewrites the output file with everything so far."""

    def __init__(self, path, header):
        self.path = Path(path)
        self.blocks = [header]
        print(header, flush=True)

    def add(self, text):
        self.blocks.append(text)
        print("\n" + text, flush=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n\n".join(self.blocks) + "\n")


def median(values):
    return float(np.median(values))


# -- Sections --------------------------------------------------------------------------------

def section_training(client, args, report):
    """1. xgboost.dask and every dpxgb method on the same persisted dask array."""
    X, y = scatter_rows(client, *classification(args.rows, N_FEATURES, np.float32))
    check_placement(client, X)
    baseline = max(client.run(_rss).values()) / 2**20
    fits = {"xgboost.dask (hist)": lambda: fit_xgboost(client, X, y)}
    for method in ["random", "noisy_histogram", "exponential", "partially_random", "default"]:
        label = f"dpxgb default ({default_schedule(N_FEATURES)})" if method == "default" \
            else f"dpxgb {method}"
        fits[label] = partial(train, dp_params(method, N_FEATURES), X, y, client=client)
    runs = {label: [] for label in fits}
    for _ in range(args.repeats):  # (rounds of every system: a slow minute slows them all)
        for label, fit in fits.items():
            runs[label].append(measured(client, fit)[1:])
    t_ref = median([t for t, _ in runs["xgboost.dask (hist)"]])
    m_ref = max(m for _, m in runs["xgboost.dask (hist)"])
    rows = []
    for label, measures in runs.items():
        seconds, peak = median([t for t, _ in measures]), max(m for _, m in measures)
        rows.append([label, f"{seconds:.1f}", ", ".join(f"{t:.1f}" for t, _ in measures),
                     f"{peak:.0f}", f"{seconds / t_ref:.2f}", f"{peak / m_ref:.2f}"])
    report.add(
        f"## 1. Training, {args.rows:,} x {N_FEATURES} float32 ({args.workers} workers x 1 "
        "thread)\n\n"
        "Both systems get the same dask array, persisted with one row block per worker. "
        f"{TREES} trees / rounds of depth {DEPTH} unless stated; after a warm-up fit, "
        f"{args.repeats} rounds of one fit of each system in turn: the median fit, and its "
        "ratio to xgboost.dask's median.\n\n"
        + table(["system", f"fit (s), median of {args.repeats}", "runs",
                 "workers' peak RSS (MiB)", "time / xgboost.dask", "memory / xgboost.dask"],
                rows)
        + f"\n\nPeak RSS: the largest resident set size of any worker process during the fit "
        f"(sampled every {SAMPLE_SECONDS * 1e3:.0f} ms), including the persisted input "
        f"block and the worker's own footprint: before the fits the largest worker held "
        f"{baseline:.0f} MiB. xgboost.dask's time includes building its DaskQuantileDMatrix; "
        "dpxgb's includes loading the blocks into its partition states.")


def section_levels(client, args, report):
    """2. Per-level and fixed per-fit times, and a phase profile, at 30k x 24."""
    X, y = classification(SMALL_ROWS, SMALL_FEATURES)
    n_workers = len(workers_of(client))
    stats = {}
    for _ in range(args.repeats):
        _, timings, wall = fit_dpxgb(client, dp_params("noisy_histogram", SMALL_FEATURES), X, y)
        levels_ms = np.array(timings["level"]) * 1e3
        phases = timings["phases"]
        run = {
            "level median (ms)": np.median(levels_ms),
            "level p90 (ms)": np.percentile(levels_ms, 90),
            "tree mean (ms)": np.mean(timings["tree"]) * 1e3,
            "candidates (s)": phases["candidates"],
            "binning (s)": phases["binning"],
            "trees (s)": phases["trees"],
            "worker compute, all workers (s)": timings["worker_seconds"],
            "DP releases in the coordinator (s)": timings["release"],
            "  of which noise, drawn ahead (s)": timings["noise"],
            "  levels waiting for their noise (s)": timings["noise_wait"],
            "trees minus DP releases (s) *": phases["trees"] - timings["release"],
            "fixed per fit (s): wall - sum of trees": wall - sum(timings["tree"]),
            "fit wall (s)": wall,
        }
        for key, value in run.items():
            stats.setdefault(key, []).append(value)
    rows = [[key, f"{median(values):.3f}", ", ".join(f"{v:.3f}" for v in values)]
            for key, values in stats.items()]
    report.add(
        f"## 2. Per level and per fit, {SMALL_ROWS:,} x {SMALL_FEATURES} NumPy float64, "
        f"noisy_histogram ({TREES} trees, depth {DEPTH})\n\n"
        + table(["quantity", f"median of {args.repeats}", "runs"], rows)
        + "\n\nPhases are the coordinator's (timings[\"phases\"]); worker compute is the "
        "compute time the workers report, summed over workers and over the whole fit "
        "(candidates and binning included). The fixed per-fit time covers everything "
        "outside the trees: validation, loading the rows, planning, candidates, binning, "
        "the coordinator's start and the model's return.\n\n"
        "\\* What the trees phase spends outside the DP releases: the rounds on the "
        f"{n_workers} workers, the messages and the coordinator's own work. The releases are "
        "mostly the exact discrete noise samplers (privacy/_samplers.pyx) in the scheduler "
        "process; a level's histogram noise is drawn while the workers build its "
        "histograms, so releases and worker compute overlap.")


def section_adult(client, args, report):
    """3. The default fit on UCI Adult next to xgboost.dask's 100 rounds, on the same
    persisted dask arrays; the scheduler process's CPU per tree; Abalone's fixed time."""
    import datasets
    from sklearn.metrics import roc_auc_score

    if datasets.data_dir() is None:
        report.add("## 3. Adult\n\nSkipped: ../shared/data (or $DPXGB_DATA) is absent.")
        return
    X, y, X_test, y_test, bounds = datasets.load_adult()
    X, X_test = np.asarray(X, dtype=np.float64), np.asarray(X_test, dtype=np.float64)
    Xd, yd = scatter_rows(client, X, np.asarray(y, dtype=np.float64))
    check_placement(client, Xd)
    runs = {"xgboost.dask": [], "dpxgb": []}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        reference = fit_xgboost(client, Xd, yd, rounds=ADULT_ROUNDS, max_bin=256)
        wall = time.perf_counter() - t0
        import xgboost

        auc = roc_auc_score(y_test, reference.predict(xgboost.DMatrix(X_test)))
        runs["xgboost.dask"].append((wall, None, auc))
        booster, timings, wall = fit_dpxgb(client, dp_params("default", bounds=bounds), Xd, yd)
        runs["dpxgb"].append((wall, 1e3 * timings["trees_cpu"] / booster.n_trees,
                              roc_auc_score(y_test, booster.predict(X_test))))
    t_ref = median([r[0] for r in runs["xgboost.dask"]])
    rows = []
    for name, label in [("xgboost.dask", f"xgboost.dask ({ADULT_ROUNDS} rounds, depth "
                                         f"{DEPTH}, 256 bins, hist)"),
                        ("dpxgb", f"dpxgb default (ε = {EPSILON}: "
                                  f"{default_schedule(X.shape[1])})")]:
        walls = [r[0] for r in runs[name]]
        cpu = "" if runs[name][0][1] is None else \
            f"{median([r[1] for r in runs[name]]):.2f}"
        rows.append([label, f"{median(walls):.2f}", ", ".join(f"{w:.2f}" for w in walls),
                     f"{median(walls) / t_ref:.2f}", cpu,
                     f"{median([r[2] for r in runs[name]]):.4f}"])
    report.add(
        f"## 3. Adult ({len(y):,} train / {len(y_test):,} test rows), the default next to "
        "xgboost.dask on the same persisted dask arrays\n\n"
        + table(["system", f"fit (s), median of {args.repeats}", "runs", "time / xgboost.dask",
                 "scheduler process CPU per tree (ms)", "test AUC"], rows)
        + "\n\nThe scheduler process's CPU per tree is its CPU time while the trees grow "
        "(the coordinator, its noise threads and the scheduler's own work for the rounds: "
        "timings[\"trees_cpu\"]) over the trees.\n\n"
        + _abalone_fixed_time(client, args))


def _abalone_fixed_time(client, args):
    """Abalone at ε = 0.1 (the default's schedule there): the fit's time outside its trees
    (validation, planning, loading, candidates, binning, the model's return)."""
    import datasets

    X, y, bounds, label_bounds = datasets.load_abalone()
    n_train = int(0.8 * len(y))  # (the accuracy tables' 80/20 split: 3,341 training rows)
    X, y = np.asarray(X, dtype=np.float64)[:n_train], y[:n_train]
    params = {"objective": "reg:squarederror", "epsilon": 0.1, "feature_bounds": bounds,
              "label_bounds": label_bounds}
    rows = []
    for _ in range(args.repeats):
        booster, timings, wall = fit_dpxgb(client, params, X, y)
        trees = sum(timings["tree"])
        rows.append((wall, trees, wall - trees, booster.n_trees))
    cells = [[label, f"{median([r[i] for r in rows]):.2f}",
              ", ".join(f"{r[i]:.2f}" for r in rows)]
             for i, label in enumerate(["fit (s)", "trees (s)", "outside the trees (s)"])]
    return (f"Abalone ({len(y):,} train rows), the default at ε = 0.1 ({rows[0][3]} trees), "
            "NumPy input on the running cluster:\n\n"
            + table(["quantity", f"median of {args.repeats}", "runs"], cells))


def _embedded_fits(repeats):
    """Run in a fresh Python process with no Dask client (a user's script): the times of
    ``train(client=None)`` on section 4's table (which starts and closes its own
    LocalCluster of worker processes) and of starting and closing such a cluster, printed
    as one JSON line ``{"fits": [...], "starts": [...]}``."""
    from distributed import default_client

    try:
        default_client()
        raise RuntimeError("this process must have no Dask client")
    except ValueError:
        pass
    warnings.simplefilter("ignore", category=UserWarning)
    X, y = classification(SMALL_ROWS, SMALL_FEATURES)
    params = dp_params("default", SMALL_FEATURES)
    fits, starts = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        train(params, X, y)
        fits.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with LocalCluster(**CLUSTER) as cluster, Client(cluster):
            pass
        starts.append(time.perf_counter() - t0)
    print(json.dumps({"fits": fits, "starts": starts}))


def section_embedded(client, args, report):
    """4. The default fit at 30k x 24 on an embedded cluster against the running one."""
    X, y = classification(SMALL_ROWS, SMALL_FEATURES)
    params = dp_params("default", SMALL_FEATURES)
    existing = [fit_dpxgb(client, params, X, y)[2] for _ in range(args.repeats)]
    # a top-level process, as a user's script: one that multiprocessing starts would get an
    # embedded cluster of worker threads (client_or_embedded), not of processes
    child = subprocess.run(
        [sys.executable, "-c", f"import bench_execution; "
                               f"bench_execution._embedded_fits({args.repeats})"],
        cwd=Path(__file__).resolve().parent, capture_output=True, text=True, check=True)
    times = json.loads(child.stdout.strip().splitlines()[-1])
    fits, starts = times["fits"], times["starts"]
    t_existing, t_fit, t_start = median(existing), median(fits), median(starts)
    rows = [["existing client", f"{t_existing:.2f}", "-", f"{t_existing:.2f}", "1.00"],
            ["embedded (client=None)", f"{t_fit:.2f}", f"{t_start:.2f}",
             f"{t_fit - t_start:.2f}", f"{(t_fit - t_start) / t_existing:.2f}"]]
    report.add(
        f"## 4. Embedded cluster, default fit (ε = {EPSILON}: "
        f"{default_schedule(SMALL_FEATURES)}), "
        f"{SMALL_ROWS:,} x "
        f"{SMALL_FEATURES} NumPy float64\n\n"
        + table(["cluster", "train() (s)", "cluster start + close (s)",
                 "fit excl. cluster (s)", "ratio to existing"], rows)
        + f"\n\nMedians of {args.repeats}. The embedded fits run in a fresh process with no "
        "Dask client, so `train(client=None)` starts and closes its own LocalCluster (2 "
        "workers x 1 thread); the start + close of the same LocalCluster and Client, timed "
        "on its own in that process, is subtracted. The remainder still includes the "
        "embedded workers' cold start (importing dpxgb_dask, registering its plugin), which "
        "the running cluster paid in its warm-up. The running cluster stays up, idle, "
        "meanwhile.")


def section_scaling(client, args, report):
    """5. noisy_histogram fit time against the number of rows (generated on the workers)."""
    params = dp_params("noisy_histogram", N_FEATURES)
    rows = []
    for n_rows in args.scaling:
        X, y = generate_rows(client, n_rows, N_FEATURES)
        check_placement(client, X)
        _, seconds, peak = measured(client, lambda X=X, y=y: train(params, X, y, client=client))
        rows.append([f"{n_rows:,}", f"{seconds:.1f}", f"{seconds / (n_rows / 1e6):.2f}",
                     f"{peak:.0f}"])
        del X, y
    report.add(
        f"## 5. Scaling, noisy_histogram ({TREES} trees, depth {DEPTH}), x {N_FEATURES} "
        "float32 generated on the workers\n\n"
        + table(["rows", "fit (s)", "s per million rows", "workers' peak RSS (MiB)"], rows)
        + "\n\nStandard-normal features, labels drawn from a logistic model of them; one row "
        "block per worker, persisted before the fit; one fit per size.")


def _cpu_seconds():
    """User + system CPU seconds of this process so far."""
    times = os.times()
    return times.user + times.system


def section_greedy(client, args, report):
    """6. The greedy methods' fit time on a 15,000 x 54 table, next to the default."""
    n_rows, n_features = 15_000, 54
    X, y = classification(n_rows, n_features)
    cases = [("noisy_histogram", 50, 6), ("noisy_histogram", 100, 4), ("exponential", 50, 6),
             ("default", None, None)]
    rows = []
    for method, trees, depth in cases:
        params = (dp_params(method, n_features) if method == "default"
                  else dp_params(method, n_features, trees=trees, depth=depth))
        walls, shares, noise, cpu = [], [], [], []
        for _ in range(args.repeats):
            workers_before, here_before = client.run(_cpu_seconds), _cpu_seconds()
            _, timings, wall = fit_dpxgb(client, params, X, y)
            workers_after, here_after = client.run(_cpu_seconds), _cpu_seconds()
            walls.append(wall)
            shares.append(timings["release"] / wall)
            noise.append(timings["noise"] / wall)
            cpu.append((here_after - here_before,
                        sum(workers_after[w] - workers_before[w] for w in workers_after)))
        label = (f"{method} ({trees} trees, depth {depth})" if trees
                 else f"default ({default_schedule(n_features)})")
        here, workers = median([c[0] for c in cpu]), median([c[1] for c in cpu])
        rows.append([label, f"{median(walls):.2f}", ", ".join(f"{w:.2f}" for w in walls),
                     f"{median(shares):.0%}", f"{median(noise):.0%}", f"{here:.2f}",
                     f"{workers:.2f}", f"{(here + workers) / median(walls):.2f}"])
    report.add(
        f"## 6. The greedy methods, {n_rows:,} x {n_features} NumPy float64\n\n"
        + table(["method", f"fit (s), median of {args.repeats}", "runs",
                 "DP releases / fit", "of which noise / fit", "CPU s: scheduler + client",
                 "CPU s: workers", "cores busy"], rows)
        + "\n\nThe DP releases are the coordinator's: the noise, drawn while the workers "
        "build the level's histograms (on 2 cores shared with the 2 workers), and the choice "
        "from the noisy histograms. CPU seconds are the processes' user + system time during "
        "the fit (the LocalCluster's scheduler runs in this benchmark's process); cores busy "
        "is their sum over the wall time, out of the 2 cores.")


SECTIONS = {1: section_training, 2: section_levels, 3: section_adult, 4: section_embedded,
            5: section_scaling, 6: section_greedy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, nargs="+", default=sorted(SECTIONS),
                        choices=sorted(SECTIONS))
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of section 1")
    parser.add_argument("--scaling", type=int, nargs="+",
                        default=[1_000_000, 3_000_000, 10_000_000], help="rows of section 5")
    parser.add_argument("--repeats", type=int, default=3, help="fits per median (2, 3, 4)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--output", default=str(Path(__file__).resolve().parent / "results"
                                                / "execution.md"))
    args = parser.parse_args()

    import distributed
    import xgboost

    warnings.simplefilter("ignore", category=UserWarning)
    command = "python " + shlex.join(sys.argv)
    report = Report(args.output, f"Produced by: `{command}`\n\n"
                    f"distributed {distributed.__version__}, xgboost {xgboost.__version__}, "
                    f"{os.cpu_count()} cores; one LocalCluster of {args.workers} worker "
                    "processes x 1 "
                    f"thread; dpxgb: ε = {EPSILON}, {MAX_BIN} bins (the default: its schedule's), "
                    "public bounds.")
    t_start = time.perf_counter()
    with LocalCluster(**dict(CLUSTER, n_workers=args.workers)) as cluster, \
            Client(cluster) as client:
        client.register_plugin(PeakRSS(), name=SAMPLER_NAME)
        warm_up(client)
        for section in sorted(set(args.sections)):
            SECTIONS[section](client, args, report)
        client.unregister_worker_plugin(SAMPLER_NAME)
    report.add(f"Total run time: {(time.perf_counter() - t_start) / 60:.1f} min.")


if __name__ == "__main__":
    main()
