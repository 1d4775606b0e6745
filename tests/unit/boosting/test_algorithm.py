"""The coordinator's algorithm without a cluster (in-process backend)."""
import itertools
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpxgb_dask.boosting import gains
from dpxgb_dask.boosting.candidates import hessian_refined_cuts, uniform_cuts
from dpxgb_dask.boosting.splits import ExponentialSplits, RandomSplits
from dpxgb_dask.params import PRESETS, resolve_params, with_overrides
from dpxgb_dask.boosting.calibration import calibrate_budget_scale
from dpxgb_dask.boosting.plan import ReleasePlan
from dpxgb_dask.training import train_in_process
from dpxgb_dask.privacy.accountants import get_accountant
from dpxgb_dask.privacy.sensitivity import leaf_value_sensitivity
from dpxgb_dask.privacy.validation import PrivacyLeakWarning


def _fit(params, X, y, n_parts=3):
    return train_in_process(params, X, y, n_parts)


@pytest.mark.parametrize("preset", [None, *PRESETS])
@pytest.mark.parametrize("accountant", ["pld", "rdp", "basic"])
def test_calibration_spends_the_requested_epsilon(preset, accountant):
    params = resolve_params("binary:logistic", preset=preset, epsilon=1.0, accountant=accountant,
                            n_estimators=10, max_depth=3, feature_bounds=np.zeros((4, 2)) + [0, 1])
    scale = calibrate_budget_scale(params, 4)
    spent = get_accountant(accountant).get_epsilon(ReleasePlan(params, 4, scale).ledger(),
                                                   params.delta)
    assert 0.99 <= spent <= 1.0


def test_the_fit_records_exactly_the_planned_releases(seed, classification_data):
    X, y, bounds = classification_data
    for preset in PRESETS:
        params = resolve_params("binary:logistic", preset=preset, feature_bounds=bounds,
                                epsilon=1.0, random_state=seed, n_estimators=3, max_depth=2)
        booster, coordinator = _fit(params, X, y)
        planned = ReleasePlan(params, 6, booster.ledger["budget_scale"]).ledger()
        recorded = [e for e in coordinator.ledger if e.purpose != "bounds"]
        assert len(recorded) == len(planned)
        accountant = get_accountant(params.accountant)
        assert accountant.get_epsilon(coordinator.ledger, params.delta) <= \
            accountant.get_epsilon(planned, params.delta) + 1e-9


@pytest.mark.parametrize("split_method", ["noisy_histogram", "partially_random"])
def test_learns_at_large_epsilon(seed, classification_data, split_method):
    X, y, bounds = classification_data
    params = resolve_params("binary:logistic", feature_bounds=bounds, epsilon=50.0,
                            random_state=seed, n_estimators=30, max_depth=4,
                            split_method=split_method, learning_rate=0.3)
    booster, _ = _fit(params, X[:3000], y[:3000])
    assert roc_auc_score(y[3000:], booster.predict(X[3000:])) > 0.85


def test_random_trees_split_within_reachable_ranges(release_plan, fit_streams):
    """``RandomSplits.draw_tree``: each split within its node's reachable bins (the
    kernel's own test checks every case against its twin); a cyclic round's one feature."""
    streams = fit_streams(0)
    method = RandomSplits(release_plan(3, feature_selection="random", max_depth=4), streams)
    n_cuts = np.array([5, 1, 0])
    for t in range(30):
        (is_split, feature, split_bin, _, _), leaves, _ = method.draw_tree(t, n_cuts)
        ranges = {0: np.stack([np.zeros(3, np.int64), n_cuts], axis=1)}
        for node in np.flatnonzero(is_split):
            f, b = feature[node], split_bin[node]
            assert f in (0, 1) and ranges[node][f, 0] <= b < ranges[node][f, 1]
            left, right = ranges[node].copy(), ranges[node].copy()
            left[f, 1], right[f, 0] = b, b + 1
            ranges[2 * node + 1], ranges[2 * node + 2] = left, right
        assert set(leaves.tolist()) <= set(ranges)
    cyclic = RandomSplits(release_plan(3, feature_selection="cyclic"), fit_streams(1))
    heap = cyclic.draw_tree(4, n_cuts)[0]
    assert heap[0][0] and np.all(heap[1][heap[0] > 0] == 1)  # 4 mod 3


