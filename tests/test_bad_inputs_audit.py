"""Faults and bad inputs found by a fresh audit: each is refused with one line before anything
compiles, or recovered from without loss.

Workdir lock, torn metrics line, missing/unreadable config.json on resume, DQN learning_starts
beyond the run, unwritable workdir, a population too large for memory, comma-separated integer
flags, file-size-limit errors and LM ``rl.eps_low`` outside [0, 1].
"""

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from rljax import cli
from rljax.agents import dqn, ppo
from rljax.agents.grpo import presets
from rljax.io import fingerprint, workdir_lock
from rljax.io.metrics import MetricsWriter
from rljax.train import experiment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HPARAMS = tuple(zip(ppo.Hparams._fields, (3e-4, 0.2, 0.01, 0.5, 0.99, 0.95), strict=True))

# ---- one run per workdir ---------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from rljax.io import workdir_lock
    workdir_lock.acquire(sys.argv[1])
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_a_workdir_in_use_is_refused_and_freed_when_its_process_dies(tmp_path):
    workdir = str(tmp_path / "run")
    env = {**os.environ, "PYTHONPATH": ROOT}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, workdir], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(workdir_lock.WorkdirInUseError) as info:
            workdir_lock.acquire(workdir)
        message = str(info.value)
        assert "\n" not in message and "is in use by another run" in message
        assert f"pid {holder.pid}" in message
    finally:
        holder.kill()  # SIGKILL: no clean-up runs, the OS drops the lock
        holder.wait()
    workdir_lock.acquire(workdir)  # free again
    assert workdir_lock.held(workdir)
    workdir_lock.acquire(workdir)  # re-entrant within a process
    workdir_lock.release(workdir)
    assert not workdir_lock.held(workdir)


def test_experiment_run_refuses_a_workdir_in_use_before_building(tmp_path):
    workdir = str(tmp_path / "run")
    env = {**os.environ, "PYTHONPATH": ROOT}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, workdir], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        run = experiment.RunConfig(
            env_name="CartPole-v1", workdir=workdir, num_seeds=1, total_timesteps=512,
            progress=False, hparams=HPARAMS,
        )  # fmt: skip
        tiny = ppo.Config(num_envs=4, num_steps=16, num_minibatches=2, hidden=(8,))
        with pytest.raises(workdir_lock.WorkdirInUseError):
            experiment.run(ppo, tiny, run)
        assert not os.path.exists(os.path.join(workdir, "metrics.jsonl"))
    finally:
        holder.kill()
        holder.wait()


# ---- metrics.jsonl with a torn last line -----------------------------------------------------


def test_a_torn_last_metrics_line_is_dropped_with_a_warning(tmp_path):
    writer = MetricsWriter(str(tmp_path))
    writer.write([{"update": 1, "x": 1.0}, {"update": 2, "x": 2.0}])
    with open(writer.jsonl_path, "a") as f:
        f.write('{"update": 3, "x"')  # a kill in the middle of a write
    with pytest.warns(UserWarning, match=r"metrics.jsonl: dropped a torn last line 3"):
        rows = writer.read()
    assert [r["update"] for r in rows] == [1, 2]
    with pytest.warns(UserWarning):
        writer.truncate(2)  # what a resume does: the file is whole again
    writer.write([{"update": 3, "x": 3.0}])
    assert [r["update"] for r in writer.read()] == [1, 2, 3]


