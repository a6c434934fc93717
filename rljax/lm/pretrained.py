"""`--config.model.*` -> the model config and, with `model.path`, its pretrained parameters.

The LM entry point's `model` fields either describe a model to build (the tiny default, or
`family=llama|qwen2|qwen3` at the given sizes) or, with `path=DIR`, name a Hugging Face folder
whose config.json decides the architecture (the size fields are then ignored) and whose
safetensors become the base parameters in place of the SFT base. The toy tasks encode text with
the character tokenizer, so such a folder must use its ids (a base trained by rljax and exported
with scripts/export_lm_base.py does).
"""

from __future__ import annotations

import dataclasses

from rljax.lm import tokenizer
from rljax.lm.hf import checkpoint
from rljax.lm.hf import config as hf_config
from rljax.lm.model import TransformerConfig


def model_config(fields: dict, **overrides) -> TransformerConfig:
    """The `TransformerConfig` of the config's `model` fields (`path` read from its folder)."""
    fields = dict(fields)
    path = fields.pop("path", "")
    if not path:
        return TransformerConfig(**{**fields, **overrides})
    cfg = hf_config.read(path, dtype=fields.get("dtype", "float32"))
    if cfg.vocab_size != tokenizer.VOCAB_SIZE or cfg.eos_ids != (tokenizer.EOS,):
        raise ValueError(
            f"model.path={path!r} has vocab_size={cfg.vocab_size}, eos_token_id={cfg.eos_ids}; "
            f"the toy tasks' character tokenizer needs vocab_size={tokenizer.VOCAB_SIZE}, "
            f"eos_token_id={tokenizer.EOS}"
        )
    return dataclasses.replace(cfg, **overrides)


def load_base(fields: dict, cfg: TransformerConfig):
    """(params, info) of `model.path`'s checkpoint, in the layout of `cfg`."""
    params, loaded = checkpoint.load(fields["path"], max_len=cfg.max_len, dtype=cfg.dtype)
    if loaded != cfg:
        raise ValueError(f"model.path={fields['path']!r} does not describe {cfg}")
    return params, {"cached": True, "path": fields["path"]}
