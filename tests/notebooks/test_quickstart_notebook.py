"""Executes notebooks/quickstart.ipynb in quick mode, as a user would run it top to bottom."""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(300)
def test_quickstart_notebook_runs(run_notebook):
    outputs = run_notebook("quickstart.ipynb", timeout=240)
    assert "ppo CartPole-v1: done | 2 seeds" in outputs
    assert "checkpoint at update 16:" in outputs
