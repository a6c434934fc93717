"""The one table between Hugging Face tensor names and rljax parameter paths.

Each row is (Hugging Face name, rljax path, rule), with `{}` standing for the layer index (a
regular expression `(\\d+)` when matching). A rule says how a Hugging Face tensor (torch's
`Linear.weight` is `[out, in]`) becomes the rljax leaf (flax kernels are `[in, out]`, attention
kernels keep their head axis):

  copy       unchanged (embeddings, norm scales)
  T          transposed                              `[out, in]` -> `[in, out]`
  in_heads   transposed, output split into heads     `[H*D, E]`  -> `[E, H, D]`
  out_heads  transposed, input split into heads      `[E, H*D]`  -> `[H, D, E]`
  heads      split into heads                        `[H*D]`     -> `[H, D]`

`to_rljax` and `to_hf` are the table read in its two directions: only transposes and reshapes,
so export after import (and import after export) gives bit-identical tensors (tests/lm).
"""

from __future__ import annotations

import re

import numpy as np

_L = "model.layers.{}."
TABLE = (
    ("model.embed_tokens.weight", "embed/embedding", "copy"),
    ("model.norm.weight", "final_norm/scale", "copy"),
    ("lm_head.weight", "head/kernel", "T"),
    (_L + "input_layernorm.weight", "block_{}/attn_norm/scale", "copy"),
    (_L + "post_attention_layernorm.weight", "block_{}/mlp_norm/scale", "copy"),
    (_L + "self_attn.q_proj.weight", "block_{}/q/kernel", "in_heads"),
    (_L + "self_attn.k_proj.weight", "block_{}/k/kernel", "in_heads"),
    (_L + "self_attn.v_proj.weight", "block_{}/v/kernel", "in_heads"),
    (_L + "self_attn.q_proj.bias", "block_{}/q/bias", "heads"),
    (_L + "self_attn.k_proj.bias", "block_{}/k/bias", "heads"),
    (_L + "self_attn.v_proj.bias", "block_{}/v/bias", "heads"),
    (_L + "self_attn.o_proj.weight", "block_{}/out/kernel", "out_heads"),
    (_L + "self_attn.q_norm.weight", "block_{}/q_norm/scale", "copy"),
    (_L + "self_attn.k_norm.weight", "block_{}/k_norm/scale", "copy"),
    (_L + "mlp.gate_proj.weight", "block_{}/gate/kernel", "T"),
    (_L + "mlp.up_proj.weight", "block_{}/up/kernel", "T"),
    (_L + "mlp.down_proj.weight", "block_{}/down/kernel", "T"),
)

# Tensors some checkpoints carry that the model recomputes (RoPE's inverse frequencies).
IGNORED = re.compile(r"model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq")


def _pattern(template: str) -> re.Pattern:
    return re.compile(re.escape(template).replace(r"\{\}", r"(\d+)") + "$")


_HF = tuple((_pattern(hf), path, rule) for hf, path, rule in TABLE)
_RLJAX = tuple((_pattern(path), hf, rule) for hf, path, rule in TABLE)


def _lookup(patterns, name: str, what: str):
    for pattern, template, rule in patterns:
        match = pattern.match(name)
        if match:
            return template.format(*match.groups()), rule
    raise KeyError(f"{what} {name!r} has no row in rljax.lm.model.hf.mapping.TABLE")


def rljax_path(hf_name: str) -> tuple[str, str]:
    """(rljax path, rule) of a Hugging Face tensor name; KeyError naming it if unmapped."""
    return _lookup(_HF, hf_name, "tensor")


def hf_name(path: str) -> tuple[str, str]:
    """(Hugging Face name, rule) of an rljax parameter path ("block_0/q/kernel")."""
    return _lookup(_RLJAX, path, "parameter")


def to_rljax(x: np.ndarray, rule: str, shape: tuple[int, ...]) -> np.ndarray:
    """The Hugging Face tensor `x` in the rljax layout `shape` (module docstring)."""
    if rule == "copy":
        return x
    if rule == "heads":
        return x.reshape(shape)
    return x.T.reshape(shape)  # T, in_heads, out_heads


def to_hf(x: np.ndarray, rule: str) -> np.ndarray:
    """The rljax leaf `x` in the Hugging Face layout: `to_rljax` inverted."""
    if rule == "copy":
        return x
    if rule == "heads":
        return x.reshape(-1)
    if rule == "in_heads":
        return x.reshape(x.shape[0], -1).T
    if rule == "out_heads":
        return x.reshape(-1, x.shape[-1]).T
    return x.T


def hf_shape(shape: tuple[int, ...], rule: str) -> tuple[int, ...]:
    """The Hugging Face shape of an rljax leaf of `shape` (what `to_hf` returns)."""
    if rule == "copy":
        return tuple(shape)
    if rule == "heads":
        return (int(np.prod(shape)),)
    if rule == "in_heads":
        return (int(np.prod(shape[1:])), shape[0])
    if rule == "out_heads":
        return (shape[-1], int(np.prod(shape[:-1])))
    return tuple(shape[::-1])
