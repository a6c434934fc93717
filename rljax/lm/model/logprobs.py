"""Per-token log-probabilities and entropies of completions given prompts, with masks.

Shapes follow tokenizer's layout: prompts `[B, P]` left-padded, completions `[B, A]` right-padded.
The whole `[B, P + A]` sequence runs in one pass; the logits at slot P - 1 + a predict completion
token a. Entries where `completion_mask == 0` are exactly 0, so padding never reaches a loss.

RLVR scores G completions of each prompt: with `group_size=G` (rows in consecutive groups of G
that share their prompt) the prompt runs once per group and its keys and values serve all G
rows, through the KV-cache path of the model. Same values up to float rounding, and the prompt's
share of the pass (a third of the default arithmetic learner's tokens) costs 1/G of it.

With `cfg.logits_chunk = c > 0` the model stops at its final norm and the head, log_softmax and
the three statistics run over the completion c tokens at a time in a `lax.map` whose body is
recomputed in the backward pass: the `[B, A, V]` float32 logits (156 MB per 256-token row at a
152k vocabulary) and their gradient never exist at once. Same values up to float rounding.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from rljax.lm.model.decoder import (
    TransformerConfig,
    causal_mask,
    forward,
    head_logits,
    init_cache,
    positions_from_mask,
)


def completion_log_probs(
    params,
    cfg: TransformerConfig,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    completion_tokens: jax.Array,
    completion_mask: jax.Array,
    group_size: int = 1,
) -> tuple[jax.Array, jax.Array]:
    """log π(o_a | q, o_<a) and the policy entropy H_a at every completion position.

    Args:
      params: transformer parameters.
      cfg: its config.
      prompt_tokens, prompt_mask: `[B, P]`.
      completion_tokens, completion_mask: `[B, A]`.
      group_size: rows come in consecutive groups of this many that share one prompt (static;
        1: no sharing).

    Returns:
      (logp `[B, A]`, entropy `[B, A]`), both zero where `completion_mask == 0`.
    """
    logp, entropy, _ = completion_token_stats(
        params, cfg, prompt_tokens, prompt_mask, completion_tokens, completion_mask, group_size
    )
    return logp, entropy


def completion_token_stats(
    params,
    cfg: TransformerConfig,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    completion_tokens: jax.Array,
    completion_mask: jax.Array,
    group_size: int = 1,
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
    positions, attention = positions_from_mask(mask), causal_mask(mask)
    head = not cfg.logits_chunk  # without it, the final norm's output [B, A, d_model]
    if group_size == 1:
        logits, _ = forward(params, cfg, tokens, positions, attention, head=head)
        logits = logits[:, prompt_len - 1 : -1]  # [B, A, V], predicting completion tokens
    else:
        logits = _grouped_logits(
            params, cfg, tokens, positions, attention, prompt_len, group_size, head
        )
    if head:
        stats = _token_stats(logits, completion_tokens)
    else:
        stats = _chunked_token_stats(params, cfg, logits, completion_tokens)
    real = completion_mask.astype(bool)
    return tuple(jnp.where(real, x, 0.0) for x in stats)


def _token_stats(logits, tokens):
    """(logp, entropy, mean_log_probs) `[B, A]` of the logits `[B, A, V]` at tokens `[B, A]`."""
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    logp = jnp.take_along_axis(log_probs, tokens[..., None], axis=-1)[..., 0]
    entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
    return logp, entropy, jnp.mean(log_probs, axis=-1)


def _chunked_token_stats(params, cfg, hidden, tokens):
    """`_token_stats` of `head_logits(hidden)` (`hidden [B, A, d_model]`), `cfg.logits_chunk`
    positions at a time, each chunk's logits recomputed in the backward pass (module docstring).
    """
    rows, length, width = hidden.shape
    chunk = min(cfg.logits_chunk, length)
    n = -(-length // chunk)
    pad = n * chunk - length  # the last chunk's padding: computed, then cut off
    hidden = jnp.pad(hidden, ((0, 0), (0, pad), (0, 0))).reshape(rows, n, chunk, width)
    tokens = jnp.pad(tokens, ((0, 0), (0, pad))).reshape(rows, n, chunk)

    @jax.checkpoint
    def stats(chunk_in):
        h, t = chunk_in
        return _token_stats(head_logits(params, cfg, h), t)

    out = jax.lax.map(stats, (jnp.swapaxes(hidden, 0, 1), jnp.swapaxes(tokens, 0, 1)))
    return tuple(jnp.swapaxes(x, 0, 1).reshape(rows, n * chunk)[:, :length] for x in out)


def _grouped_logits(
    params, cfg, tokens, positions, attention, prompt_len: int, group: int, head: bool = True
):
    """The logits predicting the completion tokens (`[B, A, V]`), each prompt run once per group
    (with `head=False`, the final norm's output `[B, A, d_model]` in their place).

    The prompt of every group runs as a prefill of a KV cache; the cache is repeated for the
    group's rows and their completions (all but the last token: it predicts nothing) run on it.
    Positions and attention masks are those of the whole-sequence pass, so the values agree
    with it up to float rounding (tests/lm); gradients reach the shared prompt from every row.
    """
    rows, length = tokens.shape
    if group < 1 or rows % group:
        raise ValueError(f"group_size={group} must be >= 1 and divide the {rows} rows")
    slots = length - 1  # the cache holds every input token: all but the last completion token
    prefix = slice(None, None, group)  # the first row of every group
    prompt_logits, cache = forward(
        params,
        cfg,
        tokens[prefix, :prompt_len],
        positions[prefix, :prompt_len],
        attention[prefix, :prompt_len, :slots],
        init_cache(cfg, rows // group, slots),
        0,
        head,
    )
    first = jnp.repeat(prompt_logits[:, -1:], group, axis=0)  # predicts completion token 0
    if slots == prompt_len:  # one-token completions
        return first
    cache = jax.tree.map(lambda c: jnp.repeat(c, group, axis=0), cache)
    rest, _ = forward(
        params,
        cfg,
        tokens[:, prompt_len:slots],
        positions[:, prompt_len:slots],
        attention[:, prompt_len:slots, :slots],
        cache,
        prompt_len,
        head,
    )
    return jnp.concatenate([first, rest], axis=1)
