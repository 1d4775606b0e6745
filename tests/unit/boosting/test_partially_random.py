"""Partially random splits (Maddock et al.'s PR): one random threshold per node and feature,
a Gaussian release of the left / right / missing sums at them, the best noisy gain, and
leaves read off the last level's release."""
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpxgb_dask.boosting import gains, leaves, tree
from dpxgb_dask.privacy.mechanisms import histogram_mechanism
from dpxgb_dask.boosting.splits import PartiallyRandomSplits
from dpxgb_dask.boosting.streams import FitStreams
from dpxgb_dask._core import empty_histograms
from dpxgb_dask.params import resolve_params
from dpxgb_dask.boosting.calibration import make_plan
from dpxgb_dask.boosting.plan import ReleasePlan
from dpxgb_dask.privacy import NoiseSource
from dpxgb_dask.privacy.accountants import get_accountant
from dpxgb_dask.privacy.ledger import Ledger
from dpxgb_dask.privacy.sensitivity import gradient_histogram_l2_sensitivity
from dpxgb_dask.training import train, train_in_process

SEED = 2**190 + 11




def _naive_collapse(histograms, thresholds, categorical, left_codes=None):
    """Cell by cell: the slow twin of ``gains.collapse_at_thresholds``."""
    n_nodes, n_features, n_bins = histograms.shape
    out = empty_histograms(n_nodes, n_features, 3)
    for i in range(n_nodes):
        for f in range(n_features):
            t = thresholds[i, f]
            for b in range(n_bins):
                if b == n_bins - 1:
                    cell = 2
                elif categorical is not None and categorical[f]:
                    codes = (left_codes or {}).get((i, f), [t])
                    cell = 0 if b in codes else 1
                else:
                    cell = 0 if b <= t else 1
                for name in histograms.dtype.names:
                    out[name][i, f, cell] += histograms[name][i, f, b]
    return out


@pytest.mark.parametrize("categorical,left_codes", [
    (None, None), (np.array([False, True, False]), None),
    (np.array([False, True, True]), {(0, 1): [0, 3, 7], (2, 1): [5], (3, 2): [1, 2]})])
def test_collapsing_at_thresholds_matches_a_cell_by_cell_sum(categorical, left_codes,
                                                            random_histograms):
    rng = np.random.default_rng(0)
    h = random_histograms(rng, 4, 3, 9)
    thresholds = rng.integers(0, 8, size=(4, 3))
    fast = gains.collapse_at_thresholds(h, thresholds, categorical, left_codes)
    slow = _naive_collapse(h, thresholds, categorical, left_codes)
    for name in h.dtype.names:
        np.testing.assert_allclose(fast[name], slow[name], rtol=1e-12, atol=1e-12)
    # every row is in one of the three cells of every feature
    np.testing.assert_array_equal(fast["count"].sum(axis=2), h["count"].sum(axis=2))


def _structure(seed):
    """The public stream of the thresholds of tree 0's root level under ``seed``."""
    return NoiseSource(2**200 + seed).stream(purpose="split", tree=0, depth=0)


def _split(h, ranges, n_cuts, z, structure_seed=1, noise_seed=2, categorical=None):
    """One level of partially random splits (Maddock's λ 1, g* 1, h* 1/4, Newton) whose
    release has noise multiplier ``z``: (splits, mechanism, node sums, child sums)."""
    n_features = h.shape[1]
    lists = None if categorical is None else [  # the public lists of the categorical ones
        [f"c{k}" for k in range(n_cuts[f] + 1)] if categorical[f] else None
        for f in range(n_features)]
    params = resolve_params("binary:logistic", preset="maddock", epsilon=1.0,
                            split_method="partially_random", categories=lists,
                            feature_bounds=[[0.0, 1.0]] * n_features)
    streams = FitStreams(NoiseSource(2**200 + noise_seed), NoiseSource(2**200 + structure_seed))
    method = PartiallyRandomSplits(make_plan(params, n_features), streams)
    method.mechanism = histogram_mechanism(n_features, 1.0, 0.25, z)  # the test's noise
    splits, node_sums, child_sums = method.choose_released(
        0, 0, np.arange(h.shape[0]), h, n_cuts, ranges)
    return splits, method.mechanism, node_sums, child_sums


