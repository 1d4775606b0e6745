"""The default on small tables: Adult subsamples of a few thousand rows, next to XGBoost.

Usage::

    python benchmarks/small_tables.py [--rows 1000 3000 10000 0] [--epsilons 1 4 10]
                                      [--seeds 5] [--out FILE.md]

Each seed draws a stratified subsample of ``rows`` rows of adult.data (0: all 30,162),
trains the default (no parameter but ε and the public feature bounds; noise keyed by the
seed) and non-private XGBoost (depth 6, η 0.3, 100 trees, as ``accuracy.py``) on it,
and scores both once on adult.test (15,060 rows). Nothing here selects anything: the
default's schedule was chosen on validation splits of adult.data
(``tune_default.py``). Fits run in-process (``train_in_process``, the same coordinator
as on a cluster). Cells: test error % / AUC, mean ± std over seeds.
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import (SEED_BASE, error_and_auc, error_auc_cell, fit_predict,  # noqa: E402
                      nonprivate_xgboost)
from datasets import data_dir, load_adult  # noqa: E402


def subsample(X, y, rows, seed):
    """A stratified subsample of ``rows`` rows (all of them when ``rows`` is 0 or more)."""
    if rows <= 0 or rows >= len(y):
        return X, y
    X_small, _, y_small, _ = train_test_split(X, y, train_size=rows, stratify=y,
                                              random_state=seed)
    return X_small, y_small


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 3000, 10000, 0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0, 10.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()
    if data_dir() is None:
        sys.exit("small_tables.py needs ../shared/data (adult.data, adult.test)")
    warnings.simplefilter("ignore", category=UserWarning)
    warnings.simplefilter("ignore", category=RuntimeWarning)
    X, y, X_test, y_test, bounds = load_adult()
    X, X_test = X.to_numpy(), X_test.to_numpy()
    t0 = time.perf_counter()
    rows_out = []
    for rows in args.rows:
        scores = {eps: [] for eps in args.epsilons}
        xgb = []
        for seed in range(args.seeds):
            X_small, y_small = subsample(X, y, rows, seed)
            xgb.append(nonprivate_xgboost(X_small, y_small, X_test, y_test, 100))
            for eps in args.epsilons:
                params = {"objective": "binary:logistic", "epsilon": eps,
                          "feature_bounds": bounds, "random_state": SEED_BASE + seed,
                          "reproducible_noise": True}
                proba, _ = fit_predict(params, X_small, y_small, X_test, None)
                scores[eps].append(error_and_auc(y_test, proba))
            print(f"rows {len(y_small)}, seed {seed}: {time.perf_counter() - t0:.0f} s",
                  flush=True)
        xgb = [(100.0 * e, a) for e, a in xgb]
        rows_out.append((len(y_small), [error_auc_cell(scores[eps]) for eps in args.epsilons],
                         error_auc_cell(xgb)))
    header = ("| training rows | " + " | ".join(f"default ε={eps:g}" for eps in args.epsilons)
              + " | XGBoost (non-private) |")
    lines = [f"Adult subsamples, test on adult.test ({len(y_test)} rows), {args.seeds} seed(s); "
             f"test error % / AUC, mean ± std ({time.perf_counter() - t0:.0f} s)", "",
             "Command: `python benchmarks/small_tables.py " + " ".join(sys.argv[1:]) + "`", "",
             header, "|" + "---|" * (len(args.epsilons) + 2)]
    lines += [f"| {n} | " + " | ".join(cells) + f" | {xgb_cell} |"
              for n, cells, xgb_cell in rows_out]
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        Path(args.out).write_text(table)


if __name__ == "__main__":
    main()
