"""DP-XGBoost's sketch per tree (``split_candidates="dp_sketch_per_tree"``, §4.1): each tree's
candidates come from a Laplace sketch of its own rows, before it grows."""
import numpy as np
import pytest

from dpxgb_dask.inputs import Targets
from dpxgb_dask.boosting import candidates
from dpxgb_dask.partition import messages, state as partition
from dpxgb_dask.boosting.candidates import uniform_cuts
from dpxgb_dask.objective import Objective
from dpxgb_dask.params import resolve_params
from dpxgb_dask.boosting.calibration import make_plan
from dpxgb_dask.privacy.ledger import Ledger
from dpxgb_dask.training import train, train_in_process

SEED = 2**170 + 5
BOUNDS = np.tile([-3.0, 3.0], (4, 1))


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * rng.normal(size=n) > 0).astype(float)
    return X, y


def _state(X, y, by_hessian, interval=(0.0, 0.5)):
    state = partition.load_partition(X, Targets(y), Objective("binary:logistic"), 0)
    state.prepare(messages.Prepare(BOUNDS, uniform_cuts(BOUNDS, 16), 16, 0.3, {0: 0}))
    return state.run(messages.Round(seq=1, start_tree=messages.TreeStart(7, interval, 1.0, "clip", 0.25),
                               fine_histogram=(32, by_hessian))), state


@pytest.mark.parametrize("by_hessian", [True, False])
def test_the_tree_histogram_counts_the_trees_rows_as_a_row_by_row_sum_does(by_hessian):
    X, y = _data()
    fast, state = _state(X, y, by_hessian)
    slow = np.zeros((4, 32))
    in_tree = state.positions >= 0
    assert 0.3 < in_tree.mean() < 0.7  # the Poisson sample, not every row
    for i in np.flatnonzero(in_tree):
        for f in range(4):
            if np.isnan(X[i, f]):
                continue
            b = int((min(max(X[i, f], -3.0), 3.0) + 3.0) / 6.0 * 32)
            slow[f, min(b, 31)] += state.hessians[i] if by_hessian else 1.0
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)


def test_one_row_moves_the_tree_histogram_by_at_most_the_planned_sensitivity():
    """Adding a row changes the released histogram by at most the plan's Laplace
    sensitivity in L1: F·1 with counts, F·h* with hessians, and F·min(K h*, 1) for the
    class-summed hessians of a multiclass round (the row is in the tree's sample here)."""
    X, y = _data(500)
    for newton, bound in ((False, 1.0), (True, 0.25)):
        params = resolve_params("binary:logistic", preset="dp-xgboost", feature_bounds=BOUNDS,
                                newton=newton, leaf_method="gaussian", split_method="random",
                                subsample=1.0, epsilon=1.0)
        planned = make_plan(params, 4).releases["sketch"].sensitivity
        assert planned == pytest.approx(4 * bound)
        without, _ = _state(X[1:], y[1:], newton, interval=(-1.0, 2.0))
        with_row, _ = _state(X, y, newton, interval=(-1.0, 2.0))
        moved = np.abs(with_row - without).sum()
        assert 0 < moved <= planned + 1e-12
    # multiclass: the round's sketch weighs each row by its class-summed clipped hessians
    k, h_star = 3, 0.25
    params = resolve_params("multi:softprob", num_class=k, preset="maddock", epsilon=1.0,
                            feature_bounds=BOUNDS, split_candidates="dp_sketch_per_tree",
                            budget_shares={"sketch": 1, "leaf": 1}, hessian_bound=h_star)
    planned = make_plan(params, 4).releases["sketch"].sensitivity
    assert planned == pytest.approx(4 * min(k * h_star, 1.0))
    labels = np.random.default_rng(2).integers(0, k, size=500).astype(float)
    hists = []
    for rows in (slice(1, None), slice(None)):
        state = partition.load_partition(X[rows], Targets(labels[rows]), Objective("multi:softprob",
                                                                    n_classes=k), 0)
        state.prepare(messages.Prepare(BOUNDS, uniform_cuts(BOUNDS, 16), 16, np.zeros(k), {0: 0}))
        start = messages.TreeStart(7, (-1.0, 2.0), 1.0, "clip", h_star, -1,
                              (np.sqrt(2.0), 0.5, min(k * h_star, 1.0)))
        hists.append(state.run(messages.Round(seq=1, start_tree=start, fine_histogram=(32, True))))
    moved = np.abs(hists[1] - hists[0]).sum()
    assert 0 < moved <= planned + 1e-12


def test_the_sketch_reads_the_trees_poisson_sample(monkeypatch):
    """The coordinator's sketch round samples the rows as the tree does: at γ = 0.1 it
    reads about a tenth of the rows (binomial bounds), not all of them."""
    sampled = []
    original = partition.tree_fine_histogram

    def spy(state, *args):
        sampled.append(int((state.positions >= 0).sum()))
        return original(state, *args)

    monkeypatch.setattr(partition, "tree_fine_histogram", spy)
    X, y = _data(20000)
    params = resolve_params("binary:logistic", preset="dp-xgboost", feature_bounds=BOUNDS,
                            epsilon=4.0, n_estimators=3, max_depth=2, random_state=SEED)
    assert params.subsample == 0.1
    train_in_process(params, X, y, 1)
    assert len(sampled) == 3
    assert all(abs(n - 2000) < 5 * np.sqrt(20000 * 0.1 * 0.9) for n in sampled)


