"""Cross-silo training (issue 26): utility, time and bytes of the central, local-noise and
secure-aggregation modes.

Usage::

    python benchmarks/cross_silo.py [--datasets adult abalone bank] [--epsilons 0.1 1 4]
                                    [--seeds 5] [--silos 2 4 8] [--sections utility timing]
                                    [--trees 50] [--repeats 3] [--rows 300000]
                                    [--out benchmarks/results/cross_silo.md]

1. **Utility**, in process (``train_in_process``: each of its ``n_partitions`` partitions
   is a silo). Every mode fits ONE parameter set per dataset and ε: the defaults as
   resolved for a cross-silo fit (``resolve_params(objective, epsilon=ε,
   feature_bounds=<public>, init_score="zero", accountant="rdp", subsample=1.0,
   cross_silo=mode)``, which only ``cross_silo`` tells apart), with the public bounds of ``benchmarks/datasets.py``.
   The datasets, their splits and metrics are reproduce.py's: Adult adult.data /
   adult.test (error % and AUC), Abalone 5-fold CV per seed (RMSE in rings, mean over the
   folds), Bank a stratified 70/30 split per seed (error % and AUC). The training rows are
   shuffled (per seed and fold) and cut into equal contiguous chunks, so each silo holds
   a random share of the rows; the central fit gets the same shuffled rows in as many
   partitions as the most silos (its sums are exact, so its partitioning does not matter:
   the script checks it, with seeded noise, on the first seed). Repetition ``s`` keys
   the random trees with ``SEED_BASE + 1000·s + fold`` as reproduce.py does; the noise
   is fresh in every mode (each silo's own secret, or the coordinator's, unseeded), so
   each run draws every mode's noise again and no cell is bit-reproducible. The same
   seed gives the same random trees in every mode: the modes differ only in their noise.
2. **Time and bytes per tree round** on a LocalCluster of k worker processes x 1 thread,
   one silo per worker, for each silo count k, on a synthetic table (``--rows`` x 50
   float32, ``bench_execution.classification``, public bounds ±8): Adult's 30k rows are
   too few to time a round by. The same dask array (one row block per worker) goes to
   dpxgb (the cross-silo defaults at ε = 1 with ``--trees`` trees) in each mode and to
   xgboost.dask (``bench_execution.fit_xgboost``: hist, depth 6, 64 bins). With random
   splits a tree is ONE round to the workers (its leaves' sums), so the seconds per tree
   round are the medians of ``timings["tree"]`` over ``--repeats`` fits; the bytes per
   tree round are ``bytes_gathered`` of a ``--trees`` fit minus that of a 2-tree fit,
   per extra tree. xgboost.dask's seconds per boosting round are the same difference of
   fit times (medians of ``--repeats``) over the rounds.
"""
import argparse
import datetime
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import SEED_BASE, fit_predict  # noqa: E402
from bench_execution import (N_FEATURES, classification, dp_params, fit_xgboost,  # noqa: E402
                             scatter_rows)
from reproduce import _quiet, load_dataset, score  # noqa: E402
from tables import Report, epsilon_table  # noqa: E402

MODE_LABELS = {None: "central", "local": "local noise", "secure": "secure aggregation"}
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "cross_silo.md"


def silo_params(data, epsilon, mode, tree_seed, seeded_noise=False):
    """One fit's parameters: the defaults as resolved for a cross-silo fit, in ``mode``.

    Parameters
    ----------
    data : reproduce.LoadedData
    epsilon : float
    mode : {None, "local", "secure"}
    tree_seed : int
        Keys the random trees.
    seeded_noise : bool
        Central: key the noise by ``tree_seed`` too (reproducible).

    Returns
    -------
    dict
        For :func:`accuracy.fit_predict`.
    """
    params = {"objective": data.spec.objective, "epsilon": epsilon,
              "feature_bounds": data.feature_bounds, "cross_silo": mode,
              # secure aggregation's defaults, given to every mode so that all fit the
              # same parameters (params/silos.py: SECURE_PARAMS)
              "init_score": "zero", "accountant": "rdp",
              # a cross-silo fit samples no rows (params/silos.py: cross_silo_defaults);
              # central fits the same, where its default at small epsilon would subsample
              "subsample": 1.0,
              "random_state": tree_seed, "reproducible_noise": seeded_noise}
    if data.label_bounds is not None:
        params["label_bounds"] = data.label_bounds
    return params


def configurations(silos):
    """The rows of the utility grid: (label, mode, partitions), central first."""
    rows = [(f"central ({max(silos)} partitions)", None, max(silos))]
    for mode in ("local", "secure"):
        rows += [(f"{MODE_LABELS[mode]}, {k} silos", mode, k) for k in silos]
    return rows


