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
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "purpose" in text and "epsilon (pld" in text and "leaf" in text


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
