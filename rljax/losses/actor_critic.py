"""Off-policy actor losses as pure per-element functions: SAC's actor and temperature losses
(continuous and discrete) and the deterministic policy gradient of DDPG / TD3.

Shapes: ``[B]`` states, ``[B, A]`` discrete actions. The caller averages with ``reduce``.
"""

import chex
import jax
import jax.numpy as jnp


def sac_actor(q: jax.Array, logp: jax.Array, *, alpha: float | jax.Array) -> jax.Array:
    """SAC's reparameterized actor loss ``α log π(a|s) - Q(s, a)``, a = f(ε; s) ~ π.

    Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications", eq. (7): the gradient
    reaches the policy through the sampled action (inside ``q`` and ``logp``); α is a constant.

    Args:
      q: ``min_k Q_k(s, a)`` at the reparameterized sample ``[B]``.
      logp: ``log π(a | s)`` ``[B]``.
      alpha: temperature α >= 0 (gradient stopped).

    Returns:
      ``[B]``.
    """
    chex.assert_equal_shape([q, logp])
    return jax.lax.stop_gradient(alpha) * logp - q


def sac_actor_discrete(q: jax.Array, logits: jax.Array, *, alpha: float | jax.Array):
    """Discrete SAC's actor loss ``Σ_a π(a|s) (α log π(a|s) - Q(s, a))`` (exact expectation).

    Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings", eq. (12).

    Args:
      q: ``min_k Q_k(s, ·)`` ``[B, A]`` (constants).
      logits: the policy's logits ``[B, A]``.
      alpha: temperature α >= 0 (gradient stopped).

    Returns:
      ``[B]``.
    """
    chex.assert_equal_shape([q, logits])
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    alpha = jax.lax.stop_gradient(alpha)
    q = jax.lax.stop_gradient(q)
    return jnp.sum(jnp.exp(log_probs) * (alpha * log_probs - q), axis=-1)


def sac_temperature(
    log_alpha: jax.Array, entropy: jax.Array, *, target_entropy: float | jax.Array
) -> jax.Array:
    """SAC's temperature loss ``log α · (H(π(·|s)) - H̄)``: the dual of an entropy constraint.

    Haarnoja et al. 2018 ("Applications"), eq. (18): minimizing ``E[-α log π - α H̄]`` over α
    enforces ``E[H(π)] >= H̄`` with α as its Lagrange multiplier. The entropy bound is a bound on
    the KL to the uniform policy: ``KL(π ‖ U) = log |A| - H(π)`` for a discrete policy. Written
    with ``log α`` (the parameter optimized, as in the reference implementation) so the gradient
    is ``H - H̄``: α shrinks while the policy is more random than the target and grows otherwise.

    Args:
      log_alpha: ``log α``, scalar (the gradient flows into it).
      entropy: an estimate of ``H(π(·|s))`` ``[B]``: ``-log π(a|s)`` for a sample, or the exact
        entropy of a categorical policy (constants).
      target_entropy: H̄, e.g. ``-D`` for D action dimensions (continuous).

    Returns:
      ``[B]``.
    """
    chex.assert_rank(entropy, 1)
    return log_alpha * jax.lax.stop_gradient(entropy - target_entropy)


def deterministic_policy_gradient(q: jax.Array) -> jax.Array:
    """DDPG / TD3 actor loss ``-Q(s, μ(s))``; its gradient is the deterministic policy gradient
    ``∇_a Q(s, a)|_{a=μ(s)} ∇_θ μ(s)`` (Silver et al. 2014; Lillicrap et al. 2016, eq. (6)).

    Args:
      q: ``Q(s, μ_θ(s))`` ``[B]`` (gradient flows through the action into μ).

    Returns:
      ``[B]``.
    """
    chex.assert_rank(q, 1)
    return -q
