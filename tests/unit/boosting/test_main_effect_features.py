"""Main-effect rounds drawn by released gain (``main_effect_features="by_released_gain"``,
issue 41's wide tables): after one pass over the features in turn, each one-feature round
draws its feature from the gains the earlier rounds released (post-processing), so that a
wide table spends its rounds where the signal is, wherever its columns lie."""
import statistics
import warnings

import numpy as np
import pytest

from dpxgb_dask.boosting.leaves import ReleasedLeaves, released_gain_evidence
from dpxgb_dask.boosting.feature_schedule import FOCUS_UNIFORM_SHARE
from dpxgb_dask.boosting.splits import RandomSplits
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process


def _splitter(release_plan, fit_streams, n_features, n_estimators, seed=0, test_level=0.01):
    plan = release_plan(n_features, feature_selection="staged", n_estimators=n_estimators,
                        max_depth=2, main_effect_features="by_released_gain",
                        main_effect_test_level=test_level)
    return RandomSplits(plan, fit_streams(seed)).schedule


def _leaves(gain, evidence=10.0):
    """Two leaves of cover 1 and value ±sqrt(gain / 2) (sum of cover · value² = gain)."""
    value = np.sqrt(gain / 2.0)
    return ReleasedLeaves(np.array([value, -value]), np.ones(2), evidence)


def _observe_first_pass(method, gains, evidence=None):
    """Feed the pass's one-feature trees (rounds 0..m-1) with leaves of these gains and
    evidence of signal (default: a main effect in every tree, so the stage stays)."""
    evidence = [10.0] * len(gains) if evidence is None else evidence
    for feature, (gain, told) in enumerate(zip(gains, evidence)):
        assert method.one_feature(feature) == feature  # the pass: in turn
        method.observe(feature, _leaves(gain, told))


def test_the_rounds_after_the_pass_follow_the_released_gain(release_plan, fit_streams):
    m, n = 5, 2000
    method = _splitter(release_plan, fit_streams, m, n)
    assert method.main_effect_rounds == m + (n - m + 1) // 2
    _observe_first_pass(method, [0.0, 0.0, 0.0, 9.0, 0.0])
    drawn = np.array([method.one_feature(r) for r in range(m, method.main_effect_rounds)])
    expected = FOCUS_UNIFORM_SHARE / m + (1 - FOCUS_UNIFORM_SHARE)  # 0.84
    assert abs(np.mean(drawn == 3) - expected) < 0.05  # (sd 0.012 over 998 draws)
    for other in (0, 1, 2, 4):  # each keeps its uniform share, 0.04
        assert 0.01 < np.mean(drawn == other) < 0.08
    # the interaction stage draws a feature per node
    assert method.one_feature(method.main_effect_rounds) is None
    # a round's feature is fixed when first asked: later releases do not redraw it
    first = method.one_feature(m)
    method.observe(4 * 1, _leaves(20000.0))
    assert method.one_feature(m) == first


def test_without_released_gain_the_draws_are_uniform_and_reproducible(release_plan,
                                                                       fit_streams):
    m = 4
    method, again = (_splitter(release_plan, fit_streams, m, 1600) for _ in range(2))
    for splitter in (method, again):
        _observe_first_pass(splitter, [0.0] * m)
    rounds = range(m, method.main_effect_rounds)
    drawn = np.array([method.one_feature(r) for r in rounds])
    assert np.all(np.abs(np.bincount(drawn, minlength=m) / drawn.size - 1 / m) < 0.05)
    # public randomness keyed by the structure seed: the same releases, the same features
    assert drawn.tolist() == [again.one_feature(r) for r in rounds]
    other_seed = _splitter(release_plan, fit_streams, m, 1600, seed=1)
    _observe_first_pass(other_seed, [0.0] * m)
    assert drawn.tolist() != [other_seed.one_feature(r) for r in rounds]


