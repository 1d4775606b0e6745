"""Ablations of the data-dependent split methods on training folds only (issue 27, item 1).

Usage::

    python benchmarks/ablate_greedy.py --grid noisy_histogram [--reps 3] [--jobs 2]
    python benchmarks/ablate_greedy.py --grid partially_random
    python benchmarks/ablate_greedy.py --grid exponential
    python benchmarks/ablate_greedy.py --grid floor --reps 4   # NOISE_FLOOR_SDS
    python benchmarks/ablate_greedy.py --grid significance --reps 2 \
        --tasks adult logistic50 checkerboard product --epsilons 0.1 1 4 10

Each configuration (overrides on top of the method's own defaults,
``dpxgb_dask.params.defaults.SPLIT_METHOD_DEFAULTS``, or of a preset's parameters) is fitted
at every ε and scored by AUC on a validation part of the training data. The ``floor`` grid
varies the one constant of the greedy methods' noise-aware gains that is not a parameter,
``boosting.gains.NOISE_FLOOR_SDS`` (set in the fitting process before each fit):

- ``adult``: adult.data only (adult.test is never loaded), a stratified 80/20 split per
  repetition (``random_state = 100 + rep``);
- ``logistic50``: 50,000 training and 10,000 validation rows of 50 standard normal features,
  the label drawn from a logistic model of the first ten (weights N(0, 1)), public bounds
  (-6, 6); a fresh sample per repetition (seed ``1000 + rep``); the benchmarks' reported
  tasks use other seeds;
- ``checkerboard``, ``product``: ``interactions.py``'s tasks of those names, with the seeds
  ``1000 + rep`` (``interactions.md`` uses 500-502), its test rows as the validation rows.

The ``significance`` grid varies z of ``gain_estimate="significant"``, the class attribute
``significance_sds`` of the method's split class (set in the fitting process before each
fit), next to ``gain_estimate="noise_aware"`` (z = 1, no random ties' draw needed).

Fits run in-process (``train_in_process``, the coordinator the cluster runs) with fresh
noise per fit. The script prints per ε each configuration's mean ± std over repetitions and
writes them to ``benchmarks/results/greedy_ablation/<grid>.md``. The defaults are written
into ``params/defaults.py`` by hand. Like the default's schedule, the selection is made once
on public benchmark data and is not accounted in any user's ε.
"""
import argparse
import shlex
from concurrent.futures import ProcessPoolExecutor
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasets import data_dir, load_adult  # noqa: E402
from tables import epsilon_table  # noqa: E402

from dpxgb_dask.boosting import gains  # noqa: E402
from dpxgb_dask.boosting.splits import SPLIT_METHODS  # noqa: E402
from dpxgb_dask.params import resolve_params  # noqa: E402
from dpxgb_dask.training import check_bounds_policy, train_in_process  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "results" / "greedy_ablation"
DEFAULT_FLOOR = gains.NOISE_FLOOR_SDS
DEFAULT_SIGNIFICANCE = {name: getattr(cls, "significance_sds", None)
                        for name, cls in SPLIT_METHODS.items()}
EPSILONS = (0.5, 1.0, 4.0)

#: Configurations per grid: (label, split_method, overrides of the method's defaults).
GRIDS = {
    "noisy_histogram": [
        ("defaults", "noisy_histogram", {}),
        ("20 trees", "noisy_histogram", dict(n_estimators=20)),
        ("100 trees", "noisy_histogram", dict(n_estimators=100)),
        ("depth 3", "noisy_histogram", dict(max_depth=3)),
        ("depth 6", "noisy_histogram", dict(max_depth=6)),
        ("16 bins", "noisy_histogram", dict(max_bin=16)),
        ("64 bins", "noisy_histogram", dict(max_bin=64)),
        ("λ 1", "noisy_histogram", dict(reg_lambda=1.0)),
        ("λ 20", "noisy_histogram", dict(reg_lambda=20.0)),
        ("η 0.1", "noisy_histogram", dict(learning_rate=0.1)),
        ("g* 1, h* 0.25", "noisy_histogram", dict(gradient_bound=1.0, hessian_bound=0.25)),
        ("splits 2x leaves", "noisy_histogram", dict(budget_shares={"split": 2, "leaf": 1})),
        ("iterative-Hessian cuts", "noisy_histogram",
         dict(split_candidates="iterative_hessian")),
    ],
    "partially_random": [
        ("defaults", "partially_random", {}),
        ("20 trees", "partially_random", dict(n_estimators=20)),
        ("100 trees", "partially_random", dict(n_estimators=100)),
        ("depth 3", "partially_random", dict(max_depth=3)),
        ("depth 6", "partially_random", dict(max_depth=6)),
        ("λ 1", "partially_random", dict(reg_lambda=1.0)),
        ("λ 20", "partially_random", dict(reg_lambda=20.0)),
        ("η 0.1", "partially_random", dict(learning_rate=0.1)),
        ("g* 1, h* 0.25", "partially_random", dict(gradient_bound=1.0, hessian_bound=0.25)),
        ("255 bins", "partially_random", dict(max_bin=255)),
    ],
    "floor": [
        (f"{name}, floor {floor:g}σ√k", method, dict(overrides, noise_floor_sds=floor))
        for name, method, overrides in (
            ("noisy_histogram", "noisy_histogram", {}),
            ("partially_random", "partially_random", {}),
            ("maddock preset, partially random", "partially_random", {"preset": "maddock"}))
        for floor in (0.0, 1.0, 2.0, 4.0)],
    "significance": [
        (f"{method}, " + (f"z = {z:g}" if z else "noise_aware (z = 1)"), method,
         dict(significance_sds=z) if z else dict(gain_estimate="noise_aware"))
        for method in ("noisy_histogram", "partially_random")
        for z in (None, 2.0, 3.0, 4.0)],
    "exponential": [
        ("defaults", "exponential", {}),
        ("20 trees", "exponential", dict(n_estimators=20)),
        ("100 trees", "exponential", dict(n_estimators=100)),
        ("depth 3", "exponential", dict(max_depth=3)),
        ("depth 6", "exponential", dict(max_depth=6)),
        ("32 bins", "exponential", dict(max_bin=32)),
        ("8 bins", "exponential", dict(max_bin=8)),
        ("Laplace leaf values", "exponential", dict(leaf_method="laplace")),
        ("count share 0.25", "exponential", dict(leaf_noise_ratio=0.25)),
        ("no denominator floor", "exponential", dict(min_child_weight=0.0)),
        ("g* 0.3", "exponential", dict(gradient_bound=0.3)),
        ("splits 1/3 of a tree", "exponential", dict(budget_shares={"split": 1, "leaf": 2})),
        ("splits 2/3 of a tree", "exponential", dict(budget_shares={"split": 2, "leaf": 1})),
    ],
}


