"""What importing the package costs and binds (run in fresh interpreters); the static rules
of the layout are in ``tests/test_architecture.py``."""
import subprocess
import sys


def _run(code, tmp_path):
    # from an empty directory: the installed package, not the checkout's sources
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_public_names_and_submodules_resolve_on_first_use(tmp_path):
    code = ("import dpxgb_dask; "
            "assert dpxgb_dask.sklearn.DPXGBClassifier is dpxgb_dask.DPXGBClassifier; "
            "assert dpxgb_dask.privacy.mechanisms.GaussianMechanism "
            "is dpxgb_dask.privacy.GaussianMechanism; "
            "from dpxgb_dask import *; from dpxgb_dask.privacy import *; "
            "assert callable(train) and callable(privacy_report); "
            "assert not hasattr(dpxgb_dask, 'no_such_name'); print('ok')")
    assert _run(code, tmp_path) == "ok"


def test_filters_set_after_import_override_the_packages_own(tmp_path):
    # the package makes PrivacyLeakWarning "always" shown at import; a user filter set
    # afterwards (here: turn every warning into an error) must win
    code = ("import warnings, dpxgb_dask; warnings.simplefilter('error'); "
            "from dpxgb_dask.privacy import NoiseSource\n"
            "try:\n    NoiseSource(seed=5)\nexcept dpxgb_dask.PrivacyLeakWarning:\n"
            "    print('raised')")
    assert _run(code, tmp_path) == "raised"


def test_importing_the_algorithm_loads_no_dask(tmp_path):
    code = ("import sys, dpxgb_dask.boosting.coordinator, dpxgb_dask.privacy; "
            "print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('dask', 'distributed')))")
    assert _run(code, tmp_path) == "[]"


def test_a_worker_imports_no_estimator_or_accountant_code(tmp_path):
    code = ("import sys, dpxgb_dask.cluster.worker; "
            "print(sorted(m for m in ('sklearn', 'dp_accounting', 'pandas', 'scipy') "
            "if m in sys.modules))")
    assert _run(code, tmp_path) == "[]"


def test_a_worker_imports_no_coordinator_code(tmp_path):
    """Issue 44, item 2: a worker runs ``partition/`` (the messages it applies, its rows'
    state and sums); the coordinator's ``boosting/`` stays in the scheduler."""
    code = ("import sys, dpxgb_dask.cluster.worker; "
            "print(sorted(m for m in sys.modules if m.startswith('dpxgb_dask.boosting')), "
            "'dpxgb_dask.partition.state' in sys.modules)")
    assert _run(code, tmp_path) == "[] True"


def test_the_command_line_loads_no_cluster_code_to_score_a_model(tmp_path):
    """``dpxgb predict`` and ``dpxgb report`` read a model file: the CLI reaches the rest
    of the package through its public names, which load on first use."""
    code = ("import sys, dpxgb_dask.cli, dpxgb_dask; dpxgb_dask.load_model; "
            "print(sorted(m for m in ('distributed', 'sklearn') if m in sys.modules))")
    assert _run(code, tmp_path) == "[]"