def test_a_tree_whose_words_run_out_is_drawn_again_from_the_same_stream(release_plan,
                                                                         fit_streams):
    plan = release_plan(3, feature_selection="random", max_depth=5)
    short = RandomSplits(plan, fit_streams(0))
    short._words_per_tree = 3  # every tree reads its stream again, longer
    enough = RandomSplits(plan, fit_streams(0))
    n_cuts = np.array([30, 7, 12])
    for t in range(5):
        for a, b in zip(short.draw_tree(t, n_cuts)[0], enough.draw_tree(t, n_cuts)[0]):
            np.testing.assert_array_equal(a, b)


def test_mixed_trees_alternate_one_feature_and_a_feature_per_node(release_plan, fit_streams):
    """feature_selection="mixed": round 2k grows a one-feature tree on feature k mod m, round
    2k + 1 draws a feature per node (uniform over the splittable ones at the root:
    chi-square), from the public structure stream alone."""
    from scipy.stats import chisquare

    plan = release_plan(4, feature_selection="mixed", max_depth=3)
    method = RandomSplits(plan, fit_streams(0, 9))
    n_cuts = np.full(4, 8)
    roots = []
    for boosting_round in range(400):
        assert method.schedule.one_feature(boosting_round) == (
            (boosting_round // 2) % 4 if boosting_round % 2 == 0 else None)
        is_split, features = method.draw_tree(boosting_round, n_cuts)[0][:2]
        if boosting_round % 2 == 0:
            assert np.all(features[is_split > 0] == (boosting_round // 2) % 4)
        else:
            roots.append(features[0])
    counts = np.bincount(roots, minlength=4)
    assert chisquare(counts).pvalue > 1e-3 and np.count_nonzero(counts) == 4
    other_noise = RandomSplits(plan, fit_streams(1, 9))
    again = RandomSplits(plan, fit_streams(0, 9))
    for a, b in zip(other_noise.draw_tree(5, n_cuts)[0], again.draw_tree(5, n_cuts)[0]):
        np.testing.assert_array_equal(a, b)


def test_leaf_value_sensitivity_holds_and_is_tight_by_brute_force():
    """|V(D) - V(D + row)| <= ΔV for every leaf size n and extreme gradients, and ΔV is
    attained (the bound is not loose)."""
    for n_min, lam in itertools.product([0.0, 0.5, 1.0, 2.5, 3.0, 50.0], [0.0, 0.1, 1.0]):
        bound = leaf_value_sensitivity(1.0, lam, n_min, leaf_bound=100.0)
        worst = 0.0
        for n in range(0, 120):
            for pos in (0, n):  # the change is linear in G: extremes are all one sign
                G = pos * 1.0 - (n - pos) * 1.0
                for g in (-1.0, 1.0):
                    v0 = gains.safe_ratio(-G, max(n, n_min) + lam)
                    v1 = gains.safe_ratio(-(G + g), max(n + 1, n_min) + lam)
                    worst = max(worst, abs(v1 - v0))
        assert worst <= bound + 1e-12, (n_min, lam, worst, bound)
        assert worst >= 0.999 * bound, (n_min, lam, worst, bound)


def test_exponential_splits_pick_the_best_split_at_huge_epsilon(release_plan, fit_streams):
    from dpxgb_dask._core import empty_histograms

    plan = release_plan(2, preset="dp-xgboost", dp_epsilon_per_tree=3e6, reg_lambda=0.1)
    assert plan.releases["split"].epsilon > 1e5
    hist = empty_histograms(1, 2, 5)
    hist["count"] = 10
    hist["sum_gradients"][0, 1, :2] = -5.0   # feature 1 separates bins 0-1 from 2-3
    hist["sum_gradients"][0, 1, 2:4] = 5.0
    choice = ExponentialSplits(plan, fit_streams(0)).choose(0, 0, np.array([0]), hist,
                                                            np.array([3, 3]), None)
    splits = choice.splits
    assert splits.feature[0] == 1 and splits.bin_threshold[0] == 1


def test_exponential_split_utilities_leave_out_the_parent_term(release_plan, fit_streams, monkeypatch):
    # the parent's term is common to a node's candidates; rounded with them it could move a
    # utility by one grid step more than the sensitivity (test_mechanisms.py)
    from dpxgb_dask._core import empty_histograms

    plan = release_plan(2, preset="dp-xgboost", reg_lambda=0.1)
    rng = np.random.default_rng(3)
    hist = empty_histograms(2, 2, 5)
    hist["count"] = rng.integers(1, 20, hist["count"].shape)
    hist["sum_gradients"] = rng.uniform(-0.3, 0.3, hist["sum_gradients"].shape) * hist["count"]
    method = ExponentialSplits(plan, fit_streams(0))
    seen = {}

    def capture(utilities, mask=None, rng=None):
        seen["utilities"] = utilities
        return np.zeros(utilities.shape[0], dtype=np.int64)

    monkeypatch.setattr(method.mechanism, "select", capture)
    method.choose(0, 0, np.array([0, 1]), hist, np.array([3, 3]), None)
    denominators = method._denominators(hist)
    children = gains.split_gains(hist["sum_gradients"], denominators, 0.1, parent_term=False)
    full = gains.split_gains(hist["sum_gradients"], denominators, 0.1)
    np.testing.assert_allclose(seen["utilities"], children.reshape(2, -1))
    assert not np.allclose(seen["utilities"], full.reshape(2, -1))


def test_hessian_refined_cuts_follow_the_mass():
    bounds = np.array([[0.0, 1.0]])
    cuts = uniform_cuts(bounds, 8)
    mass = np.zeros((1, 9))
    mass[0, 2] = 100.0  # all mass in [0.25, 0.375)
    new = hessian_refined_cuts(mass, cuts, bounds, 8)[0]
    assert np.all(np.diff(new) > 0) and np.all((new > 0) & (new < 1))
    inside = np.sum((new >= 0.25) & (new <= 0.375))
    assert inside >= 4


def test_dpboost_ensembles_need_a_learning_rate_below_one():
    with pytest.raises(ValueError, match="learning_rate < 1"):
        resolve_params("binary:logistic", preset="dpboost", learning_rate=1.5,
                       feature_bounds=np.zeros((2, 2)) + [0, 1])


def test_zero_lambda_never_yields_nan_or_a_data_dependent_error(seed):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X[:, 0] > 0).astype(float)
    for preset in ("dp-xgboost", "dpboost"):
        params = resolve_params("binary:logistic", preset=preset, reg_lambda=0.0,
                                feature_bounds=np.tile([-3.0, 3.0], (3, 1)), epsilon=1.0,
                                random_state=seed, n_estimators=2, max_depth=6)
        booster, _ = _fit(params, X, y)
        assert np.all(np.isfinite(booster.nodes["value"]))


def test_dp_bounds_fall_back_for_an_unresolvable_feature(seed):
    from dpxgb_dask import DPBoundsWarning

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    X[:, 2] = np.nan
    y = (X[:, 0] > 0).astype(float)
    # (reproducible noise: with fresh noise, a bin of the all-missing feature clears the
    # bounds estimate's threshold by chance once in a while, and nothing is to warn about)
    params = resolve_params("binary:logistic", bounds_epsilon=1.0, epsilon=2.0,
                            random_state=seed, reproducible_noise=True, n_estimators=2,
                            max_depth=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.warns(DPBoundsWarning, match=r"features \[2\]"):
            booster, _ = _fit(params, X, y)
    assert booster.feature_bounds[2].tolist() == [-1.0, 1.0]
    assert booster.feature_bounds[0, 0] <= -2.0 and booster.feature_bounds[0, 1] >= 2.0


def test_regression_predictions_stay_within_the_public_label_bounds(seed, regression_data):
    X, y, bounds, label_bounds = regression_data
    params = resolve_params("reg:squarederror", feature_bounds=bounds, label_bounds=(-3.0, 3.0),
                            epsilon=0.05, random_state=seed,
                            reproducible_noise=True, n_estimators=20, max_depth=4,
                            learning_rate=1.0, leaf_bound=2.0, reg_lambda=1.0)
    booster, _ = _fit(params, X, np.clip(y, -3.0, 3.0))
    pred = booster.predict(X)
    assert pred.min() >= -3.0 and pred.max() <= 3.0
    margin = booster.predict(X, output_margin=True)
    assert np.any((margin < -3.0) | (margin > 3.0))  # the clip did bind: the test can fail


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror", "multi:softprob"])
def test_the_default_takes_the_schedule_point_nearest_in_log_epsilon(objective):
    from dpxgb_dask.params.defaults import DEFAULT_SCHEDULE, default_schedule_overrides

    points = DEFAULT_SCHEDULE[objective]
    extra = {"reg:squarederror": {"label_bounds": (0.0, 1.0)},
             "multi:softprob": {"num_class": 3}}.get(objective, {})
    bounds = np.zeros((3, 2)) + [0, 1]
    for k, (at, overrides) in enumerate(points):
        # Just inside the band of point k on either side (bands switch at geometric midpoints).
        lo = at if k == 0 else np.sqrt(at * points[k - 1][0]) * 1.001
        hi = at if k == len(points) - 1 else np.sqrt(at * points[k + 1][0]) * 0.999
        for eps in (lo, at, hi):
            assert default_schedule_overrides(objective, eps) == overrides
            params = resolve_params(objective, epsilon=eps, feature_bounds=bounds, **extra)
            for name, value in overrides.items():
                if objective == "binary:logistic" and name == "reg_lambda":
                    # carried from the point's ε to the fit's (next test)
                    value = max(1.0, value * at / eps)
                    assert params.reg_lambda == pytest.approx(value), eps
                    continue
                assert getattr(params, name) == value, (eps, name)
    # Beyond the ends the end points hold; without a total ε there is no schedule.
    assert default_schedule_overrides(objective, points[0][0] / 100) == points[0][1]
    assert default_schedule_overrides(objective, points[-1][0] * 100) == points[-1][1]
    assert default_schedule_overrides(objective, None) == {}
    # The default ε (1) takes the ε = 1 point.
    params = resolve_params(objective, feature_bounds=bounds, **extra)
    assert params.n_estimators == default_schedule_overrides(objective, 1.0)["n_estimators"]


def test_the_binary_default_carries_its_lambda_and_eta_to_the_fit():
    """λ = max(1, λ_p·ε_p/ε·sqrt(T/T_p)) and η = min(1, η_p·T_p/T): the ε = 1 point
    (λ 10, η 0.2, 400 trees) serves ε 4 and 10 with a smaller λ, and a user's few trees
    get a smaller λ and a larger η; an explicit λ or η, the presets and the other
    objectives keep theirs."""
    from dpxgb_dask.params.defaults import noise_following_lambda

    bounds = np.zeros((3, 2)) + [0, 1]

    def lam(**given):
        return resolve_params("binary:logistic", feature_bounds=bounds, **given).reg_lambda

    assert lam() == lam(epsilon=1.0) == 10.0
    assert lam(epsilon=4.0) == pytest.approx(2.5)
    assert lam(epsilon=10.0) == pytest.approx(1.0)
    assert lam(epsilon=1.0, n_estimators=100) == pytest.approx(5.0)
    assert lam(epsilon=1.0, n_estimators=1600) == pytest.approx(20.0)
    # never below XGBoost's default λ
    assert lam(epsilon=8.0, n_estimators=20) == lam(epsilon=50.0) == 1.0
    # ε 4 and 10 grow the ε = 1 point's trees.
    large = resolve_params("binary:logistic", epsilon=10.0, feature_bounds=bounds)
    assert (large.n_estimators, large.max_depth, large.max_bin, large.learning_rate) == \
        (400, 6, 255, 0.3)
    assert noise_following_lambda(10.0, 1.0, 400, 1.0, 400) == 10.0
    assert lam(epsilon=4.0, reg_lambda=7.0) == 7.0
    sbdt = resolve_params("binary:logistic", preset="s-bdt", epsilon=4.0, feature_bounds=bounds)
    assert sbdt.reg_lambda == 5.0
    for eps in (0.2, 1.0, 4.0):
        reg = resolve_params("reg:squarederror", epsilon=eps, feature_bounds=bounds,
                             label_bounds=(0.0, 1.0))
        assert reg.reg_lambda == 15.0
    # η keeps the ensemble's total step T·η of the point, up to a full Newton step.
    def eta(**given):
        return resolve_params("binary:logistic", feature_bounds=bounds, **given).learning_rate

    assert eta() == eta(epsilon=4.0) == 0.3
    assert eta(n_estimators=200) == pytest.approx(0.6)
    assert eta(n_estimators=800) == pytest.approx(0.15)
    assert eta(n_estimators=100) == 1.0
    assert eta(n_estimators=20) == eta(epsilon=0.1, n_estimators=20) == 1.0
    assert eta(epsilon=0.1, n_estimators=100) == pytest.approx(0.4)
    assert eta(n_estimators=100, learning_rate=0.05) == 0.05
    # A bad tree count is reported by validation, not by the λ formula.
    with pytest.raises(ValueError, match="n_estimators"):
        lam(epsilon=4.0, n_estimators=0)


@pytest.mark.parametrize("method", ["noisy_histogram", "partially_random", "exponential"])
def test_a_split_method_brings_its_own_defaults_not_the_schedules(method):
    """Naming a split method without a preset takes that method's defaults (issue 27): the
    default's ε schedule and its carried λ and η (η = 1 for 20 trees, λ from the schedule's
    λ 10) do not reach it, every method resolves without naming its leaves or denominators,
    and what the user gives still wins."""
    from dpxgb_dask.params.defaults import SPLIT_METHOD_DEFAULTS

    bounds = np.zeros((3, 2)) + [0, 1]
    own = SPLIT_METHOD_DEFAULTS[method]
    for eps in (0.1, 1.0, 10.0):
        params = resolve_params("binary:logistic", epsilon=eps, feature_bounds=bounds,
                                split_method=method, n_estimators=20)
        assert params.n_estimators == 20
        for name, value in own.items():
            if name != "n_estimators":
                assert getattr(params, name) == value, name
    given = resolve_params("binary:logistic", feature_bounds=bounds, split_method=method,
                           learning_rate=0.05, max_depth=2)
    assert (given.learning_rate, given.max_depth) == (0.05, 2)
    reg = resolve_params("reg:squarederror", feature_bounds=bounds, label_bounds=(0.0, 1.0),
                         split_method=method)
    assert reg.newton is False and reg.max_depth == own["max_depth"]
    # a preset keeps its paper's values with any split method
    maddock = resolve_params("binary:logistic", preset="maddock", feature_bounds=bounds,
                             split_method="partially_random")
    assert (maddock.max_bin, maddock.reg_lambda) == (33, 1.0)


def test_explicit_parameters_and_presets_are_not_touched_by_the_schedule():
    bounds = np.zeros((3, 2)) + [0, 1]
    params = resolve_params("binary:logistic", epsilon=0.01, feature_bounds=bounds,
                            n_estimators=7, subsample=1.0, learning_rate=0.5)
    assert (params.n_estimators, params.subsample, params.learning_rate) == (7, 1.0, 0.5)
    assert params.max_depth == 5  # the rest of the ε = 0.01 point still applies
    # The presets other than s-bdt keep one setting at every ε, as their papers do.
    for preset in set(PRESETS) - {"s-bdt"}:
        small = resolve_params("binary:logistic", preset=preset, epsilon=0.01,
                               feature_bounds=bounds)
        large = resolve_params("binary:logistic", preset=preset, epsilon=10.0,
                               feature_bounds=bounds)
        assert small.to_dict() | {"epsilon": 0} == large.to_dict() | {"epsilon": 0}


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
def test_the_sbdt_preset_takes_the_papers_row_nearest_in_log_epsilon(objective):
    """S-BDT's runs pick one configuration per ε: the preset takes the authors' best row
    at the nearest reported ε, explicit parameters win, and multiclass keeps the base."""
    from dpxgb_dask.params.presets import PRESET_PARAMS, SBDT_SCHEDULE

    bounds = np.zeros((3, 2)) + [0, 1]
    extra = {"label_bounds": (0.0, 1.0)} if objective == "reg:squarederror" else {}
    points = SBDT_SCHEDULE[objective]
    seen = set()
    for k, (at, overrides) in enumerate(points):
        lo = at / 3 if k == 0 else np.sqrt(at * points[k - 1][0]) * 1.001
        hi = at * 30 if k == len(points) - 1 else np.sqrt(at * points[k + 1][0]) * 0.999
        for eps in (lo, at, hi):
            params = resolve_params(objective, preset="s-bdt", epsilon=eps,
                                    feature_bounds=bounds, **extra)
            for name, value in overrides.items():
                assert getattr(params, name) == value, (eps, name)
            seen.add((params.n_estimators, params.subsample, params.gradient_bound,
                      params.max_depth))
    assert len(seen) == len(points)  # the rows differ: the test can tell them apart
    params = resolve_params(objective, preset="s-bdt", epsilon=0.01, feature_bounds=bounds,
                            n_estimators=7, subsample=0.5, **extra)
    assert (params.n_estimators, params.subsample) == (7, 0.5)
    # without ε the default ε (1) takes its row, as a given ε = 1 does
    unset = resolve_params(objective, preset="s-bdt", feature_bounds=bounds, **extra)
    assert unset == resolve_params(objective, preset="s-bdt", feature_bounds=bounds,
                                   epsilon=1.0, **extra)
    multi = resolve_params("multi:softprob", num_class=3, preset="s-bdt", epsilon=0.01,
                           feature_bounds=bounds)
    assert multi.n_estimators == PRESET_PARAMS["s-bdt"]["n_estimators"]


def test_budget_shares_override_only_the_releases_they_name():
    from dpxgb_dask.boosting.plan import release_shares

    bounds = np.zeros((3, 2)) + [0, 1]
    ih = dict(feature_bounds=bounds, split_candidates="iterative_hessian")
    # Default at ε = 1 with iterative-Hessian candidates: sketch 0.1, leaf 0.9, init 0.05
    # (normalised).
    plain = release_shares(resolve_params("binary:logistic", **ih), 3)
    assert plain == pytest.approx({"sketch": 0.1 / 1.05, "leaf": 0.9 / 1.05, "init": 0.05 / 1.05})
    shares = release_shares(resolve_params("binary:logistic", budget_shares={"init": 0.4},
                                           **ih), 3)
    assert shares == pytest.approx({"sketch": 0.1 / 1.4, "leaf": 0.9 / 1.4, "init": 0.4 / 1.4})
    # A share for a release the method does not make is ignored: the initial score's here,
    # and the sketch's with the schedule's uniform candidates at ε = 1.
    shares = release_shares(resolve_params("binary:logistic", init_score="zero",
                                           budget_shares={"init": 0.4}, **ih), 3)
    assert shares == pytest.approx({"sketch": 0.1, "leaf": 0.9})
    assert sum(shares.values()) == pytest.approx(1.0)
    shares = release_shares(resolve_params("binary:logistic", feature_bounds=bounds,
                                           budget_shares={"sketch": 0.5}), 3)
    assert shares == pytest.approx({"leaf": 0.9 / 0.95, "init": 0.05 / 0.95})


@pytest.mark.parametrize("split_method", ["random", "noisy_histogram", "partially_random"])
def test_equal_noise_gives_every_query_the_same_noise_multiplier(split_method):
    """Maddock et al.'s allocation: a sketch refresh is F queries (one hessian histogram per
    feature), a level of histogram splits F queries, a tree's leaves one; each query's
    noise, in units of its own sensitivity, is the same."""
    from dpxgb_dask.boosting.calibration import make_plan

    n_features = 7
    bounds = np.zeros((n_features, 2)) + [0, 1]
    params = resolve_params("binary:logistic", preset="maddock", epsilon=1.0,
                            feature_bounds=bounds, split_method=split_method,
                            n_estimators=30, iterative_hessian_rounds=4)
    assert params.budget_shares == "equal_noise"
    releases = make_plan(params, n_features).releases
    # per-query multiplier of a release of F feature queries: z_joint * sqrt(F)
    per_query = {"sketch": releases["sketch"].noise_multiplier * np.sqrt(n_features)}
    if split_method != "random":
        per_query["split"] = releases["split"].noise_multiplier * np.sqrt(n_features)
    if split_method != "partially_random":
        per_query["leaf"] = releases["leaf"].noise_multiplier
    assert set(per_query) | {"leaf"} >= set(releases) - {"init"}
    values = list(per_query.values())
    assert len(values) >= 2 and np.allclose(values, values[0], rtol=1e-12)
    # Weights 1:1 (a sketch costs one tree's leaves) put sqrt(s·F) more noise per query
    # on the sketch than on the leaves.
    if split_method == "random":
        old = make_plan(with_overrides(params, budget_shares={"sketch": 1, "leaf": 1}),
                        n_features).releases
        ratio = old["sketch"].noise_multiplier * np.sqrt(n_features) \
            / old["leaf"].noise_multiplier
        assert ratio == pytest.approx(np.sqrt(4 * n_features), rel=1e-12)


@pytest.mark.parametrize("change", [dict(leaf_method="laplace"), dict(split_method="exponential"),
                                    dict(split_candidates="dp_sketch"),
                                    dict(init_score="dp_mean")])
def test_equal_noise_refuses_releases_that_are_not_gaussian_queries(change):
    bounds = np.zeros((3, 2)) + [0, 1]
    name = next(iter(change))
    with pytest.raises(ValueError, match=f"equal_noise.*{name}"):
        resolve_params("binary:logistic", preset="maddock", feature_bounds=bounds,
                       budget_shares="equal_noise", **change)


def test_reproducible_noise_keys_the_noise_and_the_structure_apart():
    """Issue 42: under reproducible_noise one seed keyed the noise and the structure in one
    domain, so a "split" noise stream equalled the structure stream of the same tree and
    depth. The structure is now public-domain whatever keys the noise: the two differ,
    and the structure is the same with and without reproducible_noise."""
    from dpxgb_dask.boosting.streams import FitStreams

    seed = 2**200 + 5
    params = resolve_params("binary:logistic", epsilon=1.0, random_state=seed,
                            reproducible_noise=True, feature_bounds=np.tile([0.0, 1.0], (3, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        streams, said = FitStreams.for_fit(params)
        again, _ = FitStreams.for_fit(params)
    assert said and said[0][0] is PrivacyLeakWarning
    structure = streams.structure_stream(3, 1).uint64(4)
    assert not np.array_equal(streams.noise_stream("split", 3, 1).uint64(4), structure)
    np.testing.assert_array_equal(again.noise_stream("split", 3, 1).uint64(4),
                                  streams.noise.stream(purpose="split", tree=3, depth=1,
                                                       replay=True).uint64(4))
    fresh, _ = FitStreams.for_fit(with_overrides(params, reproducible_noise=False))
    np.testing.assert_array_equal(fresh.structure_stream(3, 1).uint64(4), structure)
