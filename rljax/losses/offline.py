"""Losses and action filters of discrete offline RL, as pure per-example functions.

Index convention (``rljax.types``): ``q_t = Q(s_t, ·)`` ``[B, A]``, ``a_t`` the dataset action
``[B]``, ``logits_t`` a policy's (or an imitation model's) logits ``[B, A]``. Every function
returns one value per example (or a mask); the caller averages with ``rljax.losses.reduce``.
"""

import chex
import jax
import jax.numpy as jnp


def _take(x: jax.Array, a: jax.Array) -> jax.Array:
    """``x[i, a_i]``: ``[B, A]``, ``[B]`` -> ``[B]``."""
    return jnp.take_along_axis(x, a[:, None].astype(jnp.int32), axis=-1)[:, 0]


def cql_penalty(q_t: jax.Array, a_t: jax.Array) -> jax.Array:
    """Discrete CQL(H) regularizer ``log Σ_a exp Q(s_t, a) - Q(s_t, a_t)``.

    Kumar et al. 2020, "Conservative Q-Learning for Offline RL" (eq. 4, the CQL(H) variant for
    discrete actions): pushes down a soft maximum of Q over all actions and up the value of the
    dataset action, so actions the data never took are not overestimated. It is >= 0 and equals
    ``log A`` when all actions have the same value.

    Args:
      q_t: action values ``[B, A]``.
      a_t: dataset actions ``[B]``.

    Returns:
      ``[B]``.
    """
    chex.assert_rank([q_t, a_t], [2, 1])
    return jax.nn.logsumexp(q_t, axis=-1) - _take(q_t, a_t)


def bcq_allowed(logits: jax.Array, *, threshold: float | jax.Array) -> jax.Array:
    """Discrete BCQ's action filter: ``G(a|s) / max_a' G(a'|s) >= τ``.

    Fujimoto, Conti, Ghavamzadeh & Pineau 2019, "Benchmarking Batch Deep RL Algorithms" (discrete
    BCQ). ``G`` is a behavior-cloning model of the dataset's policy; Q is maximized only over the
    actions it deems likely enough. The ratio of softmax probabilities is
    ``exp(logit_a - max logit)``, so no softmax is needed. The most likely action always passes
    (ratio 1); ``τ = 0`` allows every action (DQN), ``τ = 1`` only the most likely one (BC).

    Args:
      logits: imitation-model logits ``[B, A]``.
      threshold: τ in [0, 1].

    Returns:
      Boolean mask ``[B, A]``.
    """
    chex.assert_rank(logits, 2)
    ratio = jnp.exp(logits - jnp.max(logits, axis=-1, keepdims=True))
    return ratio >= threshold


def masked_argmax(q: jax.Array, allowed: jax.Array) -> jax.Array:
    """``argmax_a`` of ``q`` ``[B, A]`` over the ``allowed`` actions ``[B, A]`` (one per row).

    Returns:
      ``[B]`` int32.
    """
    chex.assert_equal_shape([q, allowed])
    return jnp.argmax(jnp.where(allowed, q, -jnp.inf), axis=-1).astype(jnp.int32)


def expected_q_target(
    r_t: jax.Array, discount_t: jax.Array, q_tp1: jax.Array, probs_tp1: jax.Array
) -> jax.Array:
    """Expected-SARSA target ``r_t + discount_t Σ_a π(a|s'_t) Q(s'_t, a)`` (stopped gradient).

    The critic target of CRR (Wang et al. 2020): the value of the learned policy, not the greedy
    maximum, so the critic evaluates the policy it constrains.

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      q_tp1: target-network action values at the next states ``[B, A]``.
      probs_tp1: policy probabilities at the next states ``[B, A]``.

    Returns:
      ``[B]``.
    """
    chex.assert_rank([r_t, discount_t, q_tp1, probs_tp1], [1, 1, 2, 2])
    v_tp1 = jnp.sum(probs_tp1 * q_tp1, axis=-1)
    return jax.lax.stop_gradient(r_t + discount_t * v_tp1)


def crr_weight(
    q_t: jax.Array, logits_t: jax.Array, a_t: jax.Array, *, beta: float | jax.Array,
    max_weight: float = 20.0,
) -> jax.Array:  # fmt: skip
    """CRR's ``exp`` filter ``min(exp(A(s_t, a_t) / β), max_weight)`` (stopped gradient).

    Wang et al. 2020, "Critic Regularized Regression": the actor maximizes
    ``E[f(A(s, a)) log π(a|s)]`` over dataset pairs with ``A(s, a) = Q(s, a) - Σ_a' π(a'|s)
    Q(s, a')``; ``f = exp(·/β)``, clipped, weights the behavior actions by how much better than
    the policy's average they are (``β → ∞``: plain BC).

    Args:
      q_t: critic action values ``[B, A]``.
      logits_t: policy logits ``[B, A]``.
      a_t: dataset actions ``[B]``.
      beta: temperature β > 0.
      max_weight: clip of the weight (static).

    Returns:
      Weights ``[B]``.
    """
    chex.assert_rank([q_t, logits_t, a_t], [2, 2, 1])
    probs = jax.nn.softmax(logits_t, axis=-1)
    adv = _take(q_t, a_t) - jnp.sum(probs * q_t, axis=-1)
    return jax.lax.stop_gradient(jnp.minimum(jnp.exp(adv / beta), max_weight))
