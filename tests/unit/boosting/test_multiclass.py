"""multi:softprob: softmax gradients, the joint release of a round's K class trees and its
row bounds (exact and statistical checks), the K-output model, the estimator, warm start."""
import math
import warnings

import numpy as np
import pytest

from dataclasses import replace

from dpxgb_dask.inputs import Targets
from dpxgb_dask import DPXGBClassifier
from dpxgb_dask.boosting.coordinator import Coordinator
from dpxgb_dask.boosting.leaves import GaussianLeaves
from dpxgb_dask.boosting.streams import FitStreams
from dpxgb_dask.model.booster import Booster
from dpxgb_dask.objective import Objective, softmax
from dpxgb_dask.partition.gradients import clip_row_vectors
from dpxgb_dask.partition.state import load_partition
from dpxgb_dask.partition.messages import Prepare, Round
from dpxgb_dask.params import resolve_params
from dpxgb_dask.boosting.calibration import make_plan
from dpxgb_dask.privacy import NoiseSource, PLDAccountant
from dpxgb_dask.privacy.ledger import Ledger
from dpxgb_dask.privacy.sensitivity import (gradient_histogram_l2_sensitivity,
                                            row_contribution_bounds)
from dpxgb_dask.training import continuation_params, train_in_process

K = 4
BOUNDS = np.tile([-4.0, 4.0], (5, 1))


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0] + 0.5 * X[:, 1])
    return X, np.digitize(signal, [-0.7, 0.0, 0.7]).astype(float)


def _fit(**given):
    X, y = _data(given.pop("n", 4000), 0)
    given.setdefault("feature_bounds", BOUNDS)
    given.setdefault("epsilon", 4.0)
    given.setdefault("n_estimators", 20)
    params = resolve_params("multi:softprob", num_class=K, **given)
    booster, _ = train_in_process(params, X, y, n_partitions=2)
    return booster, X, y


@pytest.fixture(scope="module")
def fitted():
    return _fit(max_depth=3)


# -- gradients and their bounds --------------------------------------------------------------


def test_softmax_gradients_are_the_derivatives_of_the_log_loss():
    rng = np.random.default_rng(0)
    margin = rng.normal(scale=3.0, size=(50, K))
    y = rng.integers(0, K, size=50).astype(float)
    g, h = Objective("multi:softprob", n_classes=K).gradients(y, margin)

    def loss(m):
        return -np.log(softmax(m)[np.arange(50), y.astype(int)])

    step = 1e-6
    for k in range(K):
        bump = np.zeros(K)
        bump[k] = step
        numeric = (loss(margin + bump) - loss(margin - bump)) / (2 * step)
        wide = bump * 100.0  # the second difference needs a wider step
        second = (loss(margin + wide) - 2 * loss(margin) + loss(margin - wide)) / (100 * step)**2
        np.testing.assert_allclose(g[:, k], numeric, atol=1e-6)
        np.testing.assert_allclose(h[:, k], second, atol=1e-5)
    np.testing.assert_allclose(g.sum(axis=1), 0.0, atol=1e-12)


