"""Agents through experiments/train_lm.py (configs/agent.py): bad limits are one line before
anything is built; a killed agentic run resumes to the uninterrupted run's metrics rows and
results file, bit for bit."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rljax import cli
from rljax.io.metrics import MetricsWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = "--config=configs/agent.py:calculator,tiny"


CASES = {
    "zero turns": (["--config.env.max_turns=0"], "env.max_turns=0 is invalid"),
    "zero action": (["--config.env.action_tokens=0"], "env.action_tokens=0 is invalid"),
    "no room for the tool's answer": (
        ["--config.env.observation_tokens=0"],
        "observation_tokens=0 with call_ids",
    ),
    "unknown env": (["--config.env.name=chess"], "env.name='chess' is unknown; valid: calculator"),
    "env on another task": (["--config.task=arithmetic"], "runs on task 'calculator'"),
    "demonstrations of a task without them": (
        ["--config.task=arithmetic", "--config.env.name=", "--config.max_level=0"],
        "sft.tool_frac=0.5 with task 'arithmetic'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_agent_limits_are_one_line_before_anything_runs(train_lm, case, tmp_path):
    extra, expected = CASES[case]
    argv = ["train_lm.py", AGENT, *extra, f"--workdir={tmp_path}/run"]
    with pytest.raises(cli.ConfigError) as info:
        train_lm.parse(argv)
    message = str(info.value)
    assert "\n" not in message and expected in message, message
    assert not (tmp_path / "run").exists()


FLAGS = ["--config.run.steps=6", "--config.run.chunk_steps=1", "--config.sft.steps=150",
         "--config.progress=False", "--config.base_cache_dir={base}"]  # fmt: skip


def _command(workdir, base, *extra):
    flags = [f.format(base=base) for f in FLAGS]
    return [sys.executable, "experiments/train_lm.py", AGENT, f"--workdir={workdir}", *flags,
            *extra]  # fmt: skip


def _checkpoints(workdir) -> list[int]:
    folder = os.path.join(workdir, "checkpoints")
    return (
        sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if os.path.isdir(folder) else []
    )


def _results(workdir) -> dict:
    with open(os.path.join(workdir, "results.json")) as f:
        results = json.load(f)
    for key in [k for k in results if k.endswith("seconds")]:
        results.pop(key)
    return results


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_killed_agent_run_resumes_to_the_uninterrupted_runs_files(tmp_path):
    base = str(tmp_path / "base")
    straight, killed = str(tmp_path / "straight"), str(tmp_path / "killed")
    run = lambda cmd: subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)  # noqa: E731
    done = run(_command(straight, base))
    assert done.returncode == 0, done.stderr
    rows = MetricsWriter(straight).read()
    assert len(rows) == 6 and max(r["tool/calls"] for r in rows) > 0  # the agent calls the tool

    proc = subprocess.Popen(_command(killed, base), cwd=ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 500
        while not _checkpoints(killed) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    at_kill = _checkpoints(killed)
    assert at_kill and at_kill[-1] < 6, at_kill
    resumed = run(_command(killed, base, "--config.resume=True"))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from update {at_kill[-1]}" in resumed.stdout
    assert MetricsWriter(killed).read() == rows  # every row, bit for bit
    assert _results(killed) == _results(straight)
