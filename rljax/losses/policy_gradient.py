"""Policy-gradient losses as pure per-element functions (no averaging; see ``reduce``)."""

import chex
import jax
import jax.numpy as jnp


def ppo_clip(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
) -> jax.Array:
    """Per-element PPO clipped surrogate loss with asymmetric clipping.

    ``ℓ = -min(ρ A, clip(ρ, 1 - ε_low, 1 + ε_high) A)`` with ``ρ = exp(logp - old_logp)``.
    Schulman et al. 2017, "Proximal Policy Optimization Algorithms"; ``ε_high > ε_low`` is DAPO's
    clip-higher (Yu et al. 2025). Symmetric PPO is ``eps_low == eps_high``.

    Args:
      logp: log π_θ(a|s) of the taken action, ``[...]``.
      old_logp: log π_old(a|s) of the same action, ``[...]``.
      adv: advantage estimates, ``[...]`` (treated as constants).
      eps_low: lower clip range ε_low >= 0.
      eps_high: upper clip range ε_high >= 0.

    Returns:
      Loss per element, ``[...]``.
    """
    chex.assert_equal_shape([logp, old_logp, adv])
    adv = jax.lax.stop_gradient(adv)
    ratio = jnp.exp(logp - jax.lax.stop_gradient(old_logp))
    clipped = jnp.clip(ratio, 1.0 - eps_low, 1.0 + eps_high)
    return -jnp.minimum(ratio * adv, clipped * adv)


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """Entropy of a categorical distribution given by logits.

    ``H = -Σ_a π(a) log π(a)`` with ``π = softmax(logits)``.

    Args:
      logits: unnormalized log-probabilities ``[..., A]``.

    Returns:
      Entropy per distribution, ``[...]``.
    """
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy of a diagonal Gaussian, summed over action dimensions.

    ``H = Σ_d (log σ_d + ½ log(2πe))``.

    Args:
      log_std: log standard deviations ``[..., D]``.

    Returns:
      Entropy per distribution, ``[...]``.
    """
    return jnp.sum(log_std + 0.5 * jnp.log(2.0 * jnp.pi * jnp.e), axis=-1)
