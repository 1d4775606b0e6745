"""Wide tables whose signal lies in any columns: ``sparse500`` of ``interactions.py`` as it
is (its 20 informative features are the first 20 columns) and with its columns reversed
(they are the last 20), the default against its main effects in turn.

    python benchmarks/wide_tables.py [--seeds 3] [--epsilons 0.1 1 4 10] [--jobs 2]

One-feature trees that take the features in turn over the first half of 400 rounds reach
only the first 200 of 500 columns, so where a table's signal lies decides its score. From
ε ≈ 0.7 the default grows 400 + m trees: one pass over every feature, then 200 rounds whose
feature is drawn by the gain the earlier rounds released (``main_effect_features=
"by_released_gain"``, post-processing), then 200 interaction trees. Below ε ≈ 0.7 it keeps
the features in turn. Test AUC, mean ± std over the seeds (the rows and seeds of
``interactions.py``); noise keyed by the seed. Writes ``benchmarks/results/wide_tables.md``.
"""
from concurrent.futures import ProcessPoolExecutor
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import dp_ebm  # noqa: E402
from interactions import SEED_BASE, fit_in_process, grid_parser, make_task  # noqa: E402
from tables import epsilon_table  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "wide_tables.md"

#: label -> parameters of a dpxgb_dask fit, or None for DP-EBM
CONFIGS = {
    "default (from ε ≈ 0.7: 400 + m trees, a pass over the features, 200 rounds by released "
    "gain, 200 interaction trees)": {},
    "main effects in turn, 400 trees (the default before: 200 one-feature trees, 200 "
    "interaction trees)": dict(main_effect_features="in_turn"),
    "DP-EBM": None,
}
LAYOUTS = {"informative columns first (as interactions.py)": False,
           "informative columns last (the columns reversed)": True}


def score(job):
    """Test AUC of one (layout, seed, ε, configuration)."""
    reversed_columns, seed, epsilon, label = job
    X, y, X_test, y_test, bounds = make_task("sparse500", 500 + seed)
    if reversed_columns:
        X, X_test = X[:, ::-1].copy(), X_test[:, ::-1].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if CONFIGS[label] is None:
            model = dp_ebm("binary:logistic", epsilon, bounds, random_state=seed).fit(X, y)
            return roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])
        booster = fit_in_process(X, y, epsilon=epsilon, feature_bounds=bounds,
                                 random_state=SEED_BASE + seed, reproducible_noise=True,
                                 **CONFIGS[label])
    return roc_auc_score(y_test, booster.predict_margin(X_test))


def main():
    args = grid_parser(__doc__.split("\n")[0]).parse_args()
    labels = list(CONFIGS)
    jobs = [(reversed_columns, s, eps, label) for reversed_columns in LAYOUTS.values()
            for label in labels for eps in args.epsilons for s in range(args.seeds)]
    start = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:
        aucs = np.array(list(pool.map(score, jobs, chunksize=1))).reshape(
            len(LAYOUTS), len(labels), len(args.epsilons), args.seeds)
    lines = ["# Wide tables: sparse500 with its informative columns first and last", "",
             f"`python benchmarks/wide_tables.py --seeds {args.seeds}`: test AUC, mean ± std "
             f"over {args.seeds} seeds; {len(jobs)} fits in {time.time() - start:.0f} s on "
             f"{args.jobs} processes. 500 standard normal features, a linear margin of 20 "
             "(weights ±1/2), 10,000 training and 2,000 test rows.", ""]
    for i, layout in enumerate(LAYOUTS):
        lines += [f"## {layout}", ""] + epsilon_table(labels, args.epsilons, aucs[i]) + [""]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