def test_a_pass_without_main_effects_ends_the_stage(release_plan, fit_streams):
    """No tree of the pass released a gain above its noise (all evidence below the
    Bonferroni quantile, 2.88 for m = 5 at level 0.01): the rounds after the pass draw a
    feature per node. One tree above it (above the pass's median where that is negative),
    a leaf method that tells no evidence, or no test (level 0) keeps the stage."""
    m, n = 5, 2000
    threshold = statistics.NormalDist().inv_cdf(1 - 0.01 / m)
    assert 2.87 < threshold < 2.89
    null = _splitter(release_plan, fit_streams, m, n)
    below = [threshold - 0.01, 1.0, -3.0, 0.0, 2.0]
    _observe_first_pass(null, [1.0] * m, below)
    assert [null.one_feature(r) for r in range(m, m + 50)] == [None] * 50
    assert null.main_effect_rounds == m
    # (a pass centred below 0, as clipped gradients make it: its median is taken off)
    centred_low = [-2.0, -2.2, -1.8, -2.1, threshold - 2.0 + 0.01]
    for evidence, level in (([1.0, threshold + 0.01, 1.0, 1.0, 1.0], 0.01),
                            (centred_low, 0.01), ([None] * m, 0.01), (below, 0.0)):
        kept = _splitter(release_plan, fit_streams, m, n, test_level=level)
        _observe_first_pass(kept, [1.0] * m, evidence)
        assert kept.main_effect_rounds == m + (n - m + 1) // 2
        assert None not in [kept.one_feature(r) for r in range(m, m + 50)]


def test_a_round_drawn_before_the_pass_ends_keeps_its_main_effect(release_plan,
                                                                  fit_streams):
    """The coordinator draws a tree while the one before it is out: round m is drawn
    before round m - 1's leaves are released, so it stays a main-effect round (drawn by
    released gain), and the stage ends at the first round drawn after the pass's last
    release."""
    m = 4
    method = _splitter(release_plan, fit_streams, m, 400)
    for feature in range(m - 1):
        method.one_feature(feature)
        method.observe(feature, _leaves(1.0, 0.0))
    method.one_feature(m - 1)
    assert method.one_feature(m) is not None  # (drawn ahead: the pass is not over)
    method.observe(m - 1, _leaves(1.0, 0.0))
    assert method.one_feature(m + 1) is None
    assert method.main_effect_rounds == m + 1
    assert method.one_feature(m) is not None  # (a round's feature is fixed when drawn)


def test_released_gain_evidence_is_standard_normal_without_signal():
    """Leaves whose gradient sums are centred with variance H (a calibrated model whose
    splits carry nothing), released with Gaussian noise: the evidence has mean about 0 and
    standard deviation about 1 (4000 trees of 32 leaves: standard errors 0.016 and 0.011
    for a normal), and a tree whose leaves carry signal stands far out."""
    rng = np.random.default_rng(11)
    sigma_g, sigma_h = 30.0, 40.0
    null, signal = [], []
    for _ in range(4000):
        hessians = rng.uniform(50.0, 800.0, 32)
        gradients = rng.normal(0.0, np.sqrt(hessians))
        noisy_h = hessians + rng.normal(0.0, sigma_h, 32)
        null.append(released_gain_evidence(gradients + rng.normal(0.0, sigma_g, 32), noisy_h,
                                           sigma_g, sigma_h))
        shifted = gradients + 0.15 * hessians * np.where(np.arange(32) % 2, 1.0, -1.0)
        signal.append(released_gain_evidence(shifted + rng.normal(0.0, sigma_g, 32), noisy_h,
                                             sigma_g, sigma_h))
    assert abs(np.mean(null)) < 0.1 and abs(np.std(null) - 1.0) < 0.1
    assert np.quantile(null, 0.999) < 4.5
    assert np.median(signal) > 5.0  # (beyond every Bonferroni quantile up to m = 10^5)


def test_stage_lengths(release_plan, fit_streams):
    """A pass, then half of the remaining rounds; half of them when no pass fits."""
    assert _splitter(release_plan, fit_streams, 10, 410).main_effect_rounds == 210
    assert _splitter(release_plan, fit_streams, 10, 11).main_effect_rounds == 11
    assert _splitter(release_plan, fit_streams, 10, 10).main_effect_rounds == 5
    assert _splitter(release_plan, fit_streams, 10, 7).main_effect_rounds == 4
    in_turn = RandomSplits(release_plan(10, feature_selection="staged", n_estimators=410,
                                        main_effect_features="in_turn"),
                           fit_streams(0)).schedule
    assert in_turn.main_effect_rounds == 205