def test_the_joint_row_bounds_hold_for_every_softmax_row():
    """Every row's clipped vectors stay within the bounds the releases' sensitivities use,
    for random and extreme margins, every label, every K and clipping bound."""
    rng = np.random.default_rng(1)
    for n_classes in (3, 4, 7, 10, 26):
        objective = Objective("multi:softprob", n_classes=n_classes)
        margin = np.concatenate([rng.normal(scale=s, size=(4000, n_classes))
                                 for s in (0.1, 1.0, 5.0, 40.0)])
        # rows whose probability sits on one or two classes: the bounds' extreme cases
        margin[:200] = -50.0
        margin[:200, 0] = 50.0
        margin[200:400] = -50.0
        margin[200:400, :2] = 50.0
        y = rng.integers(0, n_classes, size=margin.shape[0]).astype(float)
        y[:100] = 1.0  # the label away from the mass: ||g||² -> 2
        g, h = objective.gradients(y, margin)
        for g_star, h_star in ((1.0, 0.25), (0.3, 0.1), (16.0, 16.0)):
            bounds = row_contribution_bounds(g_star, h_star, True, n_classes)
            assert bounds.gradient <= math.sqrt(2.0) and bounds.denominator <= 0.5
            # the softmax alone meets them (the clipping only guards the floating point)
            assert np.sqrt((np.clip(g, -g_star, g_star) ** 2).sum(axis=1)).max() \
                <= bounds.gradient + 1e-12
            clipped_g, clipped_h = clip_row_vectors(g, h, g_star, h_star, bounds)
            assert np.sqrt((clipped_g ** 2).sum(axis=1)).max() <= bounds.gradient
            assert np.sqrt((clipped_h ** 2).sum(axis=1)).max() <= bounds.denominator
            assert clipped_h.sum(axis=1).max() <= bounds.denominator_sum
            assert np.abs(clipped_g).max() <= g_star and clipped_h.max() <= h_star
            # on the value grid, and never larger than the values clipped
            assert np.all(np.abs(clipped_g) <= np.abs(np.clip(g, -g_star, g_star)))
            assert np.all(clipped_g * 2.0**20 == np.round(clipped_g * 2.0**20))


def test_clip_row_vectors_matches_a_slow_row_by_row_twin():
    rng = np.random.default_rng(2)
    g = rng.normal(scale=2.0, size=(300, 5))
    h = np.abs(rng.normal(scale=0.5, size=(300, 5)))
    bounds = (1.0, 0.4, 0.7)
    fast_g, fast_h = clip_row_vectors(g, h, 1.5, 0.3, bounds)
    grid = 2.0**-20
    for i in range(300):
        gi = np.clip(g[i], -1.5, 1.5)
        gi = gi * min(1.0, (1 - 1e-12) * bounds[0] / math.sqrt(float(gi @ gi)))
        hi = np.clip(h[i], 0.0, 0.3)
        hi = hi * min(1.0, (1 - 1e-12) * min(bounds[1] / math.sqrt(float(hi @ hi)),
                                             bounds[2] / hi.sum()))
        np.testing.assert_array_equal(fast_g[i], np.trunc(gi / grid) * grid)
        np.testing.assert_array_equal(fast_h[i], np.trunc(hi / grid) * grid)


@pytest.mark.parametrize("newton, weighted", [(True, False), (False, False), (True, True),
                                             (False, True)])
