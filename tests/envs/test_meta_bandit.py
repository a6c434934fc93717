"""The meta-RL bandit lifetime: means fixed (structure) or redrawn (no structure) per pull."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import envs
from rljax.envs import meta_bandit


def _lifetime(name, key, num_envs=64):
    """One lifetime plus one pull, fixed actions; returns the per-step means, rewards, dones."""
    env = envs.make(name)
    state = envs.reset(env, key, num_envs)
    means, rewards, dones, obs = [], [], [], [state.obs]
    for t in range(meta_bandit.HORIZON + 1):
        means.append(np.asarray(state.env_state.means))
        action = jnp.full((num_envs,), t % env.num_actions, jnp.int32)
        state, res = envs.step(env, jax.random.fold_in(key, t), state, action)
        rewards.append(np.asarray(res.reward))
        dones.append(np.asarray(res.terminated))
        obs.append(np.asarray(res.next_obs))
    return env, np.stack(means), np.stack(rewards), np.stack(dones), obs


def test_names_are_supported_and_described():
    for name, (k, _) in meta_bandit.NAMES.items():
        env = envs.make(name)
        assert name in envs.SUPPORTED_ENVS and name in envs.META_BANDIT
        assert env.discrete and env.num_actions == k and env.obs_shape == (k + 2,)
        assert env.max_steps == meta_bandit.HORIZON


def test_structure_on_keeps_the_means_for_the_lifetime_and_draws_new_ones_after():
    _, means, _, dones, _ = _lifetime("MetaBandit-K5-v0", jax.random.PRNGKey(0))
    h = meta_bandit.HORIZON
    np.testing.assert_array_equal(means[:h], np.broadcast_to(means[0], means[:h].shape))
    assert dones[: h - 1].sum() == 0 and dones[h - 1].all()  # the lifetime ends after H pulls
    assert (means[h] != means[0]).all()  # the next lifetime has new means
    assert 0.0 <= means.min() and means.max() <= 1.0


def test_structure_off_redraws_the_means_every_pull():
    _, means, _, _, _ = _lifetime("MetaBandit-K5-Redraw-v0", jax.random.PRNGKey(0))
    assert (np.diff(means, axis=0) != 0).all()  # every arm of every env, at every pull
    # Independent uniform draws: the means of consecutive pulls are uncorrelated.
    a, b = means[:-1].reshape(-1), means[1:].reshape(-1)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.1 and abs(a.mean() - 0.5) < 0.03


def test_rewards_are_bernoulli_of_the_pulled_arm_mean():
    """Over many pulls of arm 0 at fixed means, the success rate matches μ_0 per env."""
    env = envs.make("MetaBandit-K5-v0")
    state = envs.reset(env, jax.random.PRNGKey(3), 8)
    mu0 = np.asarray(state.env_state.means[:, 0])
    keys = jax.random.split(jax.random.PRNGKey(4), 4000)
    # Pull arm 0 from the same state many times (the step is pure), rewards [4000, 8].
    step = jax.vmap(lambda k: envs.step(env, k, state, jnp.zeros(8, jnp.int32))[1].reward)
    rewards = np.asarray(step(keys))
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    np.testing.assert_allclose(rewards.mean(0), mu0, atol=0.03)


def test_observation_is_last_action_last_reward_and_time():
    env, _, rewards, _, obs = _lifetime("MetaBandit-K5-v0", jax.random.PRNGKey(1), 4)
    k, h = env.num_actions, meta_bandit.HORIZON
    np.testing.assert_array_equal(obs[0], 0.0)  # before the first pull nothing is seen
    for t in range(1, h + 1):  # obs[t] follows pull t - 1 (action (t - 1) % K)
        np.testing.assert_array_equal(obs[t][:, :k], np.eye(k)[np.full(4, (t - 1) % k)])
        np.testing.assert_array_equal(obs[t][:, k], rewards[t - 1])
        np.testing.assert_allclose(obs[t][:, k + 1], t / h)


def test_bad_arm_count_is_refused():
    with pytest.raises(ValueError, match="num_arms=1 is invalid"):
        meta_bandit.MetaBandit(1, False)
