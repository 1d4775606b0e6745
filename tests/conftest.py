import numpy as np
import pytest

#: A seed of more than 128 bits (shorter seeds warn that the noise could be guessed).
SEED = 2**200 + 12345


def pytest_collection_modifyitems(items):
    """Run the files that hold a ``slow`` test first, each file's tests together and in
    their order: the test run's two processes (``-n 2 --dist loadfile``, whose files are
    handed out in this order) then end together, where a long file handed out last would
    leave one process working alone."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session")
def cluster():
    """A LocalCluster of 2 worker processes with 1 thread each, shared by the session.

    Tests kill workers, which their nannies restart. LocalCluster closes the nanny of a
    worker name that is missing ``lost-worker-timeout`` after a loss: with the default
    (15 s), an earlier kill's check could land while a later test's restarted worker of
    the same name is still registering, and close its nanny for good.
    """
    import dask
    from distributed import LocalCluster

    from dpxgb_dask.cluster import dashboard_plot

    dashboard_plot.register()  # (the dashboard's dpxgb plot: before the scheduler starts)

    # The lifecycle tests compare the scheduler's event counts before and after fits: a
    # topic's log must not reach its length limit (1000 by default) and rotate meanwhile.
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "1h",
                          "distributed.admin.low-level-log-length": 100_000}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture
def client(cluster):
    from distributed import Client

    with Client(cluster) as client:
        yield client


@pytest.fixture
def replies(monkeypatch):
    """Every scheduler reply the user's process unpacks (decoded), in order."""
    from dpxgb_dask.cluster import client as cluster_client

    seen = []
    original = cluster_client.unpack_reply

    def spy(reply):
        result = original(reply)
        seen.append(result)
        return result

    monkeypatch.setattr(cluster_client, "unpack_reply", spy)
    return seen


@pytest.fixture
def cli_table(tmp_path):
    """``write(X, y, bound)``: the rows as a CSV table (columns c0, c1, ..., target) and
    their public bounds (-bound, bound) as a JSON file for ``dpxgb train``; returns both
    paths."""
    import json

    import pandas as pd

    def write(X, y, bound=4):
        frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
        frame["target"] = y
        data = tmp_path / "train.csv"
        frame.to_csv(data, index=False)
        bounds = tmp_path / "bounds.json"
        bounds.write_text(json.dumps({f"c{i}": [-bound, bound] for i in range(X.shape[1])}))
        return data, bounds

    return write


@pytest.fixture
def seed():
    return SEED


@pytest.fixture(scope="session")
def classification_data():
    """(X, y, bounds): 4000 rows x 6 features with NaNs, a learnable binary target."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 6))
    logit = 2.0 * X[:, 0] - 1.5 * X[:, 1] + X[:, 2] * X[:, 3]
    y = (rng.random(4000) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    bounds = np.tile([-4.0, 4.0], (6, 1))
    return X, y, bounds


@pytest.fixture(scope="session")
def regression_data():
    """(X, y, bounds, label_bounds): 4000 rows x 5 features, y in [-10, 10]."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 5))
    y = np.clip(3.0 * X[:, 0] + 2.0 * np.sin(2 * X[:, 1]) + rng.normal(scale=0.5, size=4000),
                -10, 10)
    return X, y, np.tile([-4.0, 4.0], (5, 1)), (-10.0, 10.0)


def _random_histograms(rng, n_nodes, n_features, n_bins):
    from dpxgb_dask._core import empty_histograms

    hist = empty_histograms(n_nodes, n_features, n_bins)
    hist["sum_gradients"] = rng.normal(size=hist.shape)
    hist["sum_hessians"] = rng.uniform(0.1, 2.0, size=hist.shape)
    hist["count"] = rng.integers(1, 20, size=hist.shape)
    return hist


@pytest.fixture
def random_histograms():
    """``random_histograms(rng, n_nodes, n_features, n_bins)`` -> HISTOGRAM_DTYPE array of
    normal gradient sums, hessian sums in [0.1, 2) and counts in [1, 20)."""
    return _random_histograms


@pytest.fixture
def release_plan():
    """``release_plan(n_features, objective="binary:logistic", **params)`` -> the calibrated
    ReleasePlan of those parameters (bounds [0, 1] per feature unless given)."""
    from dpxgb_dask.boosting.calibration import make_plan
    from dpxgb_dask.params import resolve_params

    def make(n_features, objective="binary:logistic", **params):
        params.setdefault("feature_bounds", [[0.0, 1.0]] * n_features)
        return make_plan(resolve_params(objective, **params), n_features)

    return make


@pytest.fixture
def fit_streams():
    """``fit_streams(noise_seed, structure_seed=None)`` -> FitStreams keyed by those seeds
    (> 128 bits: no guessable-seed warning), the structure by the noise seed by default, in
    the public domain as a fit's."""
    from dpxgb_dask.boosting.streams import FitStreams
    from dpxgb_dask.privacy import NoiseSource

    def make(noise_seed, structure_seed=None):
        structure_seed = noise_seed if structure_seed is None else structure_seed
        return FitStreams(NoiseSource(2**200 + noise_seed),
                          NoiseSource(2**200 + structure_seed, secret=False))

    return make
