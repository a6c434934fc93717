"""The one adapter over gymnax 1.x that every rljax agent uses.

gymnax 1.x ``env.step`` returns ``(obs, state, reward, terminated, truncated, info)``, resets
automatically, and keeps the pre-reset observation in ``info["final_observation"]``. This module
turns that into batched ``reset``/``step`` functions that return ``rljax.types.Transition`` rows
with the *true* next observation, so value targets bootstrap on truncation and not on
termination.
"""

import dataclasses
from typing import Any, NamedTuple

import gymnax
import jax
import jax.numpy as jnp
from gymnax.environments import spaces

from rljax.envs import meta_bandit, meta_grid, pomdp

CLASSIC_CONTROL = (
    "CartPole-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "Pendulum-v1",
    "MountainCarContinuous-v0",
)
MINATAR = (
    "Breakout-MinAtar",
    "SpaceInvaders-MinAtar",
    "Asterix-MinAtar",
    "Freeway-MinAtar",
)
# Partially observable: hidden-velocity classic control, memory and meta-RL tasks (envs.pomdp).
POMDP = pomdp.NAMES
# Lifetimes of Bernoulli-bandit pulls, with and without recurring structure (envs.meta_bandit).
META_BANDIT = tuple(meta_bandit.NAMES)
# Lifetimes of gridworld episodes with a hidden goal, fixed or redrawn (envs.meta_grid).
META_GRID = tuple(meta_grid.NAMES)
SUPPORTED_ENVS = CLASSIC_CONTROL + MINATAR + POMDP + META_BANDIT + META_GRID


@dataclasses.dataclass(frozen=True)
class Env:
    """A gymnax environment with its parameters and action-space description (static)."""

    name: str
    env: Any  # gymnax.environments.environment.Environment
    params: Any  # gymnax EnvParams pytree
    obs_shape: tuple[int, ...]
    discrete: bool
    num_actions: int  # number of discrete actions, or the action dimension if continuous
    action_low: float  # bounds of a continuous action (unused for discrete)
    action_high: float
    max_steps: int

    def __hash__(self):  # static argument of jitted functions: hash by name
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, Env) and other.name == self.name


class EnvState(NamedTuple):
    """Batched environment state ``[B, ...]`` plus running episode statistics."""

    env_state: Any  # gymnax state pytree, leaves [B, ...]
    obs: jax.Array  # current observation [B, *obs_shape]
    episode_return: jax.Array  # return of the running episode so far [B]
    episode_length: jax.Array  # steps of the running episode so far [B] (int32)


def make(name: str) -> Env:
    """Builds the adapter for a gymnax environment by name.

    Args:
      name: one of ``SUPPORTED_ENVS``.

    Returns:
      The static ``Env`` description.

    Raises:
      ValueError: for an unknown name, listing the valid ones.
    """
    if name not in SUPPORTED_ENVS:
        raise ValueError(f"env_name={name!r} is not supported; valid: {', '.join(SUPPORTED_ENVS)}")
    if name in POMDP:
        env, params = pomdp.make(name)
    elif name in META_BANDIT:
        env, params = meta_bandit.make(name)
    elif name in META_GRID:
        env, params = meta_grid.make(name)
    else:
        env, params = gymnax.make(name)
    space = env.action_space(params)
    obs_shape = tuple(env.observation_space(params).shape)
    if isinstance(space, spaces.Discrete):
        discrete, num_actions, low, high = True, int(space.n), 0.0, 0.0
    else:
        discrete, num_actions = False, int(space.shape[0])
        low, high = float(jnp.min(space.low)), float(jnp.max(space.high))
    return Env(
        name=name,
        env=env,
        params=params,
        obs_shape=obs_shape,
        discrete=discrete,
        num_actions=num_actions,
        action_low=low,
        action_high=high,
        max_steps=int(params.max_steps_in_episode),
    )


def reset(env: Env, key: jax.Array, num_envs: int) -> EnvState:
    """Resets ``num_envs`` copies of the environment.

    Args:
      env: the adapter from ``make``.
      key: PRNG key.
      num_envs: batch size B.

    Returns:
      ``EnvState`` with leaves ``[B, ...]``.
    """
    keys = jax.random.split(key, num_envs)
    obs, env_state = jax.vmap(env.env.reset, in_axes=(0, None))(keys, env.params)
    zeros = jnp.zeros((num_envs,), jnp.float32)
    return EnvState(env_state, obs, zeros, jnp.zeros((num_envs,), jnp.int32))


class StepResult(NamedTuple):
    """What one batched step returns besides the new state; leaves ``[B, ...]``."""

    reward: jax.Array
    next_obs: jax.Array  # true next observation: the final observation where the episode ended
    terminated: jax.Array
    truncated: jax.Array
    episode_return: jax.Array  # return of the episode that ended here (valid where done)
    episode_length: jax.Array
    done: jax.Array  # terminated | truncated: the environment reset after this step


def step(
    env: Env, key: jax.Array, state: EnvState, action: jax.Array
) -> tuple[EnvState, StepResult]:
    """Steps every environment of the batch once; finished episodes reset automatically.

    Continuous actions are clipped to the action bounds before stepping.

    Args:
      env: the adapter from ``make``.
      key: PRNG key for this step.
      state: batched state ``[B, ...]``.
      action: actions ``[B]`` (discrete) or ``[B, D]`` (continuous).

    Returns:
      The new state (observations after any reset) and the ``StepResult`` of the transition.
    """
    return step_with_keys(env, jax.random.split(key, state.obs.shape[0]), state, action)


def step_with_keys(
    env: Env, keys: jax.Array, state: EnvState, action: jax.Array
) -> tuple[EnvState, StepResult]:
    """``step`` with one PRNG key per environment (``keys [B]``), e.g. split for a whole rollout
    at once instead of once per step."""
    if not env.discrete:
        action = jnp.clip(action, env.action_low, env.action_high)
    obs, env_state, reward, terminated, truncated, info = jax.vmap(
        env.env.step, in_axes=(0, 0, 0, None)
    )(keys, state.env_state, action, env.params)
    reward = reward.astype(jnp.float32)
    done = jnp.logical_or(terminated, truncated)
    ep_return = state.episode_return + reward
    ep_length = state.episode_length + 1
    keep = 1.0 - done.astype(jnp.float32)
    new_state = EnvState(env_state, obs, ep_return * keep, ep_length * (1 - done.astype(jnp.int32)))
    result = StepResult(
        reward=reward,
        next_obs=info["final_observation"],
        terminated=terminated,
        truncated=truncated,
        episode_return=ep_return,
        episode_length=ep_length,
        done=done,
    )
    return new_state, result
