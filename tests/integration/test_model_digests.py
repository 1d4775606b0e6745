"""Behaviour pinned by the bytes of model files: with ``reproducible_noise=True`` a fit is a
function of its data and parameters, so the SHA-256 of its saved model file must not change
when code moves (issue 25: a refactor "changes no behaviour").

The digests in ``model_digests.json`` were recorded on the code before the change, in the
environment it names (the library versions whose arithmetic reaches the model file: NumPy,
SciPy and dp-accounting, which calibrates the noise). In another environment the digests
are not comparable, and the test says so and skips; record new ones there, on the commit
before the change under test, with::

    DPXGB_RECORD_DIGESTS=1 pytest tests/integration/test_model_digests.py

A change that is meant to alter models (a new default, a faster sampler drawing other
noise) records its new digests in the same commit, and says why: the reason, given as
``DPXGB_DIGEST_REASON="..."`` when recording, is stored beside the digests.

The bytes must not depend on the CPU either (issue 45): the digests recorded on one x86-64
machine held on another only once the budget scale was put on a grid and the stated ε
totals rounded up (NumPy's SIMD ``exp``/``log`` inside dp-accounting moved their last
digits). :func:`test_model_files_do_not_depend_on_numpys_simd_dispatch` computes the same
models in a process whose NumPy runs its baseline code only and compares the bytes.
"""
import hashlib
import json
import os
import pathlib
import platform
import sys

import numpy as np
import pandas as pd
import pytest

from dpxgb_dask import train

DIGESTS = pathlib.Path(__file__).with_name("model_digests.json")
RECORD = os.environ.get("DPXGB_RECORD_DIGESTS") == "1"
SEED = 2**200 + 2025  # > 128 bits: no guessable-seed warning

COLORS = ["red", "green", "blue", "grey", "pink"]


def environment():
    """What, besides the code under test, decides a model file's bytes."""
    from importlib.metadata import version

    return {"python": ".".join(map(str, sys.version_info[:2])),
            "machine": platform.machine(), "numpy": version("numpy"),
            "scipy": version("scipy"), "dp_accounting": version("dp-accounting")}


