"""Executes notebooks/quickstart.ipynb in quick mode, as a user would run it top to bottom."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(300)
def test_quickstart_notebook_runs(monkeypatch):
    monkeypatch.setenv("RLJAX_QUICK", "1")
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "quickstart.ipynb"), as_version=4)
    NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": ROOT}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
    )
    assert "ppo CartPole-v1: done | 2 seeds" in outputs
    assert "checkpoint at update 16:" in outputs
