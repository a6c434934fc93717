"""The only place in rljax that averages: masked reductions of per-element losses.

Losses return one value per element; callers choose how to aggregate with a visible call here.
"""

import chex
import jax
import jax.numpy as jnp

from rljax import checks


def masked_mean(x: jax.Array, mask: jax.Array | None = None, axis=None) -> jax.Array:
    """Mean of ``x`` over the elements where ``mask`` is 1.

    ``sum(x * mask) / max(sum(mask), 1)``; an all-zero mask gives 0, not NaN. Masked-out entries
    never influence the result, even when they hold NaN or inf.

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
    total = jnp.sum(jnp.where(mask > 0, x, 0.0) * mask, axis=axis)
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
    if mask is not None:
        chex.assert_equal_shape([x, mask])
        x = jnp.where(mask > 0, x, 0.0)  # padding must not reach the gradient through (x - mean)²
    mean = masked_mean(x, mask, axis=axis)
    mean = mean if axis is None else jnp.expand_dims(mean, axis)
    return jnp.sqrt(masked_mean(jnp.square(x - mean), mask, axis=axis))


# ---------------------------------------------------------------------------------------------
# Loss aggregation for language-model batches: per-token losses ``[B, L]`` with ``mask[B, L]``
# (1 = real response token). Each returns a scalar. Rows with no real token (padded groups) are
# ignored, so masking equals slicing them away (NaN or inf in padded slots never leak). They
# differ in how a sequence's length weights its tokens: token_mean weights every token
# equally; seq_mean_token_mean weights every sequence equally (so tokens of long answers count
# less); seq_mean_token_sum and seq_mean_token_sum_norm weight tokens equally with no
# length-dependent denominator.
# ---------------------------------------------------------------------------------------------


def _lm_mask(loss: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(loss with padded entries zeroed, float mask)``: padding cannot leak NaN or inf."""
    chex.assert_rank(loss, 2)
    chex.assert_equal_shape([loss, mask])
    m = mask.astype(loss.dtype)
    return jnp.where(m > 0, loss, 0.0), m


def token_mean(loss: jax.Array, mask: jax.Array) -> jax.Array:
    """Token-level mean over the whole batch, ``Σ_i Σ_t m_it ℓ_it / Σ_i Σ_t m_it``.

    DAPO (Yu et al. 2025, "DAPO: An Open-Source LLM RL System at Scale") token-level policy
    gradient loss; "Lite PPO" in "Tricks or Traps?" (Liu et al. 2025).

    Args:
      loss: per-token losses ``[B, L]``.
      mask: ``[B, L]``, 1 = real token.

    Returns:
      Scalar. 0 when the mask is all zero.
    """
    loss, m = _lm_mask(loss, mask)
    return jnp.sum(loss * m) / jnp.maximum(jnp.sum(m), 1.0)


def seq_mean_token_mean(loss: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean over sequences of each sequence's token mean, ``(1/N) Σ_i (1/|o_i|) Σ_t ℓ_it``.

    The original GRPO aggregation (Shao et al. 2024, "DeepSeekMath"). ``N`` counts sequences with
    at least one real token.

    Args:
      loss: per-token losses ``[B, L]``.
      mask: ``[B, L]``, 1 = real token.

    Returns:
      Scalar.
    """
    loss, m = _lm_mask(loss, mask)
    n_tok = jnp.sum(m, axis=1)
    per_seq = jnp.sum(loss * m, axis=1) / jnp.maximum(n_tok, 1.0)
    has_tok = (n_tok > 0).astype(loss.dtype)
    return jnp.sum(per_seq * has_tok) / jnp.maximum(jnp.sum(has_tok), 1.0)


def seq_mean_token_sum(loss: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean over sequences of each sequence's token sum, ``(1/N) Σ_i Σ_t ℓ_it``.

    The unbiased sequence-level REINFORCE estimator (the gradient of the expected sequence
    reward); its scale grows with length. ``N`` counts sequences with at least one real token.

    Args:
      loss: per-token losses ``[B, L]``.
      mask: ``[B, L]``, 1 = real token.

    Returns:
      Scalar.
    """
    loss, m = _lm_mask(loss, mask)
    has_tok = (jnp.sum(m, axis=1) > 0).astype(loss.dtype)
    return jnp.sum(loss * m) / jnp.maximum(jnp.sum(has_tok), 1.0)


def seq_mean_token_sum_norm(loss: jax.Array, mask: jax.Array, *, max_len: float) -> jax.Array:
    """Dr.GRPO's constant normalizer, ``(1/N) Σ_i Σ_t ℓ_it / L_max``.

    Liu et al. 2025, "Understanding R1-Zero-Like Training" (Dr.GRPO): divide token sums by a
    constant (the generation budget ``L_max``) instead of each response's length, removing the
    length bias of ``seq_mean_token_mean``. ``N`` counts sequences with at least one real token.

    Args:
      loss: per-token losses ``[B, L]``.
      mask: ``[B, L]``, 1 = real token.
      max_len: the constant ``L_max`` > 0, usually the maximum generation length.

    Returns:
      Scalar.
    """
    checks.check_range("max_len", max_len, low=0.0, low_open=True)
    return seq_mean_token_sum(loss, mask) / max_len