def test_the_stacked_histograms_of_a_round_move_by_at_most_the_sensitivity(newton, weighted):
    """Adding one row moves the K class trees' root (G, H) histograms together, and the
    class-summed hessians of the iterative-Hessian sketch, by at most the plan's L2
    sensitivities, at extreme margins (exact sums on the workers, tree starts as the
    coordinator makes them); with sample weights too (the other rows' shares random, the
    added row's weight above the bound: a share of 1; without Newton steps the hessian
    field holds the weighted counts)."""
    from dpxgb_dask.inputs import weight_shares

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    y = rng.integers(0, K, size=300).astype(float)
    extra = {} if newton else {"newton": False, "gradient_bound": 0.8}
    if weighted:
        extra["weight_bound"] = 2.0
        weights = rng.uniform(0.0, 3.0, size=300)
    params = resolve_params("multi:softprob", num_class=K, feature_bounds=BOUNDS, epsilon=1.0,
                            split_method="noisy_histogram", split_candidates="iterative_hessian",
                            n_estimators=2, max_depth=2, **extra)
    plan = make_plan(params, 5)
    b = plan.row_bounds
    assert plan.releases["split"].sensitivity == pytest.approx(
        gradient_histogram_l2_sensitivity(b.gradient, b.denominator, 5))
    coordinator = Coordinator(params, plan, None, 5)
    starts = [coordinator.rows.start(k, k, k) for k in range(K)]
    denominator = "sum_hessians" if newton or weighted else "count"
    cuts = [np.linspace(-3, 3, 9)] * 5
    worst_split = worst_sketch = 0.0
    for base in (np.zeros(K), np.array([30.0, -30.0, -30.0, -30.0]),
                 np.array([8.0, 8.0, -8.0, -8.0]), np.array([1.0, 0.0, -1.0, 0.5])):
        for label in range(K):
            stacked, sketch = [], []
            X_added = np.vstack([X, rng.normal(size=(1, 5))])
            for X_all, y_all in ((X, y), (X_added, np.append(y, label))):
                targets = Targets(y_all)
                if weighted:
                    w = np.append(weights, 5.0)[:len(y_all)]
                    targets = Targets.checked(y_all, weight_shares(w, 2.0))
                state = load_partition(X_all, targets, Objective("multi:softprob", n_classes=K), 0)
                state.prepare(Prepare(BOUNDS, cuts, 10, base, {0: 0}))
                root = state.run(Round(seq=0, start_tree=replace(starts[0], output_class=-1),
                                       histogram_nodes=np.array([0])))
                sketch.append(root[denominator].ravel().astype(np.float64))
                hists = []
                for k in range(K):
                    hist = state.run(Round(seq=k + 1, start_tree=starts[k],
                                           histogram_nodes=np.array([0])))
                    hists += [hist["sum_gradients"].ravel(),
                              hist[denominator].ravel().astype(np.float64)]
                stacked.append(np.concatenate(hists))
            worst_split = max(worst_split, float(np.linalg.norm(stacked[1] - stacked[0])))
            worst_sketch = max(worst_sketch, float(np.linalg.norm(sketch[1] - sketch[0])))
    assert 0.5 * plan.releases["split"].sensitivity < worst_split \
        <= plan.releases["split"].sensitivity
    assert 0.5 * plan.releases["sketch"].sensitivity < worst_sketch \
        <= plan.releases["sketch"].sensitivity


def test_the_joint_leaf_release_is_as_private_as_the_ledger_says(release_plan):
    """Statistical: the K class trees' leaves released with independent noise from their
    own streams, on neighbouring datasets that differ by the worst softmax row, lose no
    more privacy than the one Gaussian event the ledger records (2e5 draws)."""
    n_draws, delta = 200_000, 1e-5
    # one round whose only release is the leaves', at a noise multiplier near 2
    plan = release_plan(5, "multi:softprob", num_class=K, n_estimators=1, epsilon=2.5,
                        split_candidates="uniform", init_score="zero")
    r, z, bounds = plan.params.leaf_noise_ratio, plan.releases["leaf"].noise_multiplier, \
        plan.row_bounds
    assert 1.0 < z < 4.0 and bounds == row_contribution_bounds(1.0, 0.25, True, K)
    ledger = Ledger()
    ledger.record(purpose="leaf", mechanism="gaussian", sensitivity=1.0, noise_multiplier=z)
    claimed = PLDAccountant().get_epsilon(ledger, delta)
    # the worst row: all probability on class 1, label 0 -> g = (-1, 1, 0, 0), h = 0
    g, h = clip_row_vectors(np.array([[-1.0, 1.0, 0.0, 0.0]]), np.zeros((1, K)), 1.0, 0.25,
                            bounds)
    base = np.array([3.0, 40.0])  # the other rows' (G, H) of every class's leaf
    outputs = {}
    for name, row in (("D", None), ("D'", 1)):
        seed = 2**200 + 7 + (name == "D'")
        leaves = GaussianLeaves(plan, FitStreams(NoiseSource(seed), NoiseSource(seed)))
        pieces = []
        for k in range(K):
            sums = np.tile([base[0], base[1], 160.0], (n_draws, 1))
            if row is not None:
                sums[:, 0] += g[0, k]
                sums[:, 1] += h[0, k]
            noisy_g, noisy_h = leaves.noisy_sums(k, sums)
            pieces.append(np.stack([noisy_g, noisy_h], axis=1))
        outputs[name] = np.concatenate(pieces, axis=1)
    sigma_g = z * bounds.gradient / math.sqrt(1 - r)
    sigma_h = z * bounds.denominator / math.sqrt(r)
    shift = np.ravel(np.column_stack([g[0], h[0]]))
    scale = np.tile([sigma_g, sigma_h], K)
    direction = shift / scale**2  # the likelihood ratio is monotone along it
    proj_d, proj_d2 = outputs["D"] @ direction, outputs["D'"] @ direction
    best = 0.0
    for threshold in np.quantile(proj_d2, np.linspace(0.5, 0.9995, 400)):
        p2 = (proj_d2 > threshold).mean()
        p1 = (proj_d > threshold).mean()
        if p1 * n_draws >= 1000 and p2 - delta > 0:
            best = max(best, math.log((p2 - delta) / p1))
    assert best <= claimed * 1.1
    # the worst row carries (1 - r) of the whitened sensitivity: close to the claim
    assert best >= 0.6 * claimed


