"""The brax adapter: the gymnax-style contract every learner relies on.

The first two tests run without brax; the rest need the extra (pip install -e ".[brax]") and are
skipped without it. They are slow: importing brax and compiling its physics take minutes on a
shared 2-core CPU.
"""

import dataclasses
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import environment

from rljax import envs
from rljax.envs import brax_env

NAME = "brax/inverted_pendulum"


def test_missing_brax_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "brax", None)  # "import brax" now raises ImportError
    monkeypatch.setitem(sys.modules, "brax.envs", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[brax\]"'):
        envs.make(NAME)


def test_unknown_names_list_tasks_and_backends():
    with pytest.raises(ValueError, match=r"inverted_pendulum.*generalized, positional"):
        envs.make("brax/inverted_pendulm")
    with pytest.raises(ValueError, match=r"valid: .*mjx"):
        envs.make("brax/inverted_pendulum/warp")
    with pytest.raises(ValueError, match=r"episode_length=0"):
        brax_env.make(NAME, episode_length=0)
    assert NAME in envs.SUPPORTED_ENVS and f"{NAME}/mjx" in envs.SUPPORTED_ENVS


@pytest.fixture(scope="module")
def env():
    pytest.importorskip("brax")
    return envs.make(NAME)


def _with_limit(env, steps):
    """The same task with a time limit of ``steps`` (a distinct name: Env hashes by name)."""
    params = environment.EnvParams(max_steps_in_episode=steps)
    return dataclasses.replace(env, name=f"{env.name}@{steps}", params=params, max_steps=steps)


@pytest.mark.slow
def test_spaces_shapes_and_dtypes(env):
    assert env.obs_shape == (4,) and not env.discrete and env.num_actions == 1
    assert (env.action_low, env.action_high, env.max_steps) == (-1.0, 1.0, 1000)
    state = envs.reset(env, jax.random.PRNGKey(0), 3)
    assert state.obs.shape == (3, 4) and state.obs.dtype == jnp.float32
    assert np.all(np.abs(state.obs) <= 0.011)  # brax resets within +-0.01 of upright
    state, res = envs.step(env, jax.random.PRNGKey(1), state, jnp.zeros((3, 1)))
    assert res.reward.dtype == jnp.float32 and res.reward.shape == (3,)
    assert res.terminated.dtype == jnp.bool_ and res.truncated.dtype == jnp.bool_
    assert res.next_obs.shape == (3, 4)
    np.testing.assert_array_equal(res.reward, 1.0)  # +1 per step upright


@pytest.mark.slow
def test_truncation_keeps_the_final_observation(env):
    """At the time limit: truncated, not terminated; next_obs is brax's own observation after
    the last step (stepped here directly), the state restarts from a fresh reset."""
    limit, num = 5, 2
    short = _with_limit(env, limit)
    key = jax.random.PRNGKey(3)
    state = envs.reset(short, key, num)
    raw = jax.vmap(env.env.brax_env.reset)(jax.random.split(key, num))
    zero = jnp.zeros((num, 1))
    for t in range(limit):
        state, res = envs.step(short, jax.random.PRNGKey(t), state, zero)
        raw = jax.vmap(env.env.brax_env.step)(raw, zero)
        last = t == limit - 1
        assert np.all(np.asarray(res.truncated) == last) and not np.any(res.terminated)
    np.testing.assert_allclose(res.next_obs, raw.obs, atol=1e-6)
    np.testing.assert_array_equal(res.episode_length, limit)
    np.testing.assert_allclose(res.episode_return, float(limit))
    assert np.all(np.abs(state.obs) <= 0.011)  # reset observation
    assert np.max(np.abs(res.next_obs - state.obs)) > 1e-4
    np.testing.assert_array_equal(state.episode_length, 0)
    np.testing.assert_array_equal(state.env_state.time, 0)


@pytest.mark.slow
def test_termination_restarts_and_clips_actions(env):
    """Full force one way tips the pole past 0.2 rad: terminated (not truncated), the final
    observation shows the angle, the running return restarts. Actions beyond [-1, 1] act as
    the bound."""
    num = 2
    state = envs.reset(env, jax.random.PRNGKey(5), num)
    clipped = state
    ended = None
    for t in range(200):
        key = jax.random.PRNGKey(100 + t)
        state, res = envs.step(env, key, state, jnp.ones((num, 1)))
        clipped, res_clip = envs.step(env, key, clipped, jnp.full((num, 1), 7.0))
        np.testing.assert_array_equal(res.next_obs, res_clip.next_obs)
        if np.any(res.done):
            ended = t
            break
    assert ended is not None and 0 < ended < 200
    i = int(np.argmax(np.asarray(res.done)))
    assert res.terminated[i] and not res.truncated[i]
    assert abs(float(res.next_obs[i, 1])) > 0.2  # pole angle past the limit
    assert int(res.episode_length[i]) == ended + 1
    assert float(state.episode_return[i]) == 0.0 and int(state.episode_length[i]) == 0
    assert np.all(np.abs(state.obs[i]) <= 0.011)
