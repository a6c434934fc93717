"""DQN family: validation, compile-once, every value head end to end, read-back, learning."""

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rljax import envs, replay
from rljax.agents import dqn, learner
from rljax.nets import q_heads

HEAD_SETTINGS = {"num_bins": 21, "v_min": 0.0, "v_max": 40.0}
TINY = dqn.Config(
    num_envs=4, buffer_size=400, batch_size=32, learning_starts=64, target_update_every=200,
    hidden=(32,),
)  # fmt: skip
HP = dqn.Hparams(lr=1e-3, gamma=0.9, eps_start=1.0, eps_end=0.05, eps_decay_steps=2000.0,
                 hl_sigma=0.75, reward_noise=0.0)  # fmt: skip


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("learning_starts", 16, "learning_starts=16"),
        ("target_update_every", 42, "multiple of num_envs"),
        ("buffer_size", 402, "multiple of num_envs"),
        ("n_step", 0, "n_step=0"),
        ("head", "mse", "dqn.head='mse' is invalid; allowed: a rljax.nets.q_heads.Head"),
    ],
)
def test_validate_names_the_bad_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        dqn.validate(dataclasses.replace(TINY, **{field: value}))


@pytest.mark.parametrize(
    "values, match",
    [
        ({"head": "mae"}, r"dqn.head='mae' is unknown; valid: mse, huber"),
        ({"head": "c51", "v_min": 0.0, "v_max": -1.0}, r"dqn.v_max=-1.0 is invalid"),
        ({"head": "huber", "huber_delta": 0.0}, r"dqn.huber_delta=0.0 is invalid"),
        ({"head": "qr", "num_bins": 1}, r"dqn.num_bins=1 is invalid"),
        ({"head": "mse", "nope": 1}, r"dqn.nope is not a field of rljax.agents.dqn.Config"),
    ],
)
def test_config_conversion_names_the_bad_field(values, match):
    with pytest.raises(ValueError, match=match):
        learner.config_from_dict(dqn.Config, "dqn", values)


def test_config_conversion_builds_the_head_once():
    """The name and its settings become one Head value; huber_delta reaches Huber and QR."""
    config = learner.config_from_dict(
        dqn.Config, "dqn", {"head": "huber", "huber_delta": 2.5, "hidden": [8, 8]}
    )
    assert config.head == q_heads.Huber(delta=2.5) and config.hidden == (8, 8)
    qr = learner.config_from_dict(dqn.Config, "dqn", {"head": "qr", "huber_delta": 0.5})
    assert qr.head == q_heads.QR(num_bins=51, kappa=0.5) and qr.head.dim == 51
    assert hash(config) != hash(qr)  # static jit argument: heads are hashable values


def test_update_compiles_once_and_is_deterministic():
    env = envs.make("CartPole-v1")
    config = dataclasses.replace(TINY, double=True, n_step=3)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(state):
        return dqn.update(config, env, state)

    state = dqn.init(config, env, jax.random.PRNGKey(0), HP)
    a, metrics = step(step(state)[0])
    b, _ = step(step(state)[0])
    chex.assert_trees_all_equal(a.params, b.params)
    assert int(a.step) == 2 and int(a.buffer.size) == 2
    assert np.isfinite(metrics["loss/value"]) and float(metrics["epsilon"]) < 1.0


def test_steps_before_learning_starts_leave_params_and_adam_untouched():
    env = envs.make("CartPole-v1")
    config = dataclasses.replace(TINY, max_grad_norm=1.0)  # 64 env steps = 16 updates of 4
    state = dqn.init(config, env, jax.random.PRNGKey(0), HP)
    chunk = jax.jit(lambda s, n: dqn.train_chunk(config, env, s, n), static_argnums=1)
    before, metrics = chunk(state, 15)
    assert np.all(np.asarray(metrics["loss/value"]) > 0)  # the losses were computed...
    chex.assert_trees_all_equal(before.params, state.params)  # ...and changed nothing
    chex.assert_trees_all_equal(before.opt_state, state.opt_state)
    after, _ = chunk(before, 1)  # the 16th update reaches learning_starts and steps
    count = [x for x in jax.tree.leaves(after.opt_state) if x.dtype == jnp.int32]
    assert [int(c) for c in count] == [1]
    assert not np.allclose(after.params["params"]["Dense_0"]["kernel"],
                           state.params["params"]["Dense_0"]["kernel"])  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(200)
@pytest.mark.parametrize("head", q_heads.HEADS)
def test_every_head_trains_end_to_end_on_cartpole(head):
    """Each head learns values of the right size on CartPole (+1 per step) with finite losses."""
    env = envs.make("CartPole-v1")
    config = dataclasses.replace(TINY, head=q_heads.make(head, **HEAD_SETTINGS), num_updates=500)
    dqn.validate(config)
    state = dqn.init(config, env, jax.random.PRNGKey(1), HP)
    run = jax.jit(functools.partial(dqn.train_chunk, config, env, num_updates=500))
    state, metrics = run(state)
    assert np.all(np.isfinite(metrics["loss/value"]))
    q = np.asarray(metrics["q/taken"])
    # +1 per step at γ = 0.9 over ~20-step episodes: true values ≈ 9 (< 1/(1-γ) = 10). Scalar
    # heads start near 0, categorical ones near the middle of the support (20): each must move
    # at least 3 closer to 9 within 2000 env steps.
    start, end = q[16:20].mean(), q[-20:].mean()
    assert abs(end - 9.0) < abs(start - 9.0) - 3.0, (head, start, end)


