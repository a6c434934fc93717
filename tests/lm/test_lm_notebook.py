"""Executes notebooks/lm_rlvr.ipynb in quick mode, top to bottom, as a user would."""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(300)
def test_lm_rlvr_notebook_runs(run_notebook):
    outputs = run_notebook("lm_rlvr.ipynb", timeout=240)
    assert "base pass@1" in outputs and "dapo pass@1" in outputs and "RL (grpo)" in outputs
    assert "| base |" in outputs  # the results table
    assert "base cached: True" in outputs
