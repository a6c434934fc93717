"""configs/pqn.py and configs/iqn.py: each shipped config parses, validates and trains a few
updates through experiments/train.py's own parsing; bad values are one-line errors."""

import json
import os

import numpy as np
import pytest

from rljax import cli
from rljax.agents import dqn, pqn
from rljax.nets import q_heads
from rljax.train import experiment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = [("pqn", "CartPole-v1"), ("pqn", "Acrobot-v1"), ("iqn", "CartPole-v1"),
           ("iqn", "Acrobot-v1")]  # fmt: skip
# A few updates of the shipped settings (one seed; IQN learns from its 4th update on).
TINY = {
    "pqn": ["--config.total_timesteps=4096", "--config.chunk_updates=1"],
    "iqn": [
        "--config.total_timesteps=200",
        "--config.dqn.learning_starts=64",
        "--config.dqn.rollout_steps=2",
        "--config.dqn.target_update_every=20",
    ],
}


@pytest.fixture(scope="module")
def train(load_entry):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        yield load_entry("experiments/train.py")
    finally:
        os.chdir(cwd)


@pytest.mark.slow  # over ~12 s on the 2-core CPU
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, env_name", SHIPPED)
def test_shipped_config_trains_a_few_updates(train, name, env_name, tmp_path):
    argv = ["train.py", f"--config=configs/{name}.py:{env_name}", "--config.num_seeds=1",
            "--config.progress=False", f"--workdir={tmp_path}", *TINY[name]]  # fmt: skip
    module, agent_config, run = train.parse(argv)
    assert module is {"pqn": pqn, "iqn": dqn}[name]
    if name == "iqn":
        assert isinstance(agent_config.head, q_heads.IQN)
    _, summary = experiment.run(module, agent_config, run)
    assert summary.updates_done == {"pqn": 2, "iqn": 10}[name] and not summary.interrupted
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["loss/value"]) for r in rows)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--config=configs/pqn.py:CartPole-v1", "--config.hparams.lambda_=1.5"],
         "hparams.lambda_=1.5 is invalid; allowed: in [0, 1]"),
        (["--config=configs/pqn.py:CartPole-v1", "--config.pqn.num_minibatches=7"],
         "pqn.num_minibatches=7 is invalid; allowed: a divisor of num_envs*rollout_steps=2048"),
        (["--config=configs/pqn.py:CartPole-v1", "--config.pqn.norm=batch"],
         "pqn.norm='batch' is unknown; valid: layer_norm, none"),
        (["--config=configs/iqn.py:CartPole-v1", "--config.dqn.num_bins=1"],
         "dqn.num_bins=1 is invalid; allowed: an integer >= 2"),
        (["--config=configs/iqn.py:CartPole-v1", "--config.dqn.huber_delta=0"],
         "dqn.huber_delta=0.0 is invalid; allowed: > 0"),
        (["--config=configs/iqn.py:CartPole-v1", "--config.dqn.batch_size=5000"],
         "dqn.learning_starts=2000 is invalid; allowed: an integer >= max(batch_size, n_step * "
         "num_envs) = 5000"),
        (["--config=configs/iqn.py:CartPole-v1", "--config.dqn.batch_size=100000"],
         "dqn.buffer_size=20000 is smaller than a batch; allowed: >= batch_size=100000"),
        (["--config=configs/iqn.py:CartPole-v1", "--config.dqn.tau=1.5"],
         "dqn.tau=1.5 is invalid; allowed: in (0, 1]"),
    ],
)  # fmt: skip
def test_bad_values_are_one_line_errors_before_anything_compiles(train, argv, message):
    with pytest.raises(cli.ConfigError) as info:
        train.parse(["train.py", *argv])
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["pqn", "iqn"])
def test_unknown_environment_lists_the_shipped_ones(train, name):
    with pytest.raises(cli.ConfigError) as info:
        train.parse(["train.py", f"--config=configs/{name}.py:Pong"])
    assert f"configs/{name}.py:Pong is unknown; valid: CartPole-v1, Acrobot-v1" in str(info.value)
