"""IQN: the implicit-quantile head of rljax.nets.q_heads in DQN and in the offline learners.

(The DQN tests that run every head, tests/agents/test_dqn.py, run IQN too: end to end on
CartPole and the read-back of a trained value.)
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import envs, replay
from rljax.agents import dqn, learner, offline
from rljax.losses import distributional
from rljax.nets import q_heads

HEAD = q_heads.make("iqn", num_bins=6, huber_delta=1.0)
OBS = jax.random.normal(jax.random.PRNGKey(1), (5, 4))


def _net_and_params():
    net = HEAD.network(3, (16,), "relu")
    return net, net.init(jax.random.PRNGKey(0), OBS[:1])


def test_network_returns_values_and_the_fractions_they_are_at():
    net, params = _net_and_params()
    mid = net.apply(params, OBS)
    assert mid.shape == (5, 3, 12) and HEAD.dim == 12
    np.testing.assert_allclose(mid[..., 6:], jnp.broadcast_to((jnp.arange(6) + 0.5) / 6, (5, 3, 6)))
    out = net.apply(params, OBS, rngs={"tau": jax.random.PRNGKey(2)})
    tau = np.asarray(out[..., 6:])
    assert np.all((tau > 0) & (tau < 1))
    assert np.all(tau == tau[:, :1])  # the actions of a state share their fractions
    assert len(np.unique(tau[:, 0])) == 30  # independent per state and per sample
    again = net.apply(params, OBS, rngs={"tau": jax.random.PRNGKey(2)})
    other = net.apply(params, OBS, rngs={"tau": jax.random.PRNGKey(3)})
    np.testing.assert_array_equal(out, again)
    assert not np.allclose(out, other) and not np.allclose(out[..., :6], mid[..., :6])
    np.testing.assert_allclose(HEAD.q_values(mid), jnp.mean(mid[..., :6], -1), rtol=1e-6)


def test_values_depend_on_tau_and_get_gradient_through_the_embedding():
    net, params = _net_and_params()
    grads = jax.grad(lambda p: jnp.sum(net.apply(p, OBS, rngs={"tau": jax.random.PRNGKey(4)})))(
        params
    )
    # the cosine embedding's Dense (Dense_1) gets gradient, so τ shapes the values
    assert np.any(np.asarray(grads["params"]["Dense_1"]["kernel"]))


def test_td_loss_by_hand():
    head = q_heads.IQN(num_tau=2, kappa=1.0)
    out_t = jnp.array([[[0.0, 1.0, 0.1, 0.8], [9.0, 9.0, 0.1, 0.8]]])  # [N=1, A=2, 2K]
    out_tp1 = jnp.array([[[0.0, 2.0, 0.3, 0.6], [1.0, 1.5, 0.3, 0.6]]])  # means 1, 1.25: a*=1
    loss = head.td_loss(out_t, jnp.array([0]), jnp.array([0.5]), jnp.array([0.5]), out_tp1,
                        None, hl_sigma=None)  # fmt: skip
    # targets 0.5 + 0.5 [1, 1.5] = [1, 1.25]; θ = [0, 1] at τ = [0.1, 0.8]:
    # i=0: 0.1 (H(1) + H(1.25)) / 2 = 0.1 (0.5 + 0.75) / 2; i=1: 0.8 (H(0) + H(.25)) / 2.
    np.testing.assert_allclose(loss, [0.0625 + 0.0125], rtol=1e-6)
    direct = distributional.implicit_quantile_huber(
        jnp.array([[0.0, 1.0]]), jnp.array([[0.1, 0.8]]), jnp.array([[1.0, 1.25]]), kappa=1.0
    )
    np.testing.assert_allclose(loss, direct, rtol=1e-6)
    # Double DQN: the given a_tp1 = 0 is used instead of the greedy 1.
    loss0 = head.td_loss(out_t, jnp.array([0]), jnp.array([0.5]), jnp.array([0.5]), out_tp1,
                         jnp.array([0]), hl_sigma=None)  # fmt: skip
    assert not np.allclose(loss0, loss)


def test_dqn_samples_fresh_fractions_per_key_and_midpoints_without_one():
    env = envs.make("CartPole-v1")
    config = dqn.Config(head=HEAD, hidden=(16,), double=True)
    params = dqn.network(config, env).init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
    batch = replay.NStep(OBS, jnp.arange(5) % 2, jnp.ones(5), jnp.full(5, 0.9), OBS[::-1])
    hp = dqn.Hparams(*(jnp.float32(x) for x in (1e-3, 0.9, 1.0, 0.05, 1e3, 0.75, 0.0)))
    loss = functools.partial(dqn.loss_fn, params, params, config, env, batch, hp)
    assert float(loss()[0]) == float(loss()[0])
    k1, k2 = jax.random.PRNGKey(1), jax.random.PRNGKey(2)
    assert float(loss(k1)[0]) == float(loss(k1)[0]) != float(loss(k2)[0])
    assert float(loss(k1)[0]) != float(loss()[0])


def test_config_block_builds_the_iqn_head_and_bad_settings_are_one_line():
    config = learner.config_from_dict(
        dqn.Config, "dqn", {"head": "iqn", "num_bins": 16, "huber_delta": 2.0}
    )
    assert config.head == q_heads.IQN(num_tau=16, kappa=2.0)
    with pytest.raises(ValueError, match=r"^dqn.num_bins=1 is invalid; allowed: an integer >= 2$"):
        learner.config_from_dict(dqn.Config, "dqn", {"head": "iqn", "num_bins": 1})
    with pytest.raises(ValueError, match=r"^dqn.head='iqm' is unknown; valid: .*, iqn$"):
        learner.config_from_dict(dqn.Config, "dqn", {"head": "iqm"})


def test_offline_iqn_uses_the_iqn_head_and_its_network():
    config = offline.Config(algo="iqn", num_quantiles=4, hidden=(8,))
    offline.validate(config)
    assert offline.head(config) == q_heads.IQN(num_tau=4, kappa=1.0)
    data_obs = jnp.zeros((1, 4))
    params = offline.networks(config)["q"].init(jax.random.PRNGKey(0), data_obs)
    out = offline.networks(config)["q"].apply(params, OBS)
    assert out.shape == (5, 2, 8)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_learning_regression_cartpole_two_seeds():
    """Seeded: DQN with the IQN head (configs/iqn.py's Acrobot settings) on CartPole-v1, 2 seeds
    vmapped, 60k env steps each, then greedy evaluation."""
    env = envs.make("CartPole-v1")
    config = dqn.Config(
        rollout_steps=2, batch_size=64, learning_starts=2000, target_update_every=20, tau=0.02,
        head=q_heads.make("iqn", num_bins=4, huber_delta=10.0), n_step=3, hidden=(64, 64),
        max_grad_norm=10.0, num_updates=3000,
    )  # fmt: skip
    hp = dqn.Hparams(lr=5e-4, gamma=0.99, eps_start=1.0, eps_end=0.01, eps_decay_steps=20_000.0,
                     hl_sigma=0.75, reward_noise=0.0)  # fmt: skip
    hps = dqn.Hparams(*(np.full(2, h, np.float32) for h in hp))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    states = jax.vmap(functools.partial(dqn.init, config, env))(keys, hps)
    chunk = functools.partial(dqn.train_chunk, config, env, num_updates=3000)
    states, _ = jax.jit(jax.vmap(chunk))(states)
    stats = jax.jit(jax.vmap(functools.partial(dqn.evaluate, config, env)))(states, keys)
    returns = np.asarray(stats["episode/return"])
    assert np.all(returns > MARGIN), returns


MARGIN = 60.0  # measured greedy returns [180.8, 118.2] (random policy: ~22), 2026-11-28
