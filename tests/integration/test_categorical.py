"""Categorical features with public category lists: encoding, splits on sets of categories
in every split method (against slow twins), predict, the XGBoost export, the estimators."""
import warnings

import numpy as np
import pandas as pd
import pytest

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor
from dpxgb_dask import categories as cat
from dpxgb_dask.boosting import gains, tree
from dpxgb_dask.privacy.mechanisms import histogram_mechanism
from dpxgb_dask.boosting.splits import NoisyHistogramSplits, RandomSplits
from dpxgb_dask._core import category_set_codes
from dpxgb_dask.model.booster import Booster
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import check_bounds_policy, with_categories, train_in_process

COLORS = ["red", "green", "blue", "grey", "pink"]


def _data(n, seed):
    rng = np.random.default_rng(seed)
    color = rng.choice(COLORS, n).astype(object)
    color[rng.random(n) < 0.05] = None  # missing
    x = rng.normal(size=n)
    y = ((color == "red") | ((color == "blue") & (x > 0)) | (color == "pink")).astype(float)
    return pd.DataFrame({"color": color, "x": x}), y


def _fit(split_method="random", epsilon=8.0, **extra):
    X, y = _data(6000, 0)
    if split_method == "exponential":
        extra = dict(dict(leaf_method="laplace", newton=False), **extra)
    p = resolve_params("binary:logistic", epsilon=epsilon, feature_bounds=[[0, 0], [-3, 3]],
                       split_method=split_method, n_estimators=30, max_depth=3,
                       categories={"color": COLORS}, **extra)
    p, _ = with_categories(p, X)
    p = check_bounds_policy(p, 2)
    return train_in_process(p, X, y, n_partitions=2)[0], X, y


# -- encoding --------------------------------------------------------------------------------


