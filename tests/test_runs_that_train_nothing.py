"""Runs that would train nothing are refused by experiments/train.py in one line, before
anything compiles, for every learner of its ``LEARNERS`` registry and every config file that
names it (``configs/iqn.py`` is ``dqn`` with the IQN head):

- a budget below one update;
- ``learning_starts`` (every learner that waits for data before its first gradient step names
  it so) beyond the run's env steps;
- a replay buffer smaller than one batch;
- an action space the learner cannot act in. Whether it can is measured, not listed: the
  actions one traced update of the learner sends to the environment (``jax.eval_shape``, no
  compile) must be of the environment's kind, ``[B]`` integers for discrete actions, ``[B, D]``
  floats for continuous ones. Every environment the trainer accepts must pass, and every one it
  refuses must fail.

A learner added to the registry is covered by the same test; one without a config file, or
whose refusals are missing, fails it.
"""

import dataclasses
import glob
import importlib.util
import math
import os

import jax
import pytest

from rljax import cli, envs
from rljax.envs import gymnax_env
from rljax.train import population

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACTION_KINDS = {"discrete": "CartPole-v1", "continuous": "Pendulum-v1"}


def _config_files() -> dict[str, list[str]]:
    """``learner name -> [config file, ...]``: every file of ``configs/`` whose default config
    names the learner."""
    by_learner = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "configs", "*.py"))):
        spec = importlib.util.spec_from_file_location("config_" + os.path.basename(path), path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        config = module.get_config()
        if "learner" in config:  # the LM configs (grpo, grpo_math) run other entry points
            by_learner.setdefault(config.learner, []).append(os.path.relpath(path, ROOT))
    return by_learner


def _load_train():
    """experiments/train.py as a module (jax is imported already, so it sets no flags)."""
    spec = importlib.util.spec_from_file_location("entry_train", f"{ROOT}/experiments/train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TRAIN = _load_train()  # at collection: the registry is what the test is parametrized over
CONFIGS = _config_files()


@pytest.fixture
def train():
    cwd = os.getcwd()
    os.chdir(ROOT)  # config paths are relative to the repository, as in the README
    try:
        yield TRAIN
    finally:
        os.chdir(cwd)


def _refusal(train, argv) -> str:
    """The one-line message ``main`` stops with, before anything is built or compiled."""
    with pytest.raises(cli.ConfigError) as info:
        train.main(["train.py", *argv])
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return message


def _actions_fit(module, learner_config, env, points) -> bool:
    """Whether one traced update sends ``env`` actions of its kind (False if it cannot trace)."""
    seen = []
    step = gymnax_env.step_with_keys

    def spy(env_, keys, state, action):
        seen.append((action.dtype, action.shape))
        return step(env_, keys, state, action)

    hparams = jax.tree.map(lambda h: h[0], population.grid_hparams(module, points[:1]))
    gymnax_env.step_with_keys = spy
    try:
        state = jax.eval_shape(lambda k: module.init(learner_config, env, k, hparams),
                               jax.random.PRNGKey(0))  # fmt: skip
        jax.eval_shape(lambda s: module.update(learner_config, env, s), state)
    except (TypeError, ValueError, IndexError):  # actions of the wrong kind may not even trace
        return False
    finally:
        gymnax_env.step_with_keys = step
    assert seen, "the update never stepped the environment"
    if env.discrete:
        return all(jax.numpy.issubdtype(d, jax.numpy.integer) and len(s) == 1 for d, s in seen)
    return all(
        jax.numpy.issubdtype(d, jax.numpy.floating) and s[1:] == (env.num_actions,) for d, s in seen
    )


@pytest.mark.parametrize("name", list(TRAIN.LEARNERS))
def test_a_run_that_would_train_nothing_is_refused_in_one_line(train, name, tmp_path):
    module, block = TRAIN.LEARNERS[name]
    assert CONFIGS.get(name), f"no file in configs/ runs learner {name!r}"
    for config_file in CONFIGS[name]:
        base = [
            f"--config={config_file}",
            f"--workdir={tmp_path / 'run'}",
            "--config.progress=False",
        ]
        _, learner_config, run = train.parse(["train.py", *base])
        per = module.env_steps_per_update(learner_config)
        fields = {f.name for f in dataclasses.fields(learner_config)}

        # A budget below one update.
        if per > 1:
            message = _refusal(train, [*base, f"--config.total_timesteps={per - 1}"])
            assert f"total_timesteps={per - 1} is below one update's {per} env steps" in message

        # Learning that would start after the run ends; at the last update's env steps it fits.
        if "learning_starts" in fields:
            budget = math.ceil(learner_config.learning_starts / per) * per
            starts = f"--config.{block}.learning_starts="
            message = _refusal(
                train, [*base, f"--config.total_timesteps={budget}", f"{starts}{budget + per}"]
            )
            assert message.startswith(
                f"{block}.learning_starts={budget + per} is invalid; allowed: at most the run's "
                f"{budget} env steps per agent"
            ), message
            train.parse(
                ["train.py", *base, f"--config.total_timesteps={budget}", f"{starts}{budget}"]
            )

        # A replay buffer smaller than one batch.
        if {"buffer_size", "batch_size"} <= fields:
            size = learner_config.buffer_size
            message = _refusal(train, [*base, f"--config.{block}.batch_size={size + 1}"])
            assert message.startswith(
                f"{block}.buffer_size={size} is smaller than a batch; allowed: >= batch_size="
                f"{size + 1}"
            ), message

        # Action spaces: accepted exactly where the learner's actions are of the env's kind.
        accepted = []
        for kind, env_name in ACTION_KINDS.items():
            env = envs.make(env_name)
            argv = [*base, f"--config.env_name={env_name}"]
            try:
                _, config, run = train.parse(["train.py", *argv])
            except cli.ConfigError:
                message = _refusal(train, argv)
                assert env_name in message and kind in message, message
                config, ok = learner_config, False
            else:
                accepted.append(kind)
                ok = True
            grid = [dict(run.hparams)]
            config = dataclasses.replace(config, num_updates=max(1, run.total_timesteps // per))
            assert _actions_fit(module, config, env, grid) == ok, (config_file, env_name, ok)
        assert accepted, f"{config_file}: {name} is refused on every action space"
