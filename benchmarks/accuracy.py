"""Accuracy vs ε on UCI Adult: every preset and the default, next to non-private XGBoost.

Usage::

    python benchmarks/accuracy.py [--epsilons 0.1 0.5 1 4 10] [--n-estimators 20]
                                  [--methods default dp-xgboost dpboost maddock s-bdt]
                                  [--seeds 3] [--no-cluster] [--out FILE.md]
    python benchmarks/accuracy.py --methods noisy_histogram partially_random exponential \
        --n-estimators 0 --epsilons 0.5 1 4 --no-cluster \
        --out benchmarks/results/adult_split_methods.md

A method is ``default``, a preset, a split method named without a preset (which then
takes its own defaults, ``params.defaults.SPLIT_METHOD_DEFAULTS``), or ``select:FAMILY``,
a private selection among a family of configurations (``train(select=FAMILY)``, all
within ε); ``--n-estimators 0`` keeps each method's own number of trees.

Train on adult.data, test on adult.test, rows with '?' dropped (30,162 / 15,060 rows);
categorical columns are coded by the category lists of adult.names and every feature has
a public domain range (benchmarks/datasets.py), so no bound is read from the data. Each
cell is the mean (± std over seeds) of the test error (threshold 0.5) and the test AUC.
By default fits run through ``dpxgb_dask.train`` on a LocalCluster of 2 workers x 1
thread; ``--no-cluster`` runs the same coordinator in-process (identical results for the
same seed and partitioning, faster for sweeps).
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasets import data_dir, load_adult  # noqa: E402

from dpxgb_dask.params import SPLIT_METHODS, resolve_params  # noqa: E402
from dpxgb_dask.training import (check_bounds_policy, select_in_process, train,  # noqa: E402
                                 train_in_process)

#: A seed of > 128 bits per repetition (shorter seeds would warn that noise is guessable).
SEED_BASE = 2**160


def fit_predict(params, X, y, X_test, client, n_partitions=2):
    """Train with ``params`` (dict; its "select" a private selection's family) and return
    test probabilities."""
    params = dict(params)
    select = params.pop("select", None)
    if select is not None:
        booster = (select_in_process(params, X, y, select, n_partitions)[0] if client is None
                   else train(params, X, y, client=client, n_partitions=n_partitions,
                              select=select))
    elif client is None:
        given = dict(params)
        p = resolve_params(given.pop("objective"), preset=given.pop("preset", None),
                           n_features=X.shape[1], **given)
        p = check_bounds_policy(p, X.shape[1])
        booster, _ = train_in_process(p, X, y, n_partitions)
    else:
        booster = train(params, X, y, client=client, n_partitions=n_partitions)
    return booster.predict(X_test), booster


def error_and_auc(y_true, proba):
    """Test error (%, threshold 0.5) and AUC of predicted probabilities."""
    proba = np.asarray(proba, dtype=float)
    return 100.0 * float(((proba > 0.5) != y_true).mean()), float(roc_auc_score(y_true, proba))


def error_auc_cell(scores):
    """A table cell "error±std / AUC±std" from (error %, AUC) pairs, one per seed."""
    scores = np.asarray(scores, dtype=float)
    mean, std = scores.mean(axis=0), scores.std(axis=0)
    return f"{mean[0]:.1f}±{std[0]:.1f} / {mean[1]:.3f}±{std[1]:.3f}"


def method_params(method, epsilon, n_estimators, bounds, seed):
    params = {"objective": "binary:logistic", "epsilon": epsilon, "feature_bounds": bounds,
              "random_state": seed,
              "reproducible_noise": True}  # reproducible tables: noise keyed by the seed
    if n_estimators:
        params["n_estimators"] = n_estimators
    if method.startswith("select:"):  # a private selection among a family, within ε
        params["select"] = method.split(":", 1)[1]
    elif method in SPLIT_METHODS:
        params["split_method"] = method
    elif method != "default":
        params["preset"] = method
    return params


def nonprivate_xgboost(X, y, X_test, y_test, n_estimators):
    import xgboost

    model = xgboost.XGBClassifier(n_estimators=n_estimators, max_depth=6, learning_rate=0.3,
                                  tree_method="hist", n_jobs=2)
    model.fit(X, y)
    proba = model.predict_proba(X_test)[:, 1]
    return float(((proba > 0.5) != y_test).mean()), float(roc_auc_score(y_test, proba))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 4.0, 10.0])
    parser.add_argument("--methods", nargs="+",
                        default=["default", "dp-xgboost", "dpboost", "maddock", "s-bdt"])
    parser.add_argument("--n-estimators", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-cluster", action="store_true")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()

    if data_dir() is None:
        sys.exit("accuracy.py: ../shared/data (or $DPXGB_DATA) with adult/ is needed")
    X, y, X_test, y_test, bounds = load_adult()
    warnings.simplefilter("ignore", category=UserWarning)

    client = cluster = None
    if not args.no_cluster:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
        client = Client(cluster)

    trees = args.n_estimators or "each method's own number of"
    lines = [f"Adult (train {len(y)} rows, test {len(y_test)}), {trees} trees, "
             f"{args.seeds} seed(s); test error % / AUC, mean ± std",
             "",
             "| method | " + " | ".join(f"ε={e:g}" for e in args.epsilons) + " |",
             "|---" * (len(args.epsilons) + 1) + "|"]
    print("\n".join(lines), flush=True)
    t_start = time.time()
    for method in args.methods:
        cells = []
        for eps in args.epsilons:
            scores = []
            for s in range(args.seeds):
                params = method_params(method, eps, args.n_estimators, bounds, SEED_BASE + s)
                proba, _ = fit_predict(params, X, y, X_test, client)
                scores.append(error_and_auc(y_test, proba))
            cells.append(error_auc_cell(scores))
        line = f"| {method} | " + " | ".join(cells) + " |"
        lines.append(line)
        print(line, flush=True)
    xgb_trees = args.n_estimators or 20
    err, auc = nonprivate_xgboost(X, y, X_test, y_test, xgb_trees)
    line = (f"| xgboost (non-private, {xgb_trees} trees, depth 6, η 0.3) | " +
            " | ".join(f"{100 * err:.1f} / {auc:.3f}" for _ in args.epsilons) + " |")
    lines.append(line)
    print(line)
    print(f"\n({time.time() - t_start:.0f} s)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    if client is not None:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
