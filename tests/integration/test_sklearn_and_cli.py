"""The scikit-learn estimators and the dpxgb command line."""
import json
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor, load_model
from dpxgb_dask.cli import main

SMALL = dict(n_estimators=4, max_depth=3)


def test_classifier_contract_and_fitted_attributes(client, seed, classification_data):
    X, y, bounds = classification_data
    labels = np.where(y > 0, "yes", "no")
    model = DPXGBClassifier(feature_bounds=bounds, epsilon=1.0, random_state=seed,
                            client=client, **SMALL)
    assert clone(model).get_params()["epsilon"] == 1.0
    model.set_params(max_depth=2)
    model.fit(X, labels)
    assert list(model.classes_) == ["no", "yes"]
    assert model.predict(X[:5]).dtype == labels.dtype
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.n_features_in_ == 6
    assert 0 < model.epsilon_spent_ <= 1.0 * 1.001
    report = model.privacy_report()
    assert {"basic", "rdp", "pld", "events"} <= set(report)
    assert len(report["events"]) == report["n_events"] > 0


def test_pickling_drops_the_client_and_keeps_the_model(client, seed, classification_data):
    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, random_state=seed, client=client, **SMALL)
    model.fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.client is None
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))


def test_dask_inputs_predict_lazily(client, seed, classification_data):
    import dask.array as da
    import dask.dataframe as dd

    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, random_state=seed, client=client, **SMALL)
    model.fit(da.from_array(X, chunks=(1000, 6)), da.from_array(y, chunks=1000))
    lazy = model.predict_proba(da.from_array(X, chunks=(700, 6)))
    assert hasattr(lazy, "dask")
    np.testing.assert_allclose(lazy.compute(), model.predict_proba(X))
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"c{i}" for i in range(6)]), npartitions=3)
    labels = model.predict(frame)
    np.testing.assert_array_equal(labels.compute(), model.predict(X))


def test_regressor(client, seed, regression_data):
    X, y, bounds, label_bounds = regression_data
    model = DPXGBRegressor(feature_bounds=bounds, label_bounds=label_bounds, epsilon=4.0,
                           random_state=seed, client=client, n_estimators=10, max_depth=3)
    model.fit(X, y)
    pred = model.predict(X)
    assert np.all(pred >= -10 - 1e-9) or np.all(np.isfinite(pred))
    # Better than predicting the midpoint of the label range.
    assert np.mean((pred - y) ** 2) < np.mean(y**2)


def test_cli_train_predict_report(client, seed, classification_data, tmp_path, capsys):
    X, y, bounds = classification_data
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(6)])
    frame["target"] = y
    data = tmp_path / "train.csv"
    frame.to_csv(data, index=False)
    bounds_file = tmp_path / "bounds.json"
    bounds_file.write_text(json.dumps({f"c{i}": [-4, 4] for i in range(6)}))
    out = tmp_path / "model.json"
    address = client.scheduler.address
    assert main(["train", str(data), "--label", "target", "--bounds", str(bounds_file),
                 "--epsilon", "0.5", "--n-estimators", "3", "--max-depth", "2",
                 "--scheduler", address, "--out", str(out), "--quiet"]) == 0
    assert "epsilon spent" in capsys.readouterr().out
    model = load_model(out)
    assert model.feature_names == [f"c{i}" for i in range(6)]
    preds = tmp_path / "preds.csv"
    assert main(["predict", str(out), str(data), "--out", str(preds)]) == 0
    np.testing.assert_allclose(pd.read_csv(preds)["prediction"], model.predict(frame.drop(columns="target")))
    assert main(["report", str(out), "--verbose"]) == 0
    text = capsys.readouterr().out
    assert "purpose" in text and "epsilon (pld" in text and "leaf" in text
    # signed model files
    key = tmp_path / "key"
    key.write_bytes(b"s3cret-" * 5)
    signed = tmp_path / "signed.json"
    # (with S-BDT's individual Rényi filter: 2 extra rounds)
    assert main(["train", str(data), "--label", "target", "--bounds", str(bounds_file),
                 "--epsilon", "0.5", "--n-estimators", "3", "--max-depth", "2",
                 "--accountant", "rdp", "--filter-rounds", "2",
                 "--scheduler", address, "--out", str(signed), "--quiet",
                 "--key-file", str(key)]) == 0
    filtered = load_model(signed, key=key.read_bytes())
    assert filtered.n_trees == 5 and filtered.params["filter_rounds"] == 2
    assert main(["report", str(signed), "--key-file", str(key)]) == 0
    assert "renyi_filter" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not signed"):
        main(["report", str(out), "--key-file", str(key)])
    other = tmp_path / "other"
    other.write_bytes(b"another key")
    with pytest.raises(SystemExit, match="does not verify"):
        main(["predict", str(signed), str(data), "--key-file", str(other)])


