"""No degenerate fit (issue 27, item 2): every split method and every preset learns on a
generated table at ε 0.5, 1 and 10, the default on a wide one too, and a larger ε does not
give a worse model beyond the seeds' spread.

The task and the fits are ``benchmarks/every_method.py``'s, which runs the whole matrix
(10, 50 and 200 features for every method) and prints its table
(``benchmarks/results/every_method.md``); these are the cells that guard something distinct
(issue 40): each method on 10 features, and the default, which must cover wide tables,
on 200.
"""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))

from every_method import EPSILONS, METHODS, SPREAD, cell_auc, task  # noqa: E402

#: "Clearly above 0.5": the holdout AUC every cell must reach (a constant model scores 0.5;
#: the standard error of an AUC near 0.55 on 10,000 rows is about 0.006).
LEARNS = 0.55

#: The presets whose papers' configuration does not learn on these tables at ε <= 1, kept
#: as published: with 30,000 rows their per-level exponential mechanism over thousands of
#: candidates is close to uniform and their Laplace leaf values are mostly noise. Their own
#: published numbers agree: DP-XGBoost reports 24.0% Adult test error at ε = 1, where a
#: constant model errs on 24.6% of adult.test (benchmarks/results/adult.md has both presets
#: at every ε). Strict: the test fails when one of them starts to learn on every cell.
PAPERS_THAT_DO_NOT_LEARN_HERE = {"dp-xgboost", "dpboost"}


def _cases():
    for name, preset, split_method in METHODS:
        marks = [pytest.mark.xfail(strict=True, reason=f"{name}: the paper's configuration "
                                   "is noise-dominated at ε <= 1 on 30,000 rows")] \
            if name in PAPERS_THAT_DO_NOT_LEARN_HERE else []
        for n_features in (10, 200) if name == "default" else (10,):
            yield pytest.param(name, preset, split_method, n_features, marks=marks,
                               id=f"{name}-{n_features}")


@pytest.mark.parametrize("name, preset, split_method, n_features", list(_cases()))
def test_every_method_learns_at_every_epsilon(name, preset, split_method, n_features):
    data = task(n_features)
    aucs = {}
    for epsilon in EPSILONS:
        aucs[epsilon] = cell_auc(preset, split_method, n_features, epsilon, data)
        # (at once: a cell that does not learn at a small ε fails without the larger ones)
        assert aucs[epsilon] >= LEARNS, \
            f"{name} at ε = {epsilon} with {n_features} features: {aucs}"
    for k, small in enumerate(EPSILONS):
        for large in EPSILONS[k + 1:]:
            assert aucs[large] >= aucs[small] - SPREAD, \
                f"{name} with {n_features} features is worse at ε = {large}: {aucs}"
