"""Value-function regression losses as pure per-element functions."""

import chex
import jax
import jax.numpy as jnp


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
    target = jax.lax.stop_gradient(target)
    old_v = jax.lax.stop_gradient(old_v)
    v_clipped = old_v + jnp.clip(v - old_v, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum(jnp.square(v - target), jnp.square(v_clipped - target))
