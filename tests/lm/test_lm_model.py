"""Transformer, KV-cache sampling and masked log-probs."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import (
    TransformerConfig,
    causal_mask,
    forward,
    init_params,
    num_params,
    positions_from_mask,
)
from rljax.lm.model.logprobs import completion_log_probs, completion_token_stats
from rljax.lm.model.sampling import sample, sample_recompute

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


# Jitted once per module: op-by-op these tiny programs spend seconds in dispatch.
_SAMPLE_ARGS = dict(static_argnums=1, static_argnames=("max_new_tokens", "temperature", "top_p"))
_sample = jax.jit(sample, **_SAMPLE_ARGS)
_sample_recompute = jax.jit(sample_recompute, **_SAMPLE_ARGS)
_forward = jax.jit(forward, static_argnums=1)
_log_probs = jax.jit(completion_log_probs, static_argnums=1, static_argnames="group_size")
_token_stats = jax.jit(completion_token_stats, static_argnums=1, static_argnames="group_size")


@pytest.mark.slow  # over ~12 s on the 2-core CPU
@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 0.8), (0.0, 1.0)])
def test_kv_cache_sampling_equals_full_recompute(params, temperature, top_p):
    tokens, mask = _prompts()
    for seed in range(3):
        kw = dict(max_new_tokens=8, temperature=temperature, top_p=top_p)
        a = _sample(params, CFG, tokens, mask, jax.random.key(seed), **kw)
        b = _sample_recompute(params, CFG, tokens, mask, jax.random.key(seed), **kw)
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
    a, _ = _forward(params, CFG, short, positions_from_mask(m_short), causal_mask(m_short))
    b, _ = _forward(params, CFG, padded, positions_from_mask(m_pad), causal_mask(m_pad))
    np.testing.assert_allclose(a[0], b[0, 3:], atol=1e-5)


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_log_prob_masks_exclude_padding(params):
    prompt_tokens, prompt_mask = _prompts()
    comp_tokens, comp_mask = tokenizer.encode_completions(["3", "7", "9", "0"], 6)
    logp, entropy = _log_probs(params, CFG, prompt_tokens, prompt_mask, comp_tokens, comp_mask)
    chex.assert_shape([logp, entropy], comp_tokens.shape)
    assert (np.asarray(logp)[comp_mask == 0] == 0).all()
    assert (np.asarray(entropy)[comp_mask == 0] == 0).all()
    assert (np.asarray(logp)[comp_mask == 1] < 0).all()
    # Garbage in the padded slots changes nothing at real positions.
    junk = np.where(comp_mask == 1, comp_tokens, 17)
    junk_prompt = np.where(prompt_mask == 1, prompt_tokens, 23)
    logp2, _ = _log_probs(params, CFG, junk_prompt, prompt_mask, junk, comp_mask)
    np.testing.assert_allclose(logp, logp2, atol=1e-5)
    # Masked batch == each row alone, unpadded (masking equals slicing).
    for row in range(len(comp_tokens)):
        p = prompt_tokens[row][prompt_mask[row] == 1][None]
        c = comp_tokens[row][comp_mask[row] == 1][None]
        alone, _ = _log_probs(params, CFG, p, np.ones_like(p), c, np.ones_like(c))
        np.testing.assert_allclose(alone[0], logp[row][comp_mask[row] == 1], atol=1e-5)


def _groups(num_prompts: int, group: int, answer_len: int, seed: int = 0):
    """Left-padded prompts, each repeated for a group of rows, and random padded completions."""
    texts = ["1+2=", "3*4-5=", "9=", "7-7+7-7=", "2*2=", "8-1="][:num_prompts]
    prompt_tokens, prompt_mask = tokenizer.encode_prompts(texts, 10)
    rng = np.random.default_rng(seed)
    rows = num_prompts * group
    lengths = rng.integers(1, answer_len + 1, rows)
    comp_mask = (np.arange(answer_len)[None] < lengths[:, None]).astype(np.int32)
    comp_tokens = rng.integers(3, tokenizer.VOCAB_SIZE, (rows, answer_len)) * comp_mask
    return (
        np.repeat(prompt_tokens, group, axis=0),
        np.repeat(prompt_mask, group, axis=0),
        comp_tokens.astype(np.int32),
        comp_mask,
    )


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
@pytest.mark.parametrize("group,answer_len", [(4, 6), (3, 1), (2, 9)])
def test_shared_prompt_pass_equals_the_whole_sequence_pass(params, group, answer_len):
    """group_size runs each prompt once for its group (KV-cache path): the same log-probs,
    entropies, vocabulary means and gradients as the whole-sequence pass, up to rounding."""
    batch = _groups(4, group, answer_len)
    plain = _token_stats(params, CFG, *batch)
    shared = _token_stats(params, CFG, *batch, group_size=group)
    for a, b in zip(plain, shared, strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5)
    weights = jnp.linspace(-1.0, 1.0, answer_len)

    def loss(p, g):
        logp, entropy, mean = completion_token_stats(p, CFG, *batch, group_size=g)
        return jnp.sum(logp * weights) + jnp.sum(entropy) + jnp.sum(mean)

    grads = [jax.jit(jax.grad(loss), static_argnums=1)(params, g) for g in (1, group)]
    scale = max(float(jnp.abs(x).max()) for x in jax.tree.leaves(grads[0]))
    for a, b in zip(*map(jax.tree.leaves, grads), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5 * scale)


@pytest.mark.slow  # ~20 s on the 2-core CPU: four gradient programs compile
def test_chunked_log_probs_equal_the_whole_logits_pass(params):
    """logits_chunk=2 over 5 completion tokens (a padded last chunk), with and without a shared
    prompt: the same statistics and gradients as the whole [B, A, V] logits, up to rounding."""
    chunked = dataclasses.replace(CFG, logits_chunk=2)
    batch = _groups(2, 2, 5)
    weights = jnp.linspace(-1.0, 1.0, 5)

    def loss(p, cfg, group):
        logp, entropy, mean = completion_token_stats(p, cfg, *batch, group_size=group)
        return jnp.sum(logp * weights) + jnp.sum(entropy) + jnp.sum(mean), (logp, entropy, mean)

    def both(cfg):
        return [jax.grad(loss, has_aux=True)(params, cfg, g) for g in (1, 2)]

    assert "[4,5,64]" not in str(jax.make_jaxpr(both, static_argnums=0)(chunked)).replace(" ", "")
    got, want = jax.jit(lambda: (both(chunked), both(CFG)))()
    for (grads, stats), (want_grads, want_stats) in zip(got, want, strict=True):
        for a, b in zip(stats, want_stats, strict=True):
            np.testing.assert_allclose(a, b, atol=2e-5)
        scale = max(float(jnp.abs(x).max()) for x in jax.tree.leaves(want_grads))
        for a, b in zip(*map(jax.tree.leaves, (grads, want_grads)), strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5 * scale)


def test_shared_prompt_pass_needs_whole_groups(params):
    batch = _groups(3, 2, 4)  # 6 rows
    with pytest.raises(ValueError, match="group_size=4 must be >= 1 and divide the 6 rows"):
        completion_log_probs(params, CFG, *batch, group_size=4)


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_greedy_tokens_are_the_argmax_of_the_full_pass(params):
    prompt_tokens, prompt_mask = _prompts()
    out = _sample(
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
    logits, _ = _forward(params, CFG, tokens, positions_from_mask(mask), causal_mask(mask))
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