def shuffled_splits(data, seed_index):
    """Yield ``(fold, X, y, X_test, y_test)`` of repetition ``seed_index``, the training rows
    in a random order (so that contiguous chunks are random silos)."""
    for fold, (X, y, X_test, y_test) in enumerate(data.splits(seed_index)):
        order = np.random.default_rng([seed_index, fold]).permutation(len(y))
        yield fold, X[order], y[order], X_test, y_test


def run_grid(data, epsilons, n_seeds, silos):
    """Every (configuration, ε, seed) of one dataset.

    Parameters
    ----------
    data : reproduce.LoadedData
    epsilons : sequence of float
    n_seeds : int
    silos : sequence of int

    Returns
    -------
    scores : dict
        Metric key -> ndarray of shape (configurations, ε, seeds), each the mean over folds.
    central_same : list of bool
        Per ε, on the first seed and fold: whether the central fit predicts the same at
        every silo count's partitioning as at the most.
    """
    configs = configurations(silos)
    keys = [m.key for m in data.spec.metrics]
    scores = {key: np.zeros((len(configs), len(epsilons), n_seeds)) for key in keys}
    central_same = []
    for e, eps in enumerate(epsilons):
        for s in range(n_seeds):
            folds = {key: [[] for _ in configs] for key in keys}
            for fold, X, y, X_test, y_test in shuffled_splits(data, s):
                for c, (_, mode, k) in enumerate(configs):
                    seed = SEED_BASE + 1000 * s + fold
                    prediction, _ = fit_predict(silo_params(data, eps, mode, seed), X, y,
                                                X_test, None, n_partitions=k)
                    if mode is None and s == 0 and fold == 0:
                        seeded = silo_params(data, eps, mode, seed, seeded_noise=True)
                        central_same.append(len({fit_predict(
                            seeded, X, y, X_test, None, n_partitions=n)[0].tobytes()
                            for n in silos}) == 1)
                    for key, value in score(data.spec, y_test, prediction).items():
                        folds[key][c].append(value)
            for key in keys:
                scores[key][:, e, s] = [np.mean(values) for values in folds[key]]
        print(f"  {data.spec.name}: ε = {eps:g} done", flush=True)
    return scores, central_same


def spread_rows(data, scores, epsilons, silos):
    """Per metric, ε and silo count: central, the local mode's cost and the secure mode's
    difference against central's seed spread.

    Returns
    -------
    rows : list of list of str
    misses : list of str
        The cells where secure aggregation's mean is farther from central's than central's
        standard deviation over seeds.
    z : list of float
        Per cell, (secure mean − central mean) / its standard error
        √((s²_central + s²_secure) / seeds), sample variances, signed so that z > 0 when
        secure aggregation does better: about N(0, 1) when both modes draw from the same
        distribution.
    """
    rows, misses, z = [], [], []
    for metric in data.spec.metrics:
        values, d = scores[metric.key], metric.decimals + 1
        for e, eps in enumerate(epsilons):
            central = values[0, e]
            for i, k in enumerate(silos):
                local, secure = values[1 + i, e], values[1 + len(silos) + i, e]
                gap = secure.mean() - central.mean()
                within = abs(gap) <= central.std()
                better = -1.0 if metric.lower_is_better else 1.0
                z.append(better * gap / np.sqrt((central.var(ddof=1) + secure.var(ddof=1))
                                                / central.size))
                rows.append([metric.label, f"{eps:g}", str(k),
                             f"{central.mean():.{d}f} ± {central.std():.{d}f}",
                             f"{local.mean() - central.mean():+.{d}f}",
                             f"{gap:+.{d}f}", f"{abs(gap) / central.std():.1f}",
                             "yes" if within else "**no**", f"{z[-1]:+.1f}"])
                if not within:
                    misses.append(f"{data.spec.name} {metric.label} ε = {eps:g}, {k} silos: "
                                  f"secure − central {gap:+.{d}f}, central sd "
                                  f"{central.std():.{d}f}, secure sd {secure.std():.{d}f}")
    return rows, misses, z


def markdown_table(header, rows):
    """A Markdown table (list of lines) of ``header`` and ``rows`` of strings."""
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows])


