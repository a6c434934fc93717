"""Executes notebooks/dqn.ipynb in quick mode, as a user would run it top to bottom."""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(400)
def test_dqn_notebook_runs(run_notebook):
    outputs = run_notebook("dqn.ipynb", timeout=300)
    assert "dqn[mse] CartPole-v1: done | 2 seeds" in outputs
    assert "dqn[hl_gauss] CartPole-v1: done | 2 seeds" in outputs
    assert "two-hot read-back: 37.3" in outputs
    assert "sqirl[k=1] CartPole-v1: done | 2 seeds" in outputs
    assert "greedy return per seed:" in outputs
