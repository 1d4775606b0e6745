"""The model explains itself: covers from DP releases, TreeSHAP contributions and leaf ids in
this package, and the same through the XGBoost export (``pred_contribs``,
``pred_interactions``, ``pred_leaf``, ``shap.TreeExplainer``), for every objective, missing
values and categorical splits."""
import numpy as np
import pandas as pd
import pytest

from dpxgb_dask.boosting.leaves import COVER_FLOOR, GaussianLeaves, LaplaceLeaves, leaf_covers
from dpxgb_dask.boosting.streams import FitStreams
from dpxgb_dask.model.booster import Booster
from dpxgb_dask.params import resolve_params
from dpxgb_dask.privacy.randomness import NoiseSource
from dpxgb_dask.training import check_bounds_policy, train_in_process, with_categories

xgboost = pytest.importorskip("xgboost", reason="the export tests need xgboost "
                                                "(pip install '.[bench]')")

COLORS = ["red", "green", "blue", "grey"]


def _data(n, seed, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32).astype(np.float64)  # (test_export.py)
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0] + X[:, 1] * X[:, 2])
    if categorical:
        codes = rng.integers(0, 4, n)
        signal = signal + np.where(codes % 2 == 0, 1.0, -1.0)
        color = np.asarray(COLORS, dtype=object)[codes]
        color[rng.random(n) < 0.05] = None
        frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"]).assign(color=color)
        return frame, signal
    return X, signal


# (objective, extra parameters, categorical)
CASES = {
    "binary": ("binary:logistic", dict(n_estimators=40), False),
    "regression": ("reg:squarederror", dict(n_estimators=40, label_bounds=(-6.0, 6.0)), False),
    "multiclass": ("multi:softprob", dict(n_estimators=15, num_class=3), False),
    "greedy": ("binary:logistic", dict(split_method="noisy_histogram", n_estimators=20), False),
    "laplace leaves": ("binary:logistic", dict(split_method="exponential", n_estimators=20,
                                               leaf_method="laplace", newton=False),
                       False),
    "categorical": ("binary:logistic", dict(split_method="noisy_histogram", n_estimators=20,
                                            max_depth=3, categories={"color": COLORS}), True),
}


@pytest.fixture(scope="module", params=list(CASES))
def model(request, tmp_path_factory):
    objective, extra, categorical = CASES[request.param]
    X, signal = _data(5000, 0, categorical)
    if objective == "binary:logistic":
        y = (signal > 0).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(signal, [-0.5, 0.5]).astype(float)
    else:
        y = np.clip(2.0 * signal, -6.0, 6.0)
    bounds = np.tile([-4.0, 4.0], (X.shape[1], 1))
    if categorical:
        bounds[3] = 0.0
    p = resolve_params(objective, epsilon=4.0, feature_bounds=bounds, **extra)
    if categorical:
        p, _ = with_categories(p, X)
        p = check_bounds_policy(p, X.shape[1])
    booster, _ = train_in_process(p, X, y, n_partitions=2)
    path = tmp_path_factory.mktemp("explain") / "model.json"
    booster.save_model(path, format="xgboost")
    X_test, _ = _data(400, 1, categorical)
    if categorical:
        dmatrix = xgboost.DMatrix(X_test.assign(
            color=pd.Categorical(X_test["color"], categories=COLORS)), enable_categorical=True)
    else:
        dmatrix = xgboost.DMatrix(X_test)
    return request.param, booster, xgboost.Booster(model_file=str(path)), X_test, dmatrix


def test_contributions_add_up_to_the_margins(model):
    name, booster, _, X, _ = model
    contributions = booster.predict(X, pred_contribs=True)
    margin = booster.predict(X, output_margin=True)
    n_rows, m = len(X), booster.n_features + 1
    expected_shape = (n_rows, 3, m) if name == "multiclass" else (n_rows, m)
    assert contributions.shape == expected_shape
    np.testing.assert_allclose(contributions.sum(axis=-1), margin, rtol=0, atol=1e-9)
    assert np.abs(contributions[..., :-1]).max() > 0  # the features contribute
    # the bias is the same for every row: the base score and the trees' mean outputs
    assert np.ptp(contributions[..., -1], axis=0).max() < 1e-12


