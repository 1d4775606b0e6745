"""What importing the package costs and binds (run in fresh interpreters)."""
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