# -- the fit ---------------------------------------------------------------------------------


def test_a_round_makes_one_joint_release_per_depth_and_one_for_its_leaves(fitted):
    booster, X, y = fitted
    assert booster.n_trees == 20 * K and booster.n_classes == K
    assert booster.tree_class.tolist() == list(range(K)) * 20
    events = Ledger.from_dict(booster.ledger["events"]).events
    leaves = [e for e in events if e.purpose == "leaf"]
    assert [e.tree for e in leaves] == [K * r for r in range(20)]
    assert all("joint release of the 4 class trees" in e.note for e in leaves)
    # the ledger is the plan's, so the fit spends exactly its epsilon
    assert booster.ledger["epsilon"] == pytest.approx(4.0, rel=1e-3)
    planned = make_plan(resolve_params("multi:softprob", num_class=K, feature_bounds=BOUNDS,
                                       epsilon=4.0, n_estimators=20, max_depth=3), 5).ledger()
    assert len(planned.events) == len(events)


@pytest.mark.parametrize("extra", [
    dict(split_method="noisy_histogram", subsample=0.5, batch_size=2),
    dict(split_method="partially_random", subsample=0.5),
    dict(split_candidates="iterative_hessian", iterative_hessian_rounds=3, subsample=0.5),
    dict(preset="s-bdt", subsample=0.5, max_depth=3)])
def test_joint_releases_follow_the_plan_with_subsamples_and_batches(extra):
    """Data-dependent splits (trees may stop early), Poisson subsamples, iterative-Hessian
    refreshes and batches: every recorded release is the plan's, once per round."""
    booster, X, y = _fit(n_estimators=6, epsilon=2.0, **dict({"max_depth": 3}, **extra))
    events = Ledger.from_dict(booster.ledger["events"]).events
    keys = [(e.purpose, e.tree, e.depth) for e in events]
    assert len(keys) == len(set(keys))  # one event per (release, round, depth)
    assert all(e.tree % K == 0 for e in events if e.tree is not None)
    preset = extra.get("preset")
    given = {k: v for k, v in extra.items() if k != "preset"}
    params = resolve_params("multi:softprob", preset=preset, num_class=K,
                            feature_bounds=BOUNDS, epsilon=2.0, n_estimators=6,
                            **dict({"max_depth": 3}, **given))
    planned = {(e.purpose, e.tree, e.depth): e for e in make_plan(params, 5).ledger().events}
    for e in events:
        p = planned[(e.purpose, e.tree, e.depth)]
        assert (e.mechanism, e.noise_multiplier, e.sampling_rate) == \
            (p.mechanism, p.noise_multiplier, p.sampling_rate)
    if "split_method" not in extra:  # random trees: every planned release is made
        assert len(events) == len(planned)
    assert booster.ledger["epsilon"] <= 2.0 * (1 + 1e-3)