def load_task(name, rep):
    """(X_train, y_train, X_valid, y_valid, feature_bounds) of a task's repetition."""
    if name == "adult":
        X, y, _, _, bounds = load_adult()  # adult.data only: the test file stays unread
        X_tr, X_va, y_tr, y_va = train_test_split(X.to_numpy(), y, test_size=0.2,
                                                  stratify=y, random_state=100 + rep)
        return X_tr, y_tr, X_va, y_va, bounds
    if name == "logistic50":
        rng = np.random.default_rng(1000 + rep)
        X = rng.standard_normal((60_000, 50))
        margin = X[:, :10] @ rng.standard_normal(10)
        y = (rng.random(len(X)) < 1.0 / (1.0 + np.exp(-margin))).astype(float)
        return X[:50_000], y[:50_000], X[50_000:], y[50_000:], np.tile([-6.0, 6.0], (50, 1))
    if name in ("checkerboard", "product"):
        from interactions import make_task

        return make_task(name, 1000 + rep)
    raise ValueError("task must be 'adult', 'logistic50', 'checkerboard' or 'product', "
                     f"got {name!r}")


def score(job):
    """Validation AUC of one (task, rep, ε, method, overrides)."""
    task, rep, epsilon, method, overrides = job
    overrides = dict(overrides)
    gains.NOISE_FLOOR_SDS = overrides.pop("noise_floor_sds", DEFAULT_FLOOR)
    if DEFAULT_SIGNIFICANCE[method] is not None:
        SPLIT_METHODS[method].significance_sds = overrides.pop(
            "significance_sds", DEFAULT_SIGNIFICANCE[method])
    X_tr, y_tr, X_va, y_va, bounds = load_task(task, rep)
    params = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=bounds,
                            split_method=method, **overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster, _ = train_in_process(check_bounds_policy(params, X_tr.shape[1]), X_tr, y_tr)
    return roc_auc_score(y_va, booster.predict_margin(X_va))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", choices=sorted(GRIDS), required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tasks", nargs="+", default=["adult", "logistic50"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    args = parser.parse_args()
    if "adult" in args.tasks and data_dir() is None:
        sys.exit("../shared/data is absent: run with --tasks logistic50")
    grid = GRIDS[args.grid]
    jobs = [(task, rep, eps, method, overrides) for task in args.tasks
            for eps in args.epsilons for _, method, overrides in grid
            for rep in range(args.reps)]
    start = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:
        aucs = np.array(list(pool.map(score, jobs, chunksize=1))).reshape(
            len(args.tasks), len(args.epsilons), len(grid), args.reps)
    lines = [f"# {args.grid}: validation AUC on training folds (mean ± std over "
             f"{args.reps} repetitions)", "",
             f"`python {shlex.join(sys.argv)}`; "
             f"{len(jobs)} fits in {time.time() - start:.0f} s.", ""]
    for t, task in enumerate(args.tasks):
        lines += [f"## {task}", ""] + epsilon_table(
            [label for label, _, _ in grid], args.epsilons, aucs[t].transpose(1, 0, 2), 4)
        best = [grid[int(np.argmax(aucs[t, e].mean(axis=1)))][0]
                for e in range(len(args.epsilons))]
        lines += ["| best | " + " | ".join(best) + " |", ""]
    text = "\n".join(lines)
    print(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / f"{args.grid}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
