"""Uniform experience replay as a pure pytree: a fixed-capacity ring buffer per environment.

Layout. A buffer for B parallel environments keeps ``C`` rows; every leaf of ``data`` is
``[C, B, ...]`` and row ``i`` holds one batched environment step (``rljax.types.Transition``
or any pytree with leaves ``[B, ...]``). ``add`` writes one row at ``index`` and overwrites the
oldest row once the buffer is full, so each column ``b`` is a time-ordered stream of environment
``b``'s steps. Keeping time order per environment is what lets ``sample_sequences`` return
n consecutive steps for n-step targets.

Everything is a pure function of arrays: ``add`` and ``sample`` run under ``jit`` and ``vmap``
(one buffer per seed: vmap ``init``/``add``/``sample`` over a leading agent axis).

Sampling before enough data. ``sample_sequences(buffer, key, n, length)`` needs at least
``length`` rows. Called eagerly (concrete ``size``) it raises ``ValueError``. Under ``jit`` the
size is not known, so it cannot raise: it then returns rows drawn from the first ``length``
slots, which may still hold the zeros of ``init``. Callers gate learning on ``can_sample`` or,
as the DQN agent does, on a ``learning_starts`` that ``validate`` checks host-side.
"""

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.types import Transition


class Buffer(NamedTuple):
    """A ring buffer of ``C`` rows of ``B`` environments each."""

    data: Any  # pytree, leaves [C, B, ...]
    index: jax.Array  # next row to write (int32 scalar)
    size: jax.Array  # rows holding data, <= C (int32 scalar)


def init(example: Any, capacity: int) -> Buffer:
    """An empty buffer for rows shaped like ``example``.

    Args:
      example: one row, a pytree with leaves ``[B, ...]`` (only shapes and dtypes are used).
      capacity: rows C >= 1 (static); the buffer holds ``C × B`` transitions.

    Returns:
      A ``Buffer`` of zeros with ``index = size = 0``.
    """
    if not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"replay capacity={capacity!r} is invalid; allowed: an integer >= 1")
    data = jax.tree.map(lambda x: jnp.zeros((capacity, *x.shape), x.dtype), example)
    zero = jnp.zeros((), jnp.int32)
    return Buffer(data, zero, zero)


def capacity(buffer: Buffer) -> int:
    """Rows C (static)."""
    return jax.tree.leaves(buffer.data)[0].shape[0]


def add(buffer: Buffer, row: Any) -> Buffer:
    """Writes one row (leaves ``[B, ...]``) at ``index``, overwriting the oldest row when full."""
    chex.assert_trees_all_equal_structs(buffer.data, row)
    cap = capacity(buffer)
    data = jax.tree.map(
        lambda d, x: jax.lax.dynamic_update_index_in_dim(d, x.astype(d.dtype), buffer.index, 0),
        buffer.data,
        row,
    )
    return Buffer(data, (buffer.index + 1) % cap, jnp.minimum(buffer.size + 1, cap))


def add_rows(buffer: Buffer, rows: Any) -> Buffer:
    """Writes T rows (leaves ``[T, B, ...]``, oldest first), as T calls of ``add``."""
    if jax.tree.leaves(rows)[0].shape[0] == 1:
        return add(buffer, jax.tree.map(lambda x: x[0], rows))
    return jax.lax.scan(lambda b, r: (add(b, r), None), buffer, rows)[0]


def can_sample(buffer: Buffer, length: int = 1) -> jax.Array:
    """Whether ``sample_sequences(..., length)`` has ``length`` consecutive rows to draw from."""
    return buffer.size >= length


def _check_enough(buffer: Buffer, length: int) -> None:
    if isinstance(buffer.size, jax.core.Tracer):
        return  # under jit/vmap: documented in the module docstring
    if int(buffer.size) < length:
        raise ValueError(
            f"replay.sample: the buffer holds {int(buffer.size)} row(s) but sequences of "
            f"length {length} need at least {length}; add more data first (learning_starts)"
        )


def sample_sequences(buffer: Buffer, key: jax.Array, batch_size: int, length: int) -> Any:
    """Uniformly samples ``batch_size`` runs of ``length`` consecutive steps of one environment.

    A run is drawn uniformly from the ``(size - length + 1) × B`` (start row, environment)
    pairs whose ``length`` steps are all in the buffer. Runs may cross episode boundaries; the
    ``done`` flags in the data tell where.

    Args:
      buffer: the buffer.
      key: PRNG key.
      batch_size: N (static).
      length: L >= 1 (static).

    Returns:
      The pytree with leaves ``[N, L, ...]``, oldest step first.
    """
    return take_sequences(buffer, jax.random.bits(key, (batch_size,), jnp.uint32), length)


