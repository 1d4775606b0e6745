"""sample_weight with a public bound W: each row counts min(w, W) / W of a row in every
released sum, so the sensitivities are the unweighted ones; weights above W are clipped,
negative or NaN ones count 0, never refused."""
import warnings

import numpy as np
import pandas as pd
import pytest

from dpxgb_dask import DPXGBClassifier, DPXGBRegressor, train
from dpxgb_dask.partition.gradients import VALUE_GRID
from dpxgb_dask.partition.state import make_part
from dpxgb_dask.inputs import Targets, weight_shares
from dpxgb_dask.objective import Objective
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process

BOUNDS = [[-4.0, 4.0]] * 3
SEED = 2**200 + 77


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + X[:, 1] > 0).astype(float)


OBJECTIVES = {
    "binary": ("binary:logistic", {}),
    "binary newton": ("binary:logistic", {"split_method": "noisy_histogram"}),
    "multiclass": ("multi:softprob", {"num_class": 3}),
    # (a round's class-summed sketch from weighted counts; its sensitivity: test_multiclass)
    "multiclass sketch": ("multi:softprob", {"num_class": 3,
                                             "split_candidates": "iterative_hessian",
                                             "iterative_hessian_rounds": 2}),
    "regression": ("reg:squarederror", {"label_bounds": (0.0, 1.0), "subsample": 1.0}),
}