def test_cli_refuses_missing_bounds(tmp_path):
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}).to_csv(data, index=False)
    with pytest.raises(SystemExit, match="--bounds"):
        main(["train", str(data), "--label", "y"])


def test_booster_predicts_dask_inputs_lazily_and_parquet_cli(client, seed, classification_data,
                                                             tmp_path):
    import dask.array as da

    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, random_state=seed, client=client, **SMALL)
    model.fit(X, y)
    lazy = model.booster_.predict(da.from_array(X, chunks=(1500, 3)))
    assert hasattr(lazy, "dask")
    np.testing.assert_allclose(lazy.compute(), model.booster_.predict(X))
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(6)])
    frame.to_parquet(tmp_path / "x.parquet")
    model.booster_.save_model(tmp_path / "m.json")
    assert main(["predict", str(tmp_path / "m.json"), str(tmp_path / "x.parquet"),
                 "--out", str(tmp_path / "p.csv")]) == 0
    np.testing.assert_allclose(pd.read_csv(tmp_path / "p.csv")["prediction"],
                               model.booster_.predict(X))


# -- scikit-learn's contract beyond its checks (issue 13, item 6) ----------------------------

def _frames(X, y, npartitions=3):
    import dask.dataframe as dd

    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    return (frame, dd.from_pandas(frame, npartitions=npartitions),
            dd.from_pandas(pd.Series(y), npartitions=npartitions))


def test_unfitted_estimators_raise_not_fitted(classification_data):
    from sklearn.exceptions import NotFittedError

    X, _, _ = classification_data
    for method in ("predict", "predict_proba", "decision_function", "score", "privacy_report"):
        model = DPXGBClassifier()
        args = {"score": (X, np.zeros(len(X))), "privacy_report": ()}.get(method, (X,))
        with pytest.raises(NotFittedError):
            getattr(model, method)(*args)
    with pytest.raises(NotFittedError):
        DPXGBRegressor().predict(X)


def test_dask_dataframes_predict_proba_decide_and_score_like_numpy(client, seed,
                                                                   classification_data):
    import dask.array as da

    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, random_state=seed, client=client,
                            **SMALL).fit(X, y)
    _, X_frame, y_series = _frames(X, y)
    margin = model.booster_.predict(X, output_margin=True)
    np.testing.assert_array_equal(model.decision_function(X), margin)
    lazy = model.decision_function(X_frame)
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), margin)
    proba = model.predict_proba(X_frame)
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), model.predict_proba(X))
    assert model.score(X_frame, y_series) == pytest.approx(model.score(X, y))
    assert model.score(X, y) == pytest.approx(np.mean(model.predict(X) == y))


def test_regressor_predictions_are_clipped_to_the_label_bounds_in_every_api(
        client, seed, regression_data):
    import dask.array as da

    X, y, bounds, _ = regression_data
    model = DPXGBRegressor(feature_bounds=bounds, label_bounds=(-1.0, 1.0),
                           random_state=seed, client=client, **SMALL).fit(X, y)
    raw = model.booster_.predict(X, output_margin=True)
    # Narrower bounds on the fitted model, so that the clipping bites: at the median of the
    # distinct margins (a few trees give many rows the same margin, so the median row's
    # could be the largest), every margin above it is clipped.
    q = float(np.median(np.unique(np.abs(raw))))
    model.booster_.label_bounds = (-q, q)
    expected = np.clip(raw, -q, q)
    assert 0 < (expected != raw).mean() < 1
    _, X_frame, _ = _frames(X, y)
    np.testing.assert_array_equal(model.predict(X), expected)
    np.testing.assert_array_equal(model.booster_.predict(X), expected)
    np.testing.assert_allclose(model.predict(da.from_array(X, chunks=(1000, 5))).compute(),
                               expected)
    np.testing.assert_allclose(model.predict(X_frame).compute(), expected)
    assert model.score(X, y) == pytest.approx(model.score(X_frame, _frames(X, y)[2]))


