"""The gymnax adapter: truncation vs termination, episode statistics, all classic-control envs."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import envs
from rljax.agents import ppo
from rljax.envs import gymnax_env


def _short(name: str, max_steps: int) -> envs.Env:
    env = envs.make(name)
    return dataclasses.replace(env, params=env.params.replace(max_steps_in_episode=max_steps))


def _steps(env, num_envs, actions, key=0):
    state = envs.reset(env, jax.random.PRNGKey(key), num_envs)
    out = []
    for t, a in enumerate(actions):
        new_state, res = envs.step(env, jax.random.PRNGKey(100 + t), state, a)
        out.append((state, res, new_state))
        state = new_state
    return out


def test_unknown_env_lists_valid_names():
    with pytest.raises(ValueError, match="CartPole-v1.*Acrobot-v1"):
        envs.make("CartPole-v2")


def test_truncation_keeps_final_observation_and_resets():
    env = _short("CartPole-v1", 5)
    # Alternate actions so the pole stays up: no termination within 5 steps.
    actions = [jnp.array([t % 2, (t + 1) % 2]) for t in range(5)]
    steps = _steps(env, 2, actions)
    for _, res, new_state in steps[:-1]:
        assert not res.truncated.any() and not res.terminated.any()
        np.testing.assert_array_equal(res.next_obs, new_state.obs)
    state, res, new_state = steps[-1]
    assert res.truncated.all() and not res.terminated.any()
    # next_obs is the pre-reset final observation: one physics step from the previous obs ...
    assert np.all(np.abs(np.asarray(res.next_obs) - np.asarray(state.obs)) < 0.5)
    assert not np.allclose(res.next_obs, new_state.obs)
    # ... while the carried observation is a fresh reset (CartPole resets to |x| < 0.05).
    assert np.all(np.abs(np.asarray(new_state.obs)) <= 0.05)
    np.testing.assert_array_equal(res.episode_length, [5, 5])
    np.testing.assert_array_equal(res.episode_return, [5.0, 5.0])
    np.testing.assert_array_equal(new_state.episode_length, [0, 0])


def test_termination_is_flagged_and_episode_stats_valid_only_at_the_end():
    env = envs.make("CartPole-v1")
    steps = _steps(env, 3, [jnp.zeros(3, jnp.int32)] * 40)  # always push left: falls fast
    ended = [res for _, res, _ in steps if res.terminated.any()]
    assert ended, "pushing left for 40 steps must terminate"
    res = ended[0]
    assert not res.truncated[res.terminated].any()
    lengths = res.episode_length[res.terminated]
    np.testing.assert_array_equal(res.episode_return[res.terminated], lengths.astype(np.float32))
    summary = envs.episode_summary(
        envs.rollouts.EpisodeStats(res.episode_return, res.episode_length, res.done)
    )
    assert float(summary["episode/count"]) == float(np.sum(res.done))
    nothing = envs.episode_summary(
        envs.rollouts.EpisodeStats(res.episode_return, res.episode_length, jnp.zeros(3, bool))
    )
    assert np.isnan(nothing["episode/return"])


def test_ppo_bootstraps_from_final_observation_on_truncation_only():
    env = _short("CartPole-v1", 4)
    config = ppo.Config(num_envs=2, num_steps=4, hidden=(8,))
    hp = ppo.Hparams(1e-3, 0.2, 0.0, 0.5, 0.9, 1.0)
    state = ppo.init(config, env, jax.random.PRNGKey(0), hp)
    net = ppo.network(config, env)
    policy_fn = lambda p, o, k: ppo._act(config, env, p, o, k)  # noqa: E731
    _, traj, _ = envs.rollout(env, policy_fn, state.params, jax.random.PRNGKey(1), state.env, 4)
    assert traj.truncated[-1].all() and not traj.terminated.any()
    value, v_tp1 = ppo._values(config, state.params, traj)  # the batched pass after a rollout
    np.testing.assert_allclose(value, traj.value, rtol=1e-5, atol=1e-6)  # = the acting values
    adv, _ = ppo._advantages(traj, v_tp1, state.hparams)
    _, _, v_final = net.apply(state.params, traj.next_obs[-1])
    expected = traj.reward[-1] + 0.9 * v_final - traj.value[-1]
    np.testing.assert_allclose(adv[-1], expected, rtol=1e-5, atol=1e-6)
    # Termination instead: the same step with terminated=True must not bootstrap.
    traj_term = traj._replace(
        terminated=traj.terminated.at[-1].set(True), truncated=traj.truncated.at[-1].set(False)
    )
    adv_term, _ = ppo._advantages(traj_term, v_tp1, state.hparams)
    np.testing.assert_allclose(adv_term[-1], traj.reward[-1] - traj.value[-1], rtol=1e-5)


@pytest.mark.parametrize("name", envs.CLASSIC_CONTROL)
def test_every_classic_control_env_runs_a_jitted_rollout(name):
    env = envs.make(name)
    config = ppo.Config(num_envs=3, num_steps=8, hidden=(8,))
    state = ppo.init(
        config, env, jax.random.PRNGKey(0), ppo.Hparams(1e-3, 0.2, 0.0, 0.5, 0.99, 0.95)
    )
    policy_fn = lambda p, o, k: ppo._act(config, env, p, o, k)  # noqa: E731
    run = jax.jit(lambda s, k: envs.rollout(env, policy_fn, s.params, k, s.env, 8))
    _, traj, stats = run(state, jax.random.PRNGKey(1))
    assert traj.obs.shape == (8, 3, *env.obs_shape)
    assert traj.reward.shape == (8, 3) and np.isfinite(traj.reward).all()
    action_shape = (8, 3) if env.discrete else (8, 3, env.num_actions)
    assert traj.action.shape == action_shape


def test_observation_normalization_matches_numpy_statistics():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(16, 4)).astype(np.float32) for _ in range(5)]
    norm = envs.obs_norm_init((4,))
    for b in batches:
        norm = envs.obs_norm_update(norm, jnp.asarray(b))
    data = np.concatenate(batches)
    np.testing.assert_allclose(norm.mean, data.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(norm.var, data.var(0), rtol=1e-3)
    z = envs.normalize(norm, jnp.asarray(data))
    np.testing.assert_allclose(np.mean(z, 0), 0.0, atol=1e-3)
    np.testing.assert_allclose(np.std(z, 0), 1.0, atol=1e-3)


def test_step_with_keys_is_step_with_its_keys_split_per_environment():
    """The rollout splits every step's keys at once; ``step`` must be that split plus the step."""
    env = envs.make("CartPole-v1")
    state = gymnax_env.reset(env, jax.random.PRNGKey(0), 3)
    action = jnp.array([0, 1, 1])
    key = jax.random.PRNGKey(5)
    want_state, want = gymnax_env.step(env, key, state, action)
    got_state, got = gymnax_env.step_with_keys(env, jax.random.split(key, 3), state, action)
    for a, b in zip(
        jax.tree.leaves((want_state, want)), jax.tree.leaves((got_state, got)), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    # The keys are really used: at the time limit every environment resets from its key.
    last = state._replace(env_state=state.env_state.replace(time=state.env_state.time + 499))
    a_state, a = gymnax_env.step_with_keys(env, jax.random.split(key, 3), last, action)
    b_state, _ = gymnax_env.step_with_keys(
        env, jax.random.split(jax.random.PRNGKey(6), 3), last, action
    )
    assert a.truncated.all() and not np.array_equal(a_state.obs, b_state.obs)
