"""Bad input to experiments/train.py: one line naming the flag/field and what is allowed.

Most cases go through the script's own ``parse`` in this process (no jax compile, no training);
a few run the real script as a subprocess to check the exit code and that no traceback
reaches the user. ``experiments/train_lm.py`` cases can join this pattern: see
``_parse_error``.
"""

import os
import subprocess
import sys

import pytest

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PPO = "--config=configs/ppo.py:CartPole-v1"
DQN = "--config=configs/dqn.py:CartPole-v1"
SQIRL = "--config=configs/sqirl.py:CartPole-v1"


@pytest.fixture(scope="module")
def train(load_entry):
    cwd = os.getcwd()
    os.chdir(ROOT)  # config paths are relative to the repository, as in the README
    try:
        yield load_entry("experiments/train.py")
    finally:
        os.chdir(cwd)


def _parse_error(parse, argv) -> str:
    """The one-line message of a ``ConfigError`` raised by ``parse(argv)`` (fails otherwise)."""
    with pytest.raises(cli.ConfigError) as info:
        parse(["train.py", *argv])
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return message


# (extra argv, substring the message must contain)
CASES = {
    # unknown keys list the valid ones
    "unknown top key": (
        [PPO, "--config.foo=1"],
        "unknown key 'foo' at the top level; valid: checkpoint_every",
    ),
    "unknown learner key": (
        [PPO, "--config.ppo.lr=1"],
        "unknown key 'lr' at ppo; valid: activation",
    ),
    "unknown hparam": ([PPO, "--config.hparams.tau=1"], "unknown key 'tau' at hparams; valid: "),
    "unknown sweep key": ([PPO, "--config.sweep.tau=1"], "unknown key 'tau' at sweep; valid: "),
    "unknown flag": ([PPO, "--bogus=1"], "unknown flag --bogus; valid: --config"),
    # types
    "int given text": ([PPO, "--config.num_seeds=abc"], "--config.num_seeds=abc"),
    "int given float": ([PPO, "--config.num_seeds=2.5"], "--config.num_seeds=2.5"),
    "float given text": ([PPO, "--config.hparams.lr=fast"], "--config.hparams.lr=fast"),
    "bool given text": ([PPO, "--config.resume=maybe"], "--config.resume=maybe"),
    "bool given int": ([PPO, "--config.progress=2"], "--config.progress=2"),
    # ranges of run fields
    "num_seeds 0": (
        [PPO, "--config.num_seeds=0"],
        "num_seeds=0 is invalid; allowed: an integer >= 1",
    ),
    "seed negative": ([PPO, "--config.seed=-1"], "seed=-1 is invalid; allowed: an integer in [0,"),
    "total_timesteps 0": ([PPO, "--config.total_timesteps=0"], "total_timesteps=0 is invalid"),
    "budget below one update": ([PPO, "--config.total_timesteps=10"], "below one update's"),
    "chunk_updates negative": ([PPO, "--config.chunk_updates=-1"], "chunk_updates=-1 is invalid"),
    "checkpoint_every 0": ([PPO, "--config.checkpoint_every=0"], "checkpoint_every=0 is invalid"),
    "env unknown": ([PPO, "--config.env_name=Pong"], "env_name='Pong' is unknown; valid: CartPole"),
    "learner unknown": (
        [PPO, "--config.learner=a2c"],
        "learner='a2c' is unknown; valid: ppo, dqn, sqirl",
    ),
    # hyperparameters (NaN/inf included)
    "lr 0": ([PPO, "--config.hparams.lr=0"], "hparams.lr=0.0 is invalid; allowed: > 0"),
    "lr negative": ([PPO, "--config.hparams.lr=-1e-3"], "hparams.lr=-0.001 is invalid"),
    "lr nan": ([PPO, "--config.hparams.lr=nan"], "hparams.lr=nan is invalid"),
    "lr inf": ([PPO, "--config.hparams.lr=inf"], "hparams.lr=inf is invalid"),
    "gamma > 1": ([PPO, "--config.hparams.gamma=1.5"], "hparams.gamma=1.5 is invalid"),
    "gae_lambda < 0": ([PPO, "--config.hparams.gae_lambda=-0.1"], "hparams.gae_lambda=-0.1"),
    "clip_eps negative": ([PPO, "--config.hparams.clip_eps=-0.2"], "hparams.clip_eps=-0.2"),
    "sweep not numbers": ([PPO, "--config.sweep.lr=1e-4,fast"], "not a comma-separated list"),
    "sweep value out of range": ([PPO, "--config.sweep.lr=1e-4,-1e-3"], "hparams.lr=-0.001"),
    # learner static settings
    "minibatches do not divide": ([PPO, "--config.ppo.num_minibatches=3"], "does not divide"),
    "num_envs 0": ([PPO, "--config.ppo.num_envs=0"], "ppo.num_envs=0 is invalid"),
    "num_epochs 0": ([PPO, "--config.ppo.num_epochs=0"], "ppo.num_epochs=0 is invalid"),
    "activation unknown": ([PPO, "--config.ppo.activation=mish"], "ppo.activation='mish'"),
    "hidden zero width": ([PPO, "--config.ppo.hidden=(0,)"], "ppo.hidden=(0,) is invalid"),
    "max_grad_norm 0": ([PPO, "--config.ppo.max_grad_norm=0.0"], "ppo.max_grad_norm=0.0"),
    "dqn head unknown": ([DQN, "--config.dqn.head=bogus"], "dqn.head='bogus'"),
    "dqn eps_start > 1": ([DQN, "--config.hparams.eps_start=1.5"], "hparams.eps_start=1.5"),
    "dqn batch 0": ([DQN, "--config.dqn.batch_size=0"], "dqn.batch_size=0"),
    "sqirl lr 0": ([SQIRL, "--config.hparams.lr=0"], "hparams.lr=0.0 is invalid"),
    # config file
    "config missing": ([], "--config is required"),
    "config file absent": (["--config=configs/nope.py"], "configs/nope.py is not a file"),
    "config not python": (["--config=README.md"], "README.md is not a Python config file"),
    "config arg unknown": (["--config=configs/ppo.py:Pong"], "configs/ppo.py:Pong is unknown"),
    # devices
    "cpu_devices 0": ([DQN, "--cpu_devices=0"], "--cpu_devices=0 is invalid"),
    "cpu_devices do not divide": ([DQN, "--cpu_devices=3"], "--cpu_devices=3 does not divide"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_naming_it(train, case):
    argv, expected = CASES[case]
    assert expected in _parse_error(train.parse, argv)


def test_workdir_that_is_a_file_or_under_one(train, tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    assert "is a file; allowed: a directory path" in _parse_error(
        train.parse, [PPO, f"--workdir={path}"]
    )
    assert "lies under the file" in _parse_error(train.parse, [PPO, f"--workdir={path}/run"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_workdir(train, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert "is not writable" in _parse_error(train.parse, [PPO, f"--workdir={locked}/run"])


def test_good_input_parses(train, tmp_path):
    module, learner_config, run = train.parse(
        ["train.py", DQN, "--config.num_seeds=4", "--cpu_devices=2", f"--workdir={tmp_path}/r"]
    )
    assert module.__name__.endswith("dqn") and run.num_seeds == 4 and run.mesh.shape == (2,)


def test_config_sets_the_mesh_and_the_sharding_rules(train, tmp_path):
    """The mesh block of a config file: shape and axes over the process's devices, rules by
    name; a bad name or shape stops in one line."""
    from rljax.parallel import learner_axis

    argv = ["train.py", PPO, f"--workdir={tmp_path}/r", "--config.mesh.rules=seeds_and_envs"]
    _, _, run = train.parse(
        [*argv, "--config.mesh.shape=(-1,1)", "--config.mesh.axes=('seeds','data')"]
    )
    assert run.mesh.shape == (-1, 1) and run.mesh.axes == ("seeds", "data")
    assert run.sharding_rules == learner_axis.SEEDS_AND_ENVS
    assert "mesh.rules='nope' is unknown; valid: seeds, seeds_and_envs" in _parse_error(
        train.parse, [PPO, "--config.mesh.rules=nope"]
    )
    assert "mesh.shape=(3,)" in _parse_error(
        train.parse, [PPO, "--config.mesh.shape=(3,)", "--config.mesh.axes=('seeds',)"]
    )


def _script(*args, timeout=120):
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_as_a_subprocess_one_line_no_traceback_and_exit_codes(tmp_path):
    """The real command line: exit 2 and one ``error:`` line; ``--debug`` shows the traceback."""
    out = _script("experiments/train.py", PPO, "--config.hparams.gamma=2", f"--workdir={tmp_path}")
    assert out.returncode == cli.EXIT_USAGE
    assert out.stderr.strip().splitlines() == [
        "error: hparams.gamma=2.0 is invalid; allowed: in [0, 1]"
    ]
    assert not (tmp_path / "checkpoints").exists()
    out = _script("experiments/train.py", "--cpu_devices=two", PPO)
    assert out.returncode == cli.EXIT_USAGE and "Traceback" not in out.stderr
    assert (
        out.stderr.strip()
        == "error: --cpu_devices=two is invalid; allowed: an integer >= 1 or auto"
    )
    debug = _script("experiments/train.py", PPO, "--config.hparams.gamma=2", "--debug")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_unknown_flag_message_does_not_list_the_users_own_overrides(train):
    message = _parse_error(train.parse, [PPO, "--config.num_seeds=2", "--bogus=1"])
    assert "unknown flag --bogus" in message
    assert "--config.num_seeds" not in message  # the user's override is not a "valid flag"
    assert "--workdir" in message


def test_dqn_learning_starts_beyond_the_budget_is_refused_at_parse_time(train):
    message = _parse_error(
        train.parse, [DQN, "--config.total_timesteps=5000", "--config.dqn.learning_starts=6000"]
    )
    assert (
        "dqn.learning_starts=6000 is invalid; allowed: at most the run's 5000 env steps" in message
    )


def test_unwritable_workdir_is_refused_at_parse_time(train):
    assert "cannot write in /proc" in _parse_error(train.parse, [PPO, "--workdir=/proc/run"])
