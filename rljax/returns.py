"""Advantages and returns: GAE and λ-returns that respect termination vs truncation.

Conventions (see ``rljax.types``): time-major ``[T, B]``; for transition ``t``, ``r_t`` is its
reward, ``discount_t = γ (1 - terminated_t)``, ``v_t = V(s_t)``, ``v_tp1 = V(s'_t)`` is the value
of the *true* next state (the final observation when the episode ended), and ``done_t`` is 1 where
the environment reset after step ``t`` (terminated or truncated), which stops the λ-trace.
"""

import chex
import jax
import jax.numpy as jnp


def gae(
    r_t: jax.Array,
    discount_t: jax.Array,
    v_t: jax.Array,
    v_tp1: jax.Array,
    done_t: jax.Array,
    *,
    lambda_: float | jax.Array,
) -> jax.Array:
    """Generalized advantage estimation over a time-major rollout.

    ``δ_t = r_t + discount_t · v_tp1_t - v_t`` and
    ``A_t = δ_t + discount_t · λ · (1 - done_t) · A_{t+1}``, with ``A_T = 0``.
    Schulman et al. 2016, "High-Dimensional Continuous Control Using GAE". Termination zeroes the
    bootstrap through ``discount_t``; truncation keeps the bootstrap from the final observation
    but cuts the trace through ``done_t``.

    Args:
      r_t: rewards ``[T, ...]``.
      discount_t: ``γ (1 - terminated_t)`` ``[T, ...]``.
      v_t: values of the states the actions were taken in ``[T, ...]``.
      v_tp1: values of the true next states ``[T, ...]``.
      done_t: 1 where the episode ended at step t (terminated or truncated) ``[T, ...]``.
      lambda_: trace parameter λ in [0, 1] (scalar).

    Returns:
      Advantages ``[T, ...]``.
    """
    chex.assert_equal_shape([r_t, discount_t, v_t, v_tp1, done_t])
    delta_t = r_t + discount_t * v_tp1 - v_t
    trace_t = discount_t * lambda_ * (1.0 - done_t.astype(r_t.dtype))

    def _step(adv_tp1, inputs):
        delta, trace = inputs
        adv = delta + trace * adv_tp1
        return adv, adv

    _, adv_t = jax.lax.scan(_step, jnp.zeros_like(r_t[0]), (delta_t, trace_t), reverse=True)
    return adv_t


def lambda_returns(
    r_t: jax.Array,
    discount_t: jax.Array,
    v_t: jax.Array,
    v_tp1: jax.Array,
    done_t: jax.Array,
    *,
    lambda_: float | jax.Array,
) -> jax.Array:
    """λ-returns ``G^λ_t = A^GAE_t + v_t``; the critic's regression target in PPO.

    Equivalently ``G_t = r_t + discount_t ((1 - λ') v_tp1_t + λ' G_{t+1})`` with
    ``λ' = λ (1 - done_t)``. Sutton & Barto 2018, §12.1.

    Args:
      r_t, discount_t, v_t, v_tp1, done_t: as in ``gae``, ``[T, ...]``.
      lambda_: λ in [0, 1].

    Returns:
      λ-returns ``[T, ...]``.
    """
    return gae(r_t, discount_t, v_t, v_tp1, done_t, lambda_=lambda_) + v_t
