"""save_model(format="xgboost"): XGBoost loads the file and predicts what the model does."""
import json

import numpy as np
import pytest

from dpxgb_dask.model.booster import Booster
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process

xgboost = pytest.importorskip("xgboost", reason="the export tests need xgboost "
                                                "(pip install '.[bench]')")


def _data(n, seed, big=np.inf):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values take the default direction
    X[:5, 0] = [-big, big, 40.0, -40.0, 4.0]  # beyond the bounds, and on one
    return X


@pytest.fixture(scope="module", params=[
    ("binary:logistic", None), ("binary:logistic", "dp-xgboost"),
    ("reg:squarederror", None), ("reg:squarederror", "s-bdt"),
    ("multi:softprob", None), ("multi:softprob", "dp-xgboost")])
def fitted(request, tmp_path_factory):
    objective, preset = request.param
    X = _data(4000, 0)
    signal = np.nan_to_num(X[:, 0] + X[:, 1] * X[:, 2], posinf=4.0, neginf=-4.0)
    extra = {}
    if objective == "binary:logistic":
        y = (signal > 0).astype(float)
    elif objective == "multi:softprob":
        y, extra = np.digitize(signal, [-0.7, 0.0, 0.7]).astype(float), {"num_class": 4}
    else:
        y, extra = np.clip(3.0 * signal, -10, 10), {"label_bounds": (-10.0, 10.0)}
    params = resolve_params(objective, preset=preset, feature_bounds=np.tile([-4.0, 4.0], (5, 1)),
                            epsilon=1.0, n_estimators=100 if preset is None else 30, **extra)
    booster, _ = train_in_process(params, X, y)
    path = tmp_path_factory.mktemp("export") / "model.json"
    booster.save_model(path, format="xgboost")
    return booster, xgboost.Booster(model_file=str(path)), path


def test_xgboost_predicts_what_the_model_predicts(fitted):
    booster, loaded, _ = fitted
    # (XGBoost refuses infinite features.) Values representable in float32: XGBoost reads
    # features as float32, and a float64 value within float32 rounding of a threshold can
    # take the other branch there (model/xgboost_json.py); for float32 values x <= t iff x < c exactly.
    X = _data(3000, 1, big=1e30).astype(np.float32).astype(np.float64)
    ours = booster.predict(X, output_margin=True)
    theirs = loaded.predict(xgboost.DMatrix(X), output_margin=True).astype(np.float64)
    # XGBoost sums float32 leaf values in float32: each tree's addition (and the float32
    # leaf value itself) may round by a float32 ulp of the running margin, which never
    # exceeds |base| + the sum of the trees' largest |leaf|.
    nodes, roots = booster.nodes, list(booster.tree_roots) + [len(booster.nodes["value"])]
    largest = np.abs(booster.base_score).max() + sum(
        np.abs(nodes["value"][a:b]).max() for a, b in zip(roots, roots[1:]))
    bound = 2 * (booster.n_trees + 1) * float(np.spacing(np.float32(largest)))
    assert np.abs(ours - theirs).max() <= bound
    if booster.objective == "binary:logistic":
        probability = loaded.predict(xgboost.DMatrix(X)).astype(np.float64)
        # the sigmoid's slope is at most 1/4; the float32 result rounds by < 6e-8
        assert np.abs(booster.predict(X) - probability).max() <= bound / 4 + 6e-8
    elif booster.objective == "multi:softprob":
        probability = loaded.predict(xgboost.DMatrix(X)).astype(np.float64)
        assert theirs.shape == probability.shape == (X.shape[0], booster.n_classes)
        # the softmax moves each probability by at most half the largest margin change
        assert np.abs(booster.predict(X) - probability).max() <= bound / 2 + 6e-8
        assert np.abs(booster.predict(X) - probability).max() <= 1e-6  # the target
    else:  # ours clips to the public label bounds, XGBoost does not
        bounds = json.loads(loaded.attr("dpxgb_params"))["label_bounds"]
        clipped = np.clip(loaded.predict(xgboost.DMatrix(X)), *bounds)
        assert np.abs(booster.predict(X) - clipped).max() <= bound


def test_the_ledger_travels_in_the_attributes_and_nothing_exact_is_written(fitted):
    booster, loaded, path = fitted
    assert json.loads(loaded.attr("dpxgb_ledger")) == json.loads(json.dumps(booster.ledger))
    trees = json.loads(path.read_text())["learner"]["gradient_booster"]["model"]["trees"]
    assert len(trees) == booster.n_trees
    model = json.loads(path.read_text())["learner"]["gradient_booster"]["model"]
    assert model["tree_info"] == booster.tree_class.tolist()
    # exact gains are never written; the covers are the released ones (test_explanations.py)
    assert all(set(t["loss_changes"]) == {0.0} for t in trees)
    np.testing.assert_array_equal(np.concatenate([t["sum_hessian"] for t in trees]),
                                  booster.nodes["cover"])


