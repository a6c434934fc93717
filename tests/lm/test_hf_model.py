"""The configurable decoder's family switches: GQA, RoPE scaling, tied heads, stop tokens, bf16."""

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rljax.lm.model import decoder, lora, pretrained, sampling
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.logprobs import completion_log_probs

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "hf")
LLAMA = decoder.TransformerConfig(
    vocab_size=50, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=48, max_len=24,
    family="llama",
)  # fmt: skip


def _batch():
    mask = np.ones((2, 6), np.int32)
    mask[1, :3] = 0
    tokens = np.arange(12, dtype=np.int32).reshape(2, 6) * mask + 3
    return tokens, mask


def _logits(params, cfg, tokens, mask):
    pos, attn = decoder.positions_from_mask(mask), decoder.causal_mask(mask)
    return jax.jit(decoder.forward, static_argnums=1)(params, cfg, tokens, pos, attn)[0]


def test_grouped_query_attention_equals_repeated_heads():
    """K key/value heads read by H/K query heads each == H heads whose k/v kernels repeat."""
    params = jax.jit(decoder.init_params, static_argnums=0)(LLAMA, jax.random.key(0))
    full_cfg = decoder.TransformerConfig(**{**LLAMA.__dict__, "n_kv_heads": 4})
    full = jax.tree.map(lambda x: x, params)
    for name in ("k", "v"):  # kernel [E, K, D] -> [E, H, D], head h = kv head h // 2
        full["block_0"][name]["kernel"] = jnp.repeat(params["block_0"][name]["kernel"], 2, 1)
    tokens, mask = _batch()
    np.testing.assert_allclose(
        _logits(params, LLAMA, tokens, mask), _logits(full, full_cfg, tokens, mask), atol=1e-5
    )


def test_llama3_rope_scaling_by_band():
    """Llama 3.1's rule: wavelengths below original/high unchanged, above original/low divided
    by the factor, linear in original/wavelength between (a NumPy loop as the reference)."""
    factor, low, high, original = 8.0, 1.0, 4.0, 64.0
    base = decoder.rope_frequencies(32, 10_000.0)
    scaled = np.asarray(
        decoder.rope_frequencies(32, 10_000.0, ("llama3", factor, low, high, original))
    )
    for theta, got in zip(np.asarray(base), scaled, strict=True):
        wavelength = 2 * np.pi / theta
        if wavelength < original / high:
            want = theta
        elif wavelength > original / low:
            want = theta / factor
        else:
            s = (original / wavelength - low) / (high - low)
            want = (1 - s) * theta / factor + s * theta
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert (scaled == base).any() and (scaled < base).any()  # both bands are present
    linear = decoder.rope_frequencies(32, 10_000.0, ("linear", 4.0))
    np.testing.assert_allclose(linear, base / 4.0, rtol=1e-7)


def test_tied_embeddings_have_no_head():
    tied = decoder.TransformerConfig(**{**LLAMA.__dict__, "tie_embeddings": True})
    params = decoder.init_params(tied, jax.random.key(0))
    assert "head" not in params
    assert decoder.num_params(params) + 50 * 32 == decoder.num_params(
        decoder.init_params(LLAMA, jax.random.key(0))
    )


