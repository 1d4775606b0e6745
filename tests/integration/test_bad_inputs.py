"""Bad inputs and parameter combinations (issue 13, item 7).

Every case either raises a clear error that names the argument (and, where it helps, the
allowed values), or is handled the documented DP-safe way (clipped, missing, left out).
Either way the cluster is left as it was: no task, dataset or event topic of the fit on
the scheduler, no fit running in the plugin, no fit state on any worker.
"""
import json

import dask
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from dpxgb_dask import (BudgetError, DPXGBClassifier, DPXGBRegressor, create_budget,
                        load_model, train)
from dpxgb_dask.model.certificate import PrivacyClaimError

N_ROWS, N_FEATURES = 600, 3
_RNG = np.random.default_rng(7)
X = _RNG.normal(size=(N_ROWS, N_FEATURES))
Y = (X[:, 0] > 0).astype(float)
BOUNDS = np.tile([-4.0, 4.0], (N_FEATURES, 1))
FAST = {"n_estimators": 2, "max_depth": 2}


_DROP = object()  # "leave the parameter out"
_SAME = object()  # "the small table's X or y"
_CLIENT = {}


def fit(X_=_SAME, y=_SAME, **params):
    """train() on the small table with public bounds, overridden by ``params``."""
    given = {"feature_bounds": BOUNDS, **FAST, **params}
    return train({k: v for k, v in given.items() if v is not _DROP}, X if X_ is _SAME else X_,
                 Y if y is _SAME else y, client=_CLIENT["client"])


def regress(**params):
    return fit(y=X[:, 0] * 2, objective="reg:squarederror",
               **{"label_bounds": (-10.0, 10.0), **params})


