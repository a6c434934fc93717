"""Partially observable tasks: the hidden-velocity wrapper is the wrapped env, sliced."""

import jax
import numpy as np
import pytest

from rljax import envs
from rljax.envs import pomdp


@pytest.mark.parametrize("name", list(pomdp.HIDDEN_VELOCITY))
def test_hidden_velocity_is_the_full_env_with_dims_dropped(name):
    """Same keys and actions: every observation (reset, step, final) is the full one at
    ``keep``; rewards and episode ends are unchanged."""
    base, keep = pomdp.HIDDEN_VELOCITY[name]
    hidden, full = envs.make(name), envs.make(base)
    assert hidden.obs_shape == (len(keep),) and hidden.num_actions == full.num_actions
    key = jax.random.PRNGKey(0)
    s_h, s_f = envs.reset(hidden, key, 3), envs.reset(full, key, 3)
    np.testing.assert_array_equal(s_h.obs, s_f.obs[:, keep])
    dones = 0
    for t in range(60):  # random actions: CartPole episodes end within 60 steps
        k = jax.random.fold_in(key, t)
        if full.discrete:
            action = jax.random.randint(k, (3,), 0, full.num_actions)
        else:
            action = jax.random.uniform(k, (3, full.num_actions), minval=-2, maxval=2)
        s_h, r_h = envs.step(hidden, k, s_h, action)
        s_f, r_f = envs.step(full, k, s_f, action)
        np.testing.assert_array_equal(s_h.obs, s_f.obs[:, keep])
        np.testing.assert_array_equal(r_h.next_obs, r_f.next_obs[:, keep])
        np.testing.assert_array_equal(r_h.reward, r_f.reward)
        np.testing.assert_array_equal(r_h.done, r_f.done)
        dones += int(r_h.done.sum())
    if name.startswith("CartPole"):
        assert dones > 0  # the final observation of an ended episode was checked too


def test_observation_space_keeps_the_bounds_of_the_kept_dims():
    env = envs.make("CartPole-NoVel-v1")
    space = env.env.observation_space(env.params)
    full = envs.make("CartPole-v1").env.observation_space(env.params)
    np.testing.assert_array_equal(space.high, np.asarray(full.high)[[0, 2]])


@pytest.mark.parametrize("name", pomdp.MEMORY)
def test_memory_tasks_step(name):
    env = envs.make(name)
    state = envs.reset(env, jax.random.PRNGKey(0), 2)
    state, res = envs.step(env, jax.random.PRNGKey(1), state, np.zeros(2, np.int32))
    assert env.discrete and res.next_obs.shape == (2, *env.obs_shape)
    assert res.reward.dtype == np.float32
