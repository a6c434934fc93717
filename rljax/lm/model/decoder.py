"""One decoder-only transformer in flax: pre-norm (RMSNorm), RoPE, optional KV cache.

`TransformerConfig.family` switches the few places where the families differ:

  tiny   rljax's from-scratch model (the default): fused qkv kernel, GELU MLP with biases,
         untied head. Sizes from ~0.5M to ~50M parameters come from the config alone.
  llama  Llama 3.x: separate q/k/v, grouped-query attention, SwiGLU MLP, RoPE with the
         "llama3" or "linear" frequency scaling, tied or untied embeddings.
  qwen2  Qwen2 / Qwen2.5: llama plus biases on the q/k/v projections.
  qwen3  Qwen3: llama plus an RMSNorm over each head of q and k before RoPE.

Hugging Face checkpoints of the last three load through `rljax.lm.model.hf`. One `forward` serves
training (full sequence, no cache), prefill and single-token decoding (cache). Attention takes an
explicit boolean mask `[B, T, S]` (query t may attend key slot s), so left padding, causality and
cache validity are all the caller's visible choice. `dtype="bfloat16"` runs the parameters (cast
from their float32 masters inside `forward`) and activations in bf16, with attention softmax,
norms' statistics and the returned logits in float32. `remat=True` checkpoints every block
(gradient checkpointing): same parameters, values and gradients, less activation memory.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.lm.model import lora

FAMILIES = ("tiny", "llama", "qwen2", "qwen3")
DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int = 64  # tokenizer.VOCAB_SIZE
    d_model: int = 128  # residual width
    n_layers: int = 2  # transformer blocks
    n_heads: int = 4  # attention heads; d_model must be divisible by it
    d_ff: int = 512  # MLP hidden width
    max_len: int = 64  # longest prompt + completion, in tokens
    rope_base: float = 10_000.0  # RoPE frequency base
    family: str = "tiny"  # tiny | llama | qwen2 | qwen3 (module docstring)
    n_kv_heads: int = 0  # key/value heads (grouped-query attention); 0: n_heads
    head_dim: int = 0  # width of one head; 0: d_model // n_heads
    norm_eps: float = 1e-6  # RMSNorm epsilon
    tie_embeddings: bool = False  # logits = x @ embedding^T (no separate head)
    # RoPE frequency scaling: () none; ("linear", factor); ("llama3", factor, low_freq_factor,
    # high_freq_factor, original_max_position_embeddings).
    rope_scaling: tuple = ()
    dtype: str = "float32"  # float32 | bfloat16: parameters (float32 masters) and activations
    eos_ids: tuple[int, ...] = (2,)  # tokens that end a completion (tokenizer.EOS)
    pad_id: int = 0  # written after the end of a completion (tokenizer.PAD)
    # Gradient checkpointing: the backward pass keeps each block's input and recomputes its
    # inside (less activation memory for about one more forward pass; no cost without gradients).
    remat: bool = False
    # Completion log-probs (rljax.lm.model.logprobs) apply the head and log_softmax this many
    # tokens at
    # a time, each chunk recomputed in the backward pass, so no [B, A, V] logits exist (0: off).
    logits_chunk: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"TransformerConfig.{name}={getattr(self, name)} must be >= 1")
        if self.family not in FAMILIES:
            raise ValueError(f"TransformerConfig.family={self.family!r}; allowed: {FAMILIES}")
        if self.dtype not in DTYPES:
            raise ValueError(f"TransformerConfig.dtype={self.dtype!r}; allowed: {tuple(DTYPES)}")
        if self.head_dim == 0 and self.d_model % self.n_heads:
            raise ValueError(
                f"TransformerConfig.d_model={self.d_model} must be a multiple of 2*n_heads "
                f"(n_heads={self.n_heads}) so that RoPE sees even head widths"
            )
        if self.head_size % 2 or self.head_dim < 0:
            raise ValueError(
                f"TransformerConfig.head_dim={self.head_size} must be even and >= 0 (RoPE "
                f"rotates pairs); with head_dim=0, d_model={self.d_model} must be a multiple of "
                f"2*n_heads (n_heads={self.n_heads})"
            )
        if self.n_kv_heads < 0 or self.n_heads % self.kv_heads:
            raise ValueError(
                f"TransformerConfig.n_kv_heads={self.n_kv_heads} must divide "
                f"n_heads={self.n_heads} (0: n_heads)"
            )
        if self.family == "tiny" and (self.kv_heads != self.n_heads or self.head_dim):
            raise ValueError(
                f"TransformerConfig.family='tiny' has one key/value head per query head and "
                f"head_dim=d_model/n_heads (got n_kv_heads={self.n_kv_heads}, "
                f"head_dim={self.head_dim}); use family=llama for grouped-query attention"
            )
        kind = self.rope_scaling[0] if self.rope_scaling else None
        if kind not in (None, "linear", "llama3") or len(self.rope_scaling) not in (0, 2, 5):
            raise ValueError(
                f"TransformerConfig.rope_scaling={self.rope_scaling!r}; allowed: (), "
                f"('linear', factor), ('llama3', factor, low, high, original_max_len)"
            )
        if self.logits_chunk < 0:
            raise ValueError(
                f"TransformerConfig.logits_chunk={self.logits_chunk} must be >= 0 (0: off)"
            )
        if not self.eos_ids or not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(
                f"TransformerConfig.eos_ids={self.eos_ids} must be non-empty and "
                f"pad_id={self.pad_id} in [0, vocab_size={self.vocab_size})"
            )

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def head_size(self) -> int:
        return self.head_dim or self.d_model // self.n_heads

    @property
    def compute_dtype(self):
        return DTYPES[self.dtype]


class KVCache(NamedTuple):
    """Keys and values, one `[B, H, S, D]` array per layer (S = cache length).

    One array per layer, not one stacked `[n_layers, ...]` array: a decoding step then updates
    each layer's slot in place instead of copying the whole cache into a new stack. Heads come
    before slots, the layout the attention products read, so no step transposes the cache."""

    k: tuple[jax.Array, ...]
    v: tuple[jax.Array, ...]


def init_cache(cfg: TransformerConfig, batch: int, length: int) -> KVCache:
    """An all-zero cache of `length` slots (validity is tracked by the caller's attention mask)."""
    shape = (batch, cfg.kv_heads, length, cfg.head_size)
    zeros = tuple(jnp.zeros(shape, cfg.compute_dtype) for _ in range(cfg.n_layers))
    return KVCache(zeros, zeros)


def rope_frequencies(head_dim: int, base: float, scaling: tuple = ()) -> jax.Array:
    """RoPE's `[D/2]` angular frequencies θ_i = base^(-2i/D), rescaled by `scaling`.

    "linear" divides every θ_i by the factor (positions stretched). "llama3" (Llama 3.1) keeps
    the high frequencies (wavelength 2π/θ < original_len / high_freq_factor), divides the low ones
    (wavelength > original_len / low_freq_factor) by the factor and interpolates smoothly between.
    """
    half = head_dim // 2
    freqs = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    if not scaling:
        return freqs
    if scaling[0] == "linear":
        return freqs / scaling[1]
    _, factor, low, high, original = scaling
    wavelength = 2 * jnp.pi / freqs
    smooth = (original / wavelength - low) / (high - low)
    mid = (1 - smooth) * freqs / factor + smooth * freqs
    scaled = jnp.where(wavelength > original / low, freqs / factor, freqs)
    between = (wavelength >= original / high) & (wavelength <= original / low)
    return jnp.where(between, mid, scaled)


def rope(x: jax.Array, positions: jax.Array, base: float, scaling: tuple = ()) -> jax.Array:
    """Rotary position embedding (Su et al. 2021) of `x [B, T, H, D]` at `positions [B, T]`:
    the pairs (x_i, x_{i+D/2}) rotate by the angle position·θ_i (`rope_frequencies`)."""
    half = x.shape[-1] // 2
    freqs = rope_frequencies(x.shape[-1], base, scaling)
    angles = positions[..., None].astype(jnp.float32) * freqs  # [B, T, D/2]
    sin, cos = jnp.sin(angles)[:, :, None, :], jnp.cos(angles)[:, :, None, :]
    sin, cos = sin.astype(x.dtype), cos.astype(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class _Block(nn.Module):
    cfg: TransformerConfig

    @nn.compact
    def __call__(self, x, positions, attn_mask, layer_cache, cache_index):
        cfg = self.cfg
        head_dim, eps = cfg.head_size, cfg.norm_eps
        h = nn.RMSNorm(eps, name="attn_norm")(x)
        if cfg.family == "tiny":  # one fused kernel
            qkv = nn.DenseGeneral((3, cfg.n_heads, head_dim), use_bias=False, name="qkv")(h)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # [B, T, H, D]
        else:  # separate projections; K = kv_heads <= H
            bias = cfg.family == "qwen2"
            q = nn.DenseGeneral((cfg.n_heads, head_dim), use_bias=bias, name="q")(h)
            k = nn.DenseGeneral((cfg.kv_heads, head_dim), use_bias=bias, name="k")(h)
            v = nn.DenseGeneral((cfg.kv_heads, head_dim), use_bias=bias, name="v")(h)
            if cfg.family == "qwen3":
                q = nn.RMSNorm(eps, name="q_norm")(q)
                k = nn.RMSNorm(eps, name="k_norm")(k)
        q = rope(q, positions, cfg.rope_base, cfg.rope_scaling)
        k = rope(k, positions, cfg.rope_base, cfg.rope_scaling)
        if (
            layer_cache is not None
        ):  # decoding: written into the cache's [B, H, S, D] slots, read in that layout
            k_cache, v_cache = layer_cache
            k, v = jnp.swapaxes(k, 1, 2), jnp.swapaxes(v, 1, 2)
            k = jax.lax.dynamic_update_slice_in_dim(k_cache, k, cache_index, axis=2)
            v = jax.lax.dynamic_update_slice_in_dim(v_cache, v, cache_index, axis=2)
        # Without a cache, keys and values stay as computed, [B, T, K, D].
        new_kv = (k, v)
        head_axis = 2 if layer_cache is None else 1
        if cfg.kv_heads != cfg.n_heads:  # query head h reads key/value head h // (H/K)
            k = jnp.repeat(k, cfg.n_heads // cfg.kv_heads, axis=head_axis)
            v = jnp.repeat(v, cfg.n_heads // cfg.kv_heads, axis=head_axis)
        scores = "bthd,bshd->bhts" if layer_cache is None else "bthd,bhsd->bhts"
        if cfg.dtype == "float32":
            logits = jnp.einsum(scores, q, k)
        else:  # bf16 products, float32 accumulation and softmax
            logits = jnp.einsum(scores, q, k, preferred_element_type=jnp.float32)
        logits = logits / jnp.sqrt(head_dim).astype(logits.dtype)
        logits = jnp.where(attn_mask[:, None], logits, jnp.finfo(logits.dtype).min)
        weights = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
        mix = "bhts,bshd->bthd" if layer_cache is None else "bhts,bhsd->bthd"
        out = jnp.einsum(mix, weights, v)
        x = x + nn.DenseGeneral(cfg.d_model, axis=(-2, -1), use_bias=False, name="out")(out)
        h = nn.RMSNorm(eps, name="mlp_norm")(x)
        if cfg.family == "tiny":
            h = nn.Dense(cfg.d_ff, name="mlp_in")(h)
            x = x + nn.Dense(cfg.d_model, name="mlp_out")(jax.nn.gelu(h))
        else:  # SwiGLU: down(silu(gate h) * up h)
            gate = nn.Dense(cfg.d_ff, use_bias=False, name="gate")(h)
            up = nn.Dense(cfg.d_ff, use_bias=False, name="up")(h)
            x = x + nn.Dense(cfg.d_model, use_bias=False, name="down")(jax.nn.silu(gate) * up)
        return x, new_kv


class Transformer(nn.Module):
    """Token ids `[B, T]` -> next-token logits `[B, T, V]` (and the updated KV cache)."""

    cfg: TransformerConfig

    @nn.compact
    def __call__(
        self, tokens, positions, attn_mask, cache: KVCache | None = None, cache_index=0, head=True
    ):
        cfg = self.cfg
        embed = nn.Embed(cfg.vocab_size, cfg.d_model, dtype=cfg.compute_dtype, name="embed")
        x = embed(tokens)
        new_k, new_v = [], []
        block = nn.remat(_Block) if cfg.remat else _Block  # same parameter names either way
        for layer in range(cfg.n_layers):
            layer_cache = None if cache is None else (cache.k[layer], cache.v[layer])
            x, (k, v) = block(cfg, name=f"block_{layer}")(
                x, positions, attn_mask, layer_cache, cache_index
            )
            new_k.append(k)
            new_v.append(v)
        x = nn.RMSNorm(cfg.norm_eps, name="final_norm")(x)
        new_cache = None if cache is None else KVCache(tuple(new_k), tuple(new_v))
        if not head:  # the final norm's output (`head_logits` applies the head)
            return x, new_cache
        if cfg.tie_embeddings:
            logits = embed.attend(x)
        else:
            logits = nn.Dense(cfg.vocab_size, use_bias=False, name="head")(x)
        return logits.astype(jnp.float32), new_cache


def init_params(cfg: TransformerConfig, key: jax.Array):
    """Random parameters (a pytree) for `cfg`."""
    tokens = jnp.zeros((1, 2), jnp.int32)
    mask = jnp.ones((1, 2, 2), bool)
    return Transformer(cfg).init(key, tokens, jnp.zeros((1, 2), jnp.int32), mask)["params"]


def num_params(params) -> int:
    """Number of scalar parameters in a parameter pytree."""
    return int(sum(x.size for x in jax.tree.leaves(params)))


def forward(
    params, cfg: TransformerConfig, tokens, positions, attn_mask, cache=None, index=0, head=True
):
    """Applies the transformer. Shapes: tokens/positions `[B, T]`, attn_mask `[B, T, S]` bool,
    with S = T without a cache and S = cache length with one. Returns (logits [B, T, V], cache);
    with `head=False`, (the final norm's output [B, T, d_model], cache): `head_logits` of it are
    the logits.

    `params` may be a `lora.Adapted` (a frozen base plus low-rank adapters), run unmerged."""
    chex.assert_rank([tokens, positions, attn_mask], [2, 2, 3])
    if cfg.dtype != "float32":  # the float32 masters stay outside; gradients flow through
        params = cast(params, cfg.compute_dtype)
    args = (tokens, positions, attn_mask, cache, index, head)
    if isinstance(params, lora.Adapted):
        with lora.applied(params):
            return Transformer(cfg).apply({"params": params.base}, *args)
    return Transformer(cfg).apply({"params": params}, *args)


def head_logits(params, cfg: TransformerConfig, hidden: jax.Array) -> jax.Array:
    """The head on the final norm's output `hidden [..., d_model]`: float32 logits `[..., V]`,
    as `forward` computes them (adapters never reach the head)."""
    base = params.base if isinstance(params, lora.Adapted) else params
    if cfg.tie_embeddings:  # nn.Embed.attend
        kernel = base["embed"]["embedding"].T
    else:
        kernel = base["head"]["kernel"]
    return jnp.dot(hidden, kernel.astype(cfg.compute_dtype)).astype(jnp.float32)


def cast(params, dtype):
    """The floating-point leaves of `params` cast to `dtype` (others unchanged)."""
    floating = lambda x: jnp.issubdtype(x.dtype, jnp.floating)  # noqa: E731
    return jax.tree.map(lambda x: x.astype(dtype) if floating(x) else x, params)


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


# Fields added after the tiny model's SFT bases were first cached, with their defaults: a
# fingerprint leaves them out while they keep these values, so cached bases stay valid.
_LATER_FIELDS = {
    "family": "tiny",
    "n_kv_heads": 0,
    "head_dim": 0,
    "norm_eps": 1e-6,
    "tie_embeddings": False,
    "rope_scaling": (),
    "dtype": "float32",
    "eos_ids": (2,),
    "pad_id": 0,
    "remat": False,
    "logits_chunk": 0,
}


def fingerprint(cfg: TransformerConfig) -> dict:
    """`dataclasses.asdict(cfg)` without the later fields that hold their defaults."""
    out = dataclasses.asdict(cfg)
    for name, default in _LATER_FIELDS.items():
        if out[name] == default:
            del out[name]
    return out