def test_only_random_staged_trees_take_it():
    bounds = [[0.0, 1.0]] * 3
    for given in (dict(feature_selection="cyclic"), dict(feature_selection="random"),
                  dict(split_method="noisy_histogram", feature_selection="staged")):
        with pytest.raises(ValueError, match="main_effect_features='by_released_gain' "
                                             "chooses the features of the main-effect "
                                             "stage of random staged trees"):
            resolve_params("binary:logistic", epsilon=1.0, feature_bounds=bounds,
                           main_effect_features="by_released_gain", **given)
    with pytest.raises(ValueError, match="main_effect_test_level=0.05 tests the released "
                                         "gains of the main-effect pass"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=bounds,
                       feature_selection="cyclic", main_effect_test_level=0.05)
    with pytest.raises(ValueError, match="main_effect_test_level"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=bounds,
                       feature_selection="staged", main_effect_features="by_released_gain",
                       main_effect_test_level=1.0)
    with pytest.raises(ValueError, match="main_effect_features must be one of"):
        resolve_params("binary:logistic", epsilon=1.0, feature_bounds=bounds,
                       feature_selection="staged", main_effect_features="greedy")


def _wide_rows():
    """40 features whose last 4 carry a linear margin (the columns a pass reaches last)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6000, 40))
    y = (rng.random(6000) < 1 / (1 + np.exp(-X[:, -4:].sum(axis=1)))).astype(float)
    return X, y


@pytest.fixture(scope="module")
def wide_rows():
    return _wide_rows()


def _fit(rows, **given):
    X, y = rows
    params = resolve_params("binary:logistic", epsilon=10.0, feature_bounds=[[-5.0, 5.0]] * 40,
                            n_estimators=200, max_depth=3, feature_selection="staged",
                            random_state=2**140, reproducible_noise=True, **given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster, _ = train_in_process(params, X, y)
    return booster


def test_a_wide_fit_spends_its_focused_rounds_on_the_informative_features(wide_rows):
    """On real releases the rounds after the pass go to the 4 informative features of 40
    far more often than chance (0.1; as their main effects are learned, their released gain
    falls and the draws spread: 0.24-0.40 of the first 80 rounds over 6 noise seeds), and
    the releases are the in-turn fit's (the choice is post-processing: the same ledger)."""
    focused = _fit(wide_rows, main_effect_features="by_released_gain",
                   leaf_shrinkage="james_stein")
    in_turn = _fit(wide_rows, main_effect_features="in_turn", leaf_shrinkage="james_stein")
    roots = focused.nodes["feature"][focused.tree_roots]  # (a one-feature tree's feature)
    assert roots[:40].tolist() == list(range(40))  # the pass, in turn
    assert np.mean(roots[40:120] >= 36) > 0.2
    # the same releases with the same noise; only their leaf counts (public: a tree's
    # structure) follow the features drawn
    def releases(booster):
        return [{k: v for k, v in event.items() if k != "n_parallel"}
                for event in booster.ledger["events"]["events"]]

    assert releases(focused) == releases(in_turn)
    assert focused.ledger["epsilon"] == in_turn.ledger["epsilon"]
    assert focused.params["main_effect_features"] == "by_released_gain"
    assert "main_effect_features" not in in_turn.params


