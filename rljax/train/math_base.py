"""The policy a math run starts from: its tokenizer and template, its model config, and its
parameters (a checkpoint's, or the tiny model's random initialization from `base_key`),
optionally fine-tuned on `#### <answer>` completions, all placed on the run's mesh.

`check_model` reads the model, tokenizer and chat-template fields against the files (nothing is
loaded), so the front end (`rljax.train.math_experiment`) refuses a bad field before anything
is built.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from rljax.agents import sft
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.hf import config as hf_config
from rljax.lm.model.hf.tokenizer import HFTokenizer
from rljax.lm.tasks import math_task
from rljax.lm.tasks.batches import SeqBatch
from rljax.parallel import sharding, steps
from rljax.train import lm_mesh

if TYPE_CHECKING:
    from rljax.train.math_experiment import MathRunConfig


CHAT_TEMPLATES = ("plain", "model")


def tokenizer_dir(run: MathRunConfig) -> str:
    """`run.tokenizer`, or its default: "bytes" for the tiny model, else the model folder."""
    if run.tokenizer:
        return run.tokenizer
    return "bytes" if run.model == "tiny" else run.model


def check_model(run: MathRunConfig) -> None:
    """The checkpoint folder, tokenizer and chat template fields against their files: config.json,
    the safetensors headers, tokenizer.json and tokenizer_config.json are read and the chat
    template renders a probe turn (no weights are loaded); every error names its file."""
    if run.model != "tiny":
        if not os.path.isfile(os.path.join(run.model, "config.json")):
            raise ValueError(
                f"model={run.model!r} has no config.json; allowed: 'tiny' or a checkpoint folder "
                "with config.json and safetensors"
            )
        if not any(
            os.path.isfile(os.path.join(run.model, name))
            for name in (checkpoint.SINGLE, checkpoint.INDEX)
        ):
            raise ValueError(
                f"model={run.model!r} has neither {checkpoint.SINGLE} nor {checkpoint.INDEX}; "
                "allowed: a checkpoint folder with its safetensors"
            )
        try:
            hf_config.read(run.model)
            checkpoint.tensor_files(run.model)
        except (KeyError, ValueError) as e:
            raise ValueError(f"model={run.model!r}: {e}") from None
    tok = tokenizer_dir(run)
    if tok != "bytes" and not os.path.isfile(os.path.join(tok, "tokenizer.json")):
        raise ValueError(
            f"tokenizer={tok!r} has no tokenizer.json; allowed: 'bytes' or a folder with "
            "tokenizer.json (default: the model folder)"
        )
    if run.chat_template not in CHAT_TEMPLATES:
        raise ValueError(
            f"chat_template={run.chat_template!r} is unknown; allowed: {', '.join(CHAT_TEMPLATES)}"
        )
    hf = None if tok == "bytes" else HFTokenizer.from_dir(tok)
    if run.chat_template == "model" and (hf is None or hf.chat_template is None):
        raise ValueError(
            f"chat_template='model' but tokenizer={tok!r} has no chat template "
            "(tokenizer_config.json chat_template or chat_template.jinja); allowed: "
            "chat_template='plain' or a tokenizer folder with one"
        )
    if run.chat_template == "model":  # a template that raises is found before anything is built
        tokenizer.ChatTemplate(hf).render("What is 1 + 1?")


def load_tokenizer(run: MathRunConfig):
    """(tokenizer, template) of the run: bytes or the tokenizer folder; plain or its chat one."""
    path = tokenizer_dir(run)
    if path == "bytes":
        return tokenizer.ByteTokenizer(), math_task.PLAIN
    tok = HFTokenizer.from_dir(path)
    if run.chat_template == "model":
        return tok, tokenizer.ChatTemplate(tok)
    return tok, math_task.PLAIN


def model_config(run: MathRunConfig, tok) -> TransformerConfig:
    """The tiny decoder at the run's widths, or the checkpoint's config.json with max_len P + A;
    either stops on the tokenizer's `eos_ids` and pads with its `pad_id`."""
    max_len = run.prompt_length + run.completion_length
    if run.model == "tiny":
        model = TransformerConfig(
            vocab_size=tok.vocab_size, d_model=run.d_model, n_layers=run.n_layers,
            n_heads=run.n_heads, d_ff=run.d_ff, max_len=max_len,
        )  # fmt: skip
    else:
        model = hf_config.read(run.model, max_len=max_len)
    model = dataclasses.replace(
        model, eos_ids=tuple(tok.eos_ids), pad_id=tok.pad_id, dtype=run.dtype, remat=run.remat,
        logits_chunk=run.logits_chunk,
    )  # fmt: skip
    tokenizer.check_tokenizer(tok, model)
    return model


def base_params(run: MathRunConfig, model: TransformerConfig, train, tok, template, key, mesh):
    """The policy RL starts from, split on `mesh` by `rules`: the checkpoint's or a random one
    (from `key`), fine-tuned if sft_steps."""
    rules = lm_mesh.RULES[run.rules]
    base = None
    if run.model != "tiny":
        base, loaded = checkpoint.load(
            run.model, mesh=mesh, rules=rules, max_len=model.max_len, dtype=model.dtype
        )
        same = dict(eos_ids=model.eos_ids, pad_id=model.pad_id, remat=model.remat)
        if dataclasses.replace(loaded, logits_chunk=model.logits_chunk, **same) != model:
            raise ValueError(f"model={run.model!r} does not describe {model}")
    if run.sft_steps:
        return fine_tune(run, model, train, tok, template, key, mesh, base)
    if base is not None:
        return base
    init = lambda k: init_params(model, k)  # noqa: E731
    return jax.jit(
        init, out_shardings=sharding.tree_shardings(mesh, jax.eval_shape(init, key), rules)
    )(key)


def fine_tune(run: MathRunConfig, model, problems, tok, template, key, mesh, base=None):
    """`sft_steps` AdamW steps of next-token loss on `#### <answer>` completions, from `base`
    (a checkpoint's parameters) or from a random initialization; the parameters and moments
    are split on `mesh` by `rules`, the batch replicated."""
    cfg = sft.SFTConfig(
        steps=max(run.sft_steps, 1),
        batch_size=min(64, len(problems)),
        learning_rate=run.sft_learning_rate,
        warmup_steps=min(10, max(run.sft_steps // 5, 1)),
        seed=run.seed,
    )
    if base is None:
        start, arg = (lambda k: sft.init(cfg, model, k)), key
    else:
        opt = sft.make_optimizer(cfg)
        start, arg = (lambda p: sft.SFTState(p, opt.init(p), jnp.zeros((), jnp.int32))), base
    rules = lm_mesh.RULES[run.rules]
    state_sh = sharding.tree_shardings(mesh, jax.eval_shape(start, arg), rules)
    state = jax.jit(start, out_shardings=state_sh)(arg)
    texts = [p.prompt for p in problems]
    completions = [math_task.completion(p) for p in problems]
    batch = SeqBatch(
        *tokenizer.encode_prompts(texts, run.prompt_length, tok, template),
        *tokenizer.encode_completions(completions, run.completion_length, tok, truncate=True),
    )
    step, _, _ = steps.jit_step(
        lambda s, b: sft.update(s, b, cfg=cfg, model_cfg=model), mesh, state, batch,
        state_rules=rules, batch_rules=sharding.REPLICATED,
    )  # fmt: skip
    rng = np.random.default_rng(run.seed)
    for _ in range(run.sft_steps):
        rows = rng.choice(len(problems), cfg.batch_size, replace=False)
        state, _ = step(state, SeqBatch(*(x[rows] for x in batch[:4])))
    return state.params