def test_the_trees_of_a_round_share_its_subsample():
    params = resolve_params("multi:softprob", num_class=K, feature_bounds=BOUNDS, epsilon=1.0,
                            subsample=0.3, n_estimators=3)
    coordinator = Coordinator(params, make_plan(params, 5), None, 5)
    keys = [coordinator.rows.start(t, t % K, t).sample_key for t in range(2 * K)]
    assert len(set(keys[:K])) == 1 and len(set(keys[K:])) == 1 and keys[0] != keys[K]
    # pure-epsilon methods: every class tree draws its own
    params = resolve_params("multi:softprob", preset="dp-xgboost", num_class=K,
                            feature_bounds=BOUNDS, epsilon=1.0)
    coordinator = Coordinator(params, make_plan(params, 5), None, 5)
    assert len({coordinator.rows.start(t, t % K, t).sample_key for t in range(K)}) == K


def test_the_model_learns_and_predicts_probabilities(fitted):
    booster, X, y = fitted
    X_test, y_test = _data(2000, 1)
    proba = booster.predict(X_test)
    assert proba.shape == (2000, K)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    accuracy = (proba.argmax(axis=1) == y_test).mean()
    assert accuracy > 0.6  # chance is about 0.3 (the largest class)
    margin = booster.predict(X_test, output_margin=True)
    np.testing.assert_allclose(softmax(margin), proba)


def test_the_model_saves_and_loads(fitted, tmp_path):
    booster = fitted[0]
    booster.save_model(tmp_path / "m.json")
    loaded = Booster.load_model(tmp_path / "m.json")
    assert loaded == booster and loaded.n_classes == K
    np.testing.assert_array_equal(loaded.predict(fitted[1]), booster.predict(fitted[1]))


def test_pure_epsilon_methods_release_each_class_tree_on_its_own():
    booster, X, y = _fit(preset="dp-xgboost", n_estimators=5, epsilon=2.0)
    events = Ledger.from_dict(booster.ledger["events"]).events
    assert sorted({e.tree for e in events if e.purpose == "leaf"}) == list(range(5 * K))
    assert booster.ledger["epsilon"] == pytest.approx(2.0, rel=1e-3)


def test_multiclass_parameters_are_checked():
    with pytest.raises(ValueError, match="num_class is required"):
        resolve_params("multi:softprob", feature_bounds=BOUNDS)
    with pytest.raises(ValueError, match=r"num_class must be in \[3, inf\]"):
        resolve_params("multi:softprob", num_class=2, feature_bounds=BOUNDS)
    with pytest.raises(ValueError, match="num_class applies to objective='multi:softprob'"):
        resolve_params("binary:logistic", num_class=3)
    with pytest.raises(ValueError, match="ensemble_size .* does not apply to multi:softprob"):
        resolve_params("multi:softprob", num_class=3, ensemble_size=10, learning_rate=0.1)
    # DPBoost's ensembles are dropped by its multiclass preset
    assert resolve_params("multi:softprob", num_class=3, preset="dpboost").ensemble_size is None


def test_a_dp_initial_score_is_the_noisy_class_frequencies():
    # (RDP: the PLD accountant calibrates a budget of 50 in about 13 s)
    booster, X, y = _fit(n_estimators=2, epsilon=50.0, init_score="dp_mean",
                         budget_shares={"init": 10.0}, accountant="rdp")
    frequencies = np.bincount(y.astype(int), minlength=K) / y.size
    np.testing.assert_allclose(softmax(booster.base_score[None])[0], frequencies, atol=0.01)