def test_integer_column_labels_and_nullable_dtypes(client, seed, classification_data):
    X, y, bounds = classification_data
    params = dict(feature_bounds=bounds, random_state=seed, reproducible_noise=True,
                  client=client, **SMALL)
    on_array = DPXGBClassifier(**params).fit(X, y)
    int_columns = pd.DataFrame(X)  # columns 0..5
    on_frame = DPXGBClassifier(**params).fit(int_columns, y)
    np.testing.assert_array_equal(on_frame.predict_proba(int_columns),
                                  on_array.predict_proba(X))
    np.testing.assert_array_equal(on_frame.booster_.predict(int_columns),
                                  on_array.booster_.predict(X))
    nullable = pd.DataFrame(X, columns=list("abcdef")).astype("Float64")  # NaN -> pd.NA
    assert nullable.isna().to_numpy().sum() == np.isnan(X).sum() > 0
    on_nullable = DPXGBClassifier(**params).fit(nullable, pd.Series(y, dtype="Int64"))
    np.testing.assert_array_equal(on_nullable.predict_proba(nullable),
                                  on_array.predict_proba(X))


def test_feature_bounds_by_column_name(client, seed, classification_data):
    X, y, bounds = classification_data
    frame, X_frame, y_series = _frames(X, y)
    by_name = {f"f{i}": tuple(bounds[i]) for i in range(X.shape[1])}
    params = dict(random_state=seed, reproducible_noise=True, client=client, **SMALL)
    expected = DPXGBClassifier(feature_bounds=bounds, **params).fit(frame, y)
    shuffled = dict(reversed(list(by_name.items())))  # order of the dict does not matter
    assert DPXGBClassifier(feature_bounds=shuffled, **params).fit(frame, y).booster_ == \
        expected.booster_
    on_dask = DPXGBClassifier(feature_bounds=by_name, **params).fit(X_frame, y_series)
    np.testing.assert_array_equal(on_dask.booster_.feature_bounds, bounds)
    with pytest.raises(ValueError, match=r"no bounds for the columns \['f5'\]"):
        DPXGBClassifier(feature_bounds={k: v for k, v in by_name.items() if k != "f5"},
                        **params).fit(frame, y)
    with pytest.raises(ValueError, match=r"does not have: \['g'\]"):
        DPXGBClassifier(feature_bounds=dict(by_name, g=(0, 1)), **params).fit(frame, y)
    with pytest.raises(ValueError, match="needs X with column names"):
        DPXGBClassifier(feature_bounds=by_name, **params).fit(X, y)


def test_delta_zero_says_which_releases_need_delta(client, seed, classification_data):
    from dpxgb_dask.privacy.validation import BudgetError

    X, y, bounds = classification_data
    with pytest.raises(BudgetError, match=r"delta=0 cannot be met: .*Gaussian.*delta > 0"):
        DPXGBClassifier(feature_bounds=bounds, delta=0.0, client=client, **SMALL).fit(X, y)
    pure = DPXGBClassifier(feature_bounds=bounds, delta=0.0, preset="dp-xgboost",
                           random_state=seed, client=client, **SMALL).fit(X, y)
    assert pure.privacy_report()["delta"] == 0.0


def test_set_params_with_a_client_then_pickle(client, seed, classification_data):
    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, random_state=seed, **SMALL)
    model.set_params(client=client, epsilon=0.5)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.client is None and restored.epsilon == 0.5
    model.fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))


