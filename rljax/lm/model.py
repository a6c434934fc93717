"""A decoder-only transformer in flax: pre-norm (RMSNorm), RoPE, GELU MLP, optional KV cache.

One `forward` serves training (full sequence, no cache), prefill and single-token decoding (cache).
Attention takes an explicit boolean mask `[B, T, S]` (query t may attend key slot s), so left
padding, causality and cache validity are all the caller's visible choice.
Sizes from ~0.5M to ~50M parameters come from `TransformerConfig` alone.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int = 64  # tokenizer.VOCAB_SIZE
    d_model: int = 128  # residual width
    n_layers: int = 2  # transformer blocks
    n_heads: int = 4  # attention heads; d_model must be divisible by it
    d_ff: int = 512  # MLP hidden width
    max_len: int = 64  # longest prompt + completion, in tokens
    rope_base: float = 10_000.0  # RoPE frequency base

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"TransformerConfig.{name}={getattr(self, name)} must be >= 1")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"TransformerConfig.d_model={self.d_model} must be a multiple of 2*n_heads "
                f"(n_heads={self.n_heads}) so that RoPE sees even head widths"
            )


class KVCache(NamedTuple):
    """Keys and values, one `[B, H, S, D]` array per layer (S = cache length).

    One array per layer, not one stacked `[n_layers, ...]` array: a decoding step then updates
    each layer's slot in place instead of copying the whole cache into a new stack. Heads come
    before slots, the layout the attention products read, so no step transposes the cache."""

    k: tuple[jax.Array, ...]
    v: tuple[jax.Array, ...]


def init_cache(cfg: TransformerConfig, batch: int, length: int) -> KVCache:
    """An all-zero cache of `length` slots (validity is tracked by the caller's attention mask)."""
    shape = (batch, cfg.n_heads, length, cfg.d_model // cfg.n_heads)
    zeros = tuple(jnp.zeros(shape, jnp.float32) for _ in range(cfg.n_layers))
    return KVCache(zeros, zeros)


def rope(x: jax.Array, positions: jax.Array, base: float) -> jax.Array:
    """Rotary position embedding (Su et al. 2021) of `x [B, T, H, D]` at `positions [B, T]`."""
    half = x.shape[-1] // 2
    freqs = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angles = positions[..., None].astype(jnp.float32) * freqs  # [B, T, D/2]
    sin, cos = jnp.sin(angles)[:, :, None, :], jnp.cos(angles)[:, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class _Block(nn.Module):
    cfg: TransformerConfig

    @nn.compact
    def __call__(self, x, positions, attn_mask, layer_cache, cache_index):
        cfg = self.cfg
        head_dim = cfg.d_model // cfg.n_heads
        h = nn.RMSNorm(name="attn_norm")(x)
        qkv = nn.DenseGeneral((3, cfg.n_heads, head_dim), use_bias=False, name="qkv")(h)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # [B, T, H, D]
        q, k = rope(q, positions, cfg.rope_base), rope(k, positions, cfg.rope_base)
        if layer_cache is None:  # a whole sequence: keys and values as computed, [B, T, H, D]
            logits = jnp.einsum("bthd,bshd->bhts", q, k)
        else:  # decoding: written into the cache's [B, H, S, D] slots, read in that layout
            k_cache, v_cache = layer_cache
            k, v = jnp.swapaxes(k, 1, 2), jnp.swapaxes(v, 1, 2)
            k = jax.lax.dynamic_update_slice_in_dim(k_cache, k, cache_index, axis=2)
            v = jax.lax.dynamic_update_slice_in_dim(v_cache, v, cache_index, axis=2)
            logits = jnp.einsum("bthd,bhsd->bhts", q, k)
        logits = logits / jnp.sqrt(head_dim).astype(q.dtype)
        logits = jnp.where(attn_mask[:, None], logits, jnp.finfo(logits.dtype).min)
        weights = jax.nn.softmax(logits, axis=-1)
        mix = "bhts,bshd->bthd" if layer_cache is None else "bhts,bhsd->bthd"
        out = jnp.einsum(mix, weights, v)
        x = x + nn.DenseGeneral(cfg.d_model, axis=(-2, -1), use_bias=False, name="out")(out)
        h = nn.RMSNorm(name="mlp_norm")(x)
        h = nn.Dense(cfg.d_ff, name="mlp_in")(h)
        x = x + nn.Dense(cfg.d_model, name="mlp_out")(jax.nn.gelu(h))
        return x, (k, v)


class Transformer(nn.Module):
    """Token ids `[B, T]` -> next-token logits `[B, T, V]` (and the updated KV cache)."""

    cfg: TransformerConfig

    @nn.compact
    def __call__(self, tokens, positions, attn_mask, cache: KVCache | None = None, cache_index=0):
        cfg = self.cfg
        x = nn.Embed(cfg.vocab_size, cfg.d_model, name="embed")(tokens)
        new_k, new_v = [], []
        for layer in range(cfg.n_layers):
            layer_cache = None if cache is None else (cache.k[layer], cache.v[layer])
            x, (k, v) = _Block(cfg, name=f"block_{layer}")(
                x, positions, attn_mask, layer_cache, cache_index
            )
            new_k.append(k)
            new_v.append(v)
        x = nn.RMSNorm(name="final_norm")(x)
        logits = nn.Dense(cfg.vocab_size, use_bias=False, name="head")(x)
        new_cache = None if cache is None else KVCache(tuple(new_k), tuple(new_v))
        return logits.astype(jnp.float32), new_cache


def init_params(cfg: TransformerConfig, key: jax.Array):
    """Random parameters (a pytree) for `cfg`."""
    tokens = jnp.zeros((1, 2), jnp.int32)
    mask = jnp.ones((1, 2, 2), bool)
    return Transformer(cfg).init(key, tokens, jnp.zeros((1, 2), jnp.int32), mask)["params"]


def num_params(params) -> int:
    """Number of scalar parameters in a parameter pytree."""
    return int(sum(x.size for x in jax.tree.leaves(params)))


def forward(params, cfg: TransformerConfig, tokens, positions, attn_mask, cache=None, index=0):
    """Applies the transformer. Shapes: tokens/positions `[B, T]`, attn_mask `[B, T, S]` bool,
    with S = T without a cache and S = cache length with one. Returns (logits [B, T, V], cache)."""
    chex.assert_rank([tokens, positions, attn_mask], [2, 2, 3])
    return Transformer(cfg).apply({"params": params}, tokens, positions, attn_mask, cache, index)


def positions_from_mask(mask: jax.Array) -> jax.Array:
    """Position ids `[B, L]` that count only real tokens, so left padding does not shift RoPE."""
    return jnp.maximum(jnp.cumsum(mask, axis=-1) - 1, 0).astype(jnp.int32)


def causal_mask(mask: jax.Array) -> jax.Array:
    """`[B, L, L]` attention mask: causal, and keys restricted to real tokens (`mask [B, L]`).

    A padding query still attends to itself so that its softmax is well defined."""
    length = mask.shape[-1]
    causal = jnp.tril(jnp.ones((length, length), bool))
    keys = mask.astype(bool)[:, None, :] | jnp.eye(length, dtype=bool)[None]
    return causal[None] & keys
