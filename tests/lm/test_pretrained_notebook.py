"""Executes notebooks/pretrained_lm_tour.ipynb in quick mode with the checkpoint it builds."""

import pytest


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pretrained_tour_runs(run_notebook):
    outputs = run_notebook("pretrained_lm_tour.ipynb", timeout=800)
    assert "reloaded: qwen2" in outputs and "bit-identical: True" in outputs
    assert "GRPO steps: 2" in outputs and "RL pass@1" in outputs
    assert "round trip bit-identical: True" in outputs
