"""Every input type a pandas or scikit-learn user has: nullable and pyarrow dtypes with NA
(missing values), scipy sparse matrices (absent entries are 0), and estimators fitted in
joblib's worker processes (cross_val_score(n_jobs=2))."""
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor, train
from dpxgb_dask.inputs import float_values

PARAMS = {"objective": "binary:logistic", "epsilon": 2.0, "n_estimators": 6, "max_depth": 3,
          "reproducible_noise": True}


def _frame(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)).round(1), columns=["a", "b", "c"])
    X.iloc[::7, 0] = np.nan
    X.iloc[::11, 2] = np.nan
    y = ((X["a"].fillna(0) + X["b"]) > 0).astype(float)
    return X, y


@pytest.mark.parametrize("dtype", ["Float64", "Float32", "Int64", "double[pyarrow]",
                                   "int64[pyarrow]"])
def test_float_values_turns_na_of_nullable_and_pyarrow_dtypes_into_nan(dtype):
    X, _ = _frame()
    integer = "nt" in dtype
    expected = (X.round() if integer else X).to_numpy()
    converted = float_values((X.round() if integer else X).astype(dtype), "X")
    assert converted.dtype in (np.float32, np.float64)
    np.testing.assert_allclose(converted, expected, rtol=1e-6)
    assert np.isnan(converted).sum() == np.isnan(expected).sum() > 0
    flags = pd.Series([True, None, False], dtype="boolean")
    np.testing.assert_array_equal(float_values(flags, "y"), [1.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="X must hold numbers only"):
        float_values(pd.DataFrame({"s": ["private value"]}), "X")


@pytest.mark.parametrize("dtype", ["Float64", "double[pyarrow]"])
def test_nullable_and_pyarrow_frames_train_the_model_of_their_float64_twin(client, seed, dtype):
    X, y = _frame()
    params = dict(PARAMS, feature_bounds=[[-4.0, 4.0]] * 3, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (reproducible_noise's warning)
        reference = train(params, X, y, client=client, n_partitions=2)
        nullable = train(params, X.astype(dtype), y.astype("Int64"), client=client,
                         n_partitions=2)
    assert nullable == reference
    np.testing.assert_array_equal(nullable.predict(X.astype(dtype)), reference.predict(X))
    # the same dtypes in a dask frame (read_parquet(dtype_backend="pyarrow") gives these)
    import dask.dataframe as dd

    frame = dd.from_pandas(X.astype(dtype).assign(y=y.astype("Int64")), npartitions=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_dask = train(params, frame[["a", "b", "c"]], frame["y"], client=client)
        reference = train(params, dd.from_pandas(X, npartitions=2),
                          dd.from_pandas(y, npartitions=2), client=client)
    assert from_dask == reference


def test_estimators_take_nullable_and_pyarrow_dtypes(client):
    X, y = _frame()
    for dtype in ("Float64", "double[pyarrow]"):
        model = DPXGBClassifier(epsilon=4.0, n_estimators=10, feature_bounds=[[-4.0, 4.0]] * 3,
                                classes=[0, 1], client=client).fit(X.astype(dtype),
                                                                   y.astype("Int64"))
        assert model.score(X.astype(dtype), y) > 0.7
        assert list(model.feature_names_in_) == ["a", "b", "c"]


def _sparse_problem(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(n, 4)).round(1)
    dense[rng.random(dense.shape) < 0.7] = 0.0  # mostly absent
    y = (dense[:, 0] + dense[:, 1] > 0).astype(float)
    return dense, y


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_sparse_matrices_train_the_model_of_their_dense_twin(client, seed, layout):
    dense, y = _sparse_problem()
    matrix = sp.csr_matrix(dense) if layout == "csr" else sp.csc_matrix(dense)
    params = dict(PARAMS, feature_bounds=[[-4.0, 4.0]] * 4, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = train(params, dense, y, client=client, n_partitions=2)
        from_sparse = train(params, matrix, y, client=client, n_partitions=2)
    assert from_sparse == reference  # absent entries are zeros, not missing values
    np.testing.assert_array_equal(from_sparse.predict(matrix), reference.predict(dense))


def test_estimators_take_sparse_matrices(client):
    dense, y = _sparse_problem()
    model = DPXGBClassifier(epsilon=4.0, n_estimators=10, feature_bounds=[[-4.0, 4.0]] * 4,
                            classes=[0, 1], client=client).fit(sp.csr_matrix(dense), y)
    assert model.__sklearn_tags__().input_tags.sparse
    np.testing.assert_array_equal(model.predict_proba(sp.csc_matrix(dense)),
                                  model.predict_proba(dense))
    regressor = DPXGBRegressor(epsilon=4.0, n_estimators=10, feature_bounds=[[-4.0, 4.0]] * 4,
                               label_bounds=(0.0, 1.0), client=client)
    regressor.fit(sp.csc_matrix(dense), y)
    np.testing.assert_array_equal(regressor.predict(sp.csr_matrix(dense)),
                                  regressor.predict(dense))


def test_cross_val_score_with_joblib_processes():
    """joblib's default backend (loky) runs each fit in a worker process that cannot start
    processes of its own: without a client, the fit's embedded cluster runs on threads."""
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 0] > 0).astype(int)
    model = DPXGBClassifier(epsilon=4.0, n_estimators=10, feature_bounds=[[-4.0, 4.0]] * 3,
                            classes=[0, 1])
    scores = cross_val_score(model, X, y, cv=2, n_jobs=2, error_score="raise")
    assert scores.shape == (2,) and np.all(scores > 0.6)
