"""Executes notebooks/continuous_control_tour.ipynb in quick mode, top to bottom as a user would.

Three learners compile (SAC, TD3, MPO) and three greedy evaluations: about 9 min on the shared
2-core CPU at load 16 (2026-11-27), the compiles dominate.
"""

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1200)
def test_continuous_control_tour_runs(run_notebook):
    outputs = run_notebook("continuous_control_tour.ipynb", timeout=900)
    for name in ("sac", "td3", "mpo"):
        assert f"{name} Pendulum-v1: done | 2 seeds" in outputs
    for name in ("SAC", "TD3", "MPO"):
        assert f"{name}: greedy return per seed" in outputs
    assert "policy maps drawn: SAC, TD3, MPO" in outputs