def test_clones_and_a_grid_search_refit_with_fresh_noise(client, classification_data):
    """Issue 13: with an integer random_state, clone() and GridSearchCV refit on
    neighbouring folds with identical noise, which cancels in the difference of two
    models. Now every fit draws its own noise."""
    from sklearn.model_selection import GridSearchCV

    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, classes=[0, 1], random_state=3,
                            client=client, dp_params={"split_candidates": "uniform",
                                                      "interaction_thresholds": "uniform"},
                            **SMALL)
    a = clone(model).fit(X, y)
    b = clone(model).fit(X[1:], y[1:])  # the neighbouring table: one row less
    nodes_a, nodes_b = a.booster_.nodes, b.booster_.nodes
    assert np.array_equal(nodes_a["feature"], nodes_b["feature"])  # public structure
    assert np.array_equal(nodes_a["threshold"], nodes_b["threshold"])
    # (a leaf whose noisy hessian sum is negative is 0 in both, S-BDT's cut-off, and one
    # clipped to the leaf bound is in both at its tree's largest magnitude: the bound times
    # the tree's shrinkage, which differs between the fits in the fifth digit; how many
    # leaves are neither varies with the fresh noise: 3 to 28 of 32 in 150 fits, so one is
    # asked for. With shared noise every such leaf that row 0 does not reach would match.)
    leaves = (nodes_a["left"] < 0)
    tree_of_node = np.searchsorted(a.booster_.tree_roots, np.arange(leaves.size),
                                   side="right") - 1
    for values in (nodes_a["value"], nodes_b["value"]):
        magnitude = np.where(leaves, np.abs(values), 0.0)
        largest_in_tree = np.zeros(a.booster_.tree_roots.size)
        np.maximum.at(largest_in_tree, tree_of_node, magnitude)
        leaves &= (values != 0) & (magnitude != largest_in_tree[tree_of_node])
    assert leaves.any()
    assert not np.isclose(nodes_a["value"][leaves], nodes_b["value"][leaves]).any()
    search = GridSearchCV(model, {"epsilon": [0.5, 1.0]}, cv=2).fit(X, y)
    assert search.best_estimator_.booster_.ledger["epsilon"] in (
        pytest.approx(0.5, rel=2e-3), pytest.approx(1.0, rel=2e-3))


def test_a_failed_refit_keeps_the_fitted_classes_and_model(client, classification_data):
    X, y, bounds = classification_data
    labels = np.where(y > 0, "yes", "no")
    model = DPXGBClassifier(feature_bounds=bounds, classes=["no", "yes"], client=client,
                            **SMALL).fit(X, labels)
    booster = model.booster_
    model.set_params(classes=["n", "y"], budget="no-such-budget")
    with pytest.raises(ValueError, match="budget 'no-such-budget' does not exist"):
        model.fit(X, np.where(y > 0, "y", "n"))
    assert list(model.classes_) == ["no", "yes"] and model.booster_ is booster


def test_score_takes_a_one_column_dask_frame_of_labels(client, classification_data):
    import dask.dataframe as dd

    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, classes=[0, 1], client=client,
                            **SMALL).fit(X, y)
    frame = dd.from_pandas(pd.DataFrame(np.nan_to_num(X)), npartitions=2)
    labels = dd.from_pandas(pd.DataFrame({"y": y}), npartitions=2)
    assert model.score(frame, labels) == pytest.approx(model.score(np.nan_to_num(X), y))