def test_thresholds_are_public_uniform_and_within_the_reachable_ranges(random_histograms):
    """The thresholds come from the public stream alone (two datasets, the same thresholds),
    lie where the feature can still split, and are uniform there (chi-square)."""
    rng = np.random.default_rng(1)
    n_cuts = np.array([8, 8, 3])
    ranges = np.zeros((5, 3, 2), dtype=np.int64)
    ranges[:, :, 1] = n_cuts
    ranges[1, 0] = [2, 6]
    ranges[2, :2] = [4, 4]  # only feature 2 can split at node 2
    ranges[3] = [1, 1]      # node 3 cannot split at all
    a, b = random_histograms(rng, 5, 3, 10), random_histograms(rng, 5, 3, 10)
    counts = np.zeros(4, dtype=np.int64)
    for seed in range(400):
        sa, *_ = _split(a, ranges, n_cuts, 1e-6, structure_seed=seed)
        sb, *_ = _split(b, ranges, n_cuts, 1e-6, structure_seed=seed, noise_seed=9)
        start, width = gains.threshold_ranges(ranges, n_cuts)
        assert not sa.is_split[3] and sa.is_split[[0, 1, 2, 4]].all()
        assert sa.feature[2] == 2
        for s in (sa, sb):
            f, t = s.feature[s.is_split], s.bin_threshold[s.is_split]
            lo, hi = ranges[s.is_split, f, 0], ranges[s.is_split, f, 1]
            assert np.all((lo <= t) & (t < hi))
        # node 1, feature 0: thresholds 2..5, whatever feature won
        thresholds = start + _structure(seed).uniform_below(
            np.maximum(width, 1)).reshape(width.shape)
        counts[thresholds[1, 0] - 2] += 1
        if sa.feature[1] == 0:
            assert sa.bin_threshold[1] == thresholds[1, 0]
        if sb.feature[1] == 0:
            assert sb.bin_threshold[1] == thresholds[1, 0]  # same thresholds on other data
    chi2 = float(((counts - 100) ** 2 / 100).sum())
    assert chi2 < 16.3  # 3 degrees of freedom, p = 0.001


def test_with_little_noise_the_best_drawn_threshold_wins_and_the_sums_are_the_exact_ones(
        random_histograms):
    rng = np.random.default_rng(2)
    n_cuts = np.array([8, 8, 8, 8])
    ranges = np.zeros((6, 4, 2), dtype=np.int64)
    ranges[:, :, 1] = n_cuts
    h = random_histograms(rng, 6, 4, 10)
    splits, mechanism, node_sums, child_sums = _split(h, ranges, n_cuts, 1e-9)
    start, width = gains.threshold_ranges(ranges, n_cuts)
    thresholds = start + _structure(1).uniform_below(width).reshape(width.shape)
    for i in range(6):
        best = (-np.inf, None)
        for f in range(4):
            cells = h[i, f]
            left = cells[:thresholds[i, f] + 1]  # thresholds < 8: never the missing bin
            g, hh = cells["sum_gradients"], cells["sum_hessians"]
            gl, hl = left["sum_gradients"].sum(), left["sum_hessians"].sum()
            gm, hm = g[-1], hh[-1]
            gt, ht = g.sum(), hh.sum()
            for miss in (0, 1):
                a, b = gl + miss * gm, hl + miss * hm
                gain = a**2 / (b + 1) + (gt - a) ** 2 / (ht - b + 1) - gt**2 / (ht + 1)
                if gain > best[0]:
                    best = (gain, (f, thresholds[i, f], bool(miss), a, b, gt - a, ht - b))
        f, t, miss, gl, hl, gr, hr = best[1]
        assert (splits.feature[i], splits.bin_threshold[i], splits.missing_left[i]) == \
            (f, t, miss)
        np.testing.assert_allclose(child_sums[2 * i], [gl, hl], atol=1e-6)
        np.testing.assert_allclose(child_sums[2 * i + 1], [gr, hr], atol=1e-6)
        # (the features of real data share their totals; these random ones do not)
        np.testing.assert_allclose(node_sums[i], [h[i]["sum_gradients"].sum() / 4,
                                                  h[i]["sum_hessians"].sum() / 4], atol=1e-6)
    # one release of the level: the full histograms' sensitivity
    assert mechanism.sensitivity == pytest.approx(
        gradient_histogram_l2_sensitivity(1.0, 0.25, 4), rel=1e-12)


def test_categorical_features_release_the_sums_of_their_random_sets(random_histograms):
    """A categorical feature's cells are its random subset's, its complement's and the
    missing values': with little noise the children's sums are the exact sums of the
    recorded split (``child_totals``), and the sets are proper subsets."""
    from dpxgb_dask._core import category_set_codes

    rng = np.random.default_rng(6)
    n_cuts = np.array([6, 8, 4])
    ranges = np.zeros((8, 3, 2), dtype=np.int64)
    ranges[:, :, 1] = n_cuts
    h = random_histograms(rng, 8, 3, 10)
    categorical = np.array([True, False, True])
    for f in np.flatnonzero(categorical):
        h[:, f, n_cuts[f] + 1:-1] = 0  # no row beyond the categories
    h["sum_gradients"][:, 1] = 0.0  # the numerical feature has nothing to split on
    seen = 0
    for seed in range(5):
        splits, _, _, child_sums = _split(h, ranges, n_cuts, 1e-9, structure_seed=seed,
                                          categorical=categorical)
        exact = tree.child_totals(h, splits)
        np.testing.assert_allclose(child_sums, exact[:, :2], atol=1e-6)
        for i in np.flatnonzero(splits.categorical):
            codes = category_set_codes(splits.category_set[i])
            assert 0 < codes.size < n_cuts[splits.feature[i]] + 1
            seen += codes.size > 1
    assert seen > 0  # sets of several categories were tested


