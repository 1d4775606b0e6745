"""Generated tasks with and without interactions (issue 27, item 4): the default, the other
tree shapes and split methods, DP-EBM and non-private XGBoost on the same rows.

Usage::

    python benchmarks/interactions.py [--epsilons 0.1 1 4 10] [--seeds 3] [--jobs 2]
                                      [--tasks additive product checkerboard sparse500
                                               sparse500-anywhere]

Tasks (standard normal features, public bounds (-6, 6), the label drawn from a logistic
model of the margin below; 50,000 training and 10,000 test rows, 10,000 and 2,000 for
``sparse500``; seed ``500 + s`` per repetition):

- ``additive``: sin(2x₀) + x₁²/2 − 1/2 + x₂ − |x₃| over 10 features;
- ``product``: 2x₀x₁ + x₂ − x₃ over 10 features (a pairwise product and two main effects);
- ``checkerboard``: 3·sign(sin(1.5x₀)·sin(1.5x₁)) over 10 features (no main effect at all);
- ``sparse500``: a linear margin of 20 of 500 features (weights ±1/2), the first 20 columns;
- ``sparse500-anywhere``: the same rows with the columns in a random order (per seed), so
  that the 20 lie anywhere, as in a table whose column order says nothing.

Every configuration is fixed before the run (nothing is selected on the test rows; the
private selection chooses among the shapes on held-out training rows, within ε); each
cell is the test AUC, mean ± std over the seeds. Fits run in-process
(``train_in_process``) with noise keyed by the seed. Writes
``benchmarks/results/interactions.md``.
"""
import argparse
from concurrent.futures import ProcessPoolExecutor
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import dp_ebm  # noqa: E402
from tables import epsilon_table  # noqa: E402

from dpxgb_dask.params import resolve_params  # noqa: E402
from dpxgb_dask.training import (check_bounds_policy, select_in_process,  # noqa: E402
                                 train_in_process)

OUT = Path(__file__).resolve().parent / "results" / "interactions.md"
SEED_BASE = 2**150

def _rate_before_shrinkage(epsilon):
    """η of the default's schedule point at ``epsilon`` before its James-Stein leaves (0.2
    from ε ≈ 0.7, 0.1 below)."""
    return 0.2 if epsilon >= 0.7 else 0.1


#: label -> parameters of a dpxgb_dask fit (a value may be a function of ε), a family of a
#: private selection (a str), or None (a baseline of its own).
CONFIGS = {
    "default (staged trees, quantile thresholds; from ε ≈ 0.7 James-Stein leaves, main "
    "effects by released gain, and interaction trees from the pass's end where it shows no "
    "main effect)": {},
    "the default with the main-effect stage's length fixed (the default before the pass's "
    "test)": dict(main_effect_test_level=0.0),
    "staged trees, main effects in turn (the default before the released-gain draws)": dict(
        main_effect_features="in_turn"),
    "one-feature trees (the default before issue 41)": dict(
        feature_selection="cyclic", interaction_thresholds="uniform",
        leaf_shrinkage="none", learning_rate=_rate_before_shrinkage),
    "mixed trees, quantile thresholds (the default before the shrinkage)": dict(
        feature_selection="mixed", interaction_thresholds="quantile", leaf_shrinkage="none",
        learning_rate=_rate_before_shrinkage),
    "random feature per node, iterative-Hessian 32 cuts": dict(
        feature_selection="random", interaction_thresholds="uniform",
        split_candidates="iterative_hessian", max_bin=32),
    "private selection among the default, one-feature trees and the row above "
    "(select=\"shapes\")": "shapes",
    "noisy_histogram": dict(split_method="noisy_histogram"),
    "partially_random": dict(split_method="partially_random"),
    "DP-EBM": None,
    "XGBoost (non-private, 100 trees, depth 6)": None,
}


