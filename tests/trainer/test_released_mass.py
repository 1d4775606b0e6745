"""Quantile thresholds for interaction trees (``interaction_thresholds="quantile"``): the
mass the one-feature trees' leaf releases tell, and the exact weighted draw at its
quantiles (``boosting/released_mass.py``)."""
import warnings

import numpy as np
import pytest
from scipy.stats import chisquare
from sklearn.metrics import roc_auc_score

from dpxgb_dask.boosting.released_mass import (UNIFORM_SHARE, WEIGHT_BITS, ReleasedMass,
                                               quantile_weights)
from dpxgb_dask.boosting.splits import RandomSplits
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process


def test_the_weights_are_the_released_mass_mixed_with_a_uniform_share():
    mass = np.array([0.0, 3.0, 1.0, 0.0])
    weights = quantile_weights(mass, 4)
    expected = ((1 - UNIFORM_SHARE) * mass / mass.sum() + UNIFORM_SHARE / 4) * 2**WEIGHT_BITS
    np.testing.assert_allclose(weights, np.floor(expected) + 1)
    assert weights.dtype == np.int64 and np.all(weights >= 1)
    # no mass released yet (or none left after clipping the noise at 0): uniform
    assert len(set(quantile_weights(np.zeros(5), 5).tolist())) == 1


def test_a_leaf_spreads_its_released_denominator_over_its_bins():
    mass = ReleasedMass(np.array([7, 3]))
    assert mass.mass.shape == (2, 8)
    mass.add_tree(0, np.array([[0, 3], [4, 7]]), np.array([8.0, -5.0]))
    np.testing.assert_allclose(mass.mass[0], [2.0] * 4 + [0.0] * 4)  # noise below 0: 0
    mass.add_tree(0, np.array([[0, 1], [2, 7]]), np.array([2.0, 6.0]))
    np.testing.assert_allclose(mass.mass[0], [3.0, 3.0, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0])
    assert not mass.mass[1].any()


def test_thresholds_follow_the_mass_within_each_nodes_candidates(fit_streams):
    """The draw's frequencies match the weights (chi-square), node by node, and it reads
    the structure stream only: the same stream gives the same thresholds."""
    mass = ReleasedMass(np.array([9, 9]))
    mass.mass[0] = [0, 0, 1, 5, 20, 20, 5, 1, 0, 0]
    features = np.array([0, 0, 1])
    start, width = np.array([0, 3, 2]), np.array([9, 4, 5])
    n_draws = 4000
    draws = np.stack([mass.draw_thresholds(features, start, width,
                                           fit_streams(0).tree_structure_stream(t))
                      for t in range(n_draws)])
    for node in range(3):
        f, s, w = features[node], start[node], width[node]
        probability = quantile_weights(mass.mass[f, s:s + w], w)
        probability = probability / probability.sum()
        counts = np.bincount(draws[:, node] - s, minlength=w)
        assert counts.size == w and draws[:, node].min() >= s
        assert chisquare(counts, probability * n_draws).pvalue > 1e-4
    again = mass.draw_thresholds(features, start, width, fit_streams(0).tree_structure_stream(7))
    np.testing.assert_array_equal(again, draws[7])


def test_only_nodes_that_draw_their_feature_use_the_mass(release_plan, fit_streams):
    """Mixed trees: the one-feature rounds feed the mass and keep uniform thresholds; the
    rounds that draw a feature per node split where the mass is."""
    plan = release_plan(2, feature_selection="mixed", interaction_thresholds="quantile")
    method = RandomSplits(plan, fit_streams(0))
    n_cuts = np.array([99, 99])
    method.new_candidates(n_cuts)
    ranges = np.zeros((200, 2, 2), dtype=np.int64)
    ranges[:, :, 1] = n_cuts
    nodes = np.arange(200)
    # round 0's one-feature tree on feature 0 and round 2's on feature 1: every row lies in
    # bins 40-59 of each feature
    for tree, feature in ((0, 0), (2, 1)):
        leaf_ranges = np.zeros((3, 2, 2), dtype=np.int64)
        leaf_ranges[:, :, 1] = 99
        leaf_ranges[:, feature] = [[0, 39], [40, 59], [60, 99]]
        method.observe_leaves(tree, leaf_ranges, np.array([0.0, 1000.0, 0.0]))
    method.observe_leaves(1, ranges[:3], np.array([1e6, 1e6, 1e6]))  # no one feature: ignored
    central = method.draw(3, nodes, ranges, n_cuts, rng=method.streams.tree_structure_stream(3))
    inside = (central.bin_threshold >= 40) & (central.bin_threshold < 60)
    assert inside.mean() > 0.8  # 0.9 + 0.1 * 20/99 expected; uniform would give 0.2
    one_feature = method.draw(4, nodes, ranges, n_cuts,
                              rng=method.streams.tree_structure_stream(4))
    assert np.all(one_feature.feature == 0)
    assert ((one_feature.bin_threshold >= 40) & (one_feature.bin_threshold < 60)).mean() < 0.35
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


def test_the_nodes_kernel_gives_each_nodes_weights_bit_for_bit():
    from dpxgb_dask.boosting.released_mass import quantile_weight_rows

    rng = np.random.default_rng(5)
    width = rng.integers(1, 40, size=200)
    mass = np.where(np.arange(40)[None, :] < width[:, None],
                    rng.exponential(size=(200, 40)) * (rng.random((200, 40)) < 0.7), 0.0)
    mass[::7] = 0.0  # nodes whose feature has no released mass yet
    rows = quantile_weight_rows(mass, width)
    for node in range(200):
        w = int(width[node])
        np.testing.assert_array_equal(rows[node, :w], quantile_weights(mass[node, :w], w))
        assert not rows[node, w:].any()


def test_the_binary_default_grows_mixed_trees_with_quantile_thresholds():
    """Issue 41: the default's one shape (``benchmarks/default_suite.py``), except at its
    smallest-ε point, whose 50 trees stay one-feature trees; the other objectives, the
    presets and a user's own choice keep theirs."""
    bounds = [[0.0, 1.0]] * 3
    for epsilon in (0.02, 0.05, 0.1, 0.5, 1.0, 4.0, 10.0):
        params = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=bounds)
        assert (params.feature_selection, params.interaction_thresholds) == (
            "mixed", "quantile"), epsilon
    tiny = resolve_params("binary:logistic", epsilon=0.01, feature_bounds=bounds)
    assert (tiny.feature_selection, tiny.interaction_thresholds) == ("cyclic", "uniform")
    regression = resolve_params("reg:squarederror", epsilon=1.0, feature_bounds=bounds,
                                label_bounds=(0, 1))
    assert regression.interaction_thresholds == "uniform"
    for preset in ("s-bdt", "maddock"):
        assert resolve_params("binary:logistic", preset=preset, epsilon=1.0,
                              feature_bounds=bounds).interaction_thresholds == "uniform"
    mine = resolve_params("binary:logistic", epsilon=1.0, feature_bounds=bounds,
                          feature_selection="cyclic")
    assert mine.feature_selection == "cyclic"