def test_a_continued_fit_sketches_its_own_trees():
    from dpxgb_dask.training import continuation_params

    X, y = _data(4000)
    params = resolve_params("binary:logistic", preset="dp-xgboost", feature_bounds=BOUNDS,
                            epsilon=4.0, n_estimators=3, max_depth=2, random_state=SEED)
    model, _ = train_in_process(params, X, y, 2)
    more = continuation_params(params, model, None, 4)
    assert more.split_candidates == "dp_sketch_per_tree"
    continued, coordinator = train_in_process(more, X, y, 2, xgb_model=model)
    sketches = [e.tree for e in coordinator.ledger if e.purpose == "sketch"]
    assert sketches == [3, 4, 5]


def test_a_per_tree_sketch_next_to_gaussian_releases_on_a_sample_is_refused():
    with pytest.raises(ValueError, match="dp_sketch_per_tree.*subsample"):
        resolve_params("binary:logistic", preset="maddock", feature_bounds=BOUNDS,
                       split_candidates="dp_sketch_per_tree", subsample=0.5,
                       budget_shares={"sketch": 1, "leaf": 1})
    resolve_params("binary:logistic", preset="maddock", feature_bounds=BOUNDS,
                   split_candidates="dp_sketch_per_tree", subsample=1.0,
                   budget_shares={"sketch": 1, "leaf": 1})


def test_the_plan_releases_one_sketch_per_tree_on_its_subsample():
    params = resolve_params("binary:logistic", preset="dp-xgboost", feature_bounds=BOUNDS,
                            epsilon=4.0)
    assert params.split_candidates == "dp_sketch_per_tree"
    plan = make_plan(params, 4)
    sketches = [e for e in plan.ledger().events if e.purpose == "sketch"]
    assert [e.tree for e in sketches] == list(range(params.n_estimators))
    assert {e.sampling_rate for e in sketches} == {params.subsample}
    # DP-XGBoost §4.4: a tree's budget is split in thirds between sketch, splits and leaves
    leaf = plan.releases["leaf"].epsilon
    assert plan.releases["sketch"].epsilon == pytest.approx(leaf)
    assert plan.releases["split"].epsilon * params.max_depth == pytest.approx(leaf)


def test_every_tree_splits_on_the_cuts_of_its_own_sketch(monkeypatch):
    sketched = []
    original = candidates.sketch_cuts

    def spy(*args, **kwargs):
        cuts = original(*args, **kwargs)
        sketched.append([np.asarray(c).copy() for c in cuts])
        return cuts

    monkeypatch.setattr(candidates, "sketch_cuts", spy)
    X, y = _data(6000)
    params = resolve_params("binary:logistic", preset="dp-xgboost", feature_bounds=BOUNDS,
                            epsilon=8.0, n_estimators=6, max_depth=3, random_state=SEED)
    booster, coordinator = train_in_process(params, X, y, 2)
    assert booster.ledger["epsilon"] == pytest.approx(8.0, rel=1e-3)
    keys = [(e.purpose, e.tree) for e in coordinator.ledger if e.purpose == "sketch"]
    assert keys == [("sketch", t) for t in range(6)]
    assert len(sketched) == 6
    nodes = booster.nodes
    roots = list(booster.tree_roots) + [len(nodes["value"])]
    n_checked = 0
    for t, (a, b) in enumerate(zip(roots[:-1], roots[1:])):
        inner = nodes["left"][a:b] >= 0
        for f, threshold in zip(nodes["feature"][a:b][inner], nodes["threshold"][a:b][inner]):
            assert np.any(np.isclose(sketched[t][f], threshold, rtol=0, atol=1e-9))
            n_checked += 1
    assert n_checked >= 6
    # the sketches differ from tree to tree (fresh noise, fresh rows)
    assert not all(np.array_equal(sketched[0][0], s[0]) for s in sketched[1:])


def test_on_the_cluster_the_model_is_the_in_process_one(client):
    X, y = _data(4000)
    params = dict(objective="binary:logistic", preset="dp-xgboost", feature_bounds=BOUNDS,
                  epsilon=4.0, n_estimators=4, max_depth=3, random_state=SEED,
                  reproducible_noise=True)
    model = train(params, X, y, client=client, n_partitions=2)
    local, _ = train_in_process(resolve_params(**params), X, y, 2)
    np.testing.assert_array_equal(model.nodes["feature"], local.nodes["feature"])
    np.testing.assert_allclose(model.nodes["threshold"], local.nodes["threshold"])
    events = Ledger.from_dict(model.ledger["events"]).events
    assert sum(e.purpose == "sketch" for e in events) == 4