def section_utility(args, report):
    """1. Utility of every configuration on every dataset, and the comparison with central."""
    report.say("## 1. Utility", "",
               "In process, each partition a silo; rows shuffled at random into the silos; "
               f"the defaults resolved for a cross-silo fit at each ε, {args.seeds} seeds, "
               "mean ± sd over seeds (population sd). Central: the coordinator adds the "
               "noise to exact sums; local noise: each silo adds the full noise to its own "
               "sums; secure aggregation: each silo adds a share of a distributed discrete "
               "Gaussian and masks its answer (the same total noise as central).", "")
    comparison, misses, checks, z = [], [], [], []
    labels = [c[0] for c in configurations(args.silos)]
    for name in args.datasets:
        data = load_dataset(name, quick=False)
        scores, central_same = run_grid(data, args.epsilons, args.seeds, args.silos)
        checks += central_same
        p = _resolved(data, args.epsilons)
        report.say(f"### {data.spec.title}: {data.spec.protocol}", "", p, "")
        for metric in data.spec.metrics:
            unit = f" ({data.spec.rmse_unit})" if metric.key == "rmse" else ""
            report.say(f"{metric.label}{unit}:", "",
                       *epsilon_table(labels, args.epsilons, scores[metric.key],
                                      metric.decimals + 1), "")
        rows, missed, z_cells = spread_rows(data, scores, args.epsilons, args.silos)
        comparison += [[data.spec.name] + row for row in rows]
        misses += missed
        z += z_cells
    report.say("### Against central, per silo count", "",
               *markdown_table(["dataset", "metric", "ε", "silos", "central",
                                "local − central", "secure − central",
                                "\\|secure − central\\| / central sd",
                                "secure within central's sd", "z (> 0: secure better)"],
                              comparison), "",
               "Local − central is the local-noise mode's cost (its sum carries the silo "
               "count times the central noise variance). Within central's sd: |secure mean "
               "− central mean| ≤ central's standard deviation over seeds (population sd). "
               f"With {args.seeds} seeds the difference of two means of the same "
               "distribution exceeds one sd with probability "
               f"{math.erfc(math.sqrt(args.seeds) / 2):.2f}, and central's sd over so few "
               "seeds is itself uncertain. z: (secure mean − central mean) / √((s²_central "
               "+ s²_secure) / seeds), sample variances, signed to be positive when secure "
               "aggregation does better; about N(0, 1) when the two modes draw from the "
               "same distribution.", "",
               f"Secure aggregation outside central's sd in {len(misses)} of "
               f"{len(comparison)} cells" + (":" if misses else "."), "",
               *([f"- {miss}" for miss in misses] + [""] if misses else []),
               f"z over the {len(z)} cells: mean {np.mean(z):+.2f}, sd {np.std(z):.2f}; "
               f"secure better (z > 0) in {sum(v > 0 for v in z)}; z > 2 in "
               f"{sum(v > 2 for v in z)} and z < −2 in {sum(v < -2 for v in z)} (about 2.5% "
               "of cells each under the same distribution; the cells of one dataset and ε "
               "share central's fits, so they are not independent).", "",
               f"Central's partitioning: with seeded noise, identical predictions at every "
               f"silo count's partitioning in {sum(checks)} of {len(checks)} checks (first "
               "seed and fold, each dataset and ε).", "")


def _resolved(data, epsilons):
    """One line naming the resolved parameters at each ε (what every mode fits)."""
    from dpxgb_dask.params import resolve_params

    parts = []
    for eps in epsilons:
        given = silo_params(data, eps, "secure", 0)
        p = resolve_params(given.pop("objective"), **given)
        parts.append(f"ε = {eps:g}: {p.n_estimators} trees, depth {p.max_depth}, "
                     f"{p.max_bin} bins, {p.split_candidates} candidates, "
                     f"learning rate {p.learning_rate:g}")
    return "Parameters (every mode): " + "; ".join(parts) + "."


def timed_fit(client, params, X, y):
    """``train(..., return_timings=True)`` on ``client``: (timings, wall seconds)."""
    from dpxgb_dask import train

    start = time.perf_counter()
    _, timings = train(params, X, y, client=client, return_timings=True)
    return timings, time.perf_counter() - start


def xgboost_round_seconds(client, X, y, trees, repeats):
    """xgboost.dask's seconds per boosting round: the median fit time at ``trees`` rounds
    minus that at 2 rounds, over the extra rounds (its DMatrix and start cancel out)."""
    fit_xgboost(client, X, y, rounds=2)  # warm-up: its first fit starts its tracker
    fits = {}
    for rounds in (2, trees):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fit_xgboost(client, X, y, rounds=rounds)
            times.append(time.perf_counter() - start)
        fits[rounds] = float(np.median(times))
    return (fits[trees] - fits[2]) / (trees - 2), fits[trees]