def _binary(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    logit = 2.0 * X[:, 0] - 1.5 * X[:, 1] + X[:, 2] * X[:, 3]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


def _regression(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.clip(3.0 * X[:, 0] + 2.0 * np.sin(2 * X[:, 1]) + rng.normal(scale=0.5, size=n),
                -10, 10)
    return X, y


def _multiclass(n=3000, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(n, 3)), axis=1).astype(float)
    return X, y


def _categorical(n=3000, seed=3):
    rng = np.random.default_rng(seed)
    color = rng.choice(COLORS, n).astype(object)
    color[rng.random(n) < 0.05] = None
    x = rng.normal(size=n)
    y = ((color == "red") | ((color == "blue") & (x > 0))).astype(float)
    return pd.DataFrame({"color": color, "x": x}), y


BOUNDS = np.tile([-4.0, 4.0], (5, 1)).tolist()
SEEDED = dict(random_state=SEED, reproducible_noise=True)

#: name -> (data, params): the default at three ε, every preset, and one fit of each
#: feature whose code the refactor moves.
CONFIGURATIONS = {
    "default-eps-0.01": (_binary, dict(epsilon=0.01, feature_bounds=BOUNDS)),
    "default-eps-1": (_binary, dict(epsilon=1.0, feature_bounds=BOUNDS)),
    "default-eps-10": (_binary, dict(epsilon=10.0, feature_bounds=BOUNDS)),
    "preset-dp-xgboost": (_binary, dict(preset="dp-xgboost", epsilon=1.0,
                                        feature_bounds=BOUNDS)),
    "preset-dpboost": (_binary, dict(preset="dpboost", epsilon=1.0, feature_bounds=BOUNDS)),
    "preset-maddock": (_binary, dict(preset="maddock", epsilon=1.0, feature_bounds=BOUNDS)),
    "preset-s-bdt": (_binary, dict(preset="s-bdt", epsilon=0.5, feature_bounds=BOUNDS)),
    "multiclass": (_multiclass, dict(objective="multi:softprob", num_class=3, epsilon=4.0,
                                     n_estimators=30, feature_bounds=BOUNDS)),
    "categorical": (_categorical, dict(epsilon=4.0, n_estimators=30, max_depth=3,
                                       feature_bounds=[[0, 0], [-3, 3]],
                                       categories={"color": COLORS})),
    "regression": (_regression, dict(objective="reg:squarederror", epsilon=1.0,
                                     label_bounds=(-10.0, 10.0), feature_bounds=BOUNDS)),
    "renyi-filter": (_binary, dict(preset="s-bdt", epsilon=1.0, n_estimators=20,
                                   filter_rounds=10, max_depth=3, feature_bounds=BOUNDS)),
    "partially-random": (_binary, dict(epsilon=4.0, split_method="partially_random",
                                       n_estimators=20, max_depth=4, feature_bounds=BOUNDS)),
    "noisy-histogram": (_binary, dict(epsilon=4.0, split_method="noisy_histogram",
                                      n_estimators=20, max_depth=4, feature_bounds=BOUNDS)),
    "dp-bounds-and-sketch": (_binary, dict(epsilon=2.0, bounds_epsilon=0.2,
                                           split_candidates="dp_sketch", n_estimators=20)),
}
#: A fit that continues the "default-eps-1" model (warm start).
WARM_START = "warm-start"


def _digest(booster, tmp_path, name):
    path = tmp_path / f"{name}.json"
    booster.save_model(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fit(name, client):
    data, params = CONFIGURATIONS[name]
    X, y = data()
    return train(dict(params, **SEEDED), X, y, client=client, n_partitions=3)


def compute_digests(client, directory):
    """{name: SHA-256 of its model file}: every configuration and the warm start."""
    import warnings

    from dpxgb_dask import PrivacyLeakWarning

    digests = {}
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # reproducible_noise says so
        warnings.simplefilter("ignore", UserWarning)
        for name in CONFIGURATIONS:
            models[name] = _fit(name, client)
            digests[name] = _digest(models[name], directory, name)
        X, y = _binary(seed=4)
        continued = train(dict(epsilon=0.5, n_estimators=20, **SEEDED), X, y, client=client,
                          xgb_model=models["default-eps-1"])
        digests[WARM_START] = _digest(continued, directory, WARM_START)
    return digests


@pytest.fixture(scope="module")
def recorded():
    if RECORD:
        return None
    stored = json.loads(DIGESTS.read_text())
    here = environment()
    if stored["environment"] != here:
        pytest.skip(f"the digests were recorded with {stored['environment']}, this is {here}: "
                    "record them again on the commit before the change (module docstring)")
    return stored["digests"]


@pytest.fixture(scope="module")
def limited_process(tmp_path_factory):
    """The same fits in a process whose NumPy runs its baseline code only (this module run
    as a script), started before this process's fits so that both run at once; None when
    this CPU has no SIMD dispatch to limit.

    Yields
    ------
    (list of str, subprocess.Popen) or None
        The dispatch targets turned off, and the process (its last line of output is the
        digests).
    """
    import subprocess

    limited = simd_features_beyond_baseline()
    if not limited:
        yield None
        return
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(limited))
    process = subprocess.Popen([sys.executable, __file__, str(tmp_path_factory.mktemp("limited"))],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        yield limited, process
    finally:  # (the test read its output; a process still running is not needed)
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture(scope="module")
def digests(cluster, tmp_path_factory, limited_process):
    from distributed import Client

    with Client(cluster) as client:
        return compute_digests(client, tmp_path_factory.mktemp("models"))


@pytest.mark.slow
def test_model_files_are_byte_identical(digests, recorded):
    assert len(digests) >= 12
    if RECORD:
        reason = os.environ.get("DPXGB_DIGEST_REASON", "the code moved; no model changed")
        DIGESTS.write_text(json.dumps({"environment": environment(), "digests": digests,
                                       "recorded_because": reason},
                                      indent=1, sort_keys=True) + "\n")
        return
    changed = sorted(name for name in digests if digests[name] != recorded.get(name))
    assert not changed, f"the model files of {changed} changed"


def simd_features_beyond_baseline():
    """NumPy's dispatch targets that this CPU runs beyond NumPy's baseline build."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


@pytest.mark.slow
def test_model_files_do_not_depend_on_numpys_simd_dispatch(digests, limited_process):
    """The same fits in a process (scheduler and workers) whose NumPy is limited to its
    baseline code, as on a CPU without AVX2 or AVX-512, write the same bytes."""
    if limited_process is None:
        pytest.skip("this CPU runs NumPy's baseline code only: no SIMD dispatch to limit")
    limited, process = limited_process
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-4000:]
    there = json.loads(out.strip().splitlines()[-1])
    assert there["limited"] == sorted(limited)  # NumPy took the setting
    changed = sorted(name for name in digests if digests[name] != there["digests"].get(name))
    assert not changed, (f"with NumPy limited to its baseline (not {limited}), the model "
                         f"files of {changed} differ")


if __name__ == "__main__":
    # The digests in this process, on a cluster of its own (threads: the scheduler and the
    # workers share this process's NumPy dispatch), for the test above.
    from distributed import Client, LocalCluster
    from numpy._core._multiarray_umath import __cpu_features__

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as local, Client(local) as local_client:
        found = compute_digests(local_client, pathlib.Path(sys.argv[1]))
    off = sorted(name for name in os.environ["NPY_DISABLE_CPU_FEATURES"].split()
                 if not __cpu_features__.get(name))
    print(json.dumps({"limited": off, "digests": found}))
