"""Transformer, KV-cache sampling and masked log-probs."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.lm import tokenizer
from rljax.lm.logprobs import completion_log_probs
from rljax.lm.model import (
    TransformerConfig,
    causal_mask,
    forward,
    init_params,
    num_params,
    positions_from_mask,
)
from rljax.lm.sampling import sample, sample_recompute

CFG = TransformerConfig(d_model=32, n_layers=2, n_heads=2, d_ff=64, max_len=20)


@pytest.fixture(scope="module")
def params():
    p = init_params(CFG, jax.random.key(0))
    # Make EOS likely so that some rows stop early and the PAD/mask path is exercised.
    return jax.tree_util.tree_map_with_path(
        lambda path, x: x.at[:, tokenizer.EOS].add(2.0) if "head" in str(path) else x, p
    )


def _prompts():
    return tokenizer.encode_prompts(["1+2=", "3*4-5=", "9=", "7-7+7-7="], 10)


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 0.8), (0.0, 1.0)])
def test_kv_cache_sampling_equals_full_recompute(params, temperature, top_p):
    tokens, mask = _prompts()
    fast = jax.jit(
        sample, static_argnums=1, static_argnames=("max_new_tokens", "temperature", "top_p")
    )
    for seed in range(3):
        kw = dict(max_new_tokens=8, temperature=temperature, top_p=top_p)
        a = fast(params, CFG, tokens, mask, jax.random.key(seed), **kw)
        b = sample_recompute(params, CFG, tokens, mask, jax.random.key(seed), **kw)
        np.testing.assert_array_equal(a.tokens, b.tokens)
        np.testing.assert_array_equal(a.mask, b.mask)
        # After the first EOS a row emits only PAD with mask 0.
        for row_tokens, row_mask in zip(np.asarray(a.tokens), np.asarray(a.mask), strict=True):
            _, finished = tokenizer.decode(row_tokens)
            n = int(row_mask.sum())
            assert (row_tokens[n:] == tokenizer.PAD).all() and row_mask[:n].all()
            assert finished == (row_tokens[n - 1] == tokenizer.EOS)
    assert (np.asarray(a.mask) == 0).any()  # some row stopped early (the fixture biases EOS)


def test_left_padding_does_not_change_logits(params):
    ids = [tokenizer.BOS, *tokenizer.encode("3*4-5=")]
    short = jnp.asarray([ids])
    padded = jnp.asarray([[tokenizer.PAD] * 3 + ids])
    m_short, m_pad = jnp.ones_like(short), (padded != tokenizer.PAD).astype(jnp.int32)
    a, _ = forward(params, CFG, short, positions_from_mask(m_short), causal_mask(m_short))
    b, _ = forward(params, CFG, padded, positions_from_mask(m_pad), causal_mask(m_pad))
    np.testing.assert_allclose(a[0], b[0, 3:], atol=1e-5)


def test_log_prob_masks_exclude_padding(params):
    prompt_tokens, prompt_mask = _prompts()
    comp_tokens, comp_mask = tokenizer.encode_completions(["3", "7", "9", "0"], 6)
    logp, entropy = completion_log_probs(
        params, CFG, prompt_tokens, prompt_mask, comp_tokens, comp_mask
    )
    chex.assert_shape([logp, entropy], comp_tokens.shape)
    assert (np.asarray(logp)[comp_mask == 0] == 0).all()
    assert (np.asarray(entropy)[comp_mask == 0] == 0).all()
    assert (np.asarray(logp)[comp_mask == 1] < 0).all()
    # Garbage in the padded slots changes nothing at real positions.
    junk = np.where(comp_mask == 1, comp_tokens, 17)
    junk_prompt = np.where(prompt_mask == 1, prompt_tokens, 23)
    logp2, _ = completion_log_probs(params, CFG, junk_prompt, prompt_mask, junk, comp_mask)
    np.testing.assert_allclose(logp, logp2, atol=1e-5)
    # Masked batch == each row alone, unpadded (masking equals slicing).
    for row in range(len(comp_tokens)):
        p = prompt_tokens[row][prompt_mask[row] == 1][None]
        c = comp_tokens[row][comp_mask[row] == 1][None]
        alone, _ = completion_log_probs(params, CFG, p, np.ones_like(p), c, np.ones_like(c))
        np.testing.assert_allclose(alone[0], logp[row][comp_mask[row] == 1], atol=1e-5)


def test_greedy_tokens_are_the_argmax_of_the_full_pass(params):
    prompt_tokens, prompt_mask = _prompts()
    out = sample(
        params,
        CFG,
        prompt_tokens,
        prompt_mask,
        jax.random.key(0),
        max_new_tokens=5,
        temperature=0.0,
    )
    tokens = jnp.concatenate([prompt_tokens, out.tokens], axis=1)
    mask = jnp.concatenate([prompt_mask, out.mask], axis=1)
    logits, _ = forward(params, CFG, tokens, positions_from_mask(mask), causal_mask(mask))
    argmax = np.asarray(jnp.argmax(logits[:, prompt_tokens.shape[1] - 1 : -1], axis=-1))
    real = np.asarray(out.mask) == 1
    np.testing.assert_array_equal(argmax[real], np.asarray(out.tokens)[real])


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="d_model=30"):
        TransformerConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="top_p=0.0"):
        tokens, mask = _prompts()
        sample(None, CFG, tokens, mask, jax.random.key(0), max_new_tokens=2, top_p=0.0)
    with pytest.raises(ValueError, match="max_len=20"):
        tokens, mask = _prompts()
        sample(None, CFG, tokens, mask, jax.random.key(0), max_new_tokens=11)


@pytest.mark.parametrize(
    "d_model,n_layers,d_ff,low,high", [(64, 2, 256, 0.05e6, 0.2e6), (512, 6, 2048, 15e6, 25e6)]
)
def test_sizes_by_config(d_model, n_layers, d_ff, low, high):
    cfg = TransformerConfig(d_model=d_model, n_layers=n_layers, n_heads=8, d_ff=d_ff)
    shapes = jax.eval_shape(lambda: init_params(cfg, jax.random.key(0)))
    assert low < num_params(shapes) < high
