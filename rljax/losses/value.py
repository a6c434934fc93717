"""Value-function losses and targets as pure per-element functions.

Index convention (``rljax.types``): for transition t, ``q_t = Q(s_t, ·)``, ``q_tp1 = Q(s'_t, ·)``
of the true next state, ``r_t`` its reward, ``discount_t = γ (1 - terminated_t)``. Targets are
wrapped in ``stop_gradient``; TD errors are ``target - prediction``; pass them through ``l2`` or
``huber`` and average with ``reduce``. n-step and λ-returns live in ``rljax.returns``
(``n_step_returns``, ``lambda_returns``).
"""

import chex
import jax
import jax.numpy as jnp

from rljax import checks


def l2(x: jax.Array) -> jax.Array:
    """Squared loss ``½ x²`` of a TD error (the MSE of DQN-style regression).

    Args:
      x: errors ``[...]``.

    Returns:
      ``[...]``.
    """
    return 0.5 * jnp.square(x)


def huber(x: jax.Array, *, delta: float | jax.Array = 1.0) -> jax.Array:
    """Huber loss: ``½ x²`` for ``|x| <= δ``, ``δ (|x| - ½ δ)`` beyond.

    Huber 1964; used on TD errors by DQN (Mnih et al. 2015) as gradient clipping.

    Args:
      x: errors ``[...]``.
      delta: threshold δ > 0 between the quadratic and linear parts.

    Returns:
      ``[...]``.
    """
    checks.check_range("delta", delta, low=0.0, low_open=True)
    abs_x = jnp.abs(x)
    quad = jnp.minimum(abs_x, delta)
    return 0.5 * jnp.square(quad) + delta * (abs_x - quad)


def td_error(v_t: jax.Array, r_t: jax.Array, discount_t: jax.Array, v_tp1: jax.Array) -> jax.Array:
    """TD(0) error ``δ_t = r_t + discount_t sg(v_tp1) - v_t``.

    Sutton 1988, "Learning to Predict by the Methods of Temporal Differences".

    Args:
      v_t: values of s_t ``[B]``.
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      v_tp1: values of the true next states ``[B]`` (no gradient).

    Returns:
      TD errors ``[B]``.
    """
    chex.assert_equal_shape([v_t, r_t, discount_t, v_tp1])
    return r_t + discount_t * jax.lax.stop_gradient(v_tp1) - v_t


def q_learning_target(r_t: jax.Array, discount_t: jax.Array, q_tp1: jax.Array) -> jax.Array:
    """Q-learning target ``y_t = r_t + discount_t max_a q_tp1(a)``, gradient stopped.

    Watkins & Dayan 1992, "Q-learning"; with a target network, DQN (Mnih et al. 2015).

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      q_tp1: action values of the next states ``[B, A]`` (usually the target network).

    Returns:
      Targets ``[B]``.
    """
    chex.assert_rank([r_t, discount_t, q_tp1], [1, 1, 2])
    return jax.lax.stop_gradient(r_t + discount_t * jnp.max(q_tp1, axis=-1))


def double_q_learning_target(
    r_t: jax.Array, discount_t: jax.Array, q_tp1_target: jax.Array, q_tp1_online: jax.Array
) -> jax.Array:
    """Double Q-learning target ``y_t = r_t + discount_t q_target(s', argmax_a q_online(s', a))``.

    van Hasselt et al. 2016, "Deep RL with Double Q-learning": the online network selects, the
    target network evaluates, which removes the max operator's upward bias.

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      q_tp1_target: target-network values of the next states ``[B, A]``.
      q_tp1_online: online-network values of the next states ``[B, A]`` (selects the action).

    Returns:
      Targets ``[B]``, gradient stopped.
    """
    chex.assert_rank([r_t, discount_t, q_tp1_target], [1, 1, 2])
    chex.assert_equal_shape([q_tp1_target, q_tp1_online])
    a_star = jnp.argmax(q_tp1_online, axis=-1)
    q_eval = jnp.take_along_axis(q_tp1_target, a_star[:, None], axis=-1)[:, 0]
    return jax.lax.stop_gradient(r_t + discount_t * q_eval)


def q_td_error(q_t: jax.Array, a_t: jax.Array, target_t: jax.Array) -> jax.Array:
    """TD error ``y_t - q_t(a_t)`` of the taken action against a (stopped) target.

    Use with ``q_learning_target``, ``double_q_learning_target`` or n-step / λ-return targets
    from ``rljax.returns``, then ``l2`` or ``huber``.

    Args:
      q_t: action values ``[B, A]``.
      a_t: taken actions ``[B]`` (int).
      target_t: targets ``[B]``.

    Returns:
      TD errors ``[B]``.
    """
    chex.assert_rank([q_t, a_t, target_t], [2, 1, 1])
    q_a = jnp.take_along_axis(q_t, a_t[:, None].astype(jnp.int32), axis=-1)[:, 0]
    return jax.lax.stop_gradient(target_t) - q_a


