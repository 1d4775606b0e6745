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


def test_a_real_tables_loss_the_seeds_cannot_tell_from_the_allowance_is_admitted():
    """Admissible: regret − 2·SE ≤ allowance, SE from the per-seed paired differences
    against the candidate with the best mean (the same split per seed)."""
    from default_suite import regret_errors

    # two candidates, one ε, three seeds: the second loses 0.01 on average, by 0.0/0.01/0.02
    scores = np.array([[[0.80, 0.82, 0.84]], [[0.80, 0.81, 0.82]]])
    margins = regret_errors(scores, lower_is_better=False)
    np.testing.assert_allclose(margins[:, 0], [0.0, 2 * 0.01 / np.sqrt(3)])
    assert np.all(regret_errors(scores[:, :, :1], lower_is_better=False) == 0)
    candidates = ["steady", "noisy"]
    cells = {("generated", "product"): np.array([[0.2], [0.0]]),
             ("real", "bank"): regrets(scores.mean(axis=-1), lower_is_better=False)}
    assert choose(cells, candidates, 0)[0] == "steady"  # 0.01 > 0.003 without the margin
    assert choose(cells, candidates, 0, {("real", "bank"): margins})[0] == "noisy"
    # a loss the seeds can tell: every seed loses 0.01
    scores[1, 0] = scores[0, 0] - 0.01
    margins = regret_errors(scores, lower_is_better=False)
    assert choose(cells, candidates, 0, {("real", "bank"): margins})[0] == "steady"


def test_one_shape_for_every_epsilon_the_smallest_worst_case_admissible_everywhere():
    from default_suite import choose_shape

    candidates = ["additive", "interactions", "greedy"]
    cells = {  # columns: two ε
        ("generated", "product"): np.array([[0.30, 0.30], [0.05, 0.08], [0.00, 0.00]]),
        ("small", "additive"): np.array([[0.00, 0.00], [0.02, 0.01], [0.01, 0.02]]),
        # "greedy" loses Adult beyond its allowance at the second ε only
        ("real", "adult"): np.array([[0.0, 0.0], [0.002, 0.001],
                                     [0.0, ALLOWANCE["adult"] + 0.001]]),
    }
    verdicts = [choose(cells, candidates, e) for e in range(2)]
    assert [v[0] for v in verdicts] == ["greedy", "interactions"]
    # greedy is best where it is admissible, but not admissible at every ε
    assert choose_shape(verdicts, candidates) == "interactions"
    cells["real", "adult"][1, 0] = 1.0
    assert choose_shape([choose(cells, candidates, e) for e in range(2)],
                        candidates) == "additive"
    cells["real", "adult"][0, 1] = 1.0
    assert choose_shape([choose(cells, candidates, e) for e in range(2)], candidates) is None
