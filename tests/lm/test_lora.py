"""LoRA: a fresh adapter is the base; merged == unmerged; gradients reach only the adapters;
a vmapped population over one unbatched base equals each learner alone; bad configs fail."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.lm.model import lora
from rljax.lm.model.decoder import (
    TransformerConfig,
    causal_mask,
    forward,
    init_params,
    positions_from_mask,
)

SHAPES = {
    "tiny": dict(family="tiny"),
    "llama": dict(family="llama", n_kv_heads=2),
    "qwen2": dict(family="qwen2", n_kv_heads=2),
    "qwen3": dict(family="qwen3", n_kv_heads=2, tie_embeddings=True),
}


def _model(family):
    cfg = TransformerConfig(
        d_model=32, n_layers=2, n_heads=4, d_ff=48, max_len=12, **SHAPES[family]
    )
    return cfg, init_params(cfg, jax.random.PRNGKey(0))


def _batch(cfg):
    tokens = jax.random.randint(jax.random.PRNGKey(1), (2, 7), 0, cfg.vocab_size)
    mask = jnp.ones((2, 7), jnp.int32).at[0, :2].set(0)  # one left-padded row
    return tokens, positions_from_mask(mask), causal_mask(mask)


def _random_adapters(adapters, seed=3):
    """Nonzero B (a trained adapter) so the low-rank path matters."""
    leaves, tree = jax.tree.flatten(adapters)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(
        tree, [0.1 * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves, strict=True)]
    )


def _logits(cfg, params, batch):
    return _forward(params, cfg, *batch)[0]


_forward = jax.jit(forward, static_argnums=1)


@pytest.mark.slow  # four families compiled (~45 s on the 2-core CPU)
@pytest.mark.parametrize("family", list(SHAPES))
def test_fresh_adapters_give_the_base_logits_and_merging_is_exact(family):
    cfg, base = _model(family)
    lcfg = lora.LoraConfig(rank=4, alpha=8.0)
    adapters = lora.init_adapters(base, lcfg)
    batch = _batch(cfg)
    want = _logits(cfg, base, batch)
    fresh = _logits(cfg, lora.Adapted(base, adapters, lcfg.scale), batch)
    # B = 0 adds exact zeros, but XLA may fuse the two programs differently: 1.0e-6 apart
    # (qwen3, 2-core Intel Xeon, 2026-11-28), bit-equal on the AMD EPYC
    np.testing.assert_allclose(fresh, want, rtol=1e-5, atol=1e-5)
    trained = _random_adapters(adapters)
    unmerged = _logits(cfg, lora.Adapted(base, trained, lcfg.scale), batch)
    merged = _logits(cfg, lora.merge(base, trained, lcfg), batch)
    assert float(jnp.max(jnp.abs(unmerged - want))) > 1e-2  # the adapters change the outputs
    np.testing.assert_allclose(merged, unmerged, atol=2e-5, rtol=1e-5)


def test_every_attention_and_mlp_projection_is_adapted_with_its_shape():
    cfg, base = _model("llama")
    adapters = lora.init_adapters(base, lora.LoraConfig(rank=3))
    block = adapters["block_0"]
    assert sorted(block) == ["down", "gate", "k", "out", "q", "up", "v"]
    assert block["q"]["lora_a"].shape == (32, 3) and block["q"]["lora_b"].shape == (3, 4 * 8)
    assert block["k"]["lora_b"].shape == (3, 2 * 8)  # grouped-query: 2 key/value heads
    assert block["out"]["lora_a"].shape == (4 * 8, 3)  # inputs: heads x head width
    tiny = lora.init_adapters(_model("tiny")[1], lora.LoraConfig(rank=2, targets=("attention",)))
    assert sorted(tiny["block_1"]) == ["out", "qkv"]
    assert tiny["block_1"]["qkv"]["lora_b"].shape == (2, 3 * 32)
    assert not jnp.any(tiny["block_1"]["qkv"]["lora_b"])


@pytest.mark.slow  # the merged and adapted gradients compiled (~10-20 s)
def test_gradients_reach_only_the_adapters():
    cfg, base = _model("qwen2")
    lcfg = lora.LoraConfig(rank=2)
    adapters = _random_adapters(lora.init_adapters(base, lcfg))
    batch = _batch(cfg)

    def loss(adapters, base):
        return jnp.mean(_logits(cfg, lora.Adapted(base, adapters, lcfg.scale), batch) ** 2)

    grads = jax.grad(loss)(adapters, base)
    chex.assert_trees_all_equal_shapes(grads, adapters)
    assert all(float(jnp.max(jnp.abs(g))) > 0 for g in jax.tree.leaves(grads))
    # The adapters' gradient is the merged model's kernel gradient, projected: dL/dB = s A^T dL/dW
    merged_grad = jax.grad(lambda p: jnp.mean(_logits(cfg, p, batch) ** 2))(
        lora.merge(base, adapters, lcfg)
    )
    a = adapters["block_0"]["q"]["lora_a"]
    dw = merged_grad["block_0"]["q"]["kernel"].reshape(a.shape[0], -1)
    np.testing.assert_allclose(grads["block_0"]["q"]["lora_b"], lcfg.scale * a.T @ dw, atol=1e-6)


def test_a_vmapped_population_over_one_unbatched_base_equals_each_member_alone():
    cfg, base = _model("tiny")
    lcfg = lora.LoraConfig(rank=2)
    members = [_random_adapters(lora.init_adapters(base, lcfg), seed=s) for s in range(3)]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *members)
    batch = _batch(cfg)
    fn = lambda base, a: _logits(cfg, lora.Adapted(base, a, lcfg.scale), batch)  # noqa: E731
    together = jax.jit(jax.vmap(fn, in_axes=(None, 0)))(base, stacked)
    # The base enters the population program once, unbatched: no [K, ...] copy of a kernel.
    text = jax.jit(jax.vmap(fn, in_axes=(None, 0))).lower(base, stacked).as_text()
    assert "tensor<3x32x3x4x8xf32>" not in text  # the qkv kernel broadcast to the population
    for k, adapters in enumerate(members):
        np.testing.assert_allclose(together[k], jax.jit(fn)(base, adapters), atol=2e-5)


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(rank=0), "lora.rank=0 is invalid; allowed: an int >= 1"),
        (dict(rank=2.5), "lora.rank=2.5 is invalid"),
        (dict(alpha=-1.0), "lora.alpha=-1.0 is invalid; allowed: > 0"),
        (dict(targets=("attn",)), "lora.targets=('attn',) is invalid"),
    ],
)
def test_bad_configs_name_the_field(fields, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lora.LoraConfig(**fields)


def test_targets_absent_from_the_model_fail_clearly():
    with pytest.raises(ValueError, match="match no projection"):
        lora.init_adapters(_model("tiny")[1], lora.LoraConfig(targets=("gate",)))
    assert lora.from_fields({"rank": 0, "alpha": 1.0}) is None
    cfg = lora.from_fields({"rank": 4, "alpha": 8.0, "targets": "q, v"})
    assert cfg.targets == ("q", "v") and cfg.scale == 2.0


def test_the_entry_point_refuses_bad_lora_fields_before_building_anything(tmp_path):
    from configs import grpo as grpo_config
    from rljax.train import lm_experiment

    c = grpo_config.get_config("arithmetic,tiny")
    c.data_dir = str(tmp_path / "never_built")
    c.lora.rank, c.lora.alpha = 4, 0.0
    with pytest.raises(ValueError, match=r"lora.alpha=0.0 is invalid; allowed: > 0"):
        lm_experiment.validate(lm_experiment.from_config(c, str(tmp_path / "run")))
    c.lora.alpha, c.lora.targets = 8.0, "attention,nope"
    with pytest.raises(ValueError, match=r"lora.targets=\('attention', 'nope'\) is invalid"):
        lm_experiment.validate(lm_experiment.from_config(c, str(tmp_path / "run")))
    assert not (tmp_path / "never_built").exists()
    c.lora.targets = "attention"
    run = lm_experiment.from_config(c, str(tmp_path / "run"))
    lm_experiment.validate(run)
    assert dict(run.lora)["rank"] == 4
