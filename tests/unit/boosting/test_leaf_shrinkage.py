"""Each tree's leaves shrunk by the James-Stein factor of their release
(``leaf_shrinkage="james_stein"``, the binary default from ε ≈ 0.7; issue 41): the factor,
its risk against the raw release, and that it is post-processing (the same releases, the
values scaled)."""
import warnings

import numpy as np
import pytest

from dpxgb_dask.boosting.leaves import james_stein_factor
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process

BOUNDS = [[-3.0, 3.0]] * 4


def test_the_factor_is_the_positive_part_james_stein_factor():
    noisy = np.array([3.0, -4.0, 0.0, 12.0])  # ||G̃||² = 169
    assert james_stein_factor(noisy, 1.0) == pytest.approx(1 - 2 / 169)
    assert james_stein_factor(noisy, 13.0) == 0.0  # ||G̃/σ||² = 1 < L - 2
    assert james_stein_factor(noisy, 6.5) == pytest.approx(0.5)  # ||G̃/σ||² = 4
    assert james_stein_factor(noisy, np.sqrt(84.5)) == pytest.approx(0.0)  # = L - 2
    assert james_stein_factor(np.array([5.0, -5.0]), 100.0) == 1.0  # L < 3: never shrunk
    assert james_stein_factor(np.zeros(8), 1.0) == 0.0


def test_shrunk_leaves_are_nearer_the_truth_than_the_release():
    """The estimator's promise, by simulation: over every signal strength, from none (a tree
    of a feature without signal) to far above the noise, c·G̃ has a smaller mean squared
    error than G̃, and keeps most of a strong signal."""
    rng = np.random.default_rng(0)
    sigma, n_leaves, draws = 2.0, 64, 4000
    for strength in (0.0, 0.5, 1.0, 3.0):
        truth = strength * sigma * rng.standard_normal(n_leaves)
        noisy = truth + sigma * rng.standard_normal((draws, n_leaves))
        factors = np.array([james_stein_factor(g, sigma) for g in noisy])
        raw = np.mean(np.sum((noisy - truth) ** 2, axis=1))
        shrunk = np.mean(np.sum((factors[:, None] * noisy - truth) ** 2, axis=1))
        assert shrunk < raw, strength
        if strength == 0.0:
            assert shrunk < 0.1 * raw  # noise alone: the tree all but vanishes
        if strength == 3.0:
            assert factors.mean() > 0.85


def _fit(rows, **given):
    X, y = rows
    params = resolve_params("binary:logistic", epsilon=1.0, feature_bounds=BOUNDS,
                            n_estimators=3, max_depth=3, learning_rate=0.3,
                            random_state=2**130, reproducible_noise=True, **given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster, _ = train_in_process(params, X, y)
    return booster


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4000, 4))
    y = (rng.random(4000) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
    return X, y


def test_shrinkage_is_post_processing_of_the_same_release(rows):
    """With the noise keyed alike, the first tree's released leaves are the same draws: the
    shrunk values are the unshrunk ones times one factor in [0, 1], and the ledgers hold the
    same releases."""
    plain, shrunk = (_fit(rows, leaf_shrinkage=s) for s in ("none", "james_stein"))
    first = [b.trees_to_dataframe().query("tree == 0")["value"].dropna().to_numpy()
             for b in (plain, shrunk)]
    assert np.count_nonzero(first[0]) >= 3
    nonzero = first[0] != 0  # (a leaf whose released H̃ < 0 is 0 either way)
    factor = first[1][nonzero] / first[0][nonzero]
    assert np.allclose(factor, factor[0]) and 0.0 < factor[0] < 1.0
    assert np.all(first[1][~nonzero] == 0)
    assert plain.ledger["events"] == shrunk.ledger["events"]
    assert "leaf_shrinkage" not in plain.params
    assert shrunk.params["leaf_shrinkage"] == "james_stein"


def test_the_binary_default_shrinks_from_its_large_budget_point():
    bounds = [[0.0, 1.0]] * 3
    for epsilon, expected in ((0.1, "none"), (0.5, "none"), (1.0, "james_stein"),
                              (4.0, "james_stein"), (10.0, "james_stein")):
        params = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=bounds)
        assert params.leaf_shrinkage == expected, epsilon
    for objective, extra in (("reg:squarederror", {"label_bounds": (0, 1)}),
                             ("multi:softprob", {"num_class": 3})):
        assert resolve_params(objective, epsilon=4.0, feature_bounds=bounds,
                              **extra).leaf_shrinkage == "none"
    # the schedule's shrinkage reads the Gaussian leaf release; another leaf method has none
    laplace = resolve_params("binary:logistic", epsilon=4.0, feature_bounds=bounds,
                             leaf_method="laplace", newton=False)
    assert laplace.leaf_shrinkage == "none"


def test_shrinkage_needs_a_gaussian_leaf_release():
    with pytest.raises(ValueError, match="leaf_shrinkage='james_stein' shrinks the Gaussian "
                                         "leaf release; leaf_method='laplace'"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=BOUNDS,
                       leaf_method="laplace", newton=False, leaf_shrinkage="james_stein")
    with pytest.raises(ValueError, match="split_method='partially_random' makes none"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=BOUNDS,
                       split_method="partially_random", leaf_shrinkage="james_stein")
    with pytest.raises(ValueError, match="leaf_shrinkage must be one of"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=BOUNDS,
                       leaf_shrinkage="ridge")


def test_leaf_noise_drawn_ahead_gives_the_same_release(release_plan, fit_streams):
    """The coordinator draws a random tree's leaf noise while its round is out
    (``LeafMethod.draw_noise``): the same keyed streams, so the same release as drawing it
    when the sums arrive, and other trees' noise differs."""
    from dpxgb_dask.boosting.leaves import make_leaf_method

    plan = release_plan(4, epsilon=1.0, n_estimators=10, split_candidates="uniform")
    sums = np.column_stack([np.linspace(-20, 20, 16), np.linspace(5, 80, 16),
                            np.arange(16, dtype=float) + 10])

    def released(tree, ahead):
        leaves = make_leaf_method(plan, fit_streams(11))
        noise = leaves.draw_noise(tree, 16) if ahead else None
        released, events = leaves.release(tree, sums, noise)
        return released.values, released.covers, events

    now, ahead = released(3, False), released(3, True)
    np.testing.assert_array_equal(now[0], ahead[0])
    np.testing.assert_array_equal(now[1], ahead[1])
    assert now[2] == ahead[2]
    assert not np.array_equal(released(4, True)[0], ahead[0])