@pytest.mark.slow  # over ~12 s on the 2-core CPU
@pytest.mark.parametrize("family", ["qwen2", "qwen3"])
def test_kv_cache_sampling_equals_recompute_with_several_stop_tokens(family):
    params, cfg = checkpoint.load(os.path.join(FIXTURES, family))
    ref = np.load(os.path.join(FIXTURES, family, "reference.npz"))
    # Three frequent tokens of this model stop a completion, so rows end early.
    values, counts = np.unique(ref["greedy"], return_counts=True)
    stops = tuple(int(t) for t in values[np.argsort(-counts)][:3])
    cfg = decoder.TransformerConfig(**{**cfg.__dict__, "eos_ids": stops, "pad_id": 0})
    kw = dict(max_new_tokens=10, temperature=1.0)
    fast = jax.jit(sampling.sample, static_argnums=1, static_argnames=tuple(kw))
    a = fast(params, cfg, ref["tokens"], ref["mask"], jax.random.key(4), **kw)
    b = sampling.sample_recompute(params, cfg, ref["tokens"], ref["mask"], jax.random.key(4), **kw)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.mask, b.mask)
    tokens, mask = np.asarray(a.tokens), np.asarray(a.mask)
    for row_tokens, row_mask in zip(tokens, mask, strict=True):
        n = int(row_mask.sum())
        if n < len(row_tokens):  # stopped: the last real token is a stop token, then PAD
            assert row_tokens[n - 1] in stops and (row_tokens[n:] == 0).all()
    assert (mask == 0).any()


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_bf16_compute_keeps_float32_master_weights_and_moments():
    bf16 = decoder.TransformerConfig(**{**LLAMA.__dict__, "dtype": "bfloat16"})
    params = jax.jit(decoder.init_params, static_argnums=0)(bf16, jax.random.key(0))
    tokens, mask = _batch()
    completion = tokens[:, :3], mask[:, -3:]

    def loss(p, cfg):
        return -jnp.sum(completion_log_probs(p, cfg, tokens, mask, *completion)[0])

    grad = jax.jit(jax.grad(loss), static_argnums=1)
    grads, grads32 = grad(params, bf16), grad(params, LLAMA)
    opt = optax.adamw(1e-3)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    new = optax.apply_updates(params, updates)
    for tree in (params, grads, new, state[0].mu, state[0].nu):
        assert {x.dtype for x in jax.tree.leaves(tree)} == {jnp.dtype(jnp.float32)}
    g, g32 = (np.concatenate([x.ravel() for x in jax.tree.leaves(t)]) for t in (grads, grads32))
    cosine = g @ g32 / np.linalg.norm(g) / np.linalg.norm(g32)
    assert 0.99 < cosine < 1.0  # bf16 rounding, the same direction


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match=r"family='gpt2'; allowed"):
        decoder.TransformerConfig(family="gpt2")
    with pytest.raises(ValueError, match="n_kv_heads=3 must divide n_heads=4"):
        decoder.TransformerConfig(n_kv_heads=3)
    with pytest.raises(ValueError, match="rope_scaling=\\('yarn'"):
        decoder.TransformerConfig(family="llama", rope_scaling=("yarn", 2.0))
    with pytest.raises(ValueError, match="family='tiny' has one key/value head"):
        decoder.TransformerConfig(n_kv_heads=2)


def test_model_path_needs_the_character_tokenizers_ids():
    fields = {"d_model": 32, "path": os.path.join(FIXTURES, "llama")}
    with pytest.raises(ValueError, match="vocab_size=256.*character tokenizer needs vocab_size=64"):
        pretrained.model_config(fields)
    assert pretrained.model_config({"d_model": 32, "path": ""}).d_model == 32


def test_fingerprint_of_the_default_tiny_model_is_unchanged():
    """SFT bases are cached under a hash of this dict: its keys must not grow for tiny models."""
    keys = set(decoder.fingerprint(decoder.TransformerConfig()))
    assert keys == {"vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len", "rope_base"}
    assert "family" in decoder.fingerprint(LLAMA)
    assert "remat" in decoder.fingerprint(dataclasses.replace(LLAMA, remat=True))


