"""Quantile thresholds for interaction trees (``interaction_thresholds="quantile"``): the
mass the one-feature trees' leaf releases tell, and the exact weighted draw at its
quantiles (``boosting/released_mass.py``)."""
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpxgb_dask.boosting.leaves import ReleasedLeaves
from dpxgb_dask.boosting.released_mass import ReleasedMass
from dpxgb_dask.boosting.splits import RandomSplits
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process


def test_a_leaf_spreads_its_released_denominator_over_its_bins():
    mass = ReleasedMass(np.array([7, 3]))
    assert mass.mass.shape == (2, 8)
    mass.add_tree(0, np.array([[0, 3], [4, 7]]), np.array([8.0, -5.0]))
    np.testing.assert_allclose(mass.mass[0], [2.0] * 4 + [0.0] * 4)  # noise below 0: 0
    mass.add_tree(0, np.array([[0, 1], [2, 7]]), np.array([2.0, 6.0]))
    np.testing.assert_allclose(mass.mass[0], [3.0, 3.0, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0])
    assert not mass.mass[1].any()


def test_only_nodes_that_draw_their_feature_use_the_mass(release_plan, fit_streams):
    """Mixed trees: the one-feature rounds feed the mass and keep uniform thresholds; the
    rounds that draw a feature per node split where the mass is."""
    plan = release_plan(2, feature_selection="mixed", interaction_thresholds="quantile",
                        max_depth=1)
    method = RandomSplits(plan, fit_streams(0))
    n_cuts = np.array([99, 99])
    method.new_candidates(n_cuts)
    # round 0's one-feature tree on feature 0 and round 2's on feature 1: every row lies in
    # bins 40-59 of each feature
    for tree, feature in ((0, 0), (2, 1)):
        leaf_ranges = np.zeros((3, 2, 2), dtype=np.int64)
        leaf_ranges[:, :, 1] = 99
        leaf_ranges[:, feature] = [[0, 39], [40, 59], [60, 99]]
        method.observe_leaves(tree, leaf_ranges,
                              ReleasedLeaves(np.zeros(3), np.array([0.0, 1000.0, 0.0])))
    whole = np.zeros((3, 2, 2), dtype=np.int64)
    whole[:, :, 1] = 99
    method.observe_leaves(1, whole, ReleasedLeaves(np.zeros(3), np.array([1e6, 1e6, 1e6])))
    # the roots of 200 trees that draw their feature, and of 100 one-feature trees on 0
    central = np.array([method.draw_tree(t, n_cuts)[0][2][0] for t in range(1, 400, 2)])
    inside = (central >= 40) & (central < 60)
    assert inside.mean() > 0.8  # 0.9 + 0.1 * 20/99 expected; uniform would give 0.2
    one_feature = [method.draw_tree(t, n_cuts)[0] for t in range(0, 400, 4)]
    assert all(heap[1][0] == 0 for heap in one_feature)
    thresholds = np.array([heap[2][0] for heap in one_feature])
    assert ((thresholds >= 40) & (thresholds < 60)).mean() < 0.35
    method.new_candidates(n_cuts)  # a refresh: the old cuts' mass no longer applies
    assert not method.released_mass.mass.any()


def test_quantile_thresholds_learn_a_checkerboard_on_wide_bounds(seed):
    """Wide public bounds put most uniform thresholds where no row is; thresholds at the
    released mass's quantiles let the interaction trees cut the checkerboard's cells."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((20_000, 4))
    margin = 3 * np.sign(np.sin(1.5 * X[:, 0]) * np.sin(1.5 * X[:, 1]))
    y = (rng.random(len(X)) < 1 / (1 + np.exp(-margin))).astype(float)
    bounds = np.tile([-6.0, 6.0], (4, 1))
    scores = {}
    for thresholds in ("uniform", "quantile"):
        params = resolve_params("binary:logistic", epsilon=4.0, feature_bounds=bounds,
                                random_state=seed, feature_selection="mixed",
                                interaction_thresholds=thresholds, n_estimators=200)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            booster, _ = train_in_process(params, X[:15_000], y[:15_000])
        scores[thresholds] = roc_auc_score(y[15_000:], booster.predict_margin(X[15_000:]))
    assert scores["quantile"] > 0.75 and scores["quantile"] > scores["uniform"] + 0.05


def test_quantile_thresholds_need_random_splits():
    with pytest.raises(ValueError, match="interaction_thresholds='quantile'.*split_method"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=[[0, 1]],
                       split_method="noisy_histogram", interaction_thresholds="quantile")
    with pytest.raises(ValueError, match="interaction_thresholds must be one of"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=[[0, 1]],
                       interaction_thresholds="median")


def test_the_binary_default_grows_staged_trees_with_quantile_thresholds():
    """Issue 41: the default's one shape (``benchmarks/default_suite.py``: one-feature trees
    for the main effects, then a feature per node), except at its smallest-ε point, whose 50
    trees stay one-feature trees; regression grows mixed trees up to ε 0.5
    (``tuning/abalone-interactions-ablation.md``), then a random feature per node; the
    presets and a user's own choice keep theirs."""
    bounds = [[0.0, 1.0]] * 3
    for epsilon in (0.02, 0.05, 0.1, 0.5, 1.0, 4.0, 10.0):
        params = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=bounds)
        assert (params.feature_selection, params.interaction_thresholds) == (
            "staged", "quantile"), epsilon
    tiny = resolve_params("binary:logistic", epsilon=0.01, feature_bounds=bounds)
    assert (tiny.feature_selection, tiny.interaction_thresholds) == ("cyclic", "uniform")
    for epsilon, shape in ((0.05, ("mixed", "quantile")), (0.1, ("mixed", "quantile")),
                           (0.25, ("mixed", "quantile")), (0.5, ("mixed", "quantile")),
                           (1.0, ("random", "uniform")), (10.0, ("random", "uniform"))):
        regression = resolve_params("reg:squarederror", epsilon=epsilon, feature_bounds=bounds,
                                    label_bounds=(0, 1))
        assert (regression.feature_selection, regression.interaction_thresholds) == shape
    for preset in ("s-bdt", "maddock"):
        assert resolve_params("binary:logistic", preset=preset, epsilon=1.0,
                              feature_bounds=bounds).interaction_thresholds == "uniform"
    mine = resolve_params("binary:logistic", epsilon=1.0, feature_bounds=bounds,
                          feature_selection="cyclic")
    assert mine.feature_selection == "cyclic"