def test_a_multiclass_fit_continues(fitted):
    booster, X, y = fitted
    params = continuation_params(resolve_params("multi:softprob", num_class=K, epsilon=1.0,
                                                n_estimators=5, max_depth=3), booster, None, 5)
    continued, coordinator = train_in_process(params, X, y, xgb_model=booster)
    # the workers started at the model's (n_rows, K) margins: after the fit they hold the
    # margins of every tree but the last round's (its leaves are never sent back)
    before_last = Booster.from_dict(continued.to_dict())
    n = continued.n_trees - K
    before_last._tree_roots, before_last._tree_class = \
        before_last._tree_roots[:n], before_last._tree_class[:n]
    np.testing.assert_allclose(coordinator.backend.states[0].margins,
                               before_last.predict_margin(X), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="xgb_model has num_class=4"):
        continuation_params(resolve_params("multi:softprob", num_class=3, epsilon=1.0),
                            booster, None, 5)


# -- the estimator (on the session's cluster) ------------------------------------------------


def test_the_classifier_trains_softmax_for_three_or_more_public_classes(client):
    X, y = _data(3000, 0)
    labels = np.array(["ant", "bee", "cat", "dog"])[y.astype(int)]
    model = DPXGBClassifier(epsilon=8.0, feature_bounds=BOUNDS, n_estimators=20, max_depth=3,
                            classes=["dog", "cat", "bee", "ant", "eel"], client=client)
    model.fit(X, labels)
    assert model.n_classes_ == 5 and model.booster_.n_classes == 5
    assert list(model.classes_) == ["ant", "bee", "cat", "dog", "eel"]
    proba = model.predict_proba(X[:50])
    assert proba.shape == (50, 5)
    assert set(model.predict(X)) <= set(model.classes_)
    assert model.score(X, labels) > 0.6  # the largest class holds 27%
    assert model.decision_function(X[:3]).shape == (3, 5)
    assert model.booster_.ledger["not_dp"] == []

    import dask.array as da

    X_dask = da.from_array(X, chunks=1000)
    np.testing.assert_allclose(model.predict_proba(X_dask).compute(), model.predict_proba(X))
    np.testing.assert_array_equal(model.predict(X_dask).compute(), model.predict(X))
    # dask labels are encoded lazily; a label outside classes is refused (issue 43: it
    # was left out without a word), or its row left out with unknown_labels="missing"
    y_dask = da.from_array(np.where(np.arange(3000) % 10 == 0, "fox", labels), chunks=1000)
    with pytest.raises(ValueError, match="labels outside the classes of multi:softprob"):
        model.fit(X_dask, y_dask)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # public classes: no PrivacyLeakWarning
        model.set_params(unknown_labels="missing").fit(X_dask, y_dask)
    assert model.booster_.n_classes == 5


def test_the_cli_trains_and_predicts_multiclass(client, tmp_path, capsys):
    import json

    import pandas as pd

    from dpxgb_dask.cli import main

    X, y = _data(2000, 0)
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(5)])
    frame["target"] = y
    data = tmp_path / "train.csv"
    frame.to_csv(data, index=False)
    bounds = tmp_path / "bounds.json"
    bounds.write_text(json.dumps({f"c{i}": [-4, 4] for i in range(5)}))
    out = tmp_path / "model.json"
    assert main(["train", str(data), "--label", "target", "--bounds", str(bounds),
                 "--objective", "multi:softprob", "--num-class", str(K), "--epsilon", "2",
                 "--n-estimators", "3", "--max-depth", "2", "--scheduler",
                 client.scheduler.address, "--out", str(out), "--quiet"]) == 0
    assert f"wrote {out}: {3 * K} trees" in capsys.readouterr().out
    preds = tmp_path / "preds.csv"
    assert main(["predict", str(out), str(data), "--out", str(preds)]) == 0
    written = pd.read_csv(preds)
    assert list(written.columns) == [f"prediction_{k}" for k in range(K)]
    np.testing.assert_allclose(written.to_numpy(),
                               Booster.load_model(out).predict(frame.drop(columns="target")))