def test_a_bad_metrics_line_in_the_middle_names_the_file_and_line(tmp_path):
    writer = MetricsWriter(str(tmp_path))
    with open(writer.jsonl_path, "w") as f:
        f.write('{"update": 1}\nnot json\n{"update": 3}\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl line 2 is not a JSON row"):
        writer.read()


# ---- resume without a readable config.json ---------------------------------------------------

CONFIG = {"seed": 0, "hparams.lr": 3e-4, "total_timesteps": 1000}


@pytest.mark.parametrize(
    "damage, match",
    [("missing", "config.json is missing"), ("corrupt", "config.json is unreadable")],
)
def test_resume_without_a_readable_config_is_refused(tmp_path, damage, match):
    (tmp_path / "checkpoints" / "4").mkdir(parents=True)
    fingerprint.save(str(tmp_path), CONFIG)
    if damage == "missing":
        os.remove(fingerprint.path(str(tmp_path)))
    else:
        with open(fingerprint.path(str(tmp_path)), "w") as f:
            f.write('{"seed": 0, "hparams.l')
    changed = {**CONFIG, "hparams.lr": 1e-3}  # used to resume silently with a changed lr
    with pytest.raises(fingerprint.ConfigChangedError, match=match) as info:
        fingerprint.resume_point(
            str(tmp_path), changed, mutable=(), num_updates=10, resume=True, log=print
        )
    assert "\n" not in str(info.value) and "resume=False" in str(info.value)


# ---- DQN whose learning would start after the run ends ---------------------------------------


def test_dqn_learning_starts_beyond_the_run_is_refused():
    run = experiment.RunConfig(
        env_name="CartPole-v1", workdir="", num_seeds=1, total_timesteps=5_000,
        hparams=tuple(zip(dqn.Hparams._fields, (2.5e-4, 0.99, 1.0, 0.05, 1e4, 0.75, 0.0),
                          strict=True)),
    )  # fmt: skip
    config = dqn.Config(learning_starts=10_000)
    with pytest.raises(ValueError, match=r"dqn.learning_starts=10000 is invalid; allowed: at most "
                       r"the run's 5000 env steps"):  # fmt: skip
        experiment.validate_run(run, dqn, config)
    experiment.validate_run(run, dqn, dqn.Config(learning_starts=1_000))  # fits: accepted


# ---- output directories and write failures ---------------------------------------------------


def test_an_unwritable_workdir_is_refused_at_parse_time():
    # os.access says "writable" for root; /proc takes no new files whoever asks
    with pytest.raises(cli.ConfigError, match=r"--workdir=/proc/rljax_run: cannot write in /proc"):
        cli.check_workdir("--workdir", "/proc/rljax_run")


def test_a_file_size_limit_is_one_error_line():
    e = OSError(errno.EFBIG, "File too large", "/runs/x/metrics.jsonl")
    line = cli.os_error_line(RuntimeError("wrapped"))
    assert line is None
    try:
        raise RuntimeError("during a write") from e
    except RuntimeError as wrapped:
        line = cli.os_error_line(wrapped)
    assert line.startswith("file too large writing /runs/x/metrics.jsonl")


# ---- a population too large for memory -------------------------------------------------------


def test_a_population_too_large_for_memory_is_refused_before_building(tmp_path):
    from rljax import envs
    from rljax.parallel import learner_axis

    env = envs.make("CartPole-v1")
    config = dqn.Config()
    per_learner = learner_axis.learner_state_bytes(dqn, config, env)
    assert per_learner > 10_000 * 4 * 4  # the replay buffer alone: 10k rows of two 4-float obs
    with pytest.raises(cli.ConfigError, match=r"num_seeds=100000000 is too large") as info:
        learner_axis.check_population(dqn, config, env, num_seeds=100_000_000, grid_points=1)
    assert "allowed: num_seeds <= " in str(info.value) and "\n" not in str(info.value)
    small = learner_axis.check_population(
        dqn, config, env, num_seeds=4, grid_points=1, available=2**40
    )
    assert small == learner_axis.CHUNK_COPIES * 4 * per_learner


# ---- comma-separated integer flags -----------------------------------------------------------


def test_int_list():
    assert cli.int_list("--seeds", "1,8, 64") == [1, 8, 64]
    with pytest.raises(cli.ConfigError, match=r"--seeds='1,x' has 'x'"):
        cli.int_list("--seeds", "1,x")
    with pytest.raises(cli.ConfigError, match=r"--seeds='1,0' has 0"):
        cli.int_list("--seeds", "1,0")


@pytest.mark.parametrize("script", ["scripts/bench_ppo.py", "scripts/bench_dqn.py"])
def test_bench_scripts_validate_seeds_before_starting(script):
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, script), "--seeds=1,x"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    assert proc.returncode == cli.EXIT_USAGE, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: --seeds='1,x' has 'x'; allowed: comma-separated integers >= 1, e.g. 1,8"
    ]
    assert "machine:" not in proc.stdout  # nothing started


# ---- LM clip range ---------------------------------------------------------------------------


def test_lm_eps_low_above_one_is_refused():
    values = presets.resolve("grpo", eps_low=1.5)
    with pytest.raises(ValueError, match=r"rl.eps_low=1.5 is invalid; allowed: in \[0, 1\]"):
        presets.check(values)
    presets.check(presets.resolve("grpo", eps_low=1.0))  # CISPO's "no lower clip"
