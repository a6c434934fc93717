"""The only place in rljax that averages: masked reductions of per-element losses.

Losses return one value per element; callers choose how to aggregate with a visible call here.
"""

import chex
import jax
import jax.numpy as jnp


def masked_mean(x: jax.Array, mask: jax.Array | None = None, axis=None) -> jax.Array:
    """Mean of ``x`` over the elements where ``mask`` is 1.

    ``sum(x * mask) / max(sum(mask), 1)``; an all-zero mask gives 0, not NaN.

    Args:
      x: values, any shape ``[...]``.
      mask: same shape as ``x`` (1 = include), or ``None`` for a plain mean.
      axis: axes to reduce, as in ``jnp.sum``; ``None`` reduces everything.

    Returns:
      The masked mean, with ``axis`` reduced.
    """
    if mask is None:
        return jnp.mean(x, axis=axis)
    chex.assert_equal_shape([x, mask])
    mask = mask.astype(x.dtype)
    total = jnp.sum(x * mask, axis=axis)
    count = jnp.sum(mask, axis=axis)
    return total / jnp.maximum(count, 1.0)


def masked_std(x: jax.Array, mask: jax.Array | None = None, axis=None) -> jax.Array:
    """Population standard deviation of ``x`` over masked-in elements (``ddof=0``).

    Args:
      x: values ``[...]``.
      mask: same shape as ``x`` or ``None``.
      axis: axes to reduce.

    Returns:
      ``sqrt(masked_mean((x - masked_mean(x))**2))`` with ``axis`` reduced.
    """
    mean = masked_mean(x, mask, axis=axis)
    mean = mean if axis is None else jnp.expand_dims(mean, axis)
    return jnp.sqrt(masked_mean(jnp.square(x - mean), mask, axis=axis))
