"""Parity with transformers on the committed random tiny checkpoints (scripts/build_hf_fixtures.py).

Each family's fixture holds transformers' float32 logits of a left-padded batch and its 32 greedy
tokens; the tokenizer fixture holds transformers' ids of 200 strings and its chat-template text.
Where transformers is importable (the `hf` extra), `test_live_rebuild` rebuilds the fixtures and
runs the same comparisons on them.
"""

import importlib.util
import json
import os

import jax
import numpy as np
import pytest

from rljax.lm.model import decoder, sampling
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.hf import config as hf_config
from rljax.lm.model.hf.tokenizer import HFTokenizer
from rljax.lm.model.logprobs import completion_log_probs

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "hf")
FAMILIES = ("llama", "qwen2", "qwen3")
LOGITS_ATOL = 1e-4  # measured 2026-11-25: 2.6e-6 (llama), 2.6e-6 (qwen2), 3.7e-6 (qwen3)
BF16_ATOL = 0.25  # measured 2026-11-25: 0.073, 0.061, 0.107 on logits of max |4.2|


def _forward(params, cfg, tokens, mask):
    pos, attn = decoder.positions_from_mask(mask), decoder.causal_mask(mask)
    return np.asarray(jax.jit(decoder.forward, static_argnums=1)(params, cfg, tokens, pos, attn)[0])


def check_model(folder: str, family: str) -> float:
    """Logits within LOGITS_ATOL on the real tokens and the same 32 greedy tokens; returns the
    max abs logits error."""
    params, cfg = checkpoint.load(os.path.join(folder, family))
    assert cfg.family == family
    ref = np.load(os.path.join(folder, family, "reference.npz"))
    tokens, mask = ref["tokens"], ref["mask"]
    logits = _forward(params, cfg, tokens, mask)
    err = float(np.abs(logits - ref["logits"])[mask.astype(bool)].max())
    assert err < LOGITS_ATOL, (family, err)
    greedy = jax.jit(
        sampling.sample, static_argnums=1, static_argnames=("max_new_tokens", "temperature")
    )(params, cfg, tokens, mask, jax.random.key(0), max_new_tokens=32, temperature=0.0)
    np.testing.assert_array_equal(greedy.tokens, ref["greedy"])
    return err


def check_tokenizer(folder: str) -> None:
    """ids of 200 strings and the chat template's text equal transformers'."""
    with open(os.path.join(folder, "tokenizer_reference.json")) as f:
        ref = json.load(f)
    tok = HFTokenizer.from_dir(os.path.join(folder, "tokenizer"))
    assert len(ref["strings"]) == 200 and any(ord(c) > 0xFFFF for s in ref["strings"] for c in s)
    for s, ids, plain in zip(ref["strings"], ref["ids"], ref["ids_no_specials"], strict=True):
        assert tok.encode(s, add_special_tokens=True) == ids, s
        assert tok.encode(s) == plain, s  # the Tokenizer protocol's encode adds no special token
    for conversation, text in zip(ref["conversations"], ref["chat_text"], strict=True):
        assert tok.apply_chat_template(conversation) == text
    assert (tok.eos_id, tok.pad_id) == (ref["eos_id"], ref["pad_id"])


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_and_greedy_tokens_equal_transformers(family):
    check_model(FIXTURES, family)


def test_tokenizer_and_chat_template_equal_transformers():
    check_tokenizer(FIXTURES)


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_logits_tolerance(family):
    params, cfg = checkpoint.load(os.path.join(FIXTURES, family))
    ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
    bf16 = decoder.TransformerConfig(**{**cfg.__dict__, "dtype": "bfloat16"})
    logits = _forward(params, bf16, ref["tokens"], ref["mask"])
    err = np.abs(logits - ref["logits"])[ref["mask"].astype(bool)]
    assert logits.dtype == np.float32 and 1e-4 < err.max() < BF16_ATOL


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_grouped_log_prob_pass_serves_every_family(family):
    params, cfg = checkpoint.load(os.path.join(FIXTURES, family))
    ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
    group = 2
    prompts = np.repeat(ref["tokens"], group, 0), np.repeat(ref["mask"], group, 0)
    completions = jax.jit(sampling.sample, static_argnums=1, static_argnames="max_new_tokens")(
        params, cfg, *prompts, jax.random.key(1), max_new_tokens=6
    )
    log_probs = jax.jit(completion_log_probs, static_argnums=(1, 6))
    whole = log_probs(params, cfg, *prompts, *completions, 1)
    grouped = log_probs(params, cfg, *prompts, *completions, group)
    np.testing.assert_allclose(whole[0], grouped[0], atol=2e-5)
    assert np.asarray(whole[0]).min() < -0.1  # real log-probs, not all zero


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="needs the hf extra (transformers)"
)
def test_live_rebuild(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "build_hf_fixtures",
        os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "build_hf_fixtures.py"),
    )
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    builder.build(str(tmp_path))
    for family in FAMILIES:
        check_model(str(tmp_path), family)
    check_tokenizer(str(tmp_path))
    # An rljax export (fresh parameters, not the ones transformers wrote) loads in transformers
    # and computes the same logits.
    import torch
    import transformers

    for family in FAMILIES:
        cfg = hf_config.read(os.path.join(FIXTURES, family))
        params = jax.jit(decoder.init_params, static_argnums=0)(cfg, jax.random.key(7))
        folder = str(tmp_path / f"export_{family}")
        checkpoint.save(folder, params, cfg)
        hf = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")
        ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
        tokens, mask = ref["tokens"], ref["mask"]
        positions = np.asarray(decoder.positions_from_mask(mask))
        with torch.no_grad():
            want = hf.eval()(
                input_ids=torch.tensor(tokens, dtype=torch.long),
                attention_mask=torch.tensor(mask, dtype=torch.long),
                position_ids=torch.tensor(positions, dtype=torch.long),
            ).logits.numpy()
        got = _forward(params, cfg, tokens, mask)
        assert np.abs(got - want)[mask.astype(bool)].max() < LOGITS_ATOL