def _fit(case, X, y, weight_bound=None, sample_weight=None):
    objective, extra = OBJECTIVES[case]
    if objective == "multi:softprob":
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    p = resolve_params(objective, epsilon=2.0, n_estimators=5, feature_bounds=BOUNDS,
                       random_state=SEED, reproducible_noise=True, weight_bound=weight_bound,
                       **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train_in_process(p, X, y, n_partitions=2, sample_weight=sample_weight)[0]


def _same(a, b, X):
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("case", list(OBJECTIVES))
def test_weights_of_one_under_a_bound_of_one_are_the_unweighted_fit(case):
    X, y = _data()
    _same(_fit(case, X, y), _fit(case, X, y, 1.0, np.ones(len(y))), X)
    _same(_fit(case, X, y, 1.0), _fit(case, X, y, 1.0, np.ones(len(y))), X)  # (1 each)


@pytest.mark.parametrize("case", list(OBJECTIVES))
def test_a_weight_of_zero_is_a_row_left_out(case):
    X, y = _data()
    keep = np.random.default_rng(1).random(len(y)) < 0.7
    weighted = _fit(case, X, y, 2.0, np.where(keep, 2.0, 0.0))
    _same(weighted, _fit(case, X[keep], y[keep], 2.0, np.full(keep.sum(), 2.0)), X)
    # negative and NaN weights count 0 too (clipped, never refused)
    odd = np.where(keep, 2.0, np.where(np.arange(len(y)) % 2, -3.0, np.nan))
    _same(weighted, _fit(case, X, y, 2.0, odd), X)


@pytest.mark.parametrize("case", ["binary", "multiclass"])
def test_weights_above_the_bound_are_clipped_to_it(case):
    X, y = _data()
    w = np.random.default_rng(2).uniform(0.0, 6.0, len(y))
    _same(_fit(case, X, y, 3.0, w), _fit(case, X, y, 3.0, np.minimum(w, 3.0)), X)


def test_weights_change_the_model():
    X, y = _data()
    w = np.where(X[:, 2] > 0, 4.0, 0.5)  # (a weight that tells the rows apart)
    plain, weighted = _fit("binary", X, y, 4.0), _fit("binary", X, y, 4.0, w)
    assert not np.array_equal(plain.predict(X), weighted.predict(X))


def test_shares_are_in_zero_one_on_the_grid():
    shares = weight_shares(np.array([-1.0, 0.0, 0.3, 2.5, 7.0, np.nan]), 2.5)
    np.testing.assert_allclose(shares, [0.0, 0.0, 0.12, 1.0, 1.0, 0.0])
    part = make_part(np.zeros((6, 1)), Targets.checked(np.ones(6), shares),
                     Objective.of(resolve_params("binary:logistic", feature_bounds=[[0, 1]])))
    assert np.all((part.weights >= 0) & (part.weights <= 1))
    np.testing.assert_array_equal(part.weights, np.floor(part.weights / VALUE_GRID) * VALUE_GRID)
    assert part.weights[2] <= 0.12 and part.y.tolist() == [1.0] * 6


def test_targets_name_their_fields_and_travel_with_their_rows():
    import dask.array as da

    targets = Targets.checked(pd.Series([1, 0, 1]), np.array([0.5, 1.0, 0.0]))
    assert targets.label.dtype == np.float64 and targets.margin is None
    assert list(targets.fields()) == ["label", "weight"]
    np.testing.assert_array_equal(targets.rows(slice(1, 3)).weight, [1.0, 0.0])
    with pytest.raises(ValueError, match="must have the 3 rows of y"):
        Targets.checked(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="a dask collection exactly when y is one"):
        Targets.checked(np.ones(3), da.ones(3))
    # dask arrays: a field chunked otherwise, in as many blocks, takes the labels' chunks
    lazy = Targets.checked(da.ones(6, chunks=3), da.ones(6, chunks=(2, 4)))
    assert lazy.weight.chunks == lazy.label.chunks
    with pytest.raises(ValueError, match="must have the partitions of y"):
        Targets.checked(da.ones(6, chunks=3), da.ones(6, chunks=2))


@pytest.mark.parametrize("extra, message", [
    ({}, "sample_weight needs weight_bound"),
    ({"weight_bound": 2.0, "split_method": "exponential", "leaf_method": "laplace",
      "newton": False}, "sample_weight needs leaf_method='gaussian'"),
    ({"weight_bound": 0.0}, r"weight_bound must be in \(0, inf\]"),
])
def test_weights_need_their_public_bound_and_gaussian_releases(extra, message):
    X, y = _data(300)
    with pytest.raises(ValueError, match=message):
        p = resolve_params("binary:logistic", epsilon=1.0, n_estimators=2,
                           feature_bounds=BOUNDS, **extra)
        train_in_process(p, X, y, sample_weight=np.ones(len(y)))


def test_every_input_type_trains_the_same_weighted_model(client):
    import dask.array as da
    import dask.dataframe as dd

    X, y = _data()
    w = np.random.default_rng(3).uniform(0.0, 3.0, len(y))
    params = {"feature_bounds": BOUNDS, "epsilon": 2.0, "n_estimators": 5, "max_depth": 3,
              "random_state": SEED, "reproducible_noise": True, "weight_bound": 3.0}
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y, w=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = train(params, X, y, client=client, n_partitions=2, sample_weight=w)
        from_pandas = train(params, frame[["a", "b", "c"]], frame["y"], client=client,
                            n_partitions=2, sample_weight=frame["w"])
        from_arrays = train(params, da.from_array(X, chunks=(1500, 3)),
                            da.from_array(y, chunks=1500), client=client,
                            sample_weight=da.from_array(w, chunks=1500))
        lazy = dd.from_pandas(frame, npartitions=2)
        from_frame = train(params, lazy[["a", "b", "c"]], lazy["y"], client=client,
                           sample_weight=lazy["w"])
    for model in (from_pandas, from_arrays, from_frame):
        np.testing.assert_array_equal(model.predict(X), reference.predict(X))
    with pytest.raises(ValueError, match="partitions"):
        train(params, lazy[["a", "b", "c"]], lazy["y"], client=client,
              sample_weight=dd.from_pandas(frame["w"], npartitions=3))


def test_estimators_take_sample_weight(client):
    X, y = _data()
    w = np.where(X[:, 2] > 0, 3.0, 1.0)
    model = DPXGBClassifier(epsilon=2.0, n_estimators=8, classes=[0, 1], feature_bounds=BOUNDS,
                            weight_bound=3.0, client=client).fit(X, y, sample_weight=w)
    assert model.booster_.params["weight_bound"] == 3.0 and model.score(X, y) > 0.7
    regressor = DPXGBRegressor(epsilon=2.0, n_estimators=8, feature_bounds=BOUNDS,
                               label_bounds=(0.0, 1.0), weight_bound=3.0, client=client)
    assert regressor.fit(X, y, sample_weight=w).predict(X).shape == (len(y),)
    with pytest.raises(ValueError, match="sample_weight needs weight_bound"):
        DPXGBClassifier(classes=[0, 1], feature_bounds=BOUNDS, client=client).fit(
            X, y, sample_weight=w)