# (id, parameter overrides for fit(), the argument the message must name) -- a ValueError
PARAMETER_CASES = [
    ("n_estimators=0", {"n_estimators": 0}, "n_estimators"),
    ("n_estimators=-3", {"n_estimators": -3}, "n_estimators"),
    ("n_estimators=2.5", {"n_estimators": 2.5}, "n_estimators"),
    ("n_estimators='10'", {"n_estimators": "10"}, "n_estimators"),
    ("n_estimators=True", {"n_estimators": True}, "n_estimators"),
    ("max_depth=0", {"max_depth": 0}, "max_depth"),
    ("max_depth=100", {"max_depth": 100}, "max_depth"),
    ("max_depth=nan", {"max_depth": float("nan")}, "max_depth"),
    ("learning_rate=0", {"learning_rate": 0.0}, "learning_rate"),
    ("learning_rate=-0.1", {"learning_rate": -0.1}, "learning_rate"),
    ("learning_rate=inf", {"learning_rate": float("inf")}, "learning_rate"),
    ("learning_rate=nan", {"learning_rate": float("nan")}, "learning_rate"),
    ("reg_lambda=-1", {"reg_lambda": -1.0}, "reg_lambda"),
    ("reg_lambda=nan", {"reg_lambda": float("nan")}, "reg_lambda"),
    ("subsample=0", {"subsample": 0.0}, "subsample"),
    ("subsample=1.5", {"subsample": 1.5}, "subsample"),
    ("subsample=nan", {"subsample": float("nan")}, "subsample"),
    ("min_child_weight=-1", {"min_child_weight": -1.0}, "min_child_weight"),
    ("max_bin=1", {"max_bin": 1}, "max_bin"),
    ("max_bin=256", {"max_bin": 256}, "max_bin"),
    ("epsilon=0", {"epsilon": 0.0}, "epsilon"),
    ("epsilon=-1", {"epsilon": -1.0}, "epsilon"),
    ("epsilon=inf", {"epsilon": float("inf")}, "epsilon"),
    ("epsilon=nan", {"epsilon": float("nan")}, "epsilon"),
    ("epsilon='1'", {"epsilon": "1"}, "epsilon"),
    ("epsilon=[1]", {"epsilon": [1.0]}, "epsilon"),
    ("delta=1", {"delta": 1.0}, "delta"),
    ("delta=-0.1", {"delta": -0.1}, "delta"),
    ("delta=nan", {"delta": float("nan")}, "delta"),
    ("dp_epsilon_per_tree=0", {"preset": "dp-xgboost", "dp_epsilon_per_tree": 0.0},
     "dp_epsilon_per_tree"),
    ("dp_epsilon_per_tree with epsilon", {"preset": "dp-xgboost", "epsilon": 1.0,
                                          "dp_epsilon_per_tree": 0.1}, "dp_epsilon_per_tree"),
    ("dp_epsilon_per_tree with Gaussian leaves", {"dp_epsilon_per_tree": 0.1},
     "dp_epsilon_per_tree"),
    ("feature_bounds shape (3,)", {"feature_bounds": [0.0, 1.0, 2.0]}, "feature_bounds"),
    ("feature_bounds shape (3, 3)", {"feature_bounds": np.zeros((3, 3))}, "feature_bounds"),
    ("feature_bounds 2 rows for 3 features", {"feature_bounds": BOUNDS[:2]}, "feature_bounds"),
    ("feature_bounds lo > hi", {"feature_bounds": BOUNDS[:, ::-1]}, "feature_bounds"),
    ("feature_bounds lo == hi", {"feature_bounds": np.zeros((3, 2))}, "feature_bounds"),
    ("feature_bounds nan", {"feature_bounds": np.full((3, 2), np.nan)}, "feature_bounds"),
    ("feature_bounds inf", {"feature_bounds": np.tile([-np.inf, np.inf], (3, 1))},
     "feature_bounds"),
    ("feature_bounds 'auto'", {"feature_bounds": "auto"}, "feature_bounds"),
    ("feature_bounds strings", {"feature_bounds": [["a", "b"]] * 3}, "feature_bounds"),
    ("no feature_bounds nor bounds_epsilon", {"feature_bounds": _DROP}, "feature_bounds"),
    ("bounds_epsilon=0", {"feature_bounds": _DROP, "bounds_epsilon": 0.0}, "bounds_epsilon"),
    ("bounds_epsilon=-1", {"feature_bounds": _DROP, "bounds_epsilon": -1.0},
     "bounds_epsilon"),
    ("split_method='best'", {"split_method": "best"}, "split_method"),
    ("feature_selection='all'", {"feature_selection": "all"}, "feature_selection"),
    ("split_candidates='exact'", {"split_candidates": "exact"}, "split_candidates"),
    ("leaf_method='median'", {"leaf_method": "median"}, "leaf_method"),
    ("leaf_noise_ratio=0", {"leaf_noise_ratio": 0.0}, "leaf_noise_ratio"),
    ("leaf_noise_ratio=1", {"leaf_noise_ratio": 1.0}, "leaf_noise_ratio"),
    ("newton='yes'", {"newton": "yes"}, "newton"),
    ("gradient_bound=0", {"gradient_bound": 0.0}, "gradient_bound"),
    ("gradient_bound=20", {"gradient_bound": 20.0}, "gradient_bound"),
    ("hessian_bound=-1", {"hessian_bound": -1.0}, "hessian_bound"),
    ("gradient_rule='scale'", {"gradient_rule": "scale"}, "gradient_rule"),
    ("leaf_bound=0", {"leaf_bound": 0.0}, "leaf_bound"),
    ("leaf_clipping='hard'", {"leaf_clipping": "hard"}, "leaf_clipping"),
    ("gain_sensitivity='tight'", {"gain_sensitivity": "tight"}, "gain_sensitivity"),
    ("budget_shares={}", {"budget_shares": {}}, "budget_shares"),
    ("budget_shares unknown key", {"budget_shares": {"trees": 1.0}}, "budget_shares"),
    ("budget_shares negative", {"budget_shares": {"leaf": -1.0}}, "budget_shares"),
    ("budget_shares a list", {"budget_shares": [0.5, 0.5]}, "budget_shares"),
    ("init_score='median'", {"init_score": "median"}, "init_score"),
    ("n_sketch_bins=1", {"n_sketch_bins": 1}, "n_sketch_bins"),
    ("iterative_hessian_rounds=-1", {"iterative_hessian_rounds": -1},
     "iterative_hessian_rounds"),
    ("batch_size=0", {"batch_size": 0}, "batch_size"),
    ("ensemble_size=0", {"ensemble_size": 0}, "ensemble_size"),
    ("ensemble_size with subsample", {"ensemble_size": 2, "subsample": 0.5,
                                      "learning_rate": 0.3}, "ensemble_size"),
    ("ensemble_size with learning_rate=1", {"ensemble_size": 2, "learning_rate": 1.0},
     "ensemble_size"),
    ("accountant='moments'", {"accountant": "moments"}, "accountant"),
    ("random_state=-1", {"random_state": -1}, "random_state"),
    ("random_state=1.5", {"random_state": 1.5}, "random_state"),
    ("random_state='seed'", {"random_state": "seed"}, "random_state"),
    ("reproducible_noise='yes'", {"reproducible_noise": "yes"}, "reproducible_noise"),
    ("reproducible_noise without random_state", {"reproducible_noise": True},
     "reproducible_noise"),
    ("n_threads=0", {"n_threads": 0}, "n_threads"),
    ("budget=''", {"budget": ""}, "budget"),
    ("budget=5", {"budget": 5}, "budget"),
    ("objective='multi:softmax'", {"objective": "multi:softmax"}, "objective"),
    ("preset='xgboost'", {"preset": "xgboost"}, "preset"),
    ("misspelt parameter", {"n_estimator": 10}, "n_estimator"),
    ("exponential splits with Gaussian leaves", {"split_method": "exponential",
                                                 "leaf_method": "gaussian"}, "split_method"),
    ("noisy_histogram splits with Laplace leaves", {"split_method": "noisy_histogram",
                                                    "leaf_method": "laplace",
                                                    "newton": False}, "split_method"),
    ("partially_random splits with Laplace leaves", {"split_method": "partially_random",
                                                     "leaf_method": "laplace",
                                                     "newton": False}, "split_method"),
    ("budget_shares='equal_noise' with a DP initial score",
     {"budget_shares": "equal_noise", "init_score": "dp_mean"}, "init_score"),
    ("budget_shares a string", {"budget_shares": "equal"}, "budget_shares"),
    ("newton with Laplace leaves", {"split_method": "random", "leaf_method": "laplace",
                                    "newton": True}, "newton"),
    ("preset dp-xgboost with newton", {"preset": "dp-xgboost", "newton": True}, "newton"),
    ("preset dpboost with Gaussian leaves", {"preset": "dpboost", "leaf_method": "gaussian"},
     "split_method"),
]