@pytest.mark.slow  # ~17 s on the 2-core CPU
def test_remat_keeps_parameter_names_outputs_and_gradients():
    """Gradient checkpointing changes what the backward pass stores, not what it computes."""
    cfg, remat = LLAMA, dataclasses.replace(LLAMA, remat=True)
    init = jax.jit(decoder.init_params, static_argnums=0)
    params = init(cfg, jax.random.key(0))
    assert jax.tree.structure(jax.eval_shape(init, remat, jax.random.key(0))) == (
        jax.tree.structure(params)
    )
    lcfg = lora.LoraConfig(rank=2)
    adapters = jax.tree.map(lambda x: x + 0.1, lora.init_adapters(params, lcfg))  # B != 0
    tokens, mask = _batch()

    def loss(trainable, cfg, lora_cfg, group):
        logp, _ = completion_log_probs(
            lora.with_base(lora_cfg, params, trainable) if lora_cfg else trainable,
            cfg, tokens[:, :3], mask[:, :3], tokens[:, 3:], mask[:, 3:], group,
        )  # fmt: skip
        return jnp.sum(logp)

    def both(cfg):  # logits, full-parameter and LoRA (shared-prompt: KV cache) gradients
        pos, attn = decoder.positions_from_mask(mask), decoder.causal_mask(mask)
        logits = decoder.forward(params, cfg, tokens, pos, attn)[0]
        grads = jax.grad(loss)(params, cfg, None, 1), jax.grad(loss)(adapters, cfg, lcfg, 2)
        return logits, grads

    jaxpr = lambda cfg: str(jax.make_jaxpr(both, static_argnums=0)(cfg))  # noqa: E731
    assert "remat" in jaxpr(remat) and "remat" not in jaxpr(cfg)  # the blocks' checkpoints
    (logits_r, grads_r), (logits, grads) = jax.jit(lambda: (both(remat), both(cfg)))()
    np.testing.assert_array_equal(logits_r, logits)
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # noqa: E731
    jax.tree.map(close, grads_r, grads)


@pytest.mark.slow  # two sampling loops compiled: over ~12 s on the 2-core CPU
def test_remat_samples_the_same_tokens():
    """Decoding (KV cache, no gradient) under remat is the same program's values."""
    params = jax.jit(decoder.init_params, static_argnums=0)(LLAMA, jax.random.key(0))
    tokens, mask = _batch()
    kw = dict(max_new_tokens=4, temperature=1.0)
    run = jax.jit(sampling.sample, static_argnums=1, static_argnames=tuple(kw))
    remat = dataclasses.replace(LLAMA, remat=True)
    a = run(params, remat, tokens, mask, jax.random.key(1), **kw)
    b = run(params, LLAMA, tokens, mask, jax.random.key(1), **kw)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.mask, b.mask)


@pytest.mark.parametrize("tied", [True, False])
def test_head_logits_of_the_final_norm_are_the_logits(tied):
    """`forward(head=False)` then `head_logits` == `forward` (the chunked log-probs' pieces)."""
    cfg = dataclasses.replace(LLAMA, tie_embeddings=tied)
    params = jax.jit(decoder.init_params, static_argnums=0)(cfg, jax.random.key(0))
    tokens, mask = _batch()
    pos, attn = decoder.positions_from_mask(mask), decoder.causal_mask(mask)

    def both(params):
        hidden, _ = decoder.forward(params, cfg, tokens, pos, attn, head=False)
        return decoder.head_logits(params, cfg, hidden), decoder.forward(
            params, cfg, tokens, pos, attn
        )[0]

    got, want = jax.jit(both)(params)
    assert got.dtype == want.dtype == jnp.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_remat_reaches_a_pretrained_model_and_its_checkpoint(tmp_path):
    cfg = dataclasses.replace(LLAMA, vocab_size=64)
    model_checkpoint = str(tmp_path / "base")
    params = jax.jit(decoder.init_params, static_argnums=0)(cfg, jax.random.key(0))
    checkpoint.save(model_checkpoint, params, cfg)
    fields = {"path": model_checkpoint, "remat": True, "logits_chunk": 4}
    remat = pretrained.model_config(fields, max_len=cfg.max_len)
    assert remat == dataclasses.replace(cfg, remat=True, logits_chunk=4)
    loaded, _ = pretrained.load_base(fields, remat)  # the folder's config has no remat
    assert jax.tree.structure(loaded) == jax.tree.structure(params)
