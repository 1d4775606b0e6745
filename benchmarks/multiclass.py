"""Multiclass accuracy vs ε: the default and the presets (multi:softprob, one tree per class
and round) on scikit-learn's packaged digits, next to non-private XGBoost and DP-EBM.

Usage::

    python benchmarks/multiclass.py [--epsilons 1 4 10] [--seeds 5] [--cluster]
                                    [--methods default dp-xgboost maddock s-bdt]
                                    [--out benchmarks/results/multiclass.md]
    python benchmarks/multiclass.py --select [--out benchmarks/results/tuning/multiclass-selection.md]

Digits (``sklearn.datasets.load_digits``: 1,797 8x8 images, 10 classes, 64 pixel features
whose public domain is [0, 16]) is split once, stratified, 70/30 (seed 0): 1,257 training
and 540 test rows. Covertype (7 classes) is added when scikit-learn's copy is already on
disk (``fetch_covtype(download_if_missing=False)``; this machine has no internet). Each cell
is the test accuracy (%), mean ± std over ``--seeds`` fits whose noise is keyed by the seed
(``reproducible_noise``, so the table reproduces). The DP fits run in-process (the same
coordinator as on a cluster; ``--cluster`` trains on a LocalCluster of 2 workers instead).
DP-EBM (``interpret``'s ``DPExplainableBoostingClassifier``) is fitted when installed; it
trains binary tasks only, and the table says what it raised.

``--select`` chose the default's multiclass schedule (``params.defaults.DEFAULT_SCHEDULE``) on the
training rows only: a stratified 70/30 split of digits' 1,257 training rows (seed 1), 3
seeds per candidate; the test rows are never read. Each ε takes the candidate with the best
mean validation accuracy.
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import check_bounds_policy, train, train_in_process

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import dp_ebm  # noqa: E402
from tables import Report  # noqa: E402

#: A seed of > 128 bits per repetition (shorter seeds would warn that noise is guessable).
SEED_BASE = 2**160


def load_sets():
    """{name: (X, y, X_test, y_test, public bounds, n_classes)} of the packaged sets."""
    from sklearn.datasets import fetch_covtype, load_digits

    sets = {}
    X, y = load_digits(return_X_y=True)
    X, X_test, y, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    sets["digits"] = (X, y, X_test, y_test, np.tile([0.0, 16.0], (64, 1)), 10)
    try:
        data = fetch_covtype(download_if_missing=False)
    except OSError:
        print("covtype: not on disk (no download here), left out", file=sys.stderr)
    else:
        X, X_test, y, y_test = train_test_split(data.data, data.target - 1, test_size=0.3,
                                                stratify=data.target, random_state=0)
        # the UCI description's ranges of the 10 quantitative columns; 0/1 indicators
        lo = [1859, 0, 0, 0, -173, 0, 0, 0, 0, 0] + [0] * 44
        hi = [3858, 360, 66, 1397, 601, 7117, 254, 254, 254, 7173] + [1] * 44
        sets["covtype"] = (X, y, X_test, y_test, np.column_stack([lo, hi]).astype(float), 7)
    return sets


def dp_accuracy(method, epsilon, seed, data, client):
    X, y, X_test, y_test, bounds, n_classes = data
    params = {"num_class": n_classes, "epsilon": epsilon, "feature_bounds": bounds,
              "random_state": seed, "reproducible_noise": True}
    preset = None if method == "default" else method
    if client is None:
        p = check_bounds_policy(resolve_params("multi:softprob", preset=preset,
                                               n_features=X.shape[1], **params), X.shape[1])
        booster, _ = train_in_process(p, X, y, n_partitions=2)
    else:
        booster = train(dict(params, objective="multi:softprob", preset=preset), X, y,
                        client=client, n_partitions=2)
    return 100.0 * float((booster.predict(X_test).argmax(axis=1) == y_test).mean())


def xgboost_accuracy(data):
    import xgboost

    X, y, X_test, y_test, _, _ = data
    model = xgboost.XGBClassifier(n_estimators=100, max_depth=6, learning_rate=0.3,
                                  tree_method="hist", n_jobs=2)
    model.fit(X, y)
    return 100.0 * float((model.predict(X_test) == y_test).mean())


def dp_ebm_cell(epsilon, data):
    """DP-EBM's accuracy, or what it raised."""
    try:
        model = dp_ebm("multi:softprob", epsilon, data[4])
    except ImportError:
        return "not installed"
    X, y, X_test, y_test, bounds, _ = data
    try:
        model.fit(X, y)
    except Exception as exc:  # noqa: BLE001 - the table reports it
        return f"fails: {type(exc).__name__}: {str(exc)[:60]}"
    return f"{100.0 * float((model.predict(X_test) == y_test).mean()):.1f}"