def make_task(name, seed):
    """(X_train, y_train, X_test, y_test, feature_bounds) of one repetition."""
    if name == "sparse500-anywhere":  # the same rows, the columns in a random order
        X, y, X_test, y_test, bounds = make_task("sparse500", seed)
        order = np.random.default_rng([seed, 500]).permutation(X.shape[1])
        return X[:, order], y, X_test[:, order], y_test, bounds
    rng = np.random.default_rng(seed)
    n_features, n_rows = (500, 12_000) if name == "sparse500" else (10, 60_000)
    X = rng.standard_normal((n_rows, n_features))
    if name == "additive":
        margin = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 + X[:, 2] - np.abs(X[:, 3])
    elif name == "product":
        margin = 2 * X[:, 0] * X[:, 1] + X[:, 2] - X[:, 3]
    elif name == "checkerboard":
        margin = 3 * np.sign(np.sin(1.5 * X[:, 0]) * np.sin(1.5 * X[:, 1]))
    elif name == "sparse500":
        weights = np.zeros(n_features)
        weights[:20] = rng.choice([-0.5, 0.5], 20)
        margin = X @ weights
    else:
        raise ValueError(f"task must be one of additive, product, checkerboard, sparse500, "
                         f"sparse500-anywhere, got {name!r}")
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-margin))).astype(float)
    cut = n_rows * 5 // 6
    return X[:cut], y[:cut], X[cut:], y[cut:], np.tile([-6.0, 6.0], (n_features, 1))


def score(job):
    """Test AUC of one (task, seed, ε, configuration)."""
    task, seed, epsilon, label = job
    X, y, X_test, y_test, bounds = make_task(task, 500 + seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if label == "DP-EBM":
            model = dp_ebm("binary:logistic", epsilon, bounds, random_state=seed).fit(X, y)
            return roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])
        if label.startswith("XGBoost"):
            import xgboost

            model = xgboost.XGBClassifier(n_estimators=100, max_depth=6, n_jobs=1,
                                          tree_method="hist").fit(X, y)
            return roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])
        given = dict(epsilon=epsilon, feature_bounds=bounds, random_state=SEED_BASE + seed,
                     reproducible_noise=True)
        if isinstance(CONFIGS[label], str):  # a private selection, all within ε
            booster, _ = select_in_process(given, X, y, CONFIGS[label])
        else:
            config = {name: value(epsilon) if callable(value) else value
                      for name, value in CONFIGS[label].items()}
            booster = fit_in_process(X, y, **given, **config)
    return roc_auc_score(y_test, booster.predict_margin(X_test))


def fit_in_process(X, y, **given):
    """A binary fit of these parameters (the default's where not given), in this process."""
    params = resolve_params("binary:logistic", n_features=X.shape[1], **given)
    return train_in_process(check_bounds_policy(params, X.shape[1]), X, y)[0]


def grid_parser(description):
    """The command line of a table over ε and seeds (``--epsilons --seeds --jobs``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 4.0, 10.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    return parser


def main():
    parser = grid_parser(__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+",
                        default=["additive", "product", "checkerboard", "sparse500",
                                 "sparse500-anywhere"])
    args = parser.parse_args()
    labels = list(CONFIGS)
    jobs = [(task, s, eps, label) for task in args.tasks for label in labels
            for eps in args.epsilons for s in range(args.seeds)]
    start = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:
        aucs = np.array(list(pool.map(score, jobs, chunksize=1))).reshape(
            len(args.tasks), len(labels), len(args.epsilons), args.seeds)
    lines = ["# Generated tasks with and without interactions", "",
             f"`python benchmarks/interactions.py --seeds {args.seeds}`: test AUC, mean ± std "
             f"over {args.seeds} seeds; {len(jobs)} fits in {time.time() - start:.0f} s on "
             f"{args.jobs} processes. Non-private XGBoost does not depend on ε.", ""]
    for t, task in enumerate(args.tasks):
        lines += [f"## {task}", ""] + epsilon_table(labels, args.epsilons, aucs[t]) + [""]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