@pytest.mark.parametrize("overrides, argument",
                         [pytest.param(o, a, id=i) for i, o, a in PARAMETER_CASES])
def test_a_bad_parameter_names_itself(overrides, argument, clean_cluster):
    with pytest.raises(ValueError, match=argument):
        fit(**overrides)


REGRESSION_CASES = [
    ("no label_bounds", {"label_bounds": _DROP}, "label_bounds"),
    ("label_bounds lo > hi", {"label_bounds": (5.0, -5.0)}, "label_bounds"),
    ("label_bounds lo == hi", {"label_bounds": (1.0, 1.0)}, "label_bounds"),
    ("label_bounds nan", {"label_bounds": (np.nan, 1.0)}, "label_bounds"),
    ("label_bounds inf", {"label_bounds": (-np.inf, np.inf)}, "label_bounds"),
    ("label_bounds of 3", {"label_bounds": (0.0, 1.0, 2.0)}, "label_bounds"),
    ("label_bounds a string", {"label_bounds": "0,1"}, "label_bounds"),
]


@pytest.mark.parametrize("overrides, argument",
                         [pytest.param(o, a, id=i) for i, o, a in REGRESSION_CASES])
def test_bad_regression_label_bounds_name_themselves(overrides, argument, clean_cluster):
    with pytest.raises(ValueError, match=argument):
        regress(**overrides)


def _sparse():
    import scipy.sparse

    return scipy.sparse.csr_matrix(X)


# (id, X, y, error type, pattern) -- shapes, types and dtypes: public facts
DATA_CASES = [
    ("X 1-D", lambda: X[:, 0], None, ValueError, "X"),
    ("X 3-D", lambda: X[:, :, None], None, ValueError, "X"),
    ("X without rows", lambda: X[:0], lambda: Y[:0], ValueError, "X"),
    ("X without columns", lambda: X[:, :0], None, ValueError, "X"),
    ("X and y lengths differ", None, lambda: Y[:-1], ValueError, "y"),
    ("y 2-D", None, lambda: np.c_[Y, Y], ValueError, "y"),
    ("y strings", None, lambda: np.where(Y > 0, "a", "b"), ValueError, "y"),
    ("X strings", lambda: np.full((N_ROWS, 3), "a", dtype=object), None, ValueError, "X"),
    ("X complex", lambda: X + 1j, None, ValueError, "X"),
    ("X a frame with a text column",
     lambda: pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": ["t"] * N_ROWS}), None,
     ValueError, "c"),
    ("X a dict", lambda: {"a": X[:, 0]}, None, TypeError, "X"),
    ("X None", lambda: None, None, TypeError, "X"),
    # (issue 43: labels 1 and 2, 0.5 and 1.5, or ±inf were clipped into [0, 1], and the
    # fit ended without a word with a useless model; the refusal reaches only the process
    # that sent the rows)
    ("labels 1 and 2", None, lambda: Y + 1, ValueError,
     r"labels outside the classes of binary:logistic: its labels are the class indices "
     r"0 and 1"),
    ("labels 0.5 and 1.5", None, lambda: Y + 0.5, ValueError, "labels outside the classes"),
    ("an inf label", None, lambda: _with(Y, [0, 5], np.inf), ValueError,
     "labels outside the classes"),
]


