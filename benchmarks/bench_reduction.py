"""Bytes reaching the coordinator per level, level time and the scheduler's CPU per level,
at 2, 4 and 8 workers (or more).

Usage::

    python benchmarks/bench_reduction.py [--workers 2 4 8] [--features 50 500]
                                         [--rows 20000] [--repeats 3]
                                         [--output benchmarks/results/reduction.md]

For each worker count, a cluster as a deployment starts it (``dask scheduler`` in a process
of its own and that many ``dask worker --no-nanny`` processes x 1 thread; 16 processes on 2
cores is fine for bytes and for the scheduler's CPU): a LocalCluster would run its nannies,
and their system monitors, on the scheduler's event loop, whose CPU would then grow with the
workers for reasons no deployment has. For each feature count, one
noisy_histogram fit (5 trees of depth 6, 64 bins, ε = 1, public bounds ±8) of ``--rows``
standard-normal rows split into one partition per worker. A level's histograms are summed
among the workers along a binary tree (``dpxgb_dask/cluster/reduction.py``), so the
coordinator receives at most two partial sums per level. Reported: the median and the largest
bytes per level that reach the coordinator (``timings["bytes_per_level"]``: the pickled
replies of the level's round), the median and 90th percentile level time, and the
scheduler process's CPU per level (``timings["trees_cpu"]`` over the levels), also net of
the scheduler's idle CPU rate (Dask's periodic work, measured with no fit running, times the
trees' wall time), each the median over ``--repeats`` fits (a fit of 30 levels on a shared 2-core machine moves by 10%
or more from one fit to the next), and for each feature count the spread of the CPU per
level over the worker counts: (largest - smallest) / smallest.
"""
import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from distributed import Client

from dpxgb_dask import train


@contextlib.contextmanager
def deployed_cluster(n_workers):
    """A client of a scheduler process and ``n_workers`` nanny-less worker processes (1
    thread each) started by Dask's command line, all stopped on exit."""
    with tempfile.TemporaryDirectory() as folder:
        scheduler_file = str(Path(folder) / "scheduler.json")
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--scheduler-file", scheduler_file], **quiet)]
        try:
            deadline = time.monotonic() + 60
            while not Path(scheduler_file).exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            processes += [subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--nthreads", "1",
                 "--no-nanny", "--no-dashboard", "--memory-limit", "0",
                 "--scheduler-file", scheduler_file], **quiet) for _ in range(n_workers)]
            with Client(scheduler_file=scheduler_file) as client:
                client.wait_for_workers(n_workers, timeout=120)
                yield client
        finally:
            for process in processes[::-1]:  # the workers, then the scheduler
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


#: Seconds over which the scheduler's idle CPU rate is measured.
IDLE_SECONDS = 5.0


def _idle_cpu_rate(client):
    """CPU seconds per second of the scheduler process with no fit running."""
    import psutil

    scheduler = psutil.Process(client.run_on_scheduler(os.getpid))
    time.sleep(1.0)  # (the warm-up's messages settle)
    start_cpu, start = sum(scheduler.cpu_times()[:2]), time.monotonic()
    time.sleep(IDLE_SECONDS)
    return (sum(scheduler.cpu_times()[:2]) - start_cpu) / (time.monotonic() - start)


def _fit(client, n_rows, n_features, n_workers):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, n_features))
    y = (X[:, : min(10, n_features)].sum(axis=1) > 0).astype(float)
    params = dict(epsilon=1.0, split_method="noisy_histogram", split_candidates="uniform",
                  n_estimators=5, max_depth=6, max_bin=64,
                  feature_bounds=np.tile([-8.0, 8.0], (n_features, 1)))
    start = time.perf_counter()
    _, timings = train(params, X, y, client=client, n_partitions=n_workers,
                       return_timings=True)
    return timings, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--features", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3,
                        help="fits per cell; the table gives their medians")
    parser.add_argument("--output", default=str(Path(__file__).resolve().parent / "results"
                                                / "reduction.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore", category=UserWarning)
    rows = []
    t_start = time.perf_counter()
    cpu, net = {}, {}
    for n_workers in args.workers:
        with deployed_cluster(n_workers) as client:
            _fit(client, 2_000, 10, n_workers)  # warm-up: imports, plugin registration
            idle = _idle_cpu_rate(client)
            for n_features in args.features:
                fits = [_fit(client, args.rows, n_features, n_workers)
                        for _ in range(args.repeats)]
                sent = np.array(fits[0][0]["bytes_per_level"]) / 1e6  # (the same every fit)
                level = [np.array(t["level"]) * 1e3 for t, _ in fits]
                cpu[n_workers, n_features] = np.median(
                    [1e3 * t["trees_cpu"] / len(t["level"]) for t, _ in fits])
                net[n_workers, n_features] = np.median(
                    [1e3 * (t["trees_cpu"] - idle * t["phases"]["trees"]) / len(t["level"])
                     for t, _ in fits])
                rows.append([n_workers, n_features, f"{np.median(sent):.3f}", f"{sent.max():.3f}",
                             f"{np.median([np.median(v) for v in level]):.1f}",
                             f"{np.median([np.percentile(v, 90) for v in level]):.1f}",
                             f"{cpu[n_workers, n_features]:.1f}", f"{1e3 * idle:.0f}",
                             f"{net[n_workers, n_features]:.1f}",
                             f"{np.median([wall for _, wall in fits]):.2f}"])
                print(rows[-1], flush=True)
    spreads = []
    for n_features in args.features:
        for name, values in (("CPU", cpu), ("CPU beyond the idle rate", net)):
            per_level = [values[w, n_features] for w in args.workers]
            spreads.append(f"{name} at {n_features} features: {min(per_level):.1f} to "
                           f"{max(per_level):.1f} ms, a spread of "
                           f"{100 * (max(per_level) / min(per_level) - 1):.0f}%")
    command = "python " + shlex.join(sys.argv)
    header = ["workers", "features", "MB to the coordinator per level, median",
              "largest level (MB)", "level median (ms)", "level p90 (ms)",
              "scheduler process CPU per level (ms)", "scheduler idle CPU (ms/s)",
              "scheduler CPU per level beyond the idle rate (ms)", "fit (s)"]
    text = (f"Produced by: `{command}`\n\n"
            f"{args.rows:,} rows, noisy_histogram, 5 trees of depth 6, 64 bins, one partition "
            f"per worker process (`dask worker --no-nanny`, 1 thread each; the scheduler in "
            f"a process of its own), {os.cpu_count()} cores. The scheduler "
            "process's CPU per level is its CPU time while the trees grow (the coordinator, "
            "its noise threads and the scheduler's own work for the rounds: "
            "timings[\"trees_cpu\"]) over the levels. Each figure is the median over "
            f"{args.repeats} fits. The scheduler's idle CPU is its CPU per second over "
            f"{IDLE_SECONDS:.0f} s with the workers connected and no fit (Dask's own periodic "
            "work); the CPU beyond it subtracts that rate times the trees' wall time, which "
            "grows with the worker processes sharing 2 cores.\n\n"
            + "| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n"
            + "\n".join("| " + " | ".join(str(v) for v in r) + " |" for r in rows)
            + "\n\nThe scheduler process's CPU per level over the worker counts: "
            + "; ".join(spreads) + "."
            + f"\n\nTotal run time: {(time.perf_counter() - t_start) / 60:.1f} min.\n")
    print(text)
    Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
