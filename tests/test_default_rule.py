"""The rule that chooses the default (issue 41, item 2: ``benchmarks/default_suite.py``):
at each ε, the smallest worst-case regret over the data shapes, among the candidates that
keep every real binary table within its stated allowance."""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))

from default_suite import ALLOWANCE, choose, regrets  # noqa: E402


def test_regret_is_the_distance_to_the_best_candidate_of_the_cell():
    auc = np.array([[0.90, 0.80], [0.88, 0.85]])
    np.testing.assert_allclose(regrets(auc, lower_is_better=False), [[0.0, 0.05], [0.02, 0.0]])
    rmse = np.array([[2.7, 2.5], [2.6, 2.6]])
    np.testing.assert_allclose(regrets(rmse, lower_is_better=True), [[0.1, 0.0], [0.0, 0.1]])


def test_at_each_epsilon_the_smallest_worst_regret_a_real_table_allows():
    candidates = ["additive", "interactions", "greedy"]
    cells = {  # columns: two ε
        ("generated", "product"): np.array([[0.10, 0.12], [0.00, 0.01], [0.00, 0.00]]),
        ("small", "additive"): np.array([[0.00, 0.00], [0.02, 0.01], [0.01, 0.00]]),
        # "greedy" loses Adult beyond its allowance at the second ε only
        ("real", "adult"): np.array([[0.0, 0.0], [0.002, 0.001],
                                     [0.0, ALLOWANCE["adult"] + 0.001]]),
        # a regression table is reported, not held to by the binary rule
        ("real", "abalone"): np.array([[0.0, 0.0], [0.5, 0.5], [0.5, 0.5]]),
    }
    chosen, admissible, worst, mean = choose(cells, candidates, 0)
    assert admissible == [True, True, True] and chosen == "greedy"
    np.testing.assert_allclose(worst, [0.10, 0.02, 0.01])
    chosen, admissible, worst, _ = choose(cells, candidates, 1)
    assert admissible == [True, True, False] and chosen == "interactions"
    cells["real", "bank"] = np.array([[0.0, 0.0], [0.0, ALLOWANCE["bank"] + 0.01],
                                      [0.0, 0.0]])
    assert choose(cells, candidates, 1)[0] == "additive"
    cells["real", "bank"][0, 1] = 1.0
    assert choose(cells, candidates, 1)[0] is None