def test_the_split_condition_is_the_first_float32_above_the_threshold():
    from dpxgb_dask.model.xgboost_json import _split_conditions

    thresholds = np.array([0.1, 0.5, -2.0, 1e-30, 3.0000001])
    conditions = _split_conditions(thresholds)
    assert conditions.dtype == np.float32
    assert np.all(conditions.astype(np.float64) > thresholds)
    below = np.nextafter(conditions, np.float32(-np.inf)).astype(np.float64)
    assert np.all(below <= thresholds)


def test_a_key_or_an_unknown_format_is_refused(tmp_path):
    booster = Booster("binary:logistic", 0.0, [[0.0]], [[-1.0, 1.0]], {})
    with pytest.raises(ValueError, match="key= signs files of format='dpxgb' only"):
        booster.save_model(tmp_path / "m.json", key=b"k" * 16, format="xgboost")
    with pytest.raises(ValueError, match="format must be 'dpxgb' or 'xgboost'"):
        booster.save_model(tmp_path / "m.json", format="lightgbm")


def test_feature_importance_uses_public_values_and_finds_the_signal(fitted):
    booster = fitted[0]
    for kind in ("weight", "leaf_spread"):
        importance = booster.feature_importance(kind)
        assert importance.shape == (5,) and importance.sum() == pytest.approx(1.0)
    # the label depends on features 0, 1 and 2 only; the leaves' noisy values say so
    spread = booster.feature_importance("leaf_spread")
    assert spread[[0, 1, 2]].sum() > spread[[3, 4]].sum()
    with pytest.raises(ValueError, match="importance_type must be one of"):
        booster.feature_importance("gini")


def test_feature_importance_matches_a_slow_walk_of_the_trees(fitted):
    booster = fitted[0]
    nodes = booster.nodes

    def leaves_under(j):
        if nodes["left"][j] < 0:
            return [nodes["value"][j]]
        return leaves_under(nodes["left"][j]) + leaves_under(nodes["right"][j])

    expected = np.zeros(booster.n_features)
    for j in np.flatnonzero(nodes["left"] >= 0):
        left, right = leaves_under(nodes["left"][j]), leaves_under(nodes["right"][j])
        expected[nodes["feature"][j]] += abs(np.mean(left) - np.mean(right))
    np.testing.assert_allclose(booster.feature_importance("leaf_spread"),
                               expected / expected.sum(), rtol=1e-9)


def test_plot_importance(fitted):
    import matplotlib

    matplotlib.use("Agg")
    from dpxgb_dask.model.plotting import plot_importance

    ax = plot_importance(fitted[0], max_features=3)
    assert len(ax.patches) == 3
    with pytest.raises(ValueError, match="max_features"):
        plot_importance(fitted[0], max_features=0)


def test_get_score_and_the_round_count_are_xgboosts_on_the_export(fitted):
    """Issue 43, item 4: get_score, get_fscore and num_boosted_rounds were missing. Split
    counts and covers are XGBoost's own on the exported file."""
    booster, loaded, _ = fitted
    assert booster.num_boosted_rounds() == loaded.num_boosted_rounds() == booster.n_rounds
    assert booster.get_score() == loaded.get_score(importance_type="weight")
    assert booster.get_fscore() == booster.get_score(importance_type="weight")
    for kind in ("cover", "total_cover"):
        theirs = loaded.get_score(importance_type=kind)
        ours = booster.get_score(importance_type=kind)
        assert ours.keys() == theirs.keys()
        np.testing.assert_allclose([ours[k] for k in ours], [theirs[k] for k in ours],
                                   rtol=1e-5)
    with pytest.raises(ValueError, match="fmap must be ''"):
        booster.get_score(fmap="features.txt")