def test_codes_follow_the_public_list_and_unknown_values_are_missing():
    X = pd.DataFrame({"c": ["blue", "red", None, "purple"], "x": [1.0, 2.0, 3.0, 4.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing says whether an unlisted value occurs
        encoded = cat.encode(X, [COLORS, None])
    np.testing.assert_array_equal(encoded["c"], [2.0, 0.0, np.nan, np.nan])
    np.testing.assert_array_equal(encoded["x"], X["x"])
    raw = np.array([["grey", 1.5], [np.nan, 2.0]], dtype=object)
    arr = cat.encode(raw, [COLORS, None])
    np.testing.assert_array_equal(arr, [[3.0, 1.5], [np.nan, 2.0]])
    import dask.array as da
    import dask.dataframe as dd

    np.testing.assert_array_equal(
        cat.encode(da.from_array(raw, chunks=(1, 1)), [COLORS, None]).compute(), arr)
    lazy = cat.encode(dd.from_pandas(X, npartitions=2), [COLORS, None])
    pd.testing.assert_frame_equal(lazy.compute(), encoded)
    # a category dtype's list is taken as declared, and said to be published
    from dpxgb_dask.privacy.validation import PrivacyLeakWarning

    frame = pd.DataFrame({"c": pd.Categorical(["b"], categories=["a", "b", "c"])})
    with pytest.warns(PrivacyLeakWarning, match=r"columns \['c'\] come from their pandas"):
        assert cat.resolve(None, frame, ["c"], 1) == [["a", "b", "c"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # categories= says the list is public
        assert cat.resolve({"c": ["a", "b", "c"]}, frame, ["c"], 1) == [["a", "b", "c"]]
    assert cat.resolve(None, np.zeros((2, 2)), None, 2) is None
    # a non-numeric value in a numerical feature: the message names the feature only
    with pytest.raises(ValueError, match="non-numeric values in feature 1") as error:
        cat.encode(np.array([["red", "alice-secret"]], dtype=object), [COLORS, None])
    assert "alice" not in str(error.value)


def test_category_lists_are_checked():
    with pytest.raises(ValueError, match="2 or more distinct"):
        cat.resolve({"c": ["a"]}, None, ["c"], 1)
    with pytest.raises(ValueError, match="2 or more distinct"):
        cat.resolve({"c": ["a", "a"]}, None, ["c"], 1)
    with pytest.raises(ValueError, match="not a column of X"):
        cat.resolve({"d": ["a", "b"]}, None, ["c"], 1)
    with pytest.raises(ValueError, match="one entry"):
        cat.resolve([["a", "b"]], None, None, 2)
    with pytest.raises(ValueError, match="at most 255"):
        cat.resolve({0: list(range(300))}, None, None, 1)
    # a numerical column (e.g. read from a CSV) with string categories: all would be missing
    with pytest.raises(ValueError, match="'c' holds numbers but its categories are strings"):
        cat.resolve({"c": ["1", "2"]}, pd.DataFrame({"c": [1, 2]}), ["c"], 1)
    assert cat.resolve({"c": [1, 2]}, pd.DataFrame({"c": [1, 2]}), ["c"], 1) == [[1, 2]]
    assert cat.missing_bin([COLORS, None], 4) == 5 and cat.missing_bin(None, 64) == 64


def test_more_categories_than_max_bin_get_their_own_bins():
    booster, X, y = _fit(max_bin=3)  # 5 colours
    assert len(booster.cuts[0]) == 4 and len(booster.cuts[1]) <= 2
    X_test, y_test = _data(3000, 1)
    assert ((booster.predict(X_test) > 0.5) == y_test).mean() > 0.75


# -- split decisions against slow twins ------------------------------------------------------


def test_one_against_the_rest_gains_match_a_slow_twin(random_histograms):
    rng = np.random.default_rng(0)
    hist = random_histograms(rng, 3, 2, 7)  # bins 0..5, missing bin 6
    categorical = np.array([True, False])
    gain = gains.split_gains(hist["sum_gradients"], hist["sum_hessians"], 1.0, categorical)

    def score(g, h):
        return g * g / (h + 1.0)

    for node in range(3):
        g, h = hist["sum_gradients"][node, 0], hist["sum_hessians"][node, 0]
        for t in range(6):
            for missing_left in (0, 1):
                left = [t] + ([6] if missing_left else [])
                right = [b for b in range(7) if b not in left]
                expected = (score(g[left].sum(), h[left].sum())
                            + score(g[right].sum(), h[right].sum()) - score(g.sum(), h.sum()))
                assert gain[node, 0, t, missing_left] == pytest.approx(expected)
    # numerical features keep their prefix sums
    plain = gains.split_gains(hist["sum_gradients"], hist["sum_hessians"], 1.0)
    np.testing.assert_array_equal(gain[:, 1], plain[:, 1])
    # every category is a candidate (C = n_cuts + 1), numerical thresholds stay below n_cuts
    mask = gains.candidate_mask(np.array([4, 4]), 7, categorical=categorical)
    assert mask[0].sum() == 5 and mask[1].sum() == 4


def test_child_totals_of_a_category_split(random_histograms):
    rng = np.random.default_rng(1)
    hist = random_histograms(rng, 2, 2, 5)
    splits = tree.LevelSplits(np.array([0, 1]), np.array([True, True]),
                                   np.array([0, 1], np.int32), np.array([2, 1], np.int32),
                                   np.array([True, False]), np.array([True, False]))
    totals = tree.child_totals(hist, splits)
    cells = hist[0, 0]
    left = np.array([cells[2][k] + cells[4][k] for k in ("sum_gradients", "sum_hessians",
                                                         "count")], dtype=float)
    np.testing.assert_allclose(totals[0], left)
    column = hist[1, 1]
    left = np.array([column[:2][k].sum() for k in ("sum_gradients", "sum_hessians", "count")],
                    dtype=float)
    np.testing.assert_allclose(totals[2], left)
    heap = splits.as_heap_arrays()
    assert heap[0].tolist() == [2, 1]  # categorical split, numerical split


@pytest.mark.parametrize("noise_multiplier", [1e-9, 0.5])
def test_noisy_histogram_splits_take_the_best_prefix_of_the_sorted_categories(
        noise_multiplier, random_histograms, release_plan, fit_streams):
    """The chosen left set is the best prefix of the categories sorted by their RELEASED
    G/(H + λ), found here by trying every prefix one by one on the returned release (with
    noise the order differs from the exact one); with little noise it groups categories
    that one against the rest cannot."""
    rng = np.random.default_rng(3)
    n_cuts = np.array([5, 5])  # feature 0: 6 categories; feature 1 numerical
    hist = random_histograms(rng, 3, 2, 8)
    hist["sum_gradients"][:, 0, :6] = [4.0, -3.0, 5.0, -4.0, 3.5, 0.1]  # two groups
    hist["sum_gradients"][:, 1] = 0.01
    hist[:, 0, 6] = 0  # no row in a bin beyond the categories (the release drops its noise)
    method = NoisyHistogramSplits(  # feature 0: 6 public categories; 7 bins and the missing
        release_plan(2, split_method="noisy_histogram", reg_lambda=1.0, max_bin=7,
                     categories=[list("abcdef"), None]), fit_streams(0))
    assert method.missing_bin == 7 and method.categorical.tolist() == [True, False]
    method.mechanism = histogram_mechanism(2, 1.0, 1.0, noise_multiplier)  # the test's noise
    ranges = np.zeros((3, 2, 2), dtype=np.int64)
    ranges[:, :, 1] = n_cuts
    splits, noisy_g, noisy_h = method.choose_released(0, 0, np.arange(3), hist, n_cuts, ranges)
    sigma = method.mechanism.sigma

    z = method.significance  # gain_estimate="significant"

    def term(g_sum, h_sum, k):  # a child over k noisy cells (gains.ReleasedNoise)
        return max(g_sum**2 - z * z * k * sigma**2, 0.0) / (
            max(h_sum, gains.NOISE_FLOOR_SDS * sigma * np.sqrt(k)) + 1.0)

    exact_orders, checked = [], 0
    for i in range(3):
        g, h = noisy_g[i, 0], noisy_h[i, 0]
        assert g[6] == h[6] == 0.0  # no category: its noise dropped
        floored = np.maximum(h, gains.NOISE_FLOOR_SDS * sigma)
        order = np.argsort(g[:6] / (floored[:6] + 1.0), kind="stable")
        exact = hist[i, 0]
        exact_orders.append(np.argsort(exact["sum_gradients"][:6]
                                       / (exact["sum_hessians"][:6] + 1.0), kind="stable"))
        best = (-np.inf, [])  # (the best gain, every candidate that scores it: a tie is drawn)
        for k in range(1, 6):
            for miss in (0, 1):
                left = list(order[:k]) + ([7] if miss else [])
                gl, hl = g[left].sum(), h[left].sum()
                gain = term(gl, hl, len(left)) + term(g.sum() - gl, h.sum() - hl,
                                                      7 - len(left)) - term(g.sum(), h.sum(), 7)
                candidate = (sorted(order[:k].tolist()), bool(miss))
                if gain > best[0]:
                    best = (gain, [candidate])
                elif gain == best[0]:
                    best[1].append(candidate)
        if splits.feature[i] != 0:  # (with noise a numerical split may win)
            continue
        assert splits.categorical[i]
        assert (category_set_codes(splits.category_set[i]).tolist(),
                bool(splits.missing_left[i])) in best[1]
        checked += 1
        if noise_multiplier < 1e-3:
            assert len(best[1]) == 1 and len(best[1][0][0]) > 1  # a group: one against the
            # rest could not split so
    assert checked >= 1
    if noise_multiplier > 1e-3:  # the release's order, not the exact one, decided
        assert any(not np.array_equal(np.argsort(noisy_g[i, 0, :6] / (np.maximum(
            noisy_h[i, 0, :6], gains.NOISE_FLOOR_SDS * sigma) + 1.0), kind="stable"),
            exact_orders[i]) for i in range(3))
        return
    totals = tree.child_totals(hist, splits)
    codes = category_set_codes(splits.category_set[0]).tolist() + (
        [7] if splits.missing_left[0] else [])
    np.testing.assert_allclose(totals[0, 0], hist[0, 0]["sum_gradients"][codes].sum())


def test_version_1_model_files_still_load_and_predict_the_same():
    booster, X, y = _fit("exponential", epsilon=50.0)  # one category against the rest
    data = booster.to_dict()
    assert any(data["nodes"]["categorical"])
    data["version"] = 1
    del data["nodes"]["category_set"]
    old = Booster.from_dict(data)
    np.testing.assert_array_equal(old.predict(X), booster.predict(X))
    assert old == booster
    data["version"] = 2  # a version-2 file must hold the sets
    with pytest.raises(ValueError, match="category_set"):
        Booster.from_dict(data)


def test_random_category_splits_draw_every_category_and_keep_the_ranges(release_plan,
                                                                       fit_streams):
    n_cuts = np.array([4, 9])  # feature 0: 5 categories
    method = RandomSplits(release_plan(2, feature_selection="random", max_depth=3,
                                       categories=[list("abcde"), None]), fit_streams(0))
    sets, numerical = [], 0
    for t in range(100):
        (is_split, feature, split_bin, _, category_set), _, _ = method.draw_tree(t, n_cuts)
        on_category = (is_split > 0) & (feature == 0)
        assert np.all(is_split[on_category] == 2) and np.all(is_split[feature == 1] != 2)
        for node in np.flatnonzero(on_category):
            codes = category_set_codes(category_set[node])
            assert split_bin[node] == min(codes)
            sets.append(set(codes))
        assert not category_set[~on_category].any()
        numerical += int(np.count_nonzero(is_split == 1))
    # non-empty proper subsets, every category in some and out of some, all sizes
    assert all(0 < len(c) < 5 for c in sets)
    assert set().union(*sets) == set(range(5))
    assert all(any(k not in c for c in sets) for k in range(5))
    assert {len(c) for c in sets} == {1, 2, 3, 4}
    assert numerical > 0
    # a category split leaves the children's bin ranges as they are
    ranges = np.zeros((1, 2, 2), dtype=np.int64)
    ranges[0, :, 1] = n_cuts
    splits = tree.level_splits(np.array([0]), np.array([True]), np.array([0]), np.array([2]),
                               np.array([False]), np.array([True, False]),
                               left_codes=[[1, 3]])
    children = tree.child_ranges(ranges, splits)
    np.testing.assert_array_equal(children[0], ranges[0])
    np.testing.assert_array_equal(children[1], ranges[0])


# -- fits ------------------------------------------------------------------------------------


@pytest.mark.parametrize("split_method", ["random", "noisy_histogram", "exponential",
                                          "partially_random"])
def test_every_split_method_splits_on_categories_and_predicts_from_values(split_method):
    booster, X, y = _fit(split_method, epsilon=50.0 if split_method == "exponential" else 8.0)
    nodes = booster.nodes
    on_color = (nodes["left"] >= 0) & (nodes["feature"] == 0)
    assert on_color.any() and np.all(nodes["categorical"][on_color] == 1)
    assert np.all(nodes["categorical"][(nodes["left"] >= 0) & (nodes["feature"] == 1)] == 0)
    assert booster.categories == [COLORS, None]
    X_test, y_test = _data(3000, 1)
    accuracy = ((booster.predict(X_test) > 0.5) == y_test).mean()
    assert accuracy > 0.75  # the majority class holds about 55%
    codes = cat.encode(X_test, booster.categories)
    np.testing.assert_array_equal(booster.predict(codes.to_numpy(), encoded=True),
                                  booster.predict(X_test))
    # a value outside the list is missing
    unseen = X_test.assign(color="purple")
    missing = X_test.assign(color=None)
    np.testing.assert_array_equal(booster.predict(unseen), booster.predict(missing))


def test_the_model_saves_loads_and_exports_its_categories(tmp_path):
    xgboost = pytest.importorskip("xgboost")
    booster, X, y = _fit("noisy_histogram")
    nodes = booster.nodes
    sizes = [category_set_codes(w).size for w, c in zip(nodes["category_set"],
                                                        nodes["categorical"]) if c]
    assert max(sizes) > 1  # sets of several categories travel to XGBoost too
    booster.save_model(tmp_path / "m.json")
    loaded = Booster.load_model(tmp_path / "m.json")
    assert loaded == booster and loaded.categories == [COLORS, None]
    booster.save_model(tmp_path / "x.json", format="xgboost")
    theirs = xgboost.Booster(model_file=str(tmp_path / "x.json"))
    X_test, _ = _data(2000, 2)
    X_test["x"] = X_test["x"].astype(np.float32).astype(np.float64)  # (see test_export.py)
    frame = X_test.assign(color=pd.Categorical(X_test["color"], categories=COLORS))
    margin = theirs.predict(xgboost.DMatrix(frame, enable_categorical=True),
                            output_margin=True)
    ours = booster.predict(X_test, output_margin=True)
    nodes, roots = booster.nodes, list(booster.tree_roots) + [len(booster.nodes["value"])]
    largest = abs(booster.base_score) + sum(
        np.abs(nodes["value"][a:b]).max() for a, b in zip(roots, roots[1:]))
    assert np.abs(margin - ours).max() <= 2 * (booster.n_trees + 1) * float(
        np.spacing(np.float32(largest)))


def test_a_continued_fit_keeps_the_categories():
    from dpxgb_dask.training import continuation_params

    booster, X, y = _fit()
    p, _ = with_categories(resolve_params("binary:logistic", epsilon=1.0, n_estimators=3,
                                          categories={"color": COLORS}), X)
    continued, coordinator = train_in_process(
        continuation_params(p, booster, ["color", "x"], 2), X, y, xgb_model=booster)
    assert continued.n_trees == booster.n_trees + 3 and continued.categories == [COLORS, None]
    # the workers (binned codes, starting at the model's margins) hold the margins of every
    # tree but the last, which the raw walk of the model's values gives too
    before_last = Booster.from_dict(continued.to_dict())
    before_last._tree_roots = before_last._tree_roots[:-1]
    before_last._tree_class = before_last._tree_class[:-1]
    np.testing.assert_allclose(coordinator.backend.states[0].margins,
                               before_last.predict_margin(X), rtol=0, atol=1e-12)
    other, _ = with_categories(resolve_params("binary:logistic", epsilon=1.0,
                                              categories={"color": COLORS[::-1]}), X)
    with pytest.raises(ValueError, match="categories must equal xgb_model's"):
        continuation_params(other, booster, ["color", "x"], 2)


# -- estimators (the session's cluster) ------------------------------------------------------


def test_estimators_take_string_and_category_columns(client):
    import dask.dataframe as dd

    X, y = _data(4000, 0)
    params = dict(epsilon=8.0, feature_bounds={"x": (-3, 3)}, n_estimators=30, max_depth=3,
                  client=client)
    from dpxgb_dask.privacy.validation import PrivacyLeakWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # public classes and categories
        model = DPXGBClassifier(classes=[0, 1], categories={"color": COLORS}, **params)
        model.fit(X, y)
    assert model.score(X, y) > 0.75
    assert list(model.feature_names_in_) == ["color", "x"]
    as_dtype = X.assign(color=pd.Categorical(X["color"], categories=COLORS))
    np.testing.assert_array_equal(model.predict_proba(as_dtype), model.predict_proba(X))
    on_dask = dd.from_pandas(X, npartitions=2)
    np.testing.assert_allclose(model.predict_proba(on_dask).compute(), model.predict_proba(X))
    # the category dtype declares the list; dask frames encode lazily on the workers
    by_dtype = DPXGBClassifier(classes=[0, 1], **params).fit(
        dd.from_pandas(as_dtype, npartitions=2), dd.from_pandas(pd.Series(y), npartitions=2))
    assert by_dtype.booster_.categories == [COLORS, None]
    assert by_dtype.score(X, y) > 0.75
    regressor = DPXGBRegressor(label_bounds=(0.0, 1.0), categories={"color": COLORS},
                               **params).fit(X, y)
    assert regressor.booster_.categories == [COLORS, None]
    # a continued fit takes the model's lists (and its bounds by name)
    more = DPXGBClassifier(classes=[0, 1], **dict(params, n_estimators=3)).fit(
        X, y, xgb_model=model)
    assert more.booster_.categories == [COLORS, None]
    assert more.booster_.n_trees == model.booster_.n_trees + 3
    # columns in another order are found by name
    np.testing.assert_array_equal(model.predict_proba(X[["x", "color"]]),
                                  model.predict_proba(X))
    with pytest.raises(ValueError, match="non-numeric columns"):
        DPXGBClassifier(classes=[0, 1], **params).fit(X, y)


def test_the_cli_takes_category_lists(client, tmp_path, capsys):
    import json

    from dpxgb_dask.cli import main

    X, y = _data(2000, 0)
    frame = X.assign(target=y)
    data = tmp_path / "train.csv"
    frame.to_csv(data, index=False)
    (tmp_path / "bounds.json").write_text(json.dumps({"x": [-3, 3]}))
    (tmp_path / "categories.json").write_text(json.dumps({"color": COLORS}))
    out = tmp_path / "model.json"
    assert main(["train", str(data), "--label", "target", "--bounds",
                 str(tmp_path / "bounds.json"), "--categories",
                 str(tmp_path / "categories.json"), "--epsilon", "4", "--n-estimators", "5",
                 "--max-depth", "2", "--scheduler", client.scheduler.address, "--out",
                 str(out), "--quiet"]) == 0
    model = Booster.load_model(out)
    assert model.categories == [COLORS, None]
    preds = tmp_path / "preds.csv"
    assert main(["predict", str(out), str(data), "--out", str(preds)]) == 0
    np.testing.assert_allclose(pd.read_csv(preds)["prediction"],
                               model.predict(pd.read_csv(data).drop(columns="target")))
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(SystemExit, match="--categories must hold a JSON object"):
        main(["train", str(data), "--label", "target", "--bounds",
              str(tmp_path / "bounds.json"), "--categories", str(tmp_path / "bad.json")])
