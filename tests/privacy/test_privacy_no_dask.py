"""The privacy layer is pure Python + NumPy: importing it must not import Dask."""

import pathlib
import subprocess
import sys

import dpxgb_dask.privacy


def test_importing_privacy_does_not_import_dask(tmp_path):
    code = (
        "import sys\n"
        "import dpxgb_dask.privacy\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
        "assert not bad, bad\n"
    )
    # From a directory outside the checkout: a child's sys.path starts with its working
    # directory, where the checkout's uncompiled sources would shadow the installed package.
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_no_dask_in_privacy_sources():
    root = pathlib.Path(dpxgb_dask.privacy.__file__).parent
    for path in root.glob("*.py"):
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                assert "dask" not in stripped.replace("dpxgb_dask", ""), (path.name, stripped)
