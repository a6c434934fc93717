"""`--config.model.*` -> the tokenizer, the model config and, with `model.path`, its parameters.

The LM entry point's `model` fields either describe a model to build (the tiny default, or
`family=llama|qwen2|qwen3` at the given sizes) or, with `path=DIR`, name a Hugging Face folder
whose config.json decides the architecture (the size fields are then ignored) and whose
safetensors become the base parameters in place of the SFT base. `tokenizer=DIR` (a folder with
tokenizer.json, e.g. from scripts/train_bpe_tokenizer.py) replaces the character tokenizer: the
tasks encode their prompts and SFT targets with it and its completions are decoded and judged on
the host. A model built here then takes its vocabulary size and stop/pad ids; a `path` model must
cover its vocabulary and stop on its EOS. Without `tokenizer` a `path` folder must use the
character tokenizer's ids (a base trained by rljax and exported with scripts/export_lm_base.py
does).
"""

from __future__ import annotations

import dataclasses
import os

from rljax.lm.model import tokenizer as char_tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.hf import config as hf_config
from rljax.lm.model.hf.tokenizer import HFTokenizer


def tokenizer(fields: dict):
    """`model.tokenizer`'s `HFTokenizer`, or the character tokenizer where it is empty."""
    path = fields.get("tokenizer", "")
    if not path:
        return char_tokenizer.CHAR
    if not os.path.isfile(os.path.join(path, "tokenizer.json")):
        raise ValueError(
            f"model.tokenizer={path!r} has no tokenizer.json; allowed: a folder with one "
            "(scripts/train_bpe_tokenizer.py writes it) or '' for the character tokenizer"
        )
    try:
        return HFTokenizer.from_dir(path)
    except Exception as e:  # a broken tokenizer.json: one line naming the field
        raise ValueError(f"model.tokenizer={path!r} does not read: {e}") from None


def model_config(fields: dict, **overrides) -> TransformerConfig:
    """The `TransformerConfig` of the config's `model` fields (`path` read from its folder: its
    config.json, and its safetensors headers, so a damaged file is refused, named, before
    anything is built)."""
    fields = dict(fields)
    path = fields.pop("path", "")
    tok = tokenizer(fields)
    tok_path = fields.pop("tokenizer", "")
    if not path:
        if tok_path:
            fields.update(vocab_size=tok.vocab_size, eos_ids=tok.eos_ids, pad_id=tok.pad_id)
        return TransformerConfig(**{**fields, **overrides})
    cfg = hf_config.read(path, dtype=fields.get("dtype", "float32"))
    checkpoint.tensor_files(path)
    how = dict(remat=fields.get("remat", False), logits_chunk=fields.get("logits_chunk", 0))
    cfg = dataclasses.replace(cfg, **how)  # how it computes, not what: not in config.json
    found = f"model.path={path!r} has vocab_size={cfg.vocab_size}, eos_token_id={cfg.eos_ids}"
    if not tok_path and (cfg.vocab_size != tok.vocab_size or cfg.eos_ids != tok.eos_ids):
        raise ValueError(
            f"{found}; the toy tasks' character tokenizer needs vocab_size={tok.vocab_size}, "
            f"eos_token_id={tok.eos_id} (or set model.tokenizer to the model's tokenizer folder)"
        )
    if cfg.vocab_size < tok.vocab_size or tok.eos_id not in cfg.eos_ids:
        raise ValueError(
            f"{found}; model.tokenizer={tok_path!r} needs vocab_size >= {tok.vocab_size} and "
            f"eos_token_id {tok.eos_id}"
        )
    return dataclasses.replace(cfg, eos_ids=tok.eos_ids, pad_id=tok.pad_id, **overrides)


def load_base(fields: dict, cfg: TransformerConfig):
    """(params, info) of `model.path`'s checkpoint, in the layout of `cfg`."""
    params, loaded = checkpoint.load(fields["path"], max_len=cfg.max_len, dtype=cfg.dtype)
    same = dict(eos_ids=cfg.eos_ids, pad_id=cfg.pad_id, remat=cfg.remat)
    if dataclasses.replace(loaded, logits_chunk=cfg.logits_chunk, **same) != cfg:
        raise ValueError(f"model.path={fields['path']!r} does not describe {cfg}")
    return params, {"cached": True, "path": fields["path"]}