def test_gain_is_the_loss_change_of_the_gradient_sums_the_released_leaves_imply(fitted):
    """"gain" and "total_gain" from the released leaves: a leaf's G = -(v / η)(H + λ), a
    node's G and H those of its leaves; a slow walk of the trees gives the same."""
    booster = fitted[0]
    nodes, p = booster.nodes, booster.params
    rate, lam = p["learning_rate"], p["reg_lambda"]

    def sums(j):
        if nodes["left"][j] < 0:
            h = nodes["cover"][j]
            return -nodes["value"][j] / rate * (h + lam), h
        (gl, hl), (gr, hr) = sums(nodes["left"][j]), sums(nodes["right"][j])
        return gl + gr, hl + hr

    total, count = np.zeros(booster.n_features), np.zeros(booster.n_features)
    for j in np.flatnonzero(nodes["left"] >= 0):
        (gl, hl), (gr, hr) = sums(nodes["left"][j]), sums(nodes["right"][j])
        gain = gl**2 / (hl + lam) + gr**2 / (hr + lam) - (gl + gr)**2 / (hl + hr + lam)
        total[nodes["feature"][j]] += gain
        count[nodes["feature"][j]] += 1
    names = [f"f{i}" for i in range(booster.n_features)]
    ours_total, ours_mean = booster.get_score(importance_type="total_gain"), \
        booster.get_score(importance_type="gain")
    for f, name in enumerate(names):
        if count[f]:
            assert ours_total[name] == pytest.approx(total[f], rel=1e-9, abs=1e-12)
            assert ours_mean[name] == pytest.approx(total[f] / count[f], rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(booster.feature_importance("total_gain"),
                               total / total.sum(), rtol=1e-9)


def _dump_structure(text):
    """(node id, split feature or None, yes, no, missing) of each line of a text dump."""
    import re

    out = []
    for line in text.strip().splitlines():
        split = re.match(r"\t*(\d+):\[(\w+)[<:].*\] yes=(\d+),no=(\d+),missing=(\d+)", line)
        if split:
            out.append((int(split[1]), split[2], int(split[3]), int(split[4]), int(split[5])))
        else:
            out.append((int(re.match(r"\t*(\d+):leaf=", line)[1]), None, None, None, None))
    return sorted(out)


def test_get_dump_has_the_export_s_trees_node_for_node(fitted):
    booster, loaded, _ = fitted
    ours, theirs = booster.get_dump(), loaded.get_dump()
    assert len(ours) == len(theirs) == booster.n_trees
    for a, b in zip(ours, theirs):
        assert _dump_structure(a) == _dump_structure(b)
    stats = booster.get_dump(with_stats=True)[0]
    assert "gain=" in stats.splitlines()[0] and "cover=" in stats.splitlines()[-1]
    tree = json.loads(booster.get_dump(dump_format="json")[0])
    assert tree["nodeid"] == 0 and {"split", "yes", "no", "missing", "children"} <= set(tree)
    with pytest.raises(ValueError, match="dump_format must be one of"):
        booster.get_dump(dump_format="dot")


def test_predict_takes_an_xgboost_dmatrix_with_its_missing_values_and_base_margins(fitted):
    """Issue 43, item 4: booster.predict(xgboost.DMatrix(X)) failed."""
    booster = fitted[0]
    X = _data(500, 2, big=30.0).astype(np.float32).astype(np.float64)  # (a DMatrix's float32)
    np.testing.assert_array_equal(booster.predict(xgboost.DMatrix(X)), booster.predict(X))
    margin = np.full((500,) + ((booster.n_classes,) if booster.n_classes else ()), 0.25)
    np.testing.assert_array_equal(
        booster.predict(xgboost.DMatrix(X, base_margin=margin), output_margin=True),
        booster.predict(X, output_margin=True, base_margin=margin))


def test_feature_names_travel_as_utf8_and_names_xgboost_refuses_are_encoded(tmp_path, client):
    """Issue 43, item 3: a non-ASCII name was written escaped ("\\u00e2ge"), which XGBoost
    keeps as text, so a frame's columns mismatched; "x[1]" exported, then XGBoost refused
    the frame. Names are UTF-8, and "[", "]", "<" (and "%") percent-encoded, reversibly."""
    import pandas as pd

    from dpxgb_dask import train

    names = ["âge", "x[1]", "a<b", "100%", "plain"]
    frame = pd.DataFrame(_data(2000, 3), columns=names)
    y = (frame["âge"].fillna(0) > 0).astype(float)
    booster = train({"epsilon": 4.0, "n_estimators": 10,
                     "feature_bounds": np.tile([-4.0, 4.0], (5, 1))}, frame, y, client=client)
    assert booster.feature_names == names
    booster.save_model(tmp_path / "model.json", format="xgboost")
    loaded = xgboost.Booster(model_file=str(tmp_path / "model.json"))
    exported = ["âge", "x%5B1%5D", "a%3Cb", "100%25", "plain"]
    assert loaded.feature_names == exported
    from dpxgb_dask.model.xgboost_json import feature_name_from_xgboost, xgboost_feature_name

    assert [xgboost_feature_name(n) for n in names] == exported
    assert [feature_name_from_xgboost(n) for n in exported] == names
    rows = frame.astype(np.float32).astype(np.float64).clip(-1e30, 1e30)
    theirs = loaded.predict(xgboost.DMatrix(rows.rename(columns=xgboost_feature_name)))
    np.testing.assert_allclose(theirs, booster.predict(rows), atol=1e-5)
