"""experiments/train_lm.py end to end on the tiny config, and one-line errors for bad input."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _train(tmp_path, *args, timeout=240):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [
            sys.executable,
            "experiments/train_lm.py",
            "--config=configs/grpo.py:arithmetic,tiny",
            f"--config.data_dir={tmp_path}/data",
            f"--config.base_cache_dir={tmp_path}/base",
            f"--workdir={tmp_path}/run",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.timeout(300)
def test_tiny_run_writes_every_output(tmp_path):
    out = _train(tmp_path, "--config.preset=dapo")
    assert out.returncode == 0, out.stderr[-3000:]
    for name in (
        "results.md",
        "results.json",
        "pass_at_k.png",
        "training.png",
        "rl_metrics.jsonl",
        "rl_metrics.csv",
    ):
        assert (tmp_path / "run" / name).stat().st_size > 0, name
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["preset"] == "dapo" and results["rl_steps"] == 3
    assert set(results["results"]) == {"base", "RL (dapo)"}
    assert "| base |" in out.stdout


def test_bad_task_is_a_one_line_error(tmp_path):
    out = _train(tmp_path, "--config.task=chess", timeout=120)
    assert out.returncode != 0
    assert "task='chess' is not one of" in out.stderr