@pytest.mark.parametrize("head", q_heads.HEADS)
def test_heads_read_back_the_value_they_are_trained_on(head):
    """Terminal transitions with reward 3.7: every head's read-back Q converges to 3.7."""
    env = envs.make("CartPole-v1")
    config = dataclasses.replace(TINY, head=q_heads.make(head, **HEAD_SETTINGS))
    params = dqn.network(config, env).init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
    obs = jax.random.normal(jax.random.PRNGKey(1), (64, 4))
    batch = replay.NStep(
        obs, jnp.arange(64) % 2, jnp.full(64, 3.7), jnp.zeros(64), jnp.zeros((64, 4))
    )
    opt = optax.adam(1e-2)

    @jax.jit
    def fit(params):
        def _step(carry, _):
            p, s = carry
            grads = jax.grad(lambda p: dqn.loss_fn(p, p, config, env, batch, HP)[0])(p)
            updates, s = opt.update(grads, s)
            return (optax.apply_updates(p, updates), s), None

        return jax.lax.scan(_step, (params, opt.init(params)), None, length=1000)[0][0]

    out = dqn.network(config, env).apply(fit(params), obs)
    q = config.head.q_values(out)
    q_taken = np.take_along_axis(np.asarray(q), np.asarray(batch.action)[:, None], axis=1)
    np.testing.assert_allclose(q_taken, 3.7, atol=0.15)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_learning_regression_cartpole_two_seeds():
    """Seeded: DQN (MSE) on CartPole-v1, 2 seeds vmapped, 60k env steps each."""
    env = envs.make("CartPole-v1")
    config = dqn.Config(learning_starts=1000, target_update_every=500, num_updates=6000)
    hp = HP._replace(lr=1e-3, gamma=0.99, eps_decay_steps=20_000.0)
    hps = dqn.Hparams(*(np.full(2, h, np.float32) for h in hp))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    states = jax.vmap(functools.partial(dqn.init, config, env))(keys, hps)
    chunk = functools.partial(dqn.train_chunk, config, env, num_updates=6000)
    states, _ = jax.jit(jax.vmap(chunk))(states)
    stats = jax.jit(jax.vmap(functools.partial(dqn.evaluate, config, env)))(states, keys)
    returns = np.asarray(stats["episode/return"])
    # measured greedy returns [197.9, 214.4] (random policy: ~22; `dqn.evaluate`, 2026-11-28)
    assert np.all(returns > 100.0), returns


def _cartpole_huber_delta() -> float:
    """The Huber threshold ``configs/dqn.py:CartPole-v1`` gives ``--config.dqn.head=huber``."""
    from configs import dqn as dqn_configs

    return float(dqn_configs.get_config("CartPole-v1").dqn.huber_delta)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_learning_regression_cartpole_huber_at_the_config_delta():
    """Seeded: DQN with the Huber head at the CartPole config's threshold learns CartPole.

    At δ = 1 (the Atari value, where rewards are clipped to ±1 and the informative TD errors are
    of that size) every agent ended at 9.6, below a random policy (~22), with Q diverging: in
    CartPole every non-terminal step pays +1 whatever the action, so the only signal about the
    actions is in the rare terminal transitions, whose TD errors are the size of Q (tens); δ = 1
    caps their gradient at the weight of any other sample and the signal drowns.
    """
    env = envs.make("CartPole-v1")
    head = q_heads.make("huber", huber_delta=_cartpole_huber_delta())
    config = dqn.Config(learning_starts=1000, target_update_every=500, num_updates=6000, head=head)
    hp = HP._replace(lr=1e-3, gamma=0.99, eps_decay_steps=20_000.0)
    hps = dqn.Hparams(*(np.full(2, h, np.float32) for h in hp))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    states = jax.vmap(functools.partial(dqn.init, config, env))(keys, hps)
    chunk = functools.partial(dqn.train_chunk, config, env, num_updates=6000)
    states, metrics = jax.jit(jax.vmap(chunk))(states)
    stats = jax.jit(jax.vmap(functools.partial(dqn.evaluate, config, env)))(states, keys)
    returns = np.asarray(stats["episode/return"])
    q_late = np.abs(np.asarray(metrics["q/taken"])[:, -500:]).mean()
    assert q_late < 200.0, q_late  # true values are below 1/(1-γ) = 100
    assert np.all(returns > 100.0), returns  # measured [179.5, 363.9], 2026-11-28