def test_the_plan_has_one_split_release_per_level_and_no_leaf_release():
    bounds = np.zeros((5, 2)) + [0, 1]
    params = resolve_params("binary:logistic", preset="maddock", epsilon=1.0,
                            feature_bounds=bounds, split_method="partially_random",
                            n_estimators=8, max_depth=3)
    plan = make_plan(params, 5)
    assert "leaf" not in plan.releases and set(plan.shares) == {"sketch", "split"}
    events = plan.ledger().events
    splits = [(e.tree, e.depth) for e in events if e.purpose == "split"]
    assert splits == [(t, d) for t in range(8) for d in range(3)]
    assert not [e for e in events if e.purpose == "leaf"]
    assert get_accountant("rdp").get_epsilon(plan.ledger(), params.delta) == \
        pytest.approx(1.0, rel=1e-3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = ((np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
          + 0.3 * rng.normal(size=6000)) > 0.4).astype(float)
    return X, y, np.tile([-4.0, 4.0], (5, 1))


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
def test_a_fit_records_the_planned_releases_and_learns(data, objective):
    X, y, bounds = data
    extra = {"label_bounds": (0.0, 1.0)} if objective == "reg:squarederror" else {}
    params = resolve_params(objective, preset="maddock", epsilon=20.0, feature_bounds=bounds,
                            split_method="partially_random", n_estimators=20, max_depth=3,
                            random_state=SEED, **extra)
    booster, coordinator = train_in_process(params, X[:4000], y[:4000], 2)
    planned = ReleasePlan(params, 5, booster.ledger["budget_scale"]).ledger()
    keys = [(e.purpose, e.tree, e.depth) for e in coordinator.ledger]
    assert keys == [(e.purpose, e.tree, e.depth) for e in planned.events]
    assert booster.ledger["epsilon"] == pytest.approx(20.0, rel=1e-3)
    prediction = booster.predict(X[4000:])
    if objective == "binary:logistic":
        assert roc_auc_score(y[4000:], prediction) > 0.8
    else:
        assert np.corrcoef(prediction, y[4000:])[0, 1] > 0.6
    # the leaves were read off the releases: values vary and respect the leaf bound
    values = booster.nodes["value"][booster.nodes["left"] < 0]
    assert np.unique(values).size > 20 and np.all(np.abs(values) <= params.leaf_bound *
                                                  params.learning_rate + 1e-12)


def test_the_leaves_are_read_off_the_levels_releases(monkeypatch, data):
    """Every leaf's (G, H) is one of the released sums (a closed node's or a child's), never
    an exact aggregate."""
    released, leaf_inputs = [], []
    split, leaf_values = PartiallyRandomSplits.choose_released, leaves.leaf_values

    def spy_split(*args, **kwargs):
        out = split(*args, **kwargs)
        released.extend(map(tuple, np.concatenate([out[1], out[2]])))
        return out

    def spy_leaves(g, h, *args):
        leaf_inputs.extend(zip(g, h))
        return leaf_values(g, h, *args)

    monkeypatch.setattr(PartiallyRandomSplits, "choose_released", spy_split)
    monkeypatch.setattr(leaves, "leaf_values", spy_leaves)
    X, y, bounds = data
    params = resolve_params("binary:logistic", preset="maddock", epsilon=1.0,
                            feature_bounds=bounds, split_method="partially_random",
                            n_estimators=3, max_depth=3, random_state=SEED)
    train_in_process(params, X, y, 2)
    assert len(leaf_inputs) >= 3 * 4
    assert set(leaf_inputs) <= set(released)


def test_on_the_cluster_the_model_is_the_in_process_one(client, data):
    X, y, bounds = data
    params = dict(objective="binary:logistic", preset="maddock", epsilon=2.0,
                  feature_bounds=bounds, split_method="partially_random", n_estimators=5,
                  max_depth=3, random_state=SEED, reproducible_noise=True)
    model = train(params, X, y, client=client, n_partitions=2)
    local, _ = train_in_process(resolve_params(**params), X, y, 2)
    np.testing.assert_array_equal(model.nodes["feature"], local.nodes["feature"])
    np.testing.assert_allclose(model.nodes["value"], local.nodes["value"], rtol=1e-9,
                               atol=1e-12)
    events = Ledger.from_dict(model.ledger["events"]).events
    assert {e.purpose for e in events} == {"sketch", "split"}
