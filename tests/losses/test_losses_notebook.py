"""Executes notebooks/losses_tour.ipynb top to bottom, as a user would in Colab."""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(240)
def test_losses_tour_notebook_runs(run_notebook):
    outputs = run_notebook("losses_tour.ipynb", timeout=200, quick=False)
    assert "NGRPO all-wrong advantage: -0.3333" in outputs
    assert "GSPO == GSPO-token gradient: True" in outputs
    assert "two-hot reads back 1.3" in outputs
