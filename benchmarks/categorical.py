"""UCI Adult from its raw strings (public category lists, splits on sets of categories) next
to the hand-encoded table (the categories' codes as numerical features), at each ε.

Usage::

    python benchmarks/categorical.py [--epsilons 0.1 1 4] [--seeds 5]
                                     [--methods default dp-xgboost dpboost maddock s-bdt]
                                     [--out benchmarks/results/categorical.md]

Train on adult.data, test on adult.test, rows with '?' dropped (30,162 / 15,060 rows). The
raw fit gives ``categories=`` the lists of adult.names (``benchmarks/datasets.py``); the
hand-encoded fit takes the codes of the same lists as numbers within (0, C - 1), as
``benchmarks/accuracy.py`` and ``reproduce.py`` do. Every other parameter is the same, and
both fits of a seed draw their noise from the same key (``reproducible_noise``). Each cell
is the test error (%) and AUC, mean ± std over the seeds; fits run in-process (the
coordinator of a cluster fit, ``training.train_in_process``).
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasets import data_dir, load_adult, load_adult_raw  # noqa: E402
from tables import Report  # noqa: E402

from dpxgb_dask.params import resolve_params  # noqa: E402
from dpxgb_dask.training import check_bounds_policy, train_in_process, with_categories  # noqa: E402,E501

#: A seed of > 128 bits per repetition (shorter seeds would warn that noise is guessable).
SEED_BASE = 2**160


def fit_scores(method, epsilon, seed, X, y, X_test, y_test, bounds, categories=None):
    """(test error %, test AUC) of one fit."""
    preset = None if method == "default" else method
    p = resolve_params("binary:logistic", preset=preset, n_features=X.shape[1],
                       epsilon=epsilon, feature_bounds=bounds, categories=categories,
                       random_state=seed, reproducible_noise=True)
    p, _ = with_categories(p, X)
    p = check_bounds_policy(p, X.shape[1])
    booster, _ = train_in_process(p, X, y, n_partitions=2)
    proba = booster.predict(X_test)
    return 100.0 * float(((proba > 0.5) != y_test).mean()), float(roc_auc_score(y_test, proba))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 4.0])
    parser.add_argument("--methods", nargs="+",
                        default=["default", "dp-xgboost", "dpboost", "maddock", "s-bdt"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()
    if data_dir() is None:
        sys.exit("categorical.py: ../shared/data (or $DPXGB_DATA) with adult/ is needed")
    warnings.simplefilter("ignore", category=UserWarning)
    coded = load_adult()
    X_raw, y_raw, X_raw_test, y_raw_test, numeric_bounds, categories = load_adult_raw()
    # the raw fit's bounds: the numerical columns' (a categorical column's are its codes')
    raw_bounds = np.array([numeric_bounds.get(c, (0.0, 0.0)) for c in X_raw.columns])
    report = Report("categorical.py")
    report.say(f"Adult (train {len(y_raw)} rows, test {len(y_raw_test)}), {args.seeds} seeds; "
               "test error % / AUC, mean ± std; 'codes' = the hand-encoded table, 'raw' = "
               "the strings with categories=", "",
               "| method | encoding | " + " | ".join(f"ε={e:g}" for e in args.epsilons) + " |",
               "|---|---" + "|---" * len(args.epsilons) + "|")
    for method in args.methods:
        for name, data in (("codes", coded[:4] + (coded[4], None)),
                           ("raw", (X_raw, y_raw, X_raw_test, y_raw_test, raw_bounds,
                                    categories))):
            cells = []
            for eps in args.epsilons:
                scores = np.array([fit_scores(method, eps, SEED_BASE + s, *data)
                                   for s in range(args.seeds)])
                cells.append(f"{scores[:, 0].mean():.2f}±{scores[:, 0].std():.2f} / "
                             f"{scores[:, 1].mean():.4f}±{scores[:, 1].std():.4f}")
            report.say(f"| {method} | {name} | " + " | ".join(cells) + " |")
    report.say()
    report.finish(args.out)


if __name__ == "__main__":
    main()
