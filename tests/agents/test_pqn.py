"""rljax.agents.pqn: validation, compile-once, exact resume, population == solo, learning."""

import dataclasses
import functools

import chex
import jax
import numpy as np
import pytest

from rljax import envs
from rljax.agents import learner, pqn
from rljax.train import experiment

TINY = pqn.Config(num_envs=4, rollout_steps=8, num_epochs=2, num_minibatches=2, hidden=(16,),
                  num_updates=6)  # fmt: skip
HP = pqn.Hparams(lr=1e-3, gamma=0.99, lambda_=0.9, eps_start=1.0, eps_end=0.05,
                 eps_decay_steps=1000.0, max_grad_norm=10.0, reward_scale=0.1)  # fmt: skip


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("num_minibatches", 3, r"^pqn.num_minibatches=3 is invalid; allowed: a divisor of "
                               r"num_envs\*rollout_steps=32$"),
        ("num_envs", 0, r"^pqn.num_envs=0 is invalid; allowed: an integer >= 1$"),
        ("norm", "batch_norm", r"^pqn.norm='batch_norm' is unknown; valid: layer_norm, none$"),
        ("activation", "mish",
         r"^pqn.activation='mish' is unknown; valid: tanh, relu, gelu, swish$"),
        ("hidden", (), r"^pqn.hidden=\(\) is invalid; allowed: positive widths$"),
    ],
)  # fmt: skip
def test_validate_names_the_bad_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        pqn.validate(dataclasses.replace(TINY, **{field: value}))


@pytest.mark.parametrize(
    "name, value, allowed",
    [("lambda_", 1.5, "in [0, 1]"), ("max_grad_norm", 0.0, "> 0"), ("eps_end", -0.1, "in [0, 1]"),
     ("reward_scale", 0.0, "> 0")],
)  # fmt: skip
def test_bad_hparams_are_one_line_errors_before_anything_compiles(name, value, allowed):
    run = experiment.RunConfig(
        env_name="CartPole-v1", workdir="/nonexistent", total_timesteps=64,
        hparams=tuple({**HP._asdict(), name: value}.items()),
    )  # fmt: skip
    with pytest.raises(ValueError) as info:
        experiment.validate_run(run, pqn, TINY)
    assert str(info.value) == f"hparams.{name}={value!r} is invalid; allowed: {allowed}"


def test_targets_bootstrap_from_the_network_and_stop_at_terminals():
    """The rollout's targets are q_lambda_returns of its rewards and max_a Q(s'_t, a)."""
    env = envs.make("CartPole-v1")
    state = pqn.init(TINY, env, jax.random.PRNGKey(0), HP)
    _, traj, _ = jax.jit(
        lambda s: pqn.rollout_lib.rollout(
            env, lambda p, o, k: (pqn._act(TINY, env, p, o, k, 1.0)[0],) + (o[:, 0] * 0,) * 2,
            s.params, s.key, s.env, 40,
        )
    )(state)  # fmt: skip
    assert np.any(traj.terminated)  # random play ends CartPole episodes within 40 steps
    got = pqn.targets(TINY, env, state.params, traj, state.hparams)
    q = pqn.network(TINY, env).apply(state.params, traj.next_obs.reshape(-1, 4)).max(-1)
    q = np.asarray(q).reshape(40, 4)
    r, term = 0.1 * np.asarray(traj.reward), np.asarray(traj.terminated, np.float64)
    done = np.asarray(traj.terminated | traj.truncated, np.float64)
    want = np.zeros((40, 4))
    nxt = np.zeros(4)
    for t in reversed(range(40)):  # Peng's Q(λ) as a NumPy loop
        c = 0.0 if t == 39 else 1.0
        trace = 0.9 * (1 - done[t]) * c
        want[t] = r[t] + 0.99 * (1 - term[t]) * ((1 - trace) * q[t] + trace * nxt)
        nxt = want[t]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_update_compiles_once_and_is_deterministic():
    env = envs.make("CartPole-v1")
    state = pqn.init(TINY, env, jax.random.PRNGKey(0), HP)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(state):
        return pqn.update(TINY, env, state)

    a, m1 = step(state)
    a, m2 = step(a)
    b, _ = step(step(state)[0])
    chex.assert_trees_all_equal(a.params, b.params)
    assert int(a.step) == 2 and np.isfinite(float(m2["loss/value"]))
    assert float(m1["epsilon"]) == 1.0 and float(m2["epsilon"]) < 1.0


# A budget extended on resume changes an annealed learning rate's schedule: constant here.
RESUMABLE = dataclasses.replace(TINY, anneal_lr=False)


def _run(workdir, total, resume=False, num_seeds=2):
    run = experiment.RunConfig(
        env_name="CartPole-v1", workdir=str(workdir), num_seeds=num_seeds,
        total_timesteps=total * 32, chunk_updates=2, checkpoint_every=1, resume=resume,
        progress=False, hparams=tuple(HP._asdict().items()), sweep=(("lr", "1e-3,3e-3"),),
    )  # fmt: skip
    return experiment.run(pqn, RESUMABLE, run)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_resume_reproduces_the_uninterrupted_run_and_members_equal_solo_runs(tmp_path):
    """2 seeds x 2 learning rates: 6 updates straight == 4 updates, then resumed to 6; and
    population member 3 (lr 3e-3, seed 1) == that agent trained alone."""
    straight, _ = _run(tmp_path / "a", 6)
    _run(tmp_path / "b", 4)
    resumed, summary = _run(tmp_path / "b", 6, resume=True)
    assert summary.updates_done == 6
    chex.assert_trees_all_close(straight.params, resumed.params, rtol=1e-6, atol=1e-7)
    chex.assert_trees_all_equal(straight.env.env.obs, resumed.env.env.obs)

    env = envs.make("CartPole-v1")
    config = dataclasses.replace(RESUMABLE, num_updates=6)
    key = learner.learner_key(0, 1)  # member 3 is seed 1 of grid point 1: the key rule
    solo = pqn.init(config, env, key, HP._replace(lr=3e-3))
    solo, _ = jax.jit(functools.partial(pqn.train_chunk, config, env, num_updates=6))(solo)
    member = jax.tree.map(lambda x: x[3], straight.params)
    chex.assert_trees_all_close(member, solo.params, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_learning_regression_cartpole_two_seeds():
    """Seeded: PQN on CartPole-v1, 2 seeds vmapped, 16 envs x 32 steps x 100 updates each."""
    env = envs.make("CartPole-v1")
    config = pqn.Config(num_envs=16, rollout_steps=32, num_epochs=2, num_minibatches=4,
                        hidden=(64, 64), num_updates=100)  # fmt: skip
    hp = HP._replace(lr=1e-3, eps_decay_steps=20_000.0)
    hps = pqn.Hparams(*(np.full(2, h, np.float32) for h in hp))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    states = jax.vmap(functools.partial(pqn.init, config, env))(keys, hps)
    chunk = functools.partial(pqn.train_chunk, config, env, num_updates=100)
    states, _ = jax.jit(jax.vmap(chunk))(states)
    stats = jax.jit(jax.vmap(functools.partial(pqn.evaluate, config, env)))(states, keys)
    returns = np.asarray(stats["episode/return"])
    assert np.all(returns > MARGIN), returns


MARGIN = 100.0  # measured greedy returns [264.8, 339.8] (random policy: ~22), 2026-11-28
