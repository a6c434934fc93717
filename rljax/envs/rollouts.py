"""The one rollout every agent reuses: a ``lax.scan`` of batched env steps inside ``jit``.

Optionally keeps running observation statistics (Welford/Chan parallel update) and feeds the
policy normalized observations, like gym's ``NormalizeObservation`` wrapper but pure.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rljax.envs import gymnax_env
from rljax.types import EpisodeStats, Transition

# policy_fn(params, obs [B, ...], key) -> (action [B, ...], logp [B], value [B])
PolicyFn = Callable[[object, jax.Array, jax.Array], tuple[jax.Array, jax.Array, jax.Array]]


class ObsNorm(NamedTuple):
    """Running mean and variance of observations."""

    mean: jax.Array  # [*obs_shape]
    var: jax.Array  # [*obs_shape]
    count: jax.Array  # scalar float


def obs_norm_init(obs_shape: tuple[int, ...]) -> ObsNorm:
    """Statistics of no data: mean 0, variance 1, a tiny pseudo-count."""
    return ObsNorm(jnp.zeros(obs_shape), jnp.ones(obs_shape), jnp.asarray(1e-4))


def obs_norm_update(norm: ObsNorm, obs: jax.Array) -> ObsNorm:
    """Merges a batch ``[B, *obs_shape]`` into the running statistics (Chan et al. 1979)."""
    batch_mean = jnp.mean(obs, axis=0)
    batch_var = jnp.var(obs, axis=0)
    batch_count = obs.shape[0]
    delta = batch_mean - norm.mean
    total = norm.count + batch_count
    mean = norm.mean + delta * batch_count / total
    m2 = (
        norm.var * norm.count
        + batch_var * batch_count
        + delta**2 * norm.count * batch_count / total
    )
    return ObsNorm(mean, m2 / total, total)


def normalize(norm: ObsNorm, obs: jax.Array, clip: float = 10.0) -> jax.Array:
    """``clip((obs - mean) / sqrt(var + 1e-8), -clip, clip)``."""
    return jnp.clip((obs - norm.mean) / jnp.sqrt(norm.var + 1e-8), -clip, clip)


class RolloutState(NamedTuple):
    """Everything the environment side carries between rollouts."""

    env: gymnax_env.EnvState
    obs_norm: ObsNorm


def rollout_init(env: gymnax_env.Env, key: jax.Array, num_envs: int) -> RolloutState:
    """Resets ``num_envs`` environments and starts empty observation statistics."""
    return RolloutState(gymnax_env.reset(env, key, num_envs), obs_norm_init(env.obs_shape))


def rollout(
    env: gymnax_env.Env,
    policy_fn: PolicyFn,
    policy_params,
    key: jax.Array,
    state: RolloutState,
    num_steps: int,
    *,
    normalize_obs: bool = False,
    policy_noise: Callable[[jax.Array, int, int], jax.Array] | None = None,
) -> tuple[RolloutState, Transition, EpisodeStats]:
    """Runs ``num_steps`` batched steps with ``policy_fn`` as one ``lax.scan``.

    Args:
      env: static adapter from ``gymnax_env.make``.
      policy_fn: ``(params, obs [B, ...], key) -> (action, logp [B], value [B])``.
      policy_params: parameters passed to ``policy_fn``.
      key: PRNG key for the whole rollout.
      state: rollout state with B environments.
      num_steps: T, static.
      normalize_obs: feed the policy running-normalized observations (and store them).
      policy_noise: optional ``(key, T, B) -> noise [T, B, ...]``: the policy's randomness for
        the whole rollout in one draw; ``policy_fn`` then gets step t's noise instead of a key.

    Returns:
      The new rollout state, ``Transition`` with leaves ``[T, B, ...]`` (observations as the
      policy saw them) and ``EpisodeStats`` ``[T, B]``.
    """

    def _step(carry: RolloutState, inputs):
        act_in, env_keys = inputs  # a key, or this step's policy_noise
        obs_norm = carry.obs_norm
        obs = carry.env.obs
        if normalize_obs:
            obs_norm = obs_norm_update(obs_norm, obs)
            obs = normalize(obs_norm, obs)
        action, logp, value = policy_fn(policy_params, obs, act_in)
        env_state, res = gymnax_env.step_with_keys(env, env_keys, carry.env, action)
        next_obs = normalize(obs_norm, res.next_obs) if normalize_obs else res.next_obs
        transition = Transition(
            obs=obs,
            action=action,
            reward=res.reward,
            next_obs=next_obs,
            terminated=res.terminated,
            truncated=res.truncated,
            logp=logp,
            value=value,
        )
        stats = EpisodeStats(res.episode_return, res.episode_length, res.done)
        return RolloutState(env_state, obs_norm), (transition, stats)

    # Every key of the rollout in two batched draws: splitting once per step costs more than a
    # CartPole step. (``unsafe_rbg`` keys for the environments would save another 5% of PPO's
    # run time, but random bits from RBG keys change under ``vmap``, so a population would no
    # longer reproduce its agents' solo runs.)
    act_key, env_key = jax.random.split(key)
    num_envs = state.env.obs.shape[0]
    act_in = (
        jax.random.split(act_key, num_steps)
        if policy_noise is None
        else policy_noise(act_key, num_steps, num_envs)
    )
    inputs = (act_in, jax.random.split(env_key, (num_steps, num_envs)))
    state, (transitions, stats) = jax.lax.scan(_step, state, inputs)
    return state, transitions, stats


def episode_summary(stats: EpisodeStats) -> dict[str, jax.Array]:
    """Mean return/length of the episodes that finished, and how many did (scalars).

    Returns NaN for the means when no episode finished, so the host can tell "no data" apart
    from a return of 0.
    """
    done = stats.returned_episode.astype(jnp.float32)
    count = jnp.sum(done)
    safe = jnp.maximum(count, 1.0)
    nan = jnp.asarray(jnp.nan, jnp.float32)
    mean_return = jnp.where(count > 0, jnp.sum(stats.episode_return * done) / safe, nan)
    mean_length = jnp.where(count > 0, jnp.sum(stats.episode_length * done) / safe, nan)
    return {"episode/return": mean_return, "episode/length": mean_length, "episode/count": count}
