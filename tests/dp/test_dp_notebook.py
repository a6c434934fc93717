"""Executes notebooks/dp_tour.ipynb end to end (as CI does)."""

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.timeout(240)
def test_dp_tour_notebook_executes(monkeypatch):
    nb = nbformat.read(ROOT / "notebooks" / "dp_tour.ipynb", as_version=4)
    # The kernel must import this checkout's rljax even when it is not pip-installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "ROVER success prob 1.0 optimal 1.0" in outputs