def test_classes_are_public_or_read_with_a_warning(client, seed, classification_data):
    import dask.array as da

    from dpxgb_dask.privacy.validation import PrivacyLeakWarning

    X, y, bounds = classification_data
    labels = np.where(y > 0, "yes", "no")
    params = dict(feature_bounds=bounds, random_state=seed, reproducible_noise=True,
                  client=client, **SMALL)
    with pytest.warns(PrivacyLeakWarning, match="classes="):
        read = DPXGBClassifier(**params).fit(X, labels)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        # (only the reproducible noise the comparisons below need warns)
        warnings.filterwarnings("ignore", "reproducible_noise", PrivacyLeakWarning)
        public = DPXGBClassifier(classes=["yes", "no"], **params).fit(X, labels)
        # one class present: it trains, since the label set is public
        one = DPXGBClassifier(classes=["no", "yes"], **params).fit(X, np.full(len(X), "no"))
        # dask labels are encoded lazily with the public classes
        on_dask = DPXGBClassifier(classes=["no", "yes"], **params).fit(
            da.from_array(X, chunks=(1000, 6)), da.from_array(labels, chunks=1000))
    assert list(public.classes_) == list(read.classes_) == ["no", "yes"]
    # (both name the reproducible noise the comparisons need; only one read its classes)
    assert [c["purpose"] for c in read.privacy_report()["not_dp"]] == ["noise", "classes"]
    assert [c["purpose"] for c in public.privacy_report()["not_dp"]] == ["noise"]
    assert public.booster_.to_dict()["nodes"] == read.booster_.to_dict()["nodes"]
    assert on_dask.booster_.to_dict()["nodes"] == read.booster_.to_dict()["nodes"]
    assert set(one.predict(X)) <= {"no", "yes"}
    # dask labels with classes=: a NaN label leaves its row out, as in train()
    missing = y.copy()
    missing[[3, 1999]] = np.nan
    kept = ~np.isnan(missing)
    with_nan = DPXGBClassifier(classes=[0.0, 1.0], subsample=1.0, **params).fit(
        da.from_array(X, chunks=(1000, 6)), da.from_array(missing, chunks=1000))
    without = DPXGBClassifier(classes=[0.0, 1.0], subsample=1.0, **params).fit(
        da.from_array(X[kept], chunks=(1000, 6)), da.from_array(y[kept], chunks=1000))
    assert with_nan.booster_ == without.booster_
    with pytest.raises(ValueError, match=r"labels outside classes=\['no', 'yes'\]"):
        DPXGBClassifier(classes=["no", "yes"], **params).fit(X, np.where(y > 0, "yes", "maybe"))
    with pytest.raises(ValueError, match="classes must hold 2 or more distinct labels"):
        DPXGBClassifier(classes=[0, 1, 1], **params).fit(X, y)
    with pytest.raises(ValueError, match="classes must hold 2 or more distinct labels"):
        DPXGBClassifier(classes=["yes"], **params).fit(X, labels)
    with pytest.raises(ValueError, match="y contains 1 class.*classes="):
        DPXGBClassifier(**params).fit(X, np.zeros(len(X)))


# -- checked claims (issue 13, item 4) ---------------------------------------------------------

def test_a_model_file_must_state_what_its_ledger_spends(client, seed, classification_data,
                                                       tmp_path):
    from dpxgb_dask.model.certificate import PrivacyClaimError

    X, y, bounds = classification_data
    booster = DPXGBClassifier(feature_bounds=bounds, classes=[0, 1], random_state=seed,
                              client=client, **SMALL).fit(X, y).booster_
    path = tmp_path / "model.json"
    booster.save_model(path)
    assert load_model(path) == booster

    def edited(change):
        data = json.loads(path.read_text())
        change(data)
        out = tmp_path / "edited.json"
        out.write_text(json.dumps(data))
        return out

    cases = {
        "epsilon": lambda d: d["ledger"].update(epsilon=0.01),
        "pld": lambda d: d["ledger"]["epsilon_by_accountant"].update(pld=0.01),
        "delta": lambda d: d["ledger"].update(delta=0.1),
        # a release's noise made larger in the ledger: the totals no longer follow
        "noise": lambda d: d["ledger"]["events"]["events"][-1].update(noise_multiplier=1e6),
        "n_events": lambda d: d["ledger"]["events"]["events"].pop(),
    }
    for name, change in cases.items():
        with pytest.raises(PrivacyClaimError, match="the model states"):
            load_model(edited(change))
    with pytest.raises(PrivacyClaimError, match="no privacy ledger"):
        load_model(edited(lambda d: d.update(ledger={})))
    # a non-DP choice the file does not declare
    with pytest.raises(PrivacyClaimError, match="feature_bounds='data'.*does not say so"):
        load_model(edited(lambda d: d["params"].update(feature_bounds="data")))


