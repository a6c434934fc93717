"""Batched autoregressive sampling with a KV cache under `jit`, at fixed shapes.

The prompt `[B, P]` is prefilled once into a cache of P + A slots, then a `lax.scan` draws A tokens
one at a time (temperature, nucleus/top-p). After a row emits one of `cfg.eos_ids` (EOS, or a
chat model's stop tokens) it keeps running (fixed shapes) but writes `cfg.pad_id` with mask 0.
`sample_recompute` is the slow reference that re-runs the whole sequence at every step; the two
agree token for token for the same key (tests/lm).
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax import checks
from rljax.lm.model.decoder import TransformerConfig, forward, init_cache, positions_from_mask


class Completions(NamedTuple):
    """Sampled completions: tokens and 0/1 mask `[B, A]` (EOS included, PAD after it)."""

    tokens: jax.Array
    mask: jax.Array


def row_keys(key: jax.Array, batch: int) -> jax.Array:
    """One key per row, `fold_in(key, row)`: row r's draws do not depend on the batch size, so a
    batch that grows (dynamic sampling draws more groups) keeps the draws of its first rows."""
    return jax.vmap(lambda row: jax.random.fold_in(key, row))(jnp.arange(batch))


def choose(logits: jax.Array, keys: jax.Array, temperature: float, top_p: float) -> jax.Array:
    """Draws token ids `[B]` from `logits [B, V]` at `temperature` within the top-p nucleus.

    `keys` holds one key per row (`row_keys`). temperature == 0 is greedy decoding. top_p == 1
    samples from the full distribution. A ``ValueError`` names a temperature < 0 or a top_p
    outside (0, 1] (dividing by a negative temperature would sample the least likely tokens).
    """
    checks.check_range("temperature", temperature, low=0.0)
    checks.check_range("top_p", top_p, low=0.0, low_open=True, high=1.0)
    if temperature == 0.0:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    logits = logits / temperature
    if top_p < 1.0:
        sorted_logits = jnp.sort(logits, axis=-1)[:, ::-1]
        cumulative = jnp.cumsum(jax.nn.softmax(sorted_logits, axis=-1), axis=-1)
        # Keep the smallest prefix whose mass reaches top_p (the first token is always kept).
        keep = (cumulative - jax.nn.softmax(sorted_logits, axis=-1)) < top_p
        threshold = jnp.min(jnp.where(keep, sorted_logits, jnp.inf), axis=-1, keepdims=True)
        logits = jnp.where(logits >= threshold, logits, -jnp.inf)
    draw = jax.vmap(lambda k, row: jax.random.categorical(k, row, axis=-1))
    return draw(keys, logits).astype(jnp.int32)


def _is_eos(token: jax.Array, cfg: TransformerConfig) -> jax.Array:
    """Whether each token `[B]` is one of the config's end tokens."""
    if len(cfg.eos_ids) == 1:
        return token == cfg.eos_ids[0]
    return jnp.isin(token, jnp.asarray(cfg.eos_ids, token.dtype))


def _check(prompt_tokens, prompt_mask, max_new_tokens, temperature, top_p, cfg):
    chex.assert_rank([prompt_tokens, prompt_mask], 2)
    chex.assert_equal_shape([prompt_tokens, prompt_mask])
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 1")
    if temperature < 0:
        raise ValueError(f"temperature={temperature} must be >= 0")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p={top_p} must be in (0, 1]")
    if prompt_tokens.shape[1] + max_new_tokens > cfg.max_len:
        raise ValueError(
            f"prompt length {prompt_tokens.shape[1]} + max_new_tokens={max_new_tokens} exceeds "
            f"TransformerConfig.max_len={cfg.max_len}"
        )


