"""A Hugging Face `config.json` <-> `TransformerConfig`, for the decoder families rljax maps.

Only the fields that change the computation are read; any that rljax does not implement (an
activation other than SiLU, biases on Llama's attention, sliding windows, a RoPE scaling other
than "linear"/"llama3") is a one-line error naming the field, so a checkpoint never loads into a
model that would compute something else.
"""

from __future__ import annotations

import json
import os

from rljax.lm.model.decoder import TransformerConfig

# architectures[0] of config.json -> TransformerConfig.family
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}
_MODEL_TYPES = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}


def _rope(hf: dict) -> tuple[float, tuple]:
    """(rope_theta, TransformerConfig.rope_scaling) from the old (`rope_theta`, `rope_scaling`)
    or the new (`rope_parameters`) spelling."""
    params = dict(hf.get("rope_parameters") or {})
    theta = float(hf.get("rope_theta", params.get("rope_theta", 10_000.0)))
    scaling = hf.get("rope_scaling") or params
    kind = scaling.get("rope_type", scaling.get("type", "default")) if scaling else "default"
    if kind == "default":
        return theta, ()
    if kind == "linear":
        return theta, ("linear", float(scaling["factor"]))
    if kind == "llama3":
        keys = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
        return theta, ("llama3", *(float(scaling[k]) for k in keys))
    raise ValueError(
        f"config.json rope_scaling.rope_type={kind!r}; allowed: default, linear, llama3"
    )


def _head_dim(hf: dict, n_heads: int) -> int:
    """config.json's head_dim, or 0 where it is the default hidden_size / heads."""
    head_dim = int(hf.get("head_dim") or 0)
    return 0 if head_dim == int(hf["hidden_size"]) // n_heads else head_dim


def from_hf(hf: dict, *, max_len: int | None = None, dtype: str = "float32") -> TransformerConfig:
    """The `TransformerConfig` of a Hugging Face config dict (`max_len` defaults to
    max_position_embeddings)."""
    archs = hf.get("architectures") or []
    if len(archs) != 1 or archs[0] not in ARCHITECTURES:
        raise ValueError(f"config.json architectures={archs}; allowed: {sorted(ARCHITECTURES)}")
    family = ARCHITECTURES[archs[0]]
    act = hf.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"config.json hidden_act={act!r}; allowed: 'silu'")
    for flag in ("attention_bias", "mlp_bias", "use_sliding_window"):
        if hf.get(flag) and not (flag == "attention_bias" and family == "qwen2"):
            raise ValueError(f"config.json {flag}={hf[flag]} is not supported for {archs[0]}")
    theta, scaling = _rope(hf)
    eos_ids = tuple(_ids(hf.get("eos_token_id")))
    pad = hf.get("pad_token_id")
    n_heads = int(hf["num_attention_heads"])
    return TransformerConfig(
        vocab_size=int(hf["vocab_size"]),
        d_model=int(hf["hidden_size"]),
        n_layers=int(hf["num_hidden_layers"]),
        n_heads=n_heads,
        d_ff=int(hf["intermediate_size"]),
        max_len=int(max_len or hf.get("max_position_embeddings", 2048)),
        rope_base=theta,
        family=family,
        n_kv_heads=int(hf.get("num_key_value_heads") or n_heads),
        head_dim=_head_dim(hf, n_heads),
        norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        rope_scaling=scaling,
        dtype=dtype,
        eos_ids=eos_ids or (0,),
        pad_id=int(pad) if pad is not None else (eos_ids[0] if eos_ids else 0),
    )


def to_hf(cfg: TransformerConfig, *, torch_dtype: str = "float32") -> dict:
    """The Hugging Face config dict that describes `cfg` (families llama, qwen2, qwen3)."""
    if cfg.family not in _MODEL_TYPES:
        raise ValueError(
            f"TransformerConfig.family={cfg.family!r} has no Hugging Face layout (fused qkv, "
            f"GELU MLP with biases); allowed for export: {tuple(_MODEL_TYPES)}"
        )
    arch = {v: k for k, v in ARCHITECTURES.items()}[cfg.family]
    hf = {
        "architectures": [arch],
        "model_type": _MODEL_TYPES[cfg.family],
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.d_model,
        "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.kv_heads,
        "head_dim": cfg.head_size,
        "intermediate_size": cfg.d_ff,
        "max_position_embeddings": cfg.max_len,
        "rms_norm_eps": cfg.norm_eps,
        "hidden_act": "silu",
        "rope_theta": cfg.rope_base,
        "tie_word_embeddings": cfg.tie_embeddings,
        "attention_bias": cfg.family == "qwen2",
        "eos_token_id": list(cfg.eos_ids) if len(cfg.eos_ids) > 1 else cfg.eos_ids[0],
        "pad_token_id": cfg.pad_id,
        "torch_dtype": torch_dtype,
        "use_cache": True,
    }
    if cfg.family == "llama":
        hf["mlp_bias"] = False
    if cfg.rope_scaling and cfg.rope_scaling[0] == "linear":
        hf["rope_scaling"] = {"rope_type": "linear", "factor": cfg.rope_scaling[1]}
    elif cfg.rope_scaling:
        _, factor, low, high, original = cfg.rope_scaling
        hf["rope_scaling"] = {
            "rope_type": "llama3",
            "factor": factor,
            "low_freq_factor": low,
            "high_freq_factor": high,
            "original_max_position_embeddings": int(original),
        }
    return hf


def read(path: str, **kwargs) -> TransformerConfig:
    """`from_hf` of `path/config.json`, with generation_config.json's stop tokens added."""
    file = os.path.join(path, "config.json")
    if not os.path.exists(file):
        raise ValueError(f"model.path={path!r} has no config.json")
    with open(file) as f:
        hf = json.load(f)
    generation = os.path.join(path, "generation_config.json")
    if os.path.exists(generation):  # chat models list their end-of-turn tokens here
        with open(generation) as f:
            extra = json.load(f).get("eos_token_id")
        hf["eos_token_id"] = list(dict.fromkeys(_ids(hf.get("eos_token_id")) + _ids(extra)))
    return from_hf(hf, **kwargs)


def _ids(value) -> list[int]:
    """config.json's token id fields: an int, a list of ints or null."""
    return [int(v) for v in value] if isinstance(value, list) else [] if value is None else [value]
