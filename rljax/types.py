"""Shared data types and the index conventions every part of rljax uses.

Time-major trajectories. A rollout of T steps over B parallel environments is stored as arrays of
shape ``[T, B, ...]``. Row ``t`` describes the transition that starts in observation ``obs[t]``:
the agent takes ``action[t]``, receives ``reward[t]`` and lands in the *true* next observation
``next_obs[t]``, which is the pre-reset final observation when the episode ended at this step.

Reward index convention: ``reward[t]`` is the reward for the transition ``obs[t] -> next_obs[t]``
(what rlax calls ``r_t`` paired with ``discount_t``). ``terminated[t]`` means ``next_obs[t]`` is
terminal (its value is zero); ``truncated[t]`` means the episode was cut by a time limit and
``next_obs[t]`` must be bootstrapped from. ``done[t] = terminated[t] | truncated[t]`` marks that
the *environment* reset after step ``t`` so ``obs[t + 1]`` starts a new episode.

Language-model batches are ``[B, L]`` token arrays with ``mask`` (1 = real token, 0 = padding).
"""

from typing import NamedTuple

import jax


class Transition(NamedTuple):
    """One batched environment step (leaves ``[B, ...]``) or a rollout of them (``[T, B, ...]``)."""

    obs: jax.Array  # observation the action was taken in
    action: jax.Array
    reward: jax.Array  # r_t for obs[t] -> next_obs[t]
    next_obs: jax.Array  # true next observation (final observation if the episode ended)
    terminated: jax.Array  # bool: next_obs is terminal; its value is 0
    truncated: jax.Array  # bool: time limit hit; bootstrap from next_obs
    logp: jax.Array  # log-probability of `action` under the acting policy (0 if unused)
    value: jax.Array  # critic value of `obs` at acting time (0 if unused)


class EpisodeStats(NamedTuple):
    """Episode returns/lengths of episodes that finished inside a rollout.

    ``returned_episode`` is 1 where an episode ended at that step; ``episode_return`` and
    ``episode_length`` are only meaningful there.
    """

    episode_return: jax.Array
    episode_length: jax.Array
    returned_episode: jax.Array
