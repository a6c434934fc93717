"""SAC, TD3/DDPG and MPO (both action spaces): bad inputs before compiling, a tiny end-to-end run
per learner (compiles once, finite losses, a population member equals its solo run, split
chunks equal one chunk) and an exact resume through the trainer."""

import dataclasses
import functools

import chex
import jax
import numpy as np
import pytest

from rljax import envs
from rljax.agents import mpo, offpolicy, sac, td3
from rljax.nets import ACTIVATIONS
from rljax.train import experiment

SMALL = dict(num_envs=2, buffer_size=64, batch_size=8, learning_starts=8, hidden=(8,),
             grad_steps=2)  # fmt: skip
HP = {
    sac: dict(lr_actor=1e-3, lr_critic=1e-3, lr_alpha=1e-3, gamma=0.99, tau=0.05,
              init_alpha=1.0, target_entropy=-1.0),
    td3: dict(lr_actor=1e-3, lr_critic=1e-3, gamma=0.99, tau=0.05, explore_noise=0.1,
              target_noise=0.2, noise_clip=0.5),
    mpo: dict(lr_actor=1e-3, lr_critic=1e-3, lr_dual=1e-2, gamma=0.99, tau=0.05, eps_eta=0.1,
              eps_mean=0.01, eps_std=1e-3, init_eta=1.0, init_alpha=1.0, init_std=0.3),
}  # fmt: skip
# (learner, Config, environment): every variant once.
VARIANTS = {
    "sac": (sac, sac.Config(**SMALL), "Pendulum-v1"),
    "sac-discrete": (sac, sac.Config(**SMALL, discrete=True), "CartPole-v1"),
    "td3": (td3, td3.Config(**SMALL), "Pendulum-v1"),
    "ddpg": (td3, td3.Config(**SMALL, num_critics=1, policy_delay=1), "Pendulum-v1"),
    "mpo": (mpo, mpo.Config(**SMALL, num_samples=4), "Pendulum-v1"),
    "mpo-discrete": (mpo, mpo.Config(**SMALL, discrete=True), "Acrobot-v1"),
}


def _run(module, tmp_path, env_name="Pendulum-v1", config=None, **hparams):
    return experiment.RunConfig(
        env_name=env_name,
        workdir=str(tmp_path),
        total_timesteps=16,
        progress=False,
        hparams=tuple({**HP[module], **hparams}.items()),
    )


@pytest.mark.parametrize("module", [sac, td3, mpo])
@pytest.mark.parametrize(
    "field, value, match",
    [
        ("buffer_size", 4, r"buffer_size=4 is smaller than a batch; allowed: >= batch_size=8"),
        ("buffer_size", 65, r"buffer_size=65 is invalid; allowed: a multiple of num_envs=2"),
        ("learning_starts", 4, r"learning_starts=4 is invalid; allowed: an integer >= .* = 8"),
        ("num_envs", 0, r"num_envs=0 is invalid; allowed: an integer >= 1"),
        ("hidden", (), r"hidden=\(\) is invalid; allowed: positive widths"),
        ("activation", "mish", r"activation='mish' is unknown; valid: tanh, relu, gelu, swish"),
    ],
)
def test_validate_names_the_bad_field(module, field, value, match):
    name = module.__name__.rsplit(".", 1)[-1]
    with pytest.raises(ValueError, match=rf"^{name}\.{match}"):
        module.validate(dataclasses.replace(module.Config(**SMALL), **{field: value}))


def test_swish_is_x_times_sigmoid_x():
    """rejax's default activation, by hand: x / (1 + e^-x)."""
    x = np.array([-2.0, 0.0, 1.0, 3.0], np.float32)
    want = [-2.0 / (1.0 + np.e**2), 0.0, 1.0 / (1.0 + np.e**-1), 3.0 / (1.0 + np.e**-3)]
    np.testing.assert_allclose(ACTIVATIONS["swish"](x), want, rtol=1e-6)


@pytest.mark.parametrize("module", [sac, td3, mpo])
@pytest.mark.parametrize("tau", [0.0, 1.5, -0.1])
def test_tau_outside_unit_interval_is_refused(module, tau, tmp_path):
    run = _run(module, tmp_path, tau=tau)
    with pytest.raises(ValueError, match=rf"^hparams.tau={tau} is invalid; allowed: in \(0, 1\]$"):
        experiment.validate_run(run, module, module.Config(**SMALL))


@pytest.mark.parametrize(
    "module, config, env_name, match",
    [
        (sac, sac.Config(**SMALL), "CartPole-v1",
         r"^sac.discrete=False does not match CartPole-v1's discrete actions; set sac.discrete"),
        (sac, sac.Config(**SMALL, discrete=True), "Pendulum-v1",
         r"^sac.discrete=True does not match Pendulum-v1's continuous actions"),
        (td3, td3.Config(**SMALL), "Acrobot-v1", r"^td3.discrete=False does not match Acrobot"),
        (mpo, mpo.Config(**SMALL, discrete=True), "MountainCarContinuous-v0",
         r"^mpo.discrete=True does not match MountainCarContinuous-v0's continuous actions"),
    ],
)  # fmt: skip
def test_action_space_mismatch_is_refused_before_compiling(module, config, env_name, match,
                                                           tmp_path):  # fmt: skip
    with pytest.raises(ValueError, match=match) as info:
        experiment.validate_run(_run(module, tmp_path, env_name), module, config)
    assert "\n" not in str(info.value)


def test_example_row_matches_what_the_rollout_stores():
    """The replay row template has the rollout's shapes and dtypes (continuous and discrete)."""
    for name in ("Pendulum-v1", "CartPole-v1"):
        env = envs.make(name)
        row = offpolicy.example_row(env, 3)
        assert row.obs.shape == (3, *env.obs_shape)
        assert row.action.shape == ((3,) if env.discrete else (3, 1))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("variant", ["sac", "td3", "mpo", "sac-discrete", "ddpg", "mpo-discrete"])