def test_the_default_passes_over_every_feature_from_its_james_stein_point():
    """From ε ≈ 0.7 the binary default draws its main effects by released gain, with one
    more tree per feature when the feature count is known (every fit gives it); below, and
    for the other objectives, the features in turn and the point's own count."""
    bounds = [[0.0, 1.0]] * 500
    for epsilon in (1.0, 4.0, 10.0):
        p = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=bounds,
                           n_features=500)
        assert (p.main_effect_features, p.n_estimators) == ("by_released_gain", 900)
        assert p.main_effect_test_level == 0.3
        assert resolve_params("binary:logistic", epsilon=epsilon,
                              feature_bounds=bounds).n_estimators == 400
    for epsilon in (0.02, 0.1, 0.5):
        p = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=bounds,
                           n_features=500)
        assert p.main_effect_features == "in_turn" and p.n_estimators < 500
    regression = resolve_params("reg:squarederror", epsilon=4.0, feature_bounds=bounds,
                                label_bounds=(0, 1), n_features=500)
    assert regression.main_effect_features == "in_turn"
    # the user's own count wins, and so does the user's own feature order
    given = resolve_params("binary:logistic", epsilon=4.0, feature_bounds=bounds,
                           n_features=500, n_estimators=300)
    assert given.n_estimators == 300
    in_turn = resolve_params("binary:logistic", epsilon=4.0, feature_bounds=bounds,
                             n_features=500, main_effect_features="in_turn")
    assert (in_turn.main_effect_features, in_turn.n_estimators) == ("in_turn", 400)
    # the pass comes with the draws by released gain, wherever the user asks for them
    asked = resolve_params("binary:logistic", epsilon=0.1, feature_bounds=bounds,
                           n_features=500, main_effect_features="by_released_gain")
    assert asked.n_estimators == 900
    # the schedule's draws by released gain are for its staged trees: another feature
    # selection drops them (and their pass), as a user's own choice would need
    cyclic = resolve_params("binary:logistic", epsilon=4.0, feature_bounds=bounds,
                            n_features=500, feature_selection="cyclic")
    assert (cyclic.main_effect_features, cyclic.n_estimators) == ("in_turn", 400)
    assert cyclic.main_effect_test_level == 0.0 and in_turn.main_effect_test_level == 0.0


def test_every_way_to_fit_gives_the_feature_count():
    """train's parameters, a private selection's configurations and the service's job
    resolve the default with the table's feature count."""
    from dpxgb_dask.training import _fit_params, _resolver

    X = np.zeros((10, 30))
    p, _, _, _ = _fit_params({"epsilon": 4.0, "feature_bounds": [[0.0, 1.0]] * 30}, X, None)
    assert p.n_estimators == 430
    resolve = _resolver({"feature_bounds": [[0.0, 1.0]] * 30}, 30)
    assert resolve({}, 4.0).n_estimators == 430
    assert resolve({"main_effect_features": "in_turn"}, 4.0).n_estimators == 400


def _features_per_tree(booster):
    """The distinct split features of each tree of a fitted booster."""
    features, left = booster.nodes["feature"], booster.nodes["left"]
    bounds = list(booster.tree_roots) + [features.shape[0]]
    return [set(features[a:b][left[a:b] >= 0].tolist()) for a, b in zip(bounds, bounds[1:])]


def test_a_fit_without_main_effects_grows_interaction_trees_after_the_pass():
    """Rows whose label is the sign of x0 · x1 (no feature matters alone): with the pass
    tested (level 0.3, the default's) the trees after the pass and the one drawn while its
    last tree was out draw a feature per node; with a stage of fixed length they stay
    one-feature trees for half of the remaining rounds. On rows with main effects
    (``wide_rows``' linear margin) the test keeps the stage."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8000, 6))
    y = (X[:, 0] * X[:, 1] > 0).astype(float)

    def fit(level, rows=(X, y), n_features=6):
        params = resolve_params("binary:logistic", epsilon=10.0,
                                feature_bounds=[[-5.0, 5.0]] * n_features, n_estimators=60,
                                max_depth=3, feature_selection="staged",
                                main_effect_features="by_released_gain",
                                leaf_shrinkage="james_stein", main_effect_test_level=level,
                                random_state=2**140, reproducible_noise=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _features_per_tree(train_in_process(params, *rows)[0])

    tested, fixed = fit(0.3), fit(0.0)
    assert all(len(features) == 1 for features in tested[:7])  # the pass, and one ahead
    assert np.mean([len(features) > 1 for features in tested[7:]]) > 0.8
    assert all(len(features) <= 1 for features in fixed[:6 + 27])
    X_wide, y_wide = _wide_rows()
    kept = fit(0.3, (X_wide, y_wide), 40)
    assert all(len(features) <= 1 for features in kept[:40 + 10])