def test_numpy_scalar_parameters(client, seed, classification_data, tmp_path):
    """As a GridSearchCV grid over np.arange gives them."""
    X, y, bounds = classification_data
    model = DPXGBClassifier(feature_bounds=bounds, classes=[0, 1], random_state=seed,
                            n_estimators=np.int64(3), max_depth=np.int32(2),
                            learning_rate=np.float32(0.25), epsilon=np.float64(1.0),
                            client=client).fit(X, y)
    assert model.booster_.n_trees == 3
    model.booster_.save_model(tmp_path / "m.json")
    assert load_model(tmp_path / "m.json") == model.booster_


def test_signed_model_files(client, seed, classification_data, tmp_path):
    X, y, bounds = classification_data
    booster = DPXGBClassifier(feature_bounds=bounds, classes=[0, 1], random_state=seed,
                              client=client, **SMALL).fit(X, y).booster_
    signed, unsigned = tmp_path / "signed.json", tmp_path / "unsigned.json"
    booster.save_model(signed, key=b"k" * 32)
    booster.save_model(unsigned)
    assert load_model(signed, key=b"k" * 32) == booster
    assert load_model(signed) == booster  # no key: the signature is not checked
    with pytest.raises(ValueError, match="does not verify"):
        load_model(signed, key=b"other key")
    with pytest.raises(ValueError, match="not signed"):
        load_model(unsigned, key=b"k" * 32)
    data = json.loads(signed.read_text())
    data["base_score"] += 1.0  # a change the privacy claims cannot see
    signed.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="does not verify"):
        load_model(signed, key=b"k" * 32)
    with pytest.raises(ValueError, match="key must be"):
        booster.save_model(tmp_path / "x.json", key=b"")


def test_xgboost_keywords_of_the_same_kind_are_taken(client, seed, classification_data):
    """Issue 43, item 4: objective="binary:logistic" on the classifier and missing=np.nan
    were refused as unknown parameters. XGBoost's objectives of the estimator's kind are
    taken (the classifier's follows its classes, as XGBoost's does), and missing=NaN, the
    only missing value. Other values are refused naming the allowed ones."""
    X, y, bounds = classification_data
    model = DPXGBClassifier(epsilon=2.0, feature_bounds=bounds, classes=[0, 1],
                            n_estimators=5, objective="binary:logistic", missing=np.nan,
                            random_state=seed, client=client).fit(X, y)
    assert model.booster_.objective == "binary:logistic"
    assert clone(model).get_params()["objective"] == "binary:logistic"
    three = DPXGBClassifier(epsilon=2.0, feature_bounds=bounds, classes=[0, 1, 2],
                            n_estimators=2, objective="binary:logistic", client=client)
    assert three._train_params(None, 3)["objective"] == "multi:softprob"
    for estimator, keywords, message in [
            (DPXGBClassifier, {"objective": "reg:squarederror"},
             r"objective must be one of \['binary:logistic', 'multi:softprob', "
             r"'multi:softmax'\] for DPXGBClassifier"),
            (DPXGBRegressor, {"objective": "binary:logistic"},
             r"objective must be one of \['reg:squarederror'\]"),
            (DPXGBClassifier, {"missing": -999.0}, "missing must be NaN")]:
        with pytest.raises(ValueError, match=message):
            estimator(epsilon=1.0, feature_bounds=bounds, label_bounds=(0.0, 1.0),
                      client=client, **keywords).fit(X, y)


def test_n_jobs_minus_one_runs_the_kernels_on_every_cpu_of_each_worker(client, seed,
                                                                       classification_data):
    """Issue 43, item 4: n_jobs=-1 was refused ("n_threads must be in [1, inf]"). It means
    every CPU the worker's process may run on, as in XGBoost and scikit-learn."""
    import os

    X, y, bounds = classification_data
    model = DPXGBClassifier(epsilon=2.0, feature_bounds=bounds, n_estimators=3, n_jobs=-1,
                            random_state=seed, client=client).fit(X, y)
    assert model.booster_.params["n_threads"] == -1
    from dpxgb_dask.partition.state import kernel_threads

    assert kernel_threads(-1) == len(os.sched_getaffinity(0)) and kernel_threads(3) == 3
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"n_threads \(XGBoost's n_jobs\) must be -1"):
            DPXGBClassifier(epsilon=2.0, feature_bounds=bounds, n_jobs=bad,
                            client=client).fit(X, y)
