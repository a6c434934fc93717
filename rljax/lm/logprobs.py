"""Per-token log-probabilities and entropies of completions given prompts, with masks.

Shapes follow tokenizer's layout: prompts `[B, P]` left-padded, completions `[B, A]` right-padded.
The whole `[B, P + A]` sequence runs in one pass; the logits at slot P - 1 + a predict completion
token a. Entries where `completion_mask == 0` are exactly 0, so padding never reaches a loss.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from rljax.lm.model import TransformerConfig, causal_mask, forward, positions_from_mask


def completion_log_probs(
    params,
    cfg: TransformerConfig,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    completion_tokens: jax.Array,
    completion_mask: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """log π(o_a | q, o_<a) and the policy entropy H_a at every completion position.

    Args:
      params: transformer parameters.
      cfg: its config.
      prompt_tokens, prompt_mask: `[B, P]`.
      completion_tokens, completion_mask: `[B, A]`.

    Returns:
      (logp `[B, A]`, entropy `[B, A]`), both zero where `completion_mask == 0`.
    """
    logp, entropy, _ = completion_token_stats(
        params, cfg, prompt_tokens, prompt_mask, completion_tokens, completion_mask
    )
    return logp, entropy


def completion_token_stats(
    params,
    cfg: TransformerConfig,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    completion_tokens: jax.Array,
    completion_mask: jax.Array,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`completion_log_probs` plus the vocabulary mean of log π(·|q, o_<a) (ROVER's V).

    Returns:
      (logp, entropy, mean_log_probs), each `[B, A]` and zero where `completion_mask == 0`;
      `mean_log_probs[b, a] = (1/|V|) Σ_v log π(v | q, o_<a)`.
    """
    chex.assert_equal_shape([prompt_tokens, prompt_mask])
    chex.assert_equal_shape([completion_tokens, completion_mask])
    prompt_len = prompt_tokens.shape[1]
    tokens = jnp.concatenate([prompt_tokens, completion_tokens], axis=1)
    mask = jnp.concatenate([prompt_mask, completion_mask], axis=1)
    logits, _ = forward(params, cfg, tokens, positions_from_mask(mask), causal_mask(mask))
    logits = logits[:, prompt_len - 1 : -1]  # [B, A, V], predicting completion tokens
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    logp = jnp.take_along_axis(log_probs, completion_tokens[..., None], axis=-1)[..., 0]
    entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
    mean_log_probs = jnp.mean(log_probs, axis=-1)
    real = completion_mask.astype(bool)
    return (
        jnp.where(real, logp, 0.0),
        jnp.where(real, entropy, 0.0),
        jnp.where(real, mean_log_probs, 0.0),
    )
