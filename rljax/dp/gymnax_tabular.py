"""Tabular versions of gymnax environments, built by stepping the environment's own dynamics.

A state is a point of a grid over some fields of the gymnax ``EnvState`` (every other field is
taken from one reset state, and ``time`` is kept at 0 so that the time limit never fires; the
tabular MDP's finite horizon plays that role). For every grid state and action the environment's
``step_env`` is called (no automatic reset) with ``samples`` PRNG keys; the next state is mapped
to its grid cell (nearest grid value per field, clipped to the grid's range) or, when the step
terminates, to one absorbing terminal state with reward 0. Transition probabilities and expected
rewards are the empirical frequencies and means over the keys, so deterministic environments are
exact on their grid (one key suffices) and stochastic ones are estimated.

Discrete fields with a grid listing every value (Catch's ball and paddle, DeepSea's row and
column) give the exact MDP of the environment. Continuous fields (CartPole, Acrobot, MountainCar)
give a coarse aggregation: the next cell of a cell is that of its centre's successor, so a cell
whose centre moves less than half a cell in one step maps to itself. Such models rank
environments at best roughly; the effective horizons computed on them are properties of the
discretized MDPs, not of the continuous ones.

Shapes: S grid states plus 1 terminal (index S), A actions. ``initial_dist`` is the histogram of
``initial_samples`` reset states mapped to their cells.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from rljax.dp.mdp import TabularMDP, make_mdp


def _cell(values: Sequence[np.ndarray], point: np.ndarray) -> np.ndarray:
    """Index per field of the nearest grid value to ``point [N, F]``: ``[N, F]``."""
    out = []
    for f, grid in enumerate(values):
        grid = np.asarray(grid, np.float64)
        x = np.clip(point[:, f], grid[0], grid[-1])
        out.append(np.abs(x[:, None] - grid[None, :]).argmin(1))
    return np.stack(out, 1)


def tabulate(
    env,
    fields: Sequence[str],
    values: Sequence[Sequence[float]],
    *,
    horizon: int,
    discount: float = 1.0,
    samples: int = 1,
    initial_samples: int = 512,
    jitter: bool = False,
    seed: int = 0,
) -> TabularMDP:
    """The tabular MDP of ``env`` (an ``rljax.envs.Env``) on the grid ``values`` over ``fields``.

    Args:
      env: the environment (``env.env`` a gymnax environment, ``env.params`` its parameters).
      fields: names of ``EnvState`` fields that make up the tabular state.
      values: one increasing 1-D grid per field (its cells' centres).
      horizon: the MDP's finite horizon H (steps per episode).
      discount: γ of the tabular MDP.
      samples: PRNG keys per (state, action): 1 for deterministic dynamics without jitter.
      jitter: step from ``samples`` points drawn uniformly in each cell (a cell spans half the
        gap to each neighbouring grid value) instead of its centre, so that the transition
        probabilities are the fractions of the cell that land in each cell (no cell is stuck on
        itself because its centre moves less than half a cell per step).
      initial_samples: reset states drawn for ``initial_dist``.
      seed: seed of those keys.

    Returns:
      A ``TabularMDP`` with ``S = prod(len(v)) + 1`` states (the last is the terminal one).

    Raises:
      ValueError: if a field is not in the environment's state, or a grid is empty or not
        increasing.
    """
    if len(fields) != len(values) or not fields:
        raise ValueError(f"fields ({len(fields)}) and values ({len(values)}) must match, >= 1")
    key = jax.random.PRNGKey(seed)
    _, template = env.env.reset_env(key, env.params)
    for name, grid in zip(fields, values, strict=True):
        if not hasattr(template, name):
            raise ValueError(f"field {name!r} is not in {type(template).__name__}")
        g = np.asarray(grid, np.float64)
        if g.ndim != 1 or g.size < 1 or np.any(np.diff(g) <= 0):
            raise ValueError(f"values for {name!r} must be a non-empty increasing 1-D grid")
    shape = tuple(len(v) for v in values)
    num_grid = int(np.prod(shape))
    points = np.array(list(itertools.product(*values)), np.float64)  # [S, F] (C order)
    rng = np.random.default_rng(seed)
    offsets = np.zeros((samples, *points.shape))  # [K, S, F]
    if jitter:
        for f, grid in enumerate(values):
            g = np.asarray(grid, np.float64)
            if g.size < 2:
                continue
            gaps = np.diff(g)
            lo = np.concatenate([[gaps[0]], gaps]) / 2  # half-gap below each grid value
            hi = np.concatenate([gaps, [gaps[-1]]]) / 2
            cell = _cell([g], points[:, f : f + 1])[:, 0]
            u = rng.uniform(-1.0, 1.0, (samples, len(points)))
            offsets[:, :, f] = np.where(u < 0, u * lo[cell], u * hi[cell])
    num_actions = env.num_actions
    dtypes = [jnp.asarray(getattr(template, f)).dtype for f in fields]

    def one(point, action, k, offset):
        point = point + offset
        updates = {
            f: point[i].astype(d) for i, (f, d) in enumerate(zip(fields, dtypes, strict=True))
        }
        if hasattr(template, "time"):
            updates["time"] = jnp.zeros_like(jnp.asarray(template.time))
        state = template.replace(**updates)
        _, nxt, reward, done, _ = env.env.step_env(k, state, action, env.params)
        return jnp.stack([jnp.asarray(getattr(nxt, f), jnp.float32) for f in fields]), reward, done

    keys = jax.random.split(jax.random.fold_in(key, 1), samples)
    run = jax.jit(
        jax.vmap(
            jax.vmap(jax.vmap(one, (None, None, 0, 0)), (None, 0, None, None)), (0, None, None, 1)
        )
    )
    nxt, reward, done = run(
        jnp.asarray(points, jnp.float32),
        jnp.arange(num_actions),
        keys,
        jnp.asarray(offsets, jnp.float32),
    )
    nxt, reward, done = np.asarray(nxt), np.asarray(reward, np.float64), np.asarray(done)
    cells = _cell(values, nxt.reshape(-1, len(fields)).astype(np.float64))
    index = np.ravel_multi_index(tuple(cells.T), shape).reshape(done.shape)
    index = np.where(done, num_grid, index)  # [S, A, K]
    size = num_grid + 1
    transitions = np.zeros((size, num_actions, size))
    s_idx, a_idx = np.meshgrid(np.arange(num_grid), np.arange(num_actions), indexing="ij")
    for k in range(samples):
        np.add.at(transitions, (s_idx, a_idx, index[:, :, k]), 1.0 / samples)
    transitions[num_grid, :, num_grid] = 1.0
    mean_reward = np.zeros((size, num_actions))
    mean_reward[:num_grid] = reward.mean(-1)
    init_keys = jax.random.split(jax.random.fold_in(key, 2), initial_samples)
    starts = jax.vmap(lambda k: env.env.reset_env(k, env.params)[1])(init_keys)
    start_pts = np.stack([np.asarray(getattr(starts, f), np.float64) for f in fields], 1)
    start_idx = np.ravel_multi_index(tuple(_cell(values, start_pts).T), shape)
    initial = np.bincount(start_idx, minlength=size).astype(np.float64)
    return make_mdp(transitions, mean_reward, discount, initial / initial.sum(), horizon=horizon)
