"""A Hugging Face `config.json` <-> `TransformerConfig`, for the decoder families rljax maps.

Only the fields that change the computation are read; any that rljax does not implement (an
activation other than SiLU, biases on Llama's attention, sliding windows, a RoPE scaling other
than "linear"/"llama3") is a one-line error naming the field, so a checkpoint never loads into a
model that would compute something else. Every error of `read` names the file: one that is not
JSON (`read_json`, with its line and column), a field that is missing or of the wrong type, and a
token id (`bos_token_id`, `eos_token_id`, `pad_token_id`) outside `[0, vocab_size)`.
"""

from __future__ import annotations

import os

from rljax.io import files
from rljax.lm.model.decoder import TransformerConfig

# architectures[0] of config.json -> TransformerConfig.family
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}
_MODEL_TYPES = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}


def read_json(file: str) -> dict:
    """The JSON object in `file` (`rljax.io.files.read_json`); a ValueError naming the file if it
    holds something other than an object."""
    data = files.read_json(file, hint="a download cut short or an edit gone wrong: fetch or fix it")
    if not isinstance(data, dict):
        raise ValueError(f"{file} holds a JSON {type(data).__name__}; allowed: a JSON object")
    return data


def _rope(hf: dict, source: str) -> tuple[float, tuple]:
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
    raise ValueError(f"{source} rope_scaling.rope_type={kind!r}; allowed: default, linear, llama3")


def _head_dim(hf: dict, n_heads: int) -> int:
    """config.json's head_dim, or 0 where it is the default hidden_size / heads."""
    head_dim = int(hf.get("head_dim") or 0)
    return 0 if head_dim == int(hf["hidden_size"]) // n_heads else head_dim


def _size(hf: dict, field: str, source: str) -> int:
    """config.json's positive integer `field` (a ValueError naming `source` and the field)."""
    value = hf.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        missing = "is missing" if value is None else f"={value!r} is invalid"
        raise ValueError(f"{source} {field} {missing}; allowed: an integer >= 1")
    return value


def check_ids(value, field: str, vocab_size: int, source: str) -> list[int]:
    """The token ids of `field` (an int, a list of ints or null), each in `[0, vocab_size)`;
    a ValueError naming `source` and the field otherwise."""
    ids = value if isinstance(value, list) else [] if value is None else [value]
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < vocab_size:
            raise ValueError(
                f"{source} {field}={value!r} is outside the vocabulary [0, {vocab_size}); "
                "allowed: ids below vocab_size, or null"
            )
    return ids


def from_hf(
    hf: dict, *, max_len: int | None = None, dtype: str = "float32", source: str = "config.json"
) -> TransformerConfig:
    """The `TransformerConfig` of a Hugging Face config dict (`max_len` defaults to
    max_position_embeddings); `source` names the dict's file in errors."""
    archs = hf.get("architectures") or []
    if len(archs) != 1 or archs[0] not in ARCHITECTURES:
        raise ValueError(f"{source} architectures={archs}; allowed: {sorted(ARCHITECTURES)}")
    family = ARCHITECTURES[archs[0]]
    act = hf.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"{source} hidden_act={act!r}; allowed: 'silu'")
    for flag in ("attention_bias", "mlp_bias", "use_sliding_window"):
        if hf.get(flag) and not (flag == "attention_bias" and family == "qwen2"):
            raise ValueError(f"{source} {flag}={hf[flag]} is not supported for {archs[0]}")
    theta, scaling = _rope(hf, source)
    vocab_size = _size(hf, "vocab_size", source)
    check_ids(hf.get("bos_token_id"), "bos_token_id", vocab_size, source)
    eos_ids = tuple(check_ids(hf.get("eos_token_id"), "eos_token_id", vocab_size, source))
    pad = check_ids(hf.get("pad_token_id"), "pad_token_id", vocab_size, source)
    n_heads = _size(hf, "num_attention_heads", source)
    return TransformerConfig(
        vocab_size=vocab_size,
        d_model=_size(hf, "hidden_size", source),
        n_layers=_size(hf, "num_hidden_layers", source),
        n_heads=n_heads,
        d_ff=_size(hf, "intermediate_size", source),
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
        pad_id=pad[0] if pad else (eos_ids[0] if eos_ids else 0),
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
    """`from_hf` of `path/config.json`, with generation_config.json's stop tokens added; every
    error names the file it comes from."""
    file = os.path.join(path, "config.json")
    if not os.path.exists(file):
        raise ValueError(f"model.path={path!r} has no config.json")
    hf = read_json(file)
    generation = os.path.join(path, "generation_config.json")
    if os.path.exists(generation):  # chat models list their end-of-turn tokens here
        vocab_size = _size(hf, "vocab_size", file)
        extra = read_json(generation).get("eos_token_id")
        extra = check_ids(extra, "eos_token_id", vocab_size, generation)
        own = check_ids(hf.get("eos_token_id"), "eos_token_id", vocab_size, file)
        hf["eos_token_id"] = list(dict.fromkeys(own + extra))
    try:
        return from_hf(hf, source=file, **kwargs)
    except (KeyError, TypeError, ValueError) as e:  # e.g. rope_theta="x": name the file
        message = str(e) if file in str(e) else f"{file}: {type(e).__name__}: {e}"
        raise ValueError(message) from None