def sample(
    params,
    cfg: TransformerConfig,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    key: jax.Array,
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> Completions:
    """Samples `max_new_tokens` tokens per prompt with a KV cache.

    Args:
      params: transformer parameters.
      cfg: the transformer's config (static).
      prompt_tokens: `[B, P]` int32, left-padded (tokenizer.encode_prompts).
      prompt_mask: `[B, P]` 0/1.
      key: PRNG key; row r at step i uses `fold_in(fold_in(key, r), i)`.
      max_new_tokens: A, the completion budget (static).
      temperature: softmax temperature (static); 0 = greedy.
      top_p: nucleus mass (static), in (0, 1].

    Returns:
      `Completions` with tokens and mask `[B, A]`.
    """
    _check(prompt_tokens, prompt_mask, max_new_tokens, temperature, top_p, cfg)
    batch, prompt_len = prompt_tokens.shape
    total = prompt_len + max_new_tokens
    slots = jnp.arange(total)
    key_valid = jnp.concatenate(
        [prompt_mask.astype(bool), jnp.ones((batch, max_new_tokens), bool)], axis=1
    )
    positions = positions_from_mask(prompt_mask)
    prefill_mask = (slots[None, :] <= jnp.arange(prompt_len)[:, None])[None] & (
        key_valid[:, None, :] | (slots[None, :] == jnp.arange(prompt_len)[:, None])[None]
    )
    logits, cache = forward(
        params, cfg, prompt_tokens, positions, prefill_mask, init_cache(cfg, batch, total), 0
    )
    next_position = positions[:, -1] + 1  # [B]
    keys = row_keys(key, batch)
    fold = jax.vmap(jax.random.fold_in, in_axes=(0, None))

    def step(carry, i):
        cache, last_logits, finished = carry
        token = choose(last_logits, fold(keys, i), temperature, top_p)
        token = jnp.where(finished, cfg.pad_id, token)
        emitted = ~finished
        finished = finished | _is_eos(token, cfg)
        slot = prompt_len + i
        mask = ((slots <= slot)[None, :] & key_valid)[:, None, :]  # [B, 1, S]
        logits, cache = forward(
            params, cfg, token[:, None], (next_position + i)[:, None], mask, cache, slot
        )
        return (cache, logits[:, -1], finished), (token, emitted)

    init = (cache, logits[:, -1], jnp.zeros((batch,), bool))
    _, (tokens, emitted) = jax.lax.scan(step, init, jnp.arange(max_new_tokens))
    return Completions(tokens.T, emitted.T.astype(jnp.int32))


def sample_recompute(
    params,
    cfg: TransformerConfig,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    key: jax.Array,
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> Completions:
    """Reference sampler without a cache: re-runs the full `[B, P + A]` buffer at every step."""
    _check(prompt_tokens, prompt_mask, max_new_tokens, temperature, top_p, cfg)
    batch, prompt_len = prompt_tokens.shape
    total = prompt_len + max_new_tokens
    buffer = jnp.concatenate(
        [prompt_tokens, jnp.full((batch, max_new_tokens), cfg.pad_id, jnp.int32)], axis=1
    )
    valid = jnp.concatenate(
        [prompt_mask.astype(bool), jnp.ones((batch, max_new_tokens), bool)], axis=1
    )
    positions = positions_from_mask(valid)
    causal = jnp.tril(jnp.ones((total, total), bool))[None]
    attn_mask = causal & (valid[:, None, :] | jnp.eye(total, dtype=bool)[None])
    finished = jnp.zeros((batch,), bool)
    keys = row_keys(key, batch)
    tokens, emitted = [], []
    for i in range(max_new_tokens):
        logits, _ = forward(params, cfg, buffer, positions, attn_mask)
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, i)
        token = choose(logits[:, prompt_len + i - 1], step_keys, temperature, top_p)
        token = jnp.where(finished, cfg.pad_id, token)
        emitted.append(~finished)
        finished = finished | _is_eos(token, cfg)
        buffer = buffer.at[:, prompt_len + i].set(token)
        tokens.append(token)
    return Completions(jnp.stack(tokens, 1), jnp.stack(emitted, 1).astype(jnp.int32))
