"""The training service under load: 8 analysts submit 50 fits in all at once.

Usage::

    python benchmarks/bench_service.py [--jobs 50] [--analysts 8] [--rows 20000]
                                       [--concurrency 2] [--output benchmarks/results/service.md]

One LocalCluster of 2 worker processes x 1 thread, one service (``ServiceThread``: uvicorn
in this process, a SQLite file), one Parquet dataset of ``--rows`` generated rows (4
features). The jobs alternate between two parameter sets (2 random trees at ε = 0.2; 3
exponential-mechanism trees at ε = 0.3; depth 2). While they run, every analyst asks for
its jobs' status in turn; reported: the status calls' latency (median, 95th percentile,
largest), the wall time of the 50 fits through the service, and the same fits made one
after the other with ``train`` on the same cluster, without the service.
"""
import argparse
from concurrent.futures import ThreadPoolExecutor
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

from dpxgb_dask.service import Client as ServiceClient
from dpxgb_dask.service.database import sqlite_url
from dpxgb_dask.service.runner import read_dataset
from dpxgb_dask.service.schemas import DatasetSchema, JobParams, train_params
from dpxgb_dask.service.server import ServiceThread, init_owner
from dpxgb_dask.training import train

PARAMS = [{"epsilon": 0.2, "n_estimators": 2, "max_depth": 2},
          {"epsilon": 0.3, "n_estimators": 3, "max_depth": 2, "split_method": "exponential"}]
SCHEMA = {"features": [{"name": f"x{i}", "bounds": [-5.0, 5.0]} for i in range(4)],
          "label": "y", "objective": "binary:logistic", "classes": [0, 1]}


def _dataset(directory, n_rows):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((n_rows, 4)), columns=[f"x{i}" for i in range(4)])
    frame["y"] = (frame.sum(axis=1) + rng.logistic(size=n_rows) > 0).astype(float)
    path = Path(directory) / "data"
    path.mkdir()
    half = n_rows // 2
    frame.iloc[:half].to_parquet(path / "part-0.parquet")
    frame.iloc[half:].to_parquet(path / "part-1.parquet")
    return str(path)


def _load(url, owner_token, location, n_jobs, n_analysts):
    with ServiceClient(url, owner_token) as owner:
        owner.register_dataset("data", location, "parquet", SCHEMA)
        names = [f"analyst{i}" for i in range(n_analysts)]
        tokens = {n: owner.create_analyst(n)["token"] for n in names}
        for n in names:
            owner.set_budget(n, "data", 100.0)
    clients = {n: ServiceClient(url, t) for n, t in tokens.items()}
    assignments = [(names[i % n_analysts], PARAMS[i % 2]) for i in range(n_jobs)]
    start = time.perf_counter()
    with ThreadPoolExecutor(n_analysts) as pool:
        jobs = list(pool.map(lambda a: (a[0], clients[a[0]].submit("data", **a[1])["id"]),
                             assignments))
    latencies, ended = [], set()
    while len(ended) < n_jobs:
        for name, job_id in jobs:
            if job_id not in ended:
                t = time.perf_counter()
                status = clients[name].job(job_id)["status"]
                latencies.append(time.perf_counter() - t)
                if status not in ("queued", "running"):
                    if status != "finished":
                        raise RuntimeError(f"job {job_id} {status}")
                    ended.add(job_id)
    wall = time.perf_counter() - start
    for c in clients.values():
        c.close()
    return np.array(latencies) * 1e3, wall


def _direct(client, location, n_jobs):
    class Registered:
        schema, format = SCHEMA, "parquet"

    Registered.location = location
    start = time.perf_counter()
    for i in range(n_jobs):
        params = train_params(DatasetSchema.model_validate(SCHEMA),
                              JobParams.model_validate(PARAMS[i % 2]))
        X, y = read_dataset(Registered)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train(params, X, y, client=client)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--analysts", type=int, default=8)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        location = _dataset(tmp, args.rows)
        database = sqlite_url(Path(tmp) / "service.db")
        owner_token = init_owner(database)
        # (ends written at once: the benchmark times the service's own work)
        running = ServiceThread(database, client, args.concurrency, status_quantum=0)
        try:
            latencies, wall = _load(running.url, owner_token, location, args.jobs,
                                    args.analysts)
        finally:
            running.stop()
        direct = _direct(client, location, args.jobs)
    lines = [
        "# The training service under load",
        "",
        f"`{' '.join(shlex.quote(a) for a in [Path(sys.argv[0]).as_posix()] + sys.argv[1:])}`",
        "",
        f"{args.jobs} fits by {args.analysts} analysts at once, {args.rows:,} rows, "
        f"{args.concurrency} jobs at a time, LocalCluster of 2 workers x 1 thread:",
        "",
        "| measure | value |",
        "|---|---|",
        f"| status calls while the fits ran | {len(latencies)} |",
        f"| status call latency: median | {np.percentile(latencies, 50):.1f} ms |",
        f"| status call latency: 95th percentile | {np.percentile(latencies, 95):.1f} ms |",
        f"| status call latency: largest | {latencies.max():.1f} ms |",
        f"| wall time of the {args.jobs} fits through the service | {wall:.1f} s |",
        f"| the same fits with `train`, one after the other, no service | {direct:.1f} s |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
