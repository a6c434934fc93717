"""experiments/train.py end to end: a tiny run with a sweep, and one-line errors for bad input."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = [
    "--config=configs/ppo.py:CartPole-v1",
    "--config.total_timesteps=1024",
    "--config.num_seeds=2",
    "--config.ppo.num_envs=4",
    "--config.ppo.num_steps=32",
    "--config.ppo.hidden=(16,)",
    "--config.progress=False",
]


def _train(*args, timeout=240):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "experiments/train.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tiny_run_with_a_sweep_writes_every_output(tmp_path):
    out = _train(*TINY, "--config.sweep.lr=1e-4,1e-3", f"--workdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ppo CartPole-v1: done | 2 seeds x 2 grid point(s)" in out.stdout
    for name in ("metrics.jsonl", "metrics.csv", "curves.png", "summary.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {r["grid"] for r in rows} == {0, 1}
    assert {r["lr"] for r in rows} == {1e-4, 1e-3}
    assert max(r["update"] for r in rows) == 8  # 1024 steps / (4 envs x 32 steps)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["final_score"]) == 2 and len(summary["final_score"][0]) == 2
    assert os.listdir(tmp_path / "checkpoints")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cpu_devices_shards_the_population_over_two_devices(tmp_path):
    dqn_tiny = ["--config=configs/dqn.py:CartPole-v1", "--config.total_timesteps=2000",
                "--config.num_seeds=2", "--config.dqn.learning_starts=500",
                "--config.dqn.hidden=(16,)", "--config.progress=False"]  # fmt: skip
    out = _train(*dqn_tiny, "--cpu_devices=2", f"--workdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "dqn CartPole-v1: done | 2 seeds x 1 grid point(s)" in out.stdout
    bad = _train(*dqn_tiny, "--cpu_devices=3", f"--workdir={tmp_path / 'bad'}", timeout=60)
    assert "error: --cpu_devices=3 does not divide the population of 2" in bad.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["final_score"][0]) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--config.foo=1"], "error: --config.foo: unknown key 'foo' at the top level; valid:"),
        (["--config.ppo.lr=1"], "unknown key 'lr' at ppo; valid: activation"),
        (["--config.hparams.lr=0"], "error: hparams.lr=0.0 is invalid; allowed: > 0"),
        (["--config.total_timesteps=0"], "error: total_timesteps=0 is invalid"),
        (["--config.ppo.num_minibatches=3"], "ppo.num_minibatches=3 does not divide the batch"),
        (["--config.env_name=Pong"], "error: env_name='Pong' is unknown; valid: CartPole-v1"),
        (
            ["--cpu_devices=0"],
            "error: --cpu_devices=0 is invalid; allowed: an integer >= 1 or auto",
        ),
    ],
)
def test_bad_input_is_one_clear_line(args, message, tmp_path):
    out = _train(*TINY, *args, f"--workdir={tmp_path}", timeout=60)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert message in last, out.stderr[-1500:]
    assert not (tmp_path / "checkpoints").exists()  # failed before anything ran


def test_unknown_config_argument_lists_environments():
    out = _train("--config=configs/ppo.py:Pong", timeout=60)
    assert out.returncode != 0
    assert "configs/ppo.py:Pong is unknown; valid: CartPole-v1, Acrobot-v1" in out.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_checkpoints_exits_143_and_says_interrupted(tmp_path):
    """A scheduler's SIGTERM: checkpoint, "interrupted" in the summary, exit code 128 + 15."""
    import signal
    import time

    args = [a for a in TINY if not a.startswith("--config.total_timesteps")]
    proc = subprocess.Popen(
        [sys.executable, "experiments/train.py", *args, "--config.total_timesteps=2000000",
         "--config.chunk_updates=1", f"--workdir={tmp_path}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.time() + 240
    while (
        not (tmp_path / "metrics.jsonl").exists() or not (tmp_path / "metrics.jsonl").stat().st_size
    ):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-1500:]
    assert "ppo CartPole-v1: interrupted" in stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["stop_signal"] == signal.SIGTERM
    assert summary["last_checkpoint"] == summary["updates"] > 0