@pytest.mark.parametrize("make_X, make_y, error, pattern",
                         [pytest.param(*c[1:], id=c[0]) for c in DATA_CASES])
def test_bad_data_is_refused_on_its_shape_or_type(make_X, make_y, error, pattern,
                                                  clean_cluster):
    with pytest.raises(error, match=pattern):
        fit(make_X() if make_X else _SAME, make_y() if make_y else _SAME)


def _with(values, rows, value):
    out = np.array(values, dtype=float)
    out[rows] = value
    return out


# (id, X, y, params): private values outside the public domain train, handled DP-safely
SAFE_CASES = [
    ("NaN labels are left out", None, lambda: _with(Y, [0, 5], np.nan), {}),
    ("inf labels are left out on request", None, lambda: _with(Y, [0, 5], np.inf),
     {"unknown_labels": "missing"}),
    ("labels outside 0 and 1 are left out on request", None, lambda: _with(Y, [0, 5], 7.0),
     {"unknown_labels": "missing"}),
    ("NaN features are missing values", lambda: _with(X, (slice(0, 50), 1), np.nan), None, {}),
    ("inf features fall in the end bins", lambda: _with(X, (0, 2), -np.inf), None, {}),
    ("features outside their bounds are clipped", lambda: X * 100, None, {}),
    ("a feature that is all NaN", lambda: _with(X, (slice(None), 0), np.nan), None, {}),
    ("one class only (public classes)", None, lambda: np.zeros(N_ROWS), {}),
    ("a constant feature", lambda: _with(X, (slice(None), 2), 1.0), None, {}),
    ("integer X", lambda: (X * 10).astype(np.int64), None, {}),
    ("float32 X", lambda: X.astype(np.float32), None, {}),
    ("a boolean label", None, lambda: Y > 0, {}),
    ("a pandas frame with nullable dtypes",
     lambda: pd.DataFrame(X).astype("Float64").mask(X > 3, pd.NA), None, {}),
    ("a regression label far outside label_bounds", None, lambda: _with(X[:, 0], [3], 1e9),
     {"objective": "reg:squarederror", "label_bounds": (-5.0, 5.0)}),
    ("a DP bounds estimate with an all-NaN feature",
     lambda: _with(X, (slice(None), 0), np.nan), None,
     {"feature_bounds": _DROP, "bounds_epsilon": 0.5}),
]


@pytest.mark.parametrize("make_X, make_y, params",
                         [pytest.param(*c[1:], id=c[0]) for c in SAFE_CASES])
def test_private_values_outside_the_domain_train_as_documented(make_X, make_y, params,
                                                               clean_cluster):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. the DP bounds fallback's DPBoundsWarning
        booster = fit(make_X() if make_X else _SAME, make_y() if make_y else _SAME, **params)
    prediction = booster.predict(X)
    assert prediction.shape == (N_ROWS,) and np.isfinite(prediction).all()


def test_delta_zero_with_gaussian_releases_is_refused_naming_delta(clean_cluster):
    with pytest.raises(BudgetError, match=r"delta=0 cannot be met.*Give delta > 0"):
        fit(delta=0.0)


def test_budget_misuse_is_refused_and_spends_nothing(clean_cluster, tmp_path):
    client = _CLIENT["client"]
    with dask.config.set({"dpxgb.budget-file": str(tmp_path / "b.json")}):
        create_budget("small", epsilon=0.5, client=client)
        cases = [
            (lambda: fit(budget="none-such"), ValueError, "budget 'none-such' does not exist"),
            (lambda: fit(budget="small", epsilon=1.0), BudgetError, "refuses this fit"),
            (lambda: create_budget("small", 1.0, client=client), ValueError, "already exists"),
            (lambda: create_budget("", 1.0, client=client), ValueError, "budget must be"),
            (lambda: create_budget("x", 0.0, client=client), ValueError, "epsilon"),
            (lambda: create_budget("x", 1.0, delta=1.5, client=client), ValueError, "delta"),
            (lambda: create_budget("x", 1.0, accountant="gdp", client=client), ValueError,
             "accountant"),
        ]
        for call, error, pattern in cases:
            with pytest.raises(error, match=pattern):
                call()
        from dpxgb_dask import budget_status

        assert budget_status("small", client=client)["n_fits"] == 0


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    return tmp_path_factory.mktemp("model") / "model.json"


