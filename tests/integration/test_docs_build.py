"""The docs (``docs/``, MyST Markdown) build with Sphinx with warnings as errors: a broken
cross-reference, or a public object without a docstring (numpydoc's GL08), fails. (A file of
its own: the build takes about half a minute, which the test run's other process can share.)
"""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_docs_build_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-8000:]
    assert (tmp_path / "html" / "api.html").exists()
    assert (tmp_path / "html" / "generated" / "dpxgb_dask.boosting.splits.html").exists()