def test_xgboost_explains_the_export_as_we_do(model):
    name, booster, theirs, X, dmatrix = model
    ours = booster.predict(X, pred_contribs=True)
    contributions = theirs.predict(dmatrix, pred_contribs=True).astype(np.float64)
    assert not np.isnan(contributions).any()
    margin = theirs.predict(dmatrix, output_margin=True).astype(np.float64)
    # XGBoost sums in float32 (margins differ by float32 rounding: test_export.py)
    np.testing.assert_allclose(contributions.sum(axis=-1), margin, rtol=0, atol=1e-5)
    np.testing.assert_allclose(contributions, ours, rtol=0, atol=1e-5)
    interactions = theirs.predict(dmatrix, pred_interactions=True).astype(np.float64)
    np.testing.assert_allclose(interactions.sum(axis=-1), contributions, rtol=0, atol=1e-5)
    leaves = theirs.predict(dmatrix, pred_leaf=True)
    np.testing.assert_array_equal(leaves, booster.predict(X, pred_leaf=True))


def test_shap_tree_explainer_agrees(model):
    shap = pytest.importorskip("shap", reason="pip install '.[test]'")
    name, booster, theirs, X, dmatrix = model
    explainer = shap.TreeExplainer(theirs)
    # (shap reads XGBoost's categorical splits only through a DMatrix: shap/shap#2662)
    values = np.asarray(explainer.shap_values(dmatrix if name == "categorical" else X,
                                              check_additivity=True))
    ours = booster.predict(X, pred_contribs=True)
    if name == "multiclass":  # shap: (n, features, classes)
        values = np.moveaxis(values, -1, 1)
    np.testing.assert_allclose(values, ours[..., :-1], rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.ravel(explainer.expected_value),
                               np.ravel(ours[0, ..., -1]), rtol=0, atol=1e-5)


def test_shap_explains_the_model_through_to_xgboost(model):
    """Issue 43: ``shap.TreeExplainer`` takes only the types shap lists (our Booster and
    estimators are not among them); ``to_xgboost()`` hands it an ``xgboost.Booster``."""
    shap = pytest.importorskip("shap", reason="pip install '.[test]'")
    name, booster, _, X, dmatrix = model
    explainer = shap.TreeExplainer(booster.to_xgboost())
    values = np.asarray(explainer.shap_values(dmatrix if name == "categorical" else X))
    ours = booster.predict(X, pred_contribs=True)
    if name == "multiclass":
        values = np.moveaxis(values, -1, 1)
    np.testing.assert_allclose(values, ours[..., :-1], rtol=0, atol=1e-5)


def test_leaf_ids_index_the_trees_and_give_the_predictions(model):
    _, booster, _, X, _ = model
    leaves = booster.predict(X, pred_leaf=True)
    assert leaves.shape == (len(X), booster.n_trees) and leaves.dtype == np.int32
    nodes = booster.nodes
    index = leaves + booster.tree_roots[None, :]
    assert np.all(nodes["left"][index] < 0)
    values = nodes["value"][index]
    margin = booster.predict(X, output_margin=True)
    if booster.n_classes is None:
        np.testing.assert_allclose(values.sum(axis=1) + booster.base_score, margin)
    else:
        for k in range(booster.n_classes):
            np.testing.assert_allclose(
                values[:, booster.tree_class == k].sum(axis=1) + booster.base_score[k],
                margin[:, k])


def test_covers_are_released_denominators_summed_up_the_tree(model):
    name, booster, theirs, _, _ = model
    nodes = booster.nodes
    leaf = nodes["left"] < 0
    assert np.all(nodes["cover"] > 0)
    split = np.flatnonzero(~leaf)
    np.testing.assert_allclose(nodes["cover"][split], nodes["cover"][nodes["left"][split]]
                               + nodes["cover"][nodes["right"][split]])
    if name == "laplace leaves":  # no released mass: every leaf alike
        assert set(nodes["cover"][leaf]) == {1.0}
    else:
        assert len(set(nodes["cover"][leaf])) > 10
    dump = theirs.trees_to_dataframe()
    np.testing.assert_allclose(np.sort(dump["Cover"].to_numpy()), np.sort(nodes["cover"]),
                               rtol=1e-6)


