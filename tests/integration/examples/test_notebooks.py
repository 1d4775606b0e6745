"""The example notebooks run top to bottom in a real Jupyter kernel (nbclient)."""
import json
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat "
                               "(pip install '.[test]')")
nbclient = pytest.importorskip("nbclient", reason="the notebook tests need nbclient "
                               "(pip install '.[test]')")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["quickstart.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    notebook = nbformat.read(path, as_version=4)
    # In a scratch directory: the model file it writes, and no checkout on sys.path.
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors
    data = [o.get("data", {}) for o in outputs]
    # The progress widget, the plot, and the privacy report as a table.
    assert any("application/vnd.jupyter.widget-view+json" in d for d in data)
    assert any("image/png" in d for d in data)
    assert any("text/html" in d and "noise_multiplier" in d["text/html"] for d in data)
    # the dashboard's dpxgb plot, embedded (its address: a plot the dashboard serves)
    frames = [d["text/html"] for d in data
              if "text/html" in d and "<iframe" in d["text/html"]]
    assert len(frames) == 1 and "/individual-dpxgb-fits" in frames[0]
    text = "".join(o.get("text", "") for o in outputs)
    plot = re.search(r"dpxgb plot: +(\S+)", text).group(1)
    assert plot.endswith("/individual-dpxgb-fits") and plot in frames[0]
    assert "epsilon = 1.0000 under the pld accountant" in text
    assert "PrivacyLeakWarning" not in text  # public bounds and classes throughout
    assert (tmp_path / "quickstart_model.json").exists()
    model = json.loads((tmp_path / "quickstart_model.json").read_text())
    assert model["ledger"]["epsilon"] == pytest.approx(1.0, rel=1e-3)
