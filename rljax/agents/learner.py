"""What the learners share, written once (train_chunk: all five; the rest: the control agents).

* ``learner_key`` / ``eval_key``: the one key rule of every population (see below);
* ``train_chunk``: ``num_updates`` consecutive ``update`` calls of one agent as one ``lax.scan``
  (the unit the host loop compiles, vmaps over the population and calls between syncs);
* ``annealed_lr``: the linear learning-rate decay to 0 over the run;
* ``evaluate_episodes``: episode stats of a control learner's policy in fresh environments;
* ``validate_discrete_env``: the ``validate_env`` of a learner that acts in discrete actions only;
* ``config_from_dict``: a config block (plain dict, e.g. from ``ml_collections``) to the agent's
  frozen ``Config``, with lists made tuples, unknown fields named, and the value-head name and its
  settings built into one ``rljax.nets.q_heads.Head`` (agents never branch on the name).
"""

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.nets import q_heads
from rljax.types import EpisodeStats

State = TypeVar("State")
Config = TypeVar("Config")

# The key rule. Learner ``s`` of every grid point of a run with seed ``seed`` starts from
# ``fold_in(PRNGKey(seed), s)`` (grid points share their seeds' keys: common random numbers,
# so a comparison between grid points is paired, and a member equals its solo run). The
# evaluation branch is ``fold_in(PRNGKey(seed), EVAL_BRANCH)``: learner indices stay below
# 2**31 (``MAX_LEARNERS``), so no learner key, and no key derived from one, is an evaluation key.
# A run's shared base (an LM's random initialization before its SFT, all learners start from
# it) draws from ``fold_in(PRNGKey(seed), BASE_BRANCH)``, a branch of its own.
EVAL_BRANCH = 2**32 - 1
BASE_BRANCH = 2**32 - 2
MAX_LEARNERS = 2**31


def learner_key(seed, index) -> jax.Array:
    """The root key of learner ``index`` (its seed index within a grid point) of run ``seed``."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), index)


def base_key(seed) -> jax.Array:
    """The key of run ``seed``'s shared base (e.g. the random initialization an LM's SFT starts
    from); no learner or evaluation key derives from it."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), BASE_BRANCH)


def eval_key(seed) -> jax.Array:
    """The root of run ``seed``'s evaluation keys; evaluation ``i`` uses ``fold_in(root, i)``."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), EVAL_BRANCH)


def train_chunk(
    update: Callable[[Any, Any, State], tuple[State, dict[str, jax.Array]]],
    config,
    env,
    state: State,
    num_updates: int,
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive ``update(config, env, state)`` calls as one ``lax.scan``.

    Returns:
      The final state and the metrics of every update, each leaf ``[num_updates]``.
    """
    return jax.lax.scan(lambda s, _: update(config, env, s), state, None, length=num_updates)


def annealed_lr(lr: jax.Array, step: jax.Array, num_updates: int, anneal: bool) -> jax.Array:
    """``lr · (1 - step / num_updates)`` if ``anneal`` (linear decay to 0), else ``lr``.

    Args:
      lr: the (swept) base step size, scalar.
      step: updates done so far, scalar int.
      num_updates: updates of the whole run (static).
      anneal: static switch.
    """
    if not anneal:
        return lr
    return lr * (1.0 - step / num_updates)


EVAL_ENVS = 8  # fresh environments of a control learner's `evaluate`


def evaluate_episodes(env, policy: Callable, key: jax.Array, carry=None) -> dict[str, jax.Array]:
    """Episode statistics of ``policy`` in ``EVAL_ENVS`` fresh environments, ``env.max_steps``
    steps each: every environment ends at least one episode (its time limit), so the means are
    finite. Every control learner's ``evaluate`` is this with its greedy ``act``.

    Args:
      policy: ``(obs [B, ...], first [B], carry, key) -> (action, carry)``; ``first`` marks an
        episode's first step (a recurrent learner resets its core there; others pass ``carry``).

    Returns:
      ``rljax.envs.rollouts.episode_summary``: ``episode/return``, ``episode/length`` (means of
      the finished episodes) and ``episode/count``, scalars.
    """
    reset_key, run_key = jax.random.split(key)

    def _step(c, k):
        env_state, first, carry = c
        act_key, env_key = jax.random.split(k)
        action, carry = policy(env_state.obs, first, carry, act_key)
        env_state, res = gymnax_env.step(env, env_key, env_state, action)
        stats = EpisodeStats(res.episode_return, res.episode_length, res.done)
        return (env_state, res.done, carry), stats

    start = (gymnax_env.reset(env, reset_key, EVAL_ENVS), jnp.ones((EVAL_ENVS,), bool), carry)
    _, stats = jax.lax.scan(_step, start, jax.random.split(run_key, env.max_steps))
    return rollout_lib.episode_summary(stats)


def validate_discrete_env(block: str, env: gymnax_env.Env, instead: str) -> None:
    """Refuses an environment with continuous actions for a learner that picks one of ``A``
    discrete actions (an argmax over Q-values fed to a continuous environment would be read as
    a torque, and train nothing meaningful without an error).

    Args:
      block: the learner's config block, e.g. ``"dqn"``.
      env: the environment.
      instead: what to use instead, e.g. ``"for continuous actions use ppo, sac, td3 or mpo"``.
    """
    if not env.discrete:
        raise ValueError(
            f"env_name={env.name!r} has continuous actions ({env.num_actions}-dimensional); "
            f"{block} acts in discrete action spaces only; {instead}"
        )


def config_from_dict(config_cls: type[Config], block: str, values: Mapping[str, Any]) -> Config:
    """Builds the frozen agent ``Config`` from a config block; errors name ``block.field``.

    Lists become tuples. If ``config_cls`` has a ``head`` field, the block's ``head`` name and
    the head settings present in it (``q_heads.SETTINGS``: num_bins, v_min, v_max, huber_delta)
    become one ``q_heads.Head`` value.

    Raises:
      ValueError: for a key that is not a field, or a bad head name or head setting.
    """
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    fields = {f.name for f in dataclasses.fields(config_cls)}
    if "head" in fields:
        settings = {k: values.pop(k) for k in q_heads.SETTINGS if k in values}
        if "head" in values:
            try:
                values["head"] = q_heads.make(values["head"], **settings)
            except ValueError as e:
                raise ValueError(f"{block}.{e}") from None
        elif settings:
            raise ValueError(f"{block}: {', '.join(settings)} given without a head name")
    unknown = sorted(set(values) - fields)
    if unknown:
        where = f"{config_cls.__module__}.{config_cls.__qualname__}"
        raise ValueError(f"{block}.{unknown[0]} is not a field of {where}")
    return config_cls(**values)


def check_grid(learner, points: list[dict]) -> None:
    """Every grid point's value of every ``HPARAM_RULES`` field is finite and allowed."""
    for point in points:
        for name, value in point.items():
            if name not in learner.HPARAM_RULES:
                continue
            check, allowed = learner.HPARAM_RULES[name]
            if not (np.isfinite(value) and check(value)):
                raise ValueError(f"hparams.{name}={value!r} is invalid; allowed: {allowed}")


def grid_hparams(learner, points: list[dict]) -> Any:
    """The learner's ``Hparams`` with float32 leaves ``[G]`` from full grid points (dicts)."""
    fields = learner.Hparams._fields
    return learner.Hparams(**{k: np.asarray([p[k] for p in points], np.float32) for k in fields})
