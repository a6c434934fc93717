"""Executes notebooks/lm_rlvr.ipynb in quick mode, top to bottom, as a user would."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(300)
def test_lm_rlvr_notebook_runs(monkeypatch):
    monkeypatch.setenv("RLJAX_QUICK", "1")
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "lm_rlvr.ipynb"), as_version=4)
    NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": ROOT}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
    )
    assert "base pass@1" in outputs and "RL pass@1" in outputs
    assert "| base |" in outputs  # the results table
    assert "base cached: True" in outputs
