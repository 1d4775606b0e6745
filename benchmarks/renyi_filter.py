"""S-BDT's individual Rényi filter (``filter_rounds``) against the same preset without it,
at each ε: T trees; T + F trees with the noise calibrated on all of them; T trees plus F
extra rounds under the filter (the noise calibrated on the T), rows spending what they
have left by S-BDT's rule ("exclude": in full while they can afford a tree) or paced
("pace": scaled down to what they have left over the rounds left).

Usage::

    python benchmarks/renyi_filter.py [--epsilons 0.05 0.1 0.5 1] [--seeds 5] [--extra 100]
                                      [--out benchmarks/results/renyi_filter.md]

T is the preset's (Abalone 100, Adult 200) and a quarter of it.

Abalone (regression, the s-bdt preset's setting of S-BDT's ε = 0.3 row at every ε: 100 trees
of depth 2 on Poisson samples of 10%): test RMSE on a random 80/20 split per seed. Adult (the
s-bdt preset's setting of S-BDT's ε = 0.5 row at every ε: 200 trees of depth 6 on all rows):
train on adult.data, test on adult.test, test AUC. One setting at every ε, so that the
columns differ by ε alone (the preset itself takes S-BDT's row nearest to the fit's ε). Every fit
uses the RDP accountant (the filter's guarantee is an RDP one; ``filter_rounds`` needs it),
runs in-process (``training.train_in_process``) and draws its noise from a per-seed key
(``reproducible_noise``). Cells: mean ± std over the seeds.
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasets import data_dir, load_abalone, load_adult  # noqa: E402
from tables import Report  # noqa: E402

from dpxgb_dask.params import resolve_params  # noqa: E402
from dpxgb_dask.params.presets import SBDT_SCHEDULE  # noqa: E402
from dpxgb_dask.training import train_in_process  # noqa: E402

#: A seed of > 128 bits per repetition (shorter seeds would warn that noise is guessable).
SEED_BASE = 2**160 + 7


def abalone_split(seed):
    X, y, bounds, label_bounds = load_abalone()
    X = X.to_numpy(dtype=np.float64)
    order = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.8 * len(y))
    train, test = order[:cut], order[cut:]
    return X[train], y[train], X[test], y[test], bounds, label_bounds


#: The S-BDT row each dataset's fits take at every ε (see the module docstring).
SETTING = {"abalone": dict(SBDT_SCHEDULE["reg:squarederror"])[0.3],
           "adult": dict(SBDT_SCHEDULE["binary:logistic"])[0.5]}


def fit_score(dataset, epsilon, seed, n_trees, extra, spending="pace"):
    """Test RMSE (Abalone) or AUC (Adult) of one s-bdt fit with ``n_trees`` regular trees
    and ``extra`` filtered rounds."""
    fields = dict(SETTING[dataset], epsilon=epsilon, n_estimators=n_trees,
                  filter_rounds=extra, filter_spending=spending, random_state=SEED_BASE + seed,
                  reproducible_noise=True)
    if dataset == "abalone":
        X, y, X_test, y_test, bounds, label_bounds = abalone_split(seed)
        p = resolve_params("reg:squarederror", preset="s-bdt", feature_bounds=bounds,
                           label_bounds=label_bounds, **fields)
    else:
        X, y, X_test, y_test, bounds = ADULT
        p = resolve_params("binary:logistic", preset="s-bdt", feature_bounds=bounds, **fields)
    booster, _ = train_in_process(p, np.asarray(X, dtype=np.float64), y, n_partitions=2)
    prediction = booster.predict(np.asarray(X_test, dtype=np.float64))
    if dataset == "abalone":
        return float(np.sqrt(np.mean((prediction - y_test) ** 2)))
    return float(roc_auc_score(y_test, prediction))


ADULT = None

#: The s-bdt preset's number of trees (regression: its Abalone setting).
PRESET_TREES = {"abalone": 100, "adult": 200}


def main():
    global ADULT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.05, 0.1, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--extra", type=int, default=100, help="F, the filtered rounds")
    parser.add_argument("--datasets", nargs="+", default=["abalone", "adult"])
    parser.add_argument("--regular", type=int, nargs="+", default=None,
                        help="values of T for every dataset (default: the preset's and a "
                             "quarter of it)")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()
    if data_dir() is None:
        sys.exit("renyi_filter.py: ../shared/data (or $DPXGB_DATA) is needed")
    warnings.simplefilter("ignore")
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)  # dp_accounting's order warnings
    if "adult" in args.datasets:
        X, y, X_test, y_test, bounds = load_adult()
        ADULT = (X, y, X_test, y_test, bounds)
    report = Report("renyi_filter.py")
    report.say(f"s-bdt preset, {args.seeds} seeds, mean ± std; F = {args.extra} filtered "
               "rounds; Abalone: test RMSE (rings, lower is better), Adult: test AUC", "")
    runs = [(dataset, regular) for dataset in args.datasets
            for regular in (args.regular or [PRESET_TREES[dataset], PRESET_TREES[dataset] // 4])]
    for dataset, regular in runs:
        report.say(f"**{dataset}, T = {regular}**", "",
                   "| fit | " + " | ".join(f"ε={e:g}" for e in args.epsilons) + " |",
                   "|---" + "|---" * len(args.epsilons) + "|")
        f = args.extra
        for label, n_trees, extra, spending in (
                (f"{regular} trees", regular, 0, "pace"),
                (f"{regular + f} trees, no filter", regular + f, 0, "pace"),
                (f"{regular} trees + {f} filtered rounds, exclude (S-BDT)", regular, f,
                 "exclude"),
                (f"{regular} trees + {f} filtered rounds, pace", regular, f, "pace")):
            cells = []
            for eps in args.epsilons:
                scores = np.array([fit_score(dataset, eps, s, n_trees, extra, spending)
                                   for s in range(args.seeds)])
                digits = 3 if dataset == "abalone" else 4
                cells.append(f"{scores.mean():.{digits}f} ± {scores.std():.{digits}f}")
            report.say(f"| {label} | " + " | ".join(cells) + " |")
        report.say()
    report.finish(args.out)


if __name__ == "__main__":
    main()