def _saved(client, path):
    if not path.exists():
        _CLIENT["client"] = client
        fit().save_model(path)
    return json.loads(path.read_text())


def _edit(path, tmp_path, change):
    model = _saved(_CLIENT["client"], path)
    change(model)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(model))
    return edited


MODEL_FILE_CASES = [
    ("missing file", lambda p, t: t / "absent.json", FileNotFoundError, "absent"),
    ("not JSON", lambda p, t: (t / "x.json").write_text("{oops") and t / "x.json", ValueError,
     "is not a JSON model file"),
    ("JSON of something else", lambda p, t: (t / "y.json").write_text("[1, 2]")
     and t / "y.json", ValueError, "not a dpxgb_dask model file"),
    ("edited epsilon", lambda p, t: _edit(p, t, lambda m: m["ledger"].update(epsilon=0.01)),
     PrivacyClaimError, "epsilon"),
    ("edited delta", lambda p, t: _edit(p, t, lambda m: m["ledger"].update(delta=1e-12)),
     PrivacyClaimError, "delta|releases"),
    ("a release removed", lambda p, t: _edit(
        p, t, lambda m: m["ledger"]["events"]["events"].pop()), PrivacyClaimError, "releases"),
    ("no ledger", lambda p, t: _edit(p, t, lambda m: m.pop("ledger")), PrivacyClaimError,
     "ledger"),
    ("hidden non-DP bounds", lambda p, t: _edit(
        p, t, lambda m: m["params"].update(feature_bounds="data")), PrivacyClaimError,
     "not DP"),
]


@pytest.mark.parametrize("make_path, error, pattern",
                         [pytest.param(*c[1:], id=c[0]) for c in MODEL_FILE_CASES])
def test_a_bad_model_file_is_refused(make_path, error, pattern, model_file, tmp_path,
                                     clean_cluster):
    _saved(_CLIENT["client"], model_file)
    with pytest.raises(error, match=pattern):
        load_model(make_path(model_file, tmp_path))


def test_signed_files_refuse_the_wrong_key_and_a_missing_signature(model_file, tmp_path,
                                                                   clean_cluster):
    _saved(_CLIENT["client"], model_file)
    booster = load_model(model_file)
    signed = tmp_path / "signed.json"
    booster.save_model(signed, key=b"k" * 32)
    for path, key, pattern in [(signed, b"x" * 32, "signature"), (model_file, b"k" * 32,
                                                                   "not signed"),
                               (signed, "", "key")]:
        with pytest.raises(ValueError, match=pattern):
            load_model(path, key=key)


ESTIMATOR_CASES = [
    ("predict before fit", lambda: DPXGBClassifier().predict(X), NotFittedError, "fit"),
    ("privacy_report before fit", lambda: DPXGBClassifier().privacy_report(), NotFittedError,
     "fit"),
    ("repeated public classes", lambda: DPXGBClassifier(
        feature_bounds=BOUNDS, classes=[0, 1, 1], **FAST).fit(X, Y), ValueError, "classes"),
    ("labels outside the public classes", lambda: DPXGBClassifier(
        feature_bounds=BOUNDS, classes=[0, 1], **FAST).fit(X, Y * 2), ValueError, "classes"),
    ("num_class for two classes", lambda: DPXGBClassifier(
        feature_bounds=BOUNDS, classes=[0, 1], dp_params={"num_class": 3}, **FAST).fit(X, Y),
     ValueError, "num_class"),
    ("feature_bounds by name without names", lambda: DPXGBClassifier(
        feature_bounds={"a": (0, 1)}, classes=[0, 1], **FAST).fit(X, Y), ValueError,
     "feature_bounds"),
    ("feature_bounds by name missing a column", lambda: DPXGBClassifier(
        feature_bounds={"a": (-4, 4), "b": (-4, 4)}, classes=[0, 1], **FAST).fit(
        pd.DataFrame(X, columns=["a", "b", "c"]), Y), ValueError, r"feature_bounds.*'c'"),
    ("feature_bounds naming an unknown column", lambda: DPXGBClassifier(
        feature_bounds={"a": (-4, 4), "b": (-4, 4), "c": (-4, 4), "d": (0, 1)},
        classes=[0, 1], **FAST).fit(pd.DataFrame(X, columns=["a", "b", "c"]), Y), ValueError,
     r"feature_bounds.*'d'"),
    ("regressor without label_bounds", lambda: DPXGBRegressor(
        feature_bounds=BOUNDS, **FAST).fit(X, X[:, 0]), ValueError, "label_bounds"),
    ("regressor with NaN in y", lambda: DPXGBRegressor(
        feature_bounds=BOUNDS, label_bounds=(-5, 5), **FAST).fit(X, _with(X[:, 0], 3, np.nan)),
     ValueError, "y|NaN"),
    ("classifier with inf in y", lambda: DPXGBClassifier(
        feature_bounds=BOUNDS, classes=[0, 1], **FAST).fit(X, _with(Y, 3, np.inf)),
     ValueError, "y|infinity"),
    ("preset unknown", lambda: DPXGBClassifier(feature_bounds=BOUNDS, preset="xgb",
                                               classes=[0, 1], **FAST).fit(X, Y),
     ValueError, "preset"),
]


