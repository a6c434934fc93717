"""The math front end on the pipeline: a run killed with SIGKILL after a checkpoint resumes to
the uninterrupted run's metrics rows and results file (bitwise), a resume that changes the
preset is refused naming the field, a second run on a live run's workdir is refused, a
population member equals its solo run, and an error gives the workdir lock back."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from test_math_rlvr import sample_files  # the GSM8K-layout sample files, written the same way

from rljax.io import workdir_lock
from rljax.io.metrics import MetricsWriter
from rljax.train import math_experiment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The gsm8k,tiny preset at a size a test affords: 8 updates in chunks of 1, a checkpoint after
# every chunk, a base fine-tuned for 40 steps so that some rewards are 1.
FLAGS = [
    "--config.run.steps=8", "--config.run.chunk_steps=1", "--config.sft.steps=40",
    "--config.run.prompt_length=64", "--config.eval.num_samples=2", "--config.checker.workers=1",
    "--config.progress=False",
]  # fmt: skip


def _command(train, test, workdir, *extra):
    return [
        sys.executable, "experiments/train_math.py", "--config=configs/grpo_math.py:gsm8k,tiny",
        f"--config.data.train_path={train}", f"--config.data.test_path={test}",
        f"--workdir={workdir}", *FLAGS, *extra,
    ]  # fmt: skip


def _run(cmd):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _checkpoints(workdir) -> list[int]:
    folder = os.path.join(workdir, "checkpoints")
    if not os.path.isdir(folder):
        return []
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit())


def _results(workdir) -> dict:
    with open(os.path.join(workdir, "results.json")) as f:
        results = json.load(f)
    results["config"].pop("workdir")  # the one field two workdirs must differ in
    return results


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_killed_math_run_resumes_to_the_uninterrupted_runs_files(tmp_path):
    train, test = sample_files(tmp_path)
    straight, killed = str(tmp_path / "straight"), str(tmp_path / "killed")
    done = _run(_command(train, test, straight))
    assert done.returncode == 0, done.stderr
    rows = MetricsWriter(straight).read()
    assert len(rows) == 8 and max(r["reward/mean"] for r in rows) > 0  # a real run: rewards

    proc = subprocess.Popen(_command(train, test, killed), cwd=ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 500
        while not _checkpoints(killed) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGSTOP)  # frozen after a checkpoint, its lock still held
        assert proc.poll() is None, "the run ended before it could be stopped"
        # A second run on the live run's workdir is refused before it builds anything.
        second = _run(_command(train, test, killed, "--config.resume=True"))
        assert second.returncode == 2 and "is in use by another run" in second.stderr
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    at_kill = _checkpoints(killed)
    assert at_kill and at_kill[-1] < 8, at_kill
    assert not os.path.exists(os.path.join(killed, "results.json"))

    changed = _run(
        _command(train, test, killed, "--config.resume=True", "--config.sweep.preset=rloo")
    )
    assert changed.returncode == 2 and "presets" in changed.stderr, changed.stderr
    resumed = _run(_command(train, test, killed, "--config.resume=True"))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from update {at_kill[-1]}" in resumed.stdout
    assert MetricsWriter(killed).read() == rows  # every row, bit for bit
    assert _results(killed) == _results(straight)  # pass@k, texts and checker counts

    # Finished: a rerun with resume does nothing and returns the same results.
    again = _run(_command(train, test, killed, "--config.resume=True"))
    assert again.returncode == 0 and "resumed" not in again.stdout, again.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_math_population_member_equals_its_solo_run(tmp_path):
    train, test = sample_files(tmp_path)
    base = dict(
        train_path=train, test_path=test, prompt_length=64, completion_length=8,
        prompts_per_step=2, group_size=4, steps=3, sft_steps=40, format_weight=0.5,
        final_problems=4, final_samples=2, checker_workers=1, progress=False,
    )  # fmt: skip
    pop = math_experiment.MathRunConfig(
        workdir=str(tmp_path / "pop"), presets=("grpo", "dr_grpo"), num_seeds=2, **base
    )
    solo = math_experiment.MathRunConfig(
        workdir=str(tmp_path / "solo"), presets=("dr_grpo",), **base
    )
    pop_results, solo_results = math_experiment.run(pop), math_experiment.run(solo)
    member = [r for r in MetricsWriter(pop.workdir).read() if (r["grid"], r["seed"]) == (1, 0)]
    alone = MetricsWriter(solo.workdir).read()
    assert len(member) == len(alone) == 3 and max(r["reward/mean"] for r in alone) > 0
    for got, want in zip(member, alone, strict=True):
        for key in ("reward/mean", "correct/mean"):  # the same samples, so the same rewards
            assert got[key] == want[key], (key, got, want)
        for key in ("loss/total", "grad_norm", "entropy", "kl/k3"):
            np.testing.assert_allclose(got[key], want[key], rtol=2e-4, atol=1e-6, err_msg=key)
    # learner_key(seed, s): seed 0 of dr_grpo starts from the solo run's key, so its final
    # pass@k (texts included) is the solo run's.
    assert pop_results["learners"]["dr_grpo/seed0"] == solo_results["learners"]["dr_grpo/seed0"]


def test_an_error_during_the_build_gives_the_workdir_lock_back(tmp_path):
    train, _ = sample_files(tmp_path)
    run = math_experiment.MathRunConfig(
        train_path=train, test_path=str(tmp_path / "missing.jsonl"), workdir=str(tmp_path / "w")
    )
    with pytest.raises((OSError, ValueError)):
        math_experiment.run(run)
    assert not workdir_lock.held(run.workdir)
