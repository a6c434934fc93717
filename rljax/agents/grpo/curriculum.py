"""Which problems an RLVR step trains on: curricula over difficulty levels and balanced filtering.

Pure functions of arrays, called inside the learner's jitted step (`rljax.agents.grpo`), so every
learner of a population can use a different curriculum (an integer leaf, `presets.CURRICULA`).

Curricula choose a level ℓ ∈ {1..K} for each group, then a problem uniformly within that level:

  uniform  no level choice: a problem uniformly from the whole split (the default; its draws are
           the ones the learner made before curricula existed);
  sec      SEC (#175): a non-stationary bandit over levels, reward = mean |A| of the groups drawn
           at the level, values updated by TD(0) (an exponential moving average),
           Q_ℓ ← Q_ℓ + α (r̄_ℓ − Q_ℓ) for the levels drawn this step; levels ~ softmax(Q/τ);
  ucb      DUMP (#177): the same value estimate plus an exploration bonus,
           U_ℓ = Q_ℓ + c √(2 ln N / n_ℓ) (n_ℓ groups drawn at ℓ so far, N = Σ n_ℓ; an unseen
           level counts as seen once); levels ~ softmax(U/τ).

Balanced filtering (#182) keeps a group only if its in-group pass rate p̂ is intermediate:
0 < p̂ < 1 (DAPO's dynamic sampling) and |p̂ − ½| ≤ δ (`balanced`).

Drawing within a level is exact and static-shaped: `level_index` sorts the split by level once
(stable), so level ℓ's rows are `order[start_ℓ : start_ℓ + count_ℓ]` and a uniform integer below
`count_ℓ` picks one of them.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

UNIFORM, SEC, UCB = 0, 1, 2  # codes: the order of presets.CURRICULA


class CurriculumState(NamedTuple):
    """One learner's bandit over K levels (every learner carries it; only sec / ucb read it)."""

    value: jax.Array  # [K] float: Q_ℓ, the running mean |A| of level ℓ's groups
    count: jax.Array  # [K] float: n_ℓ, groups drawn at level ℓ so far


def init(num_levels: int) -> CurriculumState:
    return CurriculumState(jnp.zeros((num_levels,)), jnp.zeros((num_levels,)))


class LevelIndex(NamedTuple):
    """A split's rows by level: level ℓ's i-th row is `order[start[ℓ-1] + i]`, i < count[ℓ-1]."""

    order: jax.Array  # [N] int32: rows sorted by level (stable)
    start: jax.Array  # [K] int32
    count: jax.Array  # [K] int32


def level_index(level: jax.Array, num_levels: int) -> LevelIndex:
    """Groups the rows of a split with `level [N]` (values 1..K; others are never drawn)."""
    chex.assert_rank(level, 1)
    order = jnp.argsort(level, stable=True).astype(jnp.int32)
    count = jnp.sum(level[:, None] == jnp.arange(1, num_levels + 1)[None, :], axis=0)
    below = jnp.sum(level[:, None] < jnp.arange(1, num_levels + 1)[None, :], axis=0)
    return LevelIndex(order, below.astype(jnp.int32), count.astype(jnp.int32))


def level_logits(
    code: jax.Array,
    state: CurriculumState,
    available: jax.Array,
    *,
    temperature: jax.Array,
    ucb_c: jax.Array,
) -> jax.Array:
    """Log-probabilities (up to a constant) of drawing each level: `[K]`.

    sec: Q/τ; ucb: (Q + c √(2 ln N / max(n, 1)))/τ with N = max(Σ n, 1); uniform: 0. Levels
    with no problems (`available` false) get −inf.
    """
    total = jnp.maximum(jnp.sum(state.count), 1.0)
    bonus = ucb_c * jnp.sqrt(2.0 * jnp.log(total) / jnp.maximum(state.count, 1.0))
    score = jnp.where(code == UCB, state.value + bonus, state.value)
    logits = jnp.where(code == UNIFORM, 0.0, score / temperature)
    return jnp.where(available, logits, -jnp.inf)


def draw(key: jax.Array, logits: jax.Array, index: LevelIndex) -> tuple[jax.Array, jax.Array]:
    """One problem row: a level ~ softmax(logits), then a row uniformly within it.

    Returns:
      (row, level index 0..K-1), int32 scalars.
    """
    k_level, k_item = jax.random.split(key)
    lvl = jax.random.categorical(k_level, logits)
    item = jax.random.randint(k_item, (), 0, jnp.maximum(index.count[lvl], 1))
    return index.order[index.start[lvl] + item], lvl.astype(jnp.int32)


def update(
    state: CurriculumState,
    level: jax.Array,
    reward: jax.Array,
    *,
    learning_rate: jax.Array,
) -> CurriculumState:
    """TD(0) on the levels drawn this step: Q_ℓ ← Q_ℓ + α (r̄_ℓ − Q_ℓ), n_ℓ ← n_ℓ + b_ℓ.

    Args:
      state: the bandit before the step.
      level: `[B]` int32 level index (0..K-1) of each trained group.
      reward: `[B]` the group's bandit reward (its mean |A|).
      learning_rate: α in (0, 1].

    Returns:
      The updated state; levels with no group this step keep their value.
    """
    chex.assert_equal_shape([level, reward])
    num_levels = state.value.shape[0]
    onehot = (level[:, None] == jnp.arange(num_levels)[None, :]).astype(jnp.float32)  # [B, K]
    drawn = jnp.sum(onehot, axis=0)
    mean = jnp.sum(onehot * reward[:, None], axis=0) / jnp.maximum(drawn, 1.0)
    value = jnp.where(drawn > 0, state.value + learning_rate * (mean - state.value), state.value)
    return CurriculumState(value, state.count + drawn)


def balanced(pass_rate: jax.Array, delta: jax.Array) -> jax.Array:
    """Balanced filtering's band: |p̂ − ½| ≤ δ (δ = ½ keeps every group). Shape of `pass_rate`."""
    return jnp.abs(pass_rate - 0.5) <= delta