@pytest.mark.parametrize("call, error, pattern",
                         [pytest.param(*c[1:], id=c[0]) for c in ESTIMATOR_CASES])
def test_estimator_misuse_gives_a_clear_error(call, error, pattern, clean_cluster):
    with pytest.raises(error, match=pattern):
        call()


PREDICT_CASES = [
    ("too few features", lambda m: m.predict(X[:, :2]), ValueError, "features"),
    ("too many features", lambda m: m.predict(np.c_[X, X]), ValueError, "features"),
    ("a missing named column", lambda m: m.predict(
        pd.DataFrame(X[:, :2], columns=["a", "b"])), ValueError, "c"),
    ("strings", lambda m: m.predict(np.full((N_ROWS, 3), "a", dtype=object)), ValueError,
     "float|X"),
    ("sparse, too few features", lambda m: m.predict(_sparse()[:, :2]), ValueError, "features"),
]


@pytest.mark.parametrize("call, error, pattern",
                         [pytest.param(*c[1:], id=c[0]) for c in PREDICT_CASES])
def test_predicting_on_bad_input_gives_a_clear_error(call, error, pattern, clean_cluster):
    model = DPXGBClassifier(feature_bounds=BOUNDS, classes=[0, 1], client=_CLIENT["client"],
                            **FAST).fit(pd.DataFrame(X, columns=["a", "b", "c"]), Y)
    with pytest.raises(error, match=pattern):
        call(model)


def test_the_suite_has_at_least_100_cases():
    n = (len(PARAMETER_CASES) + len(REGRESSION_CASES) + len(DATA_CASES) + len(SAFE_CASES)
         + 7 + 1 + len(MODEL_FILE_CASES) + 3 + len(ESTIMATOR_CASES) + len(PREDICT_CASES))
    assert n >= 100, n


# -- the cluster as it was ------------------------------------------------------------------


def _cluster_state(cluster, client):
    scheduler = cluster.scheduler

    def held():
        from dpxgb_dask.cluster import worker

        return sum(len(fits) for fits in worker._REGISTRY.values())

    plugin = scheduler.plugins.get("dpxgb")
    return {
        "tasks": sorted(map(str, scheduler.tasks)),
        "datasets": sorted(map(str, scheduler.extensions["publish"].datasets)),
        "topics": sorted(t for t in scheduler._broker._topics if "dpxgb" in t),
        "running": dict(getattr(plugin, "running", {})),
        "worker fits": sum(client.run(held).values()),
        "clients": len(scheduler.clients),
    }


@pytest.fixture
def clean_cluster(cluster, client):
    """Registers the plugins once (as the first fit of a cluster does), then checks that
    the case leaves the cluster as it found it."""
    from dpxgb_dask.cluster.scheduler import DPXGBSchedulerPlugin
    from dpxgb_dask.cluster.wire import PLUGIN_NAME
    from dpxgb_dask.cluster.worker import DPXGBWorkerPlugin

    client.register_plugin(DPXGBWorkerPlugin(), name=PLUGIN_NAME)
    client.register_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME)
    _CLIENT["client"] = client
    with dask.config.set({"dpxgb.budget-file": "/nonexistent/dpxgb-bad-inputs.json"}):
        before = _cluster_state(cluster, client)
        yield
        client.sync(client.scheduler.identity)  # let the last replies settle
        assert _cluster_state(cluster, client) == before
