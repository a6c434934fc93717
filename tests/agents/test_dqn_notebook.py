"""Executes notebooks/dqn.ipynb in quick mode, as a user would run it top to bottom."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(400)
def test_dqn_notebook_runs(monkeypatch):
    monkeypatch.setenv("RLJAX_QUICK", "1")
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "dqn.ipynb"), as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": ROOT}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
    )
    assert "dqn[mse] CartPole-v1: done | 2 seeds" in outputs
    assert "dqn[hl_gauss] CartPole-v1: done | 2 seeds" in outputs
    assert "two-hot read-back: 37.3" in outputs
    assert "sqirl[k=1] CartPole-v1: done | 2 seeds" in outputs
    assert "greedy return per seed:" in outputs
