"""Executes notebooks/losses_tour.ipynb top to bottom, as a user would in Colab."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(240)
def test_losses_tour_notebook_runs(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "losses_tour.ipynb"), as_version=4)
    NotebookClient(
        nb, timeout=200, kernel_name="python3", resources={"metadata": {"path": ROOT}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
    )
    assert "NGRPO all-wrong advantage: -0.3333" in outputs
    assert "GSPO == GSPO-token gradient: True" in outputs
    assert "two-hot reads back 1.3" in outputs