def clipped_value_loss(
    v: jax.Array, old_v: jax.Array, target: jax.Array, *, clip_eps: float | jax.Array
) -> jax.Array:
    """Per-element PPO value loss with the value clipped around the acting-time value.

    ``ℓ = ½ max((v - G)², (old_v + clip(v - old_v, -ε, ε) - G)²)`` (the "PPO2" value clipping of
    the OpenAI baselines; Andrychowicz et al. 2021, "What Matters In On-Policy RL", study it).

    Args:
      v: current value predictions ``[...]``.
      old_v: values at acting time ``[...]``.
      target: regression targets, e.g. GAE λ-returns ``[...]`` (constants).
      clip_eps: clip range ε >= 0 for ``v - old_v``.

    Returns:
      Loss per element, ``[...]``.
    """
    chex.assert_equal_shape([v, old_v, target])
    checks.check_range("clip_eps", clip_eps, low=0.0)
    target = jax.lax.stop_gradient(target)
    old_v = jax.lax.stop_gradient(old_v)
    v_clipped = old_v + jnp.clip(v - old_v, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum(jnp.square(v - target), jnp.square(v_clipped - target))


def clipped_double_q_target(r_t: jax.Array, discount_t: jax.Array, q_tp1: jax.Array) -> jax.Array:
    """Clipped double-Q target ``y_t = r_t + discount_t min_k Q_k(s', a')``, gradient stopped.

    Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods"
    (TD3), eq. (10): the minimum over K critics (K = 2) counters the overestimation of a
    maximizing actor. With K = 1 it is the plain DDPG target (Lillicrap et al. 2016).

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      q_tp1: the K target critics at ``(s', a')`` ``[K, B]``, a' from the target actor.

    Returns:
      Targets ``[B]``.
    """
    chex.assert_rank([r_t, discount_t, q_tp1], [1, 1, 2])
    chex.assert_equal_shape([r_t, discount_t, q_tp1[0]])
    return jax.lax.stop_gradient(r_t + discount_t * jnp.min(q_tp1, axis=0))


def soft_bellman_target(
    r_t: jax.Array,
    discount_t: jax.Array,
    q_tp1: jax.Array,
    logp_tp1: jax.Array,
    *,
    alpha: float | jax.Array,
) -> jax.Array:
    """Sampled soft Bellman target ``r + d (min_k Q_k(s', a') - α log π(a'|s'))``.

    Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications", eqs. (3) and (8):
    the soft value ``V(s') = E_{a'~π}[Q(s', a') - α log π(a' | s')]`` estimated with one sample
    ``a' ~ π(·|s')``, and the minimum over the twin target critics (clipped double Q).

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      q_tp1: target critics at ``(s', a')`` ``[K, B]``.
      logp_tp1: ``log π(a' | s')`` ``[B]``.
      alpha: entropy temperature α >= 0 (scalar).

    Returns:
      Targets ``[B]``, gradient stopped.
    """
    chex.assert_rank([r_t, discount_t, q_tp1, logp_tp1], [1, 1, 2, 1])
    chex.assert_equal_shape([r_t, discount_t, logp_tp1, q_tp1[0]])
    checks.check_range("alpha", alpha, low=0.0)
    v_tp1 = jnp.min(q_tp1, axis=0) - alpha * logp_tp1
    return jax.lax.stop_gradient(r_t + discount_t * v_tp1)


def soft_bellman_target_discrete(
    r_t: jax.Array,
    discount_t: jax.Array,
    q_tp1: jax.Array,
    logits_tp1: jax.Array,
    *,
    alpha: float | jax.Array,
) -> jax.Array:
    """Expected soft Bellman target ``r + d Σ_a π(a|s') (min_k Q_k(s', a) - α log π(a|s'))``.

    The discrete-action SAC target (Christodoulou 2019, "Soft Actor-Critic for Discrete Action
    Settings", eq. (10)): the expectation over next actions is exact, not sampled.

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      q_tp1: target critics at s' ``[K, B, A]``.
      logits_tp1: the policy's logits at s' ``[B, A]``.
      alpha: entropy temperature α >= 0 (scalar).

    Returns:
      Targets ``[B]``, gradient stopped.
    """
    chex.assert_rank([r_t, discount_t, q_tp1, logits_tp1], [1, 1, 3, 2])
    chex.assert_equal_shape([q_tp1[0], logits_tp1])
    checks.check_range("alpha", alpha, low=0.0)
    log_probs = jax.nn.log_softmax(logits_tp1, axis=-1)
    v_tp1 = jnp.sum(jnp.exp(log_probs) * (jnp.min(q_tp1, axis=0) - alpha * log_probs), axis=-1)
    return jax.lax.stop_gradient(r_t + discount_t * v_tp1)
