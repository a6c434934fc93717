"""Offline datasets of whole episodes: building them, sampling them, and measuring them.

A ``Dataset`` is N transitions ``[N, ...]`` cut from complete episodes, each carrying the
return of its episode, plus a sampling distribution over them (its CDF, so a learner draws
indices with a binary search). Uniform sampling and return-weighted resampling (#203) are two
CDFs over the same transitions, so the two are two leaves of one batch that ``jax.vmap`` trains
together.

The two dataset measures of Schweighofer et al. 2022 ("A Dataset Perspective on Offline RL",
#217) are host-side NumPy functions:

* trajectory quality ``TQ = (mean episode return - R_random) / (R_expert - R_random)``;
* state-action coverage: the number of distinct (grid cell of s, a) pairs, where each state
  dimension is cut into ``bins`` equal-width bins between the 1st and 99th percentiles of all of
  an environment's datasets pooled (values outside land in the edge bins). ``SACo`` is that count
  over the count of the pooled datasets: the share of the pairs any of the environment's data
  reaches that this dataset reaches.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Dataset(NamedTuple):
    """N transitions from complete episodes (leaves ``[N, ...]``; a batch of datasets adds a
    leading axis)."""

    obs: jax.Array  # s_t [N, *obs_shape]
    action: jax.Array  # a_t [N] int32
    reward: jax.Array  # r_t [N]
    next_obs: jax.Array  # true s'_t [N, *obs_shape]
    terminated: jax.Array  # s'_t terminal [N] float32 (truncation bootstraps)
    episode_return: jax.Array  # undiscounted return of the episode of transition t [N]
    cdf: jax.Array  # cumulative sampling probabilities [N], cdf[-1] = 1


def episodes(traj) -> list[dict]:
    """Cuts a time-major rollout (``rljax.types.Transition`` ``[T, B, ...]``, NumPy or JAX) into
    its complete episodes; the unfinished tail of each environment column is dropped.

    Returns:
      A list of ``{"obs", "action", "reward", "next_obs", "terminated", "return"}`` per episode
      (arrays ``[len, ...]``), ordered by column, then time.
    """
    t = {k: np.asarray(getattr(traj, k)) for k in ("obs", "action", "reward", "next_obs")}
    term = np.asarray(traj.terminated, bool)
    done = term | np.asarray(traj.truncated, bool)
    out = []
    for b in range(done.shape[1]):
        start = 0
        for end in np.flatnonzero(done[:, b]):
            sl = slice(start, end + 1)
            ep = {k: v[sl, b] for k, v in t.items()}
            ep["terminated"] = term[sl, b]
            ep["return"] = float(ep["reward"].sum())
            out.append(ep)
            start = end + 1
    return out


def from_episodes(eps: list[dict], size: int) -> Dataset:
    """The first ``size`` transitions of ``eps`` (in order) as a uniformly sampled ``Dataset``.

    Raises:
      ValueError: when the episodes hold fewer than ``size`` transitions.
    """
    total = sum(len(e["reward"]) for e in eps)
    if total < size:
        raise ValueError(f"episodes hold {total} transitions; {size} were asked for")
    cat = lambda k: np.concatenate([e[k] for e in eps])[:size]  # noqa: E731
    ret = np.concatenate([np.full(len(e["reward"]), e["return"]) for e in eps])[:size]
    return Dataset(
        obs=jnp.asarray(cat("obs"), jnp.float32),
        action=jnp.asarray(cat("action"), jnp.int32),
        reward=jnp.asarray(cat("reward"), jnp.float32),
        next_obs=jnp.asarray(cat("next_obs"), jnp.float32),
        terminated=jnp.asarray(cat("terminated"), jnp.float32),
        episode_return=jnp.asarray(ret, jnp.float32),
        cdf=jnp.asarray(np.arange(1, size + 1) / size, jnp.float32),
    )


def concat(parts: list[Dataset]) -> Dataset:
    """Transitions of several datasets as one, sampled uniformly."""
    data = jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)
    n = data.reward.shape[0]
    return data._replace(cdf=jnp.asarray(np.arange(1, n + 1) / n, jnp.float32))


def return_weights(episode_return, *, temperature: float) -> np.ndarray:
    """Return-weighted sampling probabilities per transition (#203, "RW").

    Hong, Kumar, Agrawal et al. 2023, "Harnessing Mixed Offline RL Datasets via Trajectory
    Weighting": ``p_i ∝ exp((G_i - max G) / (λ (max G - min G)))`` with ``G_i`` the return of
    transition i's episode; returns are scaled to [0, 1] so λ means the same in every
    environment. All returns equal: uniform.

    Args:
      episode_return: ``[N]``.
      temperature: λ > 0 (smaller: closer to keeping only the best episodes).

    Returns:
      Probabilities ``[N]`` summing to 1.
    """
    if not temperature > 0:
        raise ValueError(f"temperature={temperature!r} is invalid; allowed: > 0")
    g = np.asarray(episode_return, np.float64)
    spread = g.max() - g.min()
    logits = (g - g.max()) / (temperature * spread) if spread > 0 else np.zeros_like(g)
    w = np.exp(logits)
    return w / w.sum()


def with_probs(data: Dataset, probs) -> Dataset:
    """``data`` sampled with probabilities ``probs`` ``[N]`` (stored as their CDF)."""
    cdf = np.cumsum(np.asarray(probs, np.float64))
    return data._replace(cdf=jnp.asarray(cdf / cdf[-1], jnp.float32))


def sample_indices(cdf: jax.Array, key: jax.Array, batch_size: int) -> jax.Array:
    """``batch_size`` indices drawn from the distribution with CDF ``cdf`` ``[N]``: ``[B]``."""
    u = jax.random.uniform(key, (batch_size,), cdf.dtype) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), cdf.shape[0] - 1)


def trajectory_quality(episode_returns, random_return: float, expert_return: float) -> float:
    """TQ: the mean episode return, 0 at the random policy's and 1 at the expert's.

    Raises:
      ValueError: ``expert_return == random_return`` (the scale is undefined) or a non-finite
        return.
    """
    for name, value in (("random_return", random_return), ("expert_return", expert_return)):
        if not np.isfinite(value):
            raise ValueError(f"{name}={value!r} is invalid; allowed: a finite number")
    if expert_return == random_return:
        raise ValueError(
            f"expert_return={expert_return!r} equals random_return: TQ's scale "
            "(expert − random) is 0; allowed: an expert return that differs from the random one"
        )
    return float((np.mean(episode_returns) - random_return) / (expert_return - random_return))


def grid_edges(pooled_obs, bins: int) -> list[np.ndarray]:
    """Per state dimension, ``bins - 1`` inner edges of equal-width bins between the 1st and
    99th percentiles of ``pooled_obs`` ``[M, D]``."""
    x = np.asarray(pooled_obs, np.float64).reshape(len(pooled_obs), -1)
    lo, hi = np.percentile(x, 1, axis=0), np.percentile(x, 99, axis=0)
    return [np.linspace(lo[d], hi[d], bins + 1)[1:-1] for d in range(x.shape[1])]


def state_action_cells(obs, action, edges: list[np.ndarray]) -> set:
    """The distinct (grid cell, action) pairs of ``obs`` ``[N, D]`` and ``action`` ``[N]``."""
    x = np.asarray(obs, np.float64).reshape(len(obs), -1)
    cells = np.stack([np.digitize(x[:, d], e) for d, e in enumerate(edges)], 1)
    keys = np.concatenate([cells, np.asarray(action).reshape(-1, 1)], 1)
    return set(map(tuple, np.unique(keys, axis=0).tolist()))