def take_sequences(buffer: Buffer, bits: jax.Array, length: int) -> Any:
    """The runs that ``sample_sequences`` draws, chosen by random ``bits`` ``[N]`` (uint32).

    Run ``i`` is pair number ``bits[i] mod ((size - length + 1) × B)``, so one random draw
    picks both the start row and the environment: one threefry call instead of the two of
    ``jax.random.randint`` per index (the cost that matters in a small jitted loop on CPU).
    Modulo bias is at most ``pairs / 2**32`` relative (< 0.03% for a million transitions).
    Agents that need more randomness per batch draw ``bits`` together with it.

    Args:
      buffer: the buffer.
      bits: uniform random uint32 ``[N]``.
      length: L >= 1 (static).

    Returns:
      The pytree with leaves ``[N, L, ...]``, oldest step first.
    """
    _check_enough(buffer, length)
    cap = capacity(buffer)
    num_envs = jax.tree.leaves(buffer.data)[0].shape[1]
    num_starts = jnp.maximum(buffer.size - length + 1, 1)
    pair = (bits % (num_starts * num_envs).astype(jnp.uint32)).astype(jnp.int32)
    start = (buffer.index - buffer.size + pair // num_envs) % cap
    rows = (start[:, None] + jnp.arange(length)) % cap  # [N, L]
    flat = rows * num_envs + (pair % num_envs)[:, None]  # [N, L] into the [C * B] rows
    return jax.tree.map(lambda d: d.reshape(cap * num_envs, *d.shape[2:])[flat], buffer.data)


def sample(buffer: Buffer, key: jax.Array, batch_size: int) -> Any:
    """Uniformly samples ``batch_size`` single steps; leaves ``[N, ...]``."""
    return jax.tree.map(lambda x: x[:, 0], sample_sequences(buffer, key, batch_size, 1))


class NStep(NamedTuple):
    """An n-step transition folded into one-step form; leaves ``[N, ...]``."""

    obs: jax.Array  # s_t
    action: jax.Array  # a_t
    reward: jax.Array  # Σ_{i<h} γ^i r_{t+i}
    discount: jax.Array  # γ^h if s_{t+h} is not terminal, else 0
    next_obs: jax.Array  # s_{t+h}: the true next observation after h steps


def n_step_transition(seq: Transition, gamma: float | jax.Array) -> NStep:
    """Folds runs of n steps into n-step transitions that stop early at an episode end.

    With ``h = min(n, 1 + first i with done_{t+i})``:
    ``R = Σ_{i<h} γ^i r_{t+i}``, ``discount = γ^h (1 - terminated_{t+h-1})`` and the bootstrap
    state is ``next_obs_{t+h-1}`` (so a time-limit truncation still bootstraps). The target is
    then ``R + discount · V(next_obs)`` for any value representation. Sutton & Barto 2018,
    §7.1; Hessel et al. 2018 (Rainbow) for n-step DQN.

    Args:
      seq: ``Transition`` with leaves ``[N, n, ...]`` from ``sample_sequences``.
      gamma: discount γ (scalar).

    Returns:
      ``NStep`` with leaves ``[N, ...]``.
    """
    chex.assert_rank(seq.reward, 2)
    n = seq.reward.shape[1]
    reward = jnp.zeros_like(seq.reward[:, 0])
    discount = jnp.ones_like(reward)
    alive = jnp.ones_like(reward)
    next_obs = seq.next_obs[:, 0]
    for i in range(n):  # n is small and static
        terminated = seq.terminated[:, i].astype(reward.dtype)
        done = jnp.maximum(terminated, seq.truncated[:, i].astype(reward.dtype))
        reward = reward + alive * discount * seq.reward[:, i]
        keep = alive.reshape(alive.shape + (1,) * (next_obs.ndim - 1)) > 0
        next_obs = jnp.where(keep, seq.next_obs[:, i], next_obs)
        discount = jnp.where(alive > 0, discount * gamma * (1.0 - terminated), discount)
        alive = alive * (1.0 - done)
    return NStep(seq.obs[:, 0], seq.action[:, 0], reward, discount, next_obs)