def time_modes(client, X, y, args):
    """Each mode's median and p90 seconds per tree round, bytes per tree round and median
    fit time on ``client``; the modes' fits interleaved, so that a slow spell of the
    machine falls on all of them."""
    base = dict(dp_params("default", N_FEATURES), init_score="zero", accountant="rdp")
    modes = list(MODE_LABELS)
    fixed = {}
    for mode in modes:  # warm-up (imports, the workers' plugin) and the 2-tree bytes
        fixed[mode] = timed_fit(client, dict(base, cross_silo=mode, n_estimators=2),
                                X, y)[0]["bytes_gathered"]
    trees = {mode: [] for mode in modes}
    walls = {mode: [] for mode in modes}
    sent = {}
    for _ in range(args.repeats):
        for mode in modes:
            timings, wall = timed_fit(
                client, dict(base, cross_silo=mode, n_estimators=args.trees), X, y)
            trees[mode] += timings["tree"]
            walls[mode].append(wall)
            sent[mode] = (timings["bytes_gathered"] - fixed[mode]) / (args.trees - 2)
    return {mode: (float(np.median(trees[mode])), float(np.percentile(trees[mode], 90)),
                   sent[mode], float(np.median(walls[mode]))) for mode in modes}


def section_timing(args, report):
    """2. Seconds and bytes per tree round of each mode at each silo count, and
    xgboost.dask's seconds per boosting round on the same cluster and data."""
    from distributed import Client, LocalCluster

    rows, ratios = [], {}
    X_local, y_local = classification(args.rows, N_FEATURES, np.float32)
    for k in args.silos:
        with LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            X, y = scatter_rows(client, X_local, y_local)
            measured = time_modes(client, X, y, args)
            xgb_round, xgb_fit = xgboost_round_seconds(client, X, y, args.trees,
                                                       args.repeats)
        central = measured[None][0]
        for mode, (median, p90, sent, wall) in measured.items():
            rows.append([str(k), f"dpxgb, {MODE_LABELS[mode]}", f"{median * 1e3:.1f}",
                         f"{p90 * 1e3:.1f}", f"{sent / 1e3:.2f}", f"{wall:.2f}",
                         f"{median / central:.2f}"])
        ratios[k] = measured["secure"][0] / central
        rows.append([str(k), "xgboost.dask (hist, depth 6, 64 bins)", f"{xgb_round * 1e3:.1f}",
                     "-", "-", f"{xgb_fit:.2f}", f"{xgb_round / central:.2f}"])
        print(f"  timing: {k} silos done", flush=True)
    last = max(args.silos)
    report.say(
        f"## 2. Time and bytes per tree round, {args.rows:,} x {N_FEATURES} float32 "
        "(synthetic)", "",
        f"LocalCluster of k worker processes x 1 thread for k = "
        f"{', '.join(map(str, args.silos))}, each worker one silo holding one row block, "
        f"on {os.cpu_count()} cores: at 8 silos, 8 worker processes and the scheduler share "
        f"the {os.cpu_count()} cores. dpxgb: the cross-silo defaults at ε = 1 with "
        f"{args.trees} trees (depth 6, random splits: one round to the workers per tree); "
        f"{args.repeats} fits per mode, interleaved. Synthetic "
        "(bench_execution.classification, bounds ±8) rather than Adult, whose 30,162 rows "
        "leave a round to the fixed costs.", "",
        *markdown_table(["silos", "system, mode", "ms per tree round (median)", "p90 (ms)",
                         "kB to the coordinator per tree round", "fit (s, median)",
                         "time / central"], rows), "",
        "xgboost.dask: ms per boosting round = (median fit at "
        f"{args.trees} rounds − median fit at 2 rounds) / {args.trees - 2}; its fit column "
        f"is the {args.trees}-round fit (DMatrix included). It builds histograms each "
        "round; dpxgb's random trees do not.", "",
        f"Secure aggregation / central per tree round at {last} silos: {ratios[last]:.2f} "
        "(the issue's target: at most 2x). At each silo count: "
        + ", ".join(f"{k}: {r:.2f}" for k, r in ratios.items()) + ".", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["adult", "abalone", "bank"],
                        choices=["adult", "abalone", "bank"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 4.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--silos", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--sections", nargs="+", default=["utility", "timing"],
                        choices=["utility", "timing"])
    parser.add_argument("--trees", type=int, default=50, help="trees per timed fit (> 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per mode")
    parser.add_argument("--rows", type=int, default=300_000, help="rows of the timing table")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    if min(args.silos) < 2 or args.trees <= 2:
        parser.error("secure aggregation needs at least 2 silos, and --trees must exceed 2")
    _quiet()
    report = Report("cross_silo.py")
    report.say("# Cross-silo training: central, local noise, secure aggregation", "",
               f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores "
               f"({_cpu_model()}); command at the end.", "")
    if "utility" in args.sections:
        section_utility(args, report)
        Path(args.out).write_text("\n".join(report.lines) + "\n")  # (kept if timing fails)
    if "timing" in args.sections:
        section_timing(args, report)
    report.finish(args.out)


def _cpu_model():
    """The processor's name from /proc/cpuinfo, or "unknown CPU"."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