#: The candidates of ``--select``: overrides of the default (no preset) for multiclass.
CANDIDATES = {
    "binary schedule": {},
    "binary schedule, a random feature per node": {"feature_selection": "random"},
    "maddock's trees, default budget": dict(
        n_estimators=100, max_depth=4, learning_rate=0.3, reg_lambda=1.0, subsample=1.0,
        max_bin=33, feature_selection="random", gradient_bound=1.0, hessian_bound=0.25,
        leaf_noise_ratio=1.0 / 17.0),
    # (the maddock preset's budget when the selection ran: 1:1 sketch and leaf weights)
    "maddock's trees and budget": dict(
        n_estimators=100, max_depth=4, learning_rate=0.3, reg_lambda=1.0, subsample=1.0,
        max_bin=33, feature_selection="random", gradient_bound=1.0, hessian_bound=0.25,
        leaf_noise_ratio=1.0 / 17.0, budget_shares={"sketch": 1.0, "leaf": 1.0},
        init_score="zero", accountant="rdp"),
}


def select(epsilons, seeds, out):
    """Validation accuracy of each candidate on the training rows of digits."""
    X, y, _, _, bounds, n_classes = load_sets()["digits"]
    X, X_val, y, y_val = train_test_split(X, y, test_size=0.3, stratify=y, random_state=1)
    lines = [f"digits training rows split 70/30 (seed 1): {len(y)} to fit, {len(y_val)} to "
             f"validate; accuracy %, mean ± std over {seeds} seeds", "",
             "| candidate | " + " | ".join(f"ε={e:g}" for e in epsilons) + " |",
             "|---" * (len(epsilons) + 1) + "|"]
    print("\n".join(lines), flush=True)
    means = {}
    for name, overrides in CANDIDATES.items():
        cells = []
        for eps in epsilons:
            scores = []
            for s in range(seeds):
                p = resolve_params("multi:softprob", num_class=n_classes, epsilon=eps,
                                   feature_bounds=bounds, random_state=SEED_BASE + 100 + s,
                                   reproducible_noise=True, **overrides)
                booster, _ = train_in_process(p, X, y, n_partitions=2)
                scores.append(100.0 * float((booster.predict(X_val).argmax(axis=1)
                                             == y_val).mean()))
            means[name, eps] = np.mean(scores)
            cells.append(f"{np.mean(scores):.1f} ± {np.std(scores):.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    lines.append("")
    for eps in epsilons:
        best = max(CANDIDATES, key=lambda name: means[name, eps])
        lines.append(f"- ε={eps:g}: {best}")
    print("\n".join(lines[-len(epsilons):]))
    if out:
        Path(out).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0, 10.0])
    parser.add_argument("--methods", nargs="+",
                        default=["default", "dp-xgboost", "maddock", "s-bdt"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cluster", action="store_true")
    parser.add_argument("--select", action="store_true",
                        help="choose the default's multiclass schedule on training rows only")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()
    warnings.simplefilter("ignore", category=UserWarning)
    if args.select:
        return select(args.epsilons, 3, args.out)

    client = cluster = None
    if args.cluster:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
        client = Client(cluster)
    report = Report("multiclass.py")
    say = report.say
    for name, data in load_sets().items():
        say(f"{name}: train {len(data[1])} rows, test {len(data[3])}, {data[5]} classes, "
            f"{data[0].shape[1]} features; test accuracy %, mean ± std over {args.seeds} "
            "seeds")
        say()
        say("| method | " + " | ".join(f"ε={e:g}" for e in args.epsilons) + " |")
        say("|---" * (len(args.epsilons) + 1) + "|")
        for method in args.methods:
            cells = []
            for eps in args.epsilons:
                scores = [dp_accuracy(method, eps, SEED_BASE + s, data, client)
                          for s in range(args.seeds)]
                cells.append(f"{np.mean(scores):.1f} ± {np.std(scores):.1f}")
            say(f"| {method} | " + " | ".join(cells) + " |")
        say("| DP-EBM (interpret) | " +
            " | ".join(dp_ebm_cell(e, data) for e in args.epsilons) + " |")
        accuracy = xgboost_accuracy(data)
        say("| xgboost (non-private, 100 rounds, depth 6, η 0.3) | " +
            " | ".join(f"{accuracy:.1f}" for _ in args.epsilons) + " |")
        say()
    report.finish(args.out)
    if client is not None:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
