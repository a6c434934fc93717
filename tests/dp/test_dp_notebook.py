"""Executes notebooks/dp_tour.ipynb end to end (as CI does)."""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(240)
def test_dp_tour_notebook_executes(run_notebook):
    outputs = run_notebook("dp_tour.ipynb", timeout=180, quick=False)
    assert "ROVER success prob 1.0 optimal 1.0" in outputs