def test_the_leaf_methods_covers_are_their_released_denominators(release_plan):
    plan = release_plan(1, epsilon=1.0, n_estimators=5, leaf_method="gaussian",
                        min_child_weight=2.0)
    sums = np.array([[5.0, 30.0, 120.0], [-3.0, 0.5, 2.0], [0.0, 0.0, 0.0]])
    seed = 2**200 + 3
    leaves = GaussianLeaves(plan, FitStreams(NoiseSource(seed), NoiseSource(seed)))
    _, noisy_h = leaves.noisy_sums(4, sums)
    leaves = GaussianLeaves(plan, FitStreams(NoiseSource(seed), NoiseSource(seed)))
    covers = leaves.release(4, sums)[0].covers
    np.testing.assert_array_equal(covers, leaf_covers(noisy_h, 2.0))
    assert np.all(covers >= 2.0) and not np.allclose(covers[:2], sums[:2, 1])
    assert leaf_covers(np.array([-5.0]), 0.0)[0] == COVER_FLOOR
    laplace = LaplaceLeaves(release_plan(1, epsilon=1.0, n_estimators=5,
                                         split_method="exponential", leaf_method="laplace"),
                            FitStreams(NoiseSource(seed), NoiseSource(seed)))
    covers = laplace.release(0, sums)[0].covers
    np.testing.assert_array_equal(covers, [1.0, 1.0, 1.0])


def test_a_model_travels_between_processes_as_arrays_and_reads_back_the_same(model):
    """The scheduler sends a fit's model with its node arrays as arrays (packed bytes, not
    half a million Python numbers); the client reads back the model of the JSON file."""
    from dpxgb_dask.cluster import codec

    _, booster, _, _, _ = model
    message = booster.to_dict(arrays=True)
    assert all(isinstance(a, np.ndarray) for a in message["nodes"].values())
    back = Booster.from_dict(codec.decode(codec.encode(message)))
    assert back.to_dict() == booster.to_dict()
    assert codec.decode(codec.encode(booster)).to_dict() == booster.to_dict()


def test_a_file_without_covers_weighs_every_leaf_alike(model):
    _, booster, _, X, _ = model
    data = booster.to_dict()
    del data["nodes"]["cover"]
    data["version"] = 2
    old = Booster.from_dict(data)
    nodes = old.nodes
    leaf = nodes["left"] < 0
    assert set(nodes["cover"][leaf]) == {1.0}
    np.testing.assert_allclose(old.predict(X, pred_contribs=True).sum(axis=-1),
                               old.predict(X, output_margin=True), rtol=0, atol=1e-9)


def test_pred_options_are_checked(model):
    _, booster, _, X, _ = model
    with pytest.raises(ValueError, match="pred_leaf and pred_contribs"):
        booster.predict(X, pred_leaf=True, pred_contribs=True)


def test_dask_inputs_are_explained_lazily(model):
    import dask.array as da
    import dask.dataframe as dd

    _, booster, _, X, _ = model
    if isinstance(X, pd.DataFrame):
        # a model that knows its columns' names takes them by name, in any order
        named = Booster.from_dict(dict(booster.to_dict(),
                                       feature_names=[str(c) for c in X.columns]))
        lazy_inputs = [(named, dd.from_pandas(X[X.columns[::-1]], npartitions=3))]
    else:
        lazy_inputs = [(booster, da.from_array(X, chunks=(150, 2)))]
    for explained, lazy in lazy_inputs:
        for kind in ("pred_leaf", "pred_contribs"):
            result = explained.predict(lazy, **{kind: True})
            assert hasattr(result, "dask")
            np.testing.assert_array_equal(result.compute(),
                                          booster.predict(X, **{kind: True}))


@pytest.mark.parametrize("importance_type", ["cover", "total_cover"])
def test_cover_importance_is_xgboosts_of_the_export(model, importance_type):
    _, booster, theirs, _, _ = model
    ours = booster.feature_importance(importance_type)
    scores = theirs.get_score(importance_type=importance_type)
    names = booster.feature_names or [f"f{i}" for i in range(booster.n_features)]
    expected = np.array([scores.get(name, 0.0) for name in names])
    np.testing.assert_allclose(ours, expected / expected.sum(), rtol=1e-5)