@pytest.mark.slow  # compile-bound: 8-18 s per variant on the 2-core CPU
def test_tiny_population_trains(variant):
    """2 agents vmapped, 8 updates of 1 gradient step (learning starts at update 4), one compile:
    finite losses, the critics moved, every agent took its env steps."""
    module, config, env_name = VARIANTS[variant]
    env = envs.make(env_name)
    config = dataclasses.replace(config, num_updates=8, grad_steps=1)
    module.validate(config)
    module.validate_env(config, env)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    init = jax.vmap(functools.partial(module.init, config, env), in_axes=(0, None))
    states = init(keys, module.Hparams(**HP[module]))
    run = jax.jit(jax.vmap(functools.partial(module.train_chunk, config, env, num_updates=8)))
    trained, metrics = run(states)
    assert np.all(np.isfinite(np.asarray(metrics["loss/value"])))
    assert np.all(np.isfinite(np.asarray(metrics["loss/policy"])))
    assert np.asarray(trained.step).tolist() == [8, 8]
    assert np.asarray(trained.buffer.size).tolist() == [8, 8]
    moved = jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))),
                         trained.params["critic"], states.params["critic"])  # fmt: skip
    assert max(jax.tree.leaves(moved)) > 1e-4


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("variant", ["sac", "mpo-discrete"])
def test_population_member_equals_solo_and_chunks_compose(variant):
    """2 vmapped agents equal the same agents run alone, and 4 + 4 updates equal 8 in one chunk
    (what an exact resume relies on)."""
    chex.clear_trace_counter()
    module, config, env_name = VARIANTS[variant]
    env = envs.make(env_name)
    config = dataclasses.replace(config, num_updates=8)
    hp = module.Hparams(**HP[module])
    keys = jax.random.split(jax.random.PRNGKey(3), 2)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def chunk(state):
        return module.train_chunk(config, env, state, 4)

    solo = [chunk(chunk(module.init(config, env, k, hp))[0])[0] for k in keys]
    init = jax.vmap(functools.partial(module.init, config, env), in_axes=(0, None))(keys, hp)
    pop, _ = jax.jit(jax.vmap(functools.partial(module.train_chunk, config, env,
                                                num_updates=8)))(init)  # fmt: skip
    for i, state in enumerate(solo):
        member = jax.tree.map(lambda x: x[i], pop)  # noqa: B023
        chex.assert_trees_all_close(member.params, state.params, rtol=2e-5, atol=2e-6)
        chex.assert_trees_all_equal(member.buffer.data.action, state.buffer.data.action)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_resume_through_the_trainer_is_exact(tmp_path):
    """A SAC run stopped after 4 of 8 updates and resumed equals the uninterrupted run."""
    config = sac.Config(**SMALL)
    whole = dataclasses.replace(_run(sac, tmp_path / "whole"), chunk_updates=4)
    full, _ = experiment.run(sac, config, whole)
    first = dataclasses.replace(whole, workdir=str(tmp_path / "split"), total_timesteps=8)
    experiment.run(sac, config, first)
    resumed, summary = experiment.run(
        sac, config, dataclasses.replace(first, total_timesteps=16, resume=True)
    )
    assert summary.updates_done == 8
    chex.assert_trees_all_equal(resumed.params, full.params)
    chex.assert_trees_all_equal(resumed.buffer, full.buffer)


@pytest.fixture(scope="module")
def train(load_entry):
    return load_entry("experiments/train.py")


SHIPPED = [
    "sac.py:Pendulum-v1", "sac.py:MountainCarContinuous-v0", "sac.py:CartPole-v1",
    "sac.py:Acrobot-v1", "td3.py:Pendulum-v1", "td3.py:ddpg-Pendulum-v1",
    "td3.py:MountainCarContinuous-v0", "mpo.py:Pendulum-v1", "mpo.py:MountainCarContinuous-v0",
    "mpo.py:CartPole-v1", "mpo.py:Acrobot-v1",
]  # fmt: skip


@pytest.mark.parametrize("config", SHIPPED)
def test_every_shipped_config_parses_and_validates(train, config, tmp_path):
    module, agent_config, run = train.parse(
        ["train.py", f"--config=configs/{config}", f"--workdir={tmp_path}"]
    )
    assert module in (sac, td3, mpo) and run.total_timesteps <= 100_000
    if config.startswith("td3.py:ddpg"):
        assert agent_config.num_critics == 1 and agent_config.policy_delay == 1
        assert dict(run.hparams)["target_noise"] == 0.0


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--config=configs/sac.py:CartPole-v1", "--config.sac.discrete=False"],
         "sac.discrete=False does not match CartPole-v1's discrete actions"),
        (["--config=configs/td3.py:Pendulum-v1", "--config.hparams.tau=0"],
         "hparams.tau=0.0 is invalid; allowed: in (0, 1]"),
        (["--config=configs/mpo.py:Pendulum-v1", "--config.mpo.batch_size=512",
          "--config.mpo.buffer_size=256"], "mpo.buffer_size=256 is smaller than a batch"),
        (["--config=configs/td3.py:CartPole-v1"], "configs/td3.py:CartPole-v1 is unknown"),
    ],
)  # fmt: skip
def test_bad_command_lines_are_one_line_errors(train, argv, match, tmp_path):
    from rljax import cli

    with pytest.raises((cli.ConfigError, ValueError)) as info:
        train.parse(["train.py", *argv, f"--workdir={tmp_path}"])
    assert match in str(info.value) and "\n" not in str(info.value)
