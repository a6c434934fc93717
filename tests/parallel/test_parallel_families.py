"""Tensor-parallel rules for the Llama / Qwen families: every projection is split over ``tensor``
(heads or MLP hidden units) and ``fsdp``, and the sharded forward pass equals one device's.

8 fake CPU devices as a (data 2, fsdp 2, tensor 2) mesh.
"""

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from rljax.lm.model.decoder import (
    TransformerConfig,
    causal_mask,
    forward,
    init_params,
    positions_from_mask,
)
from rljax.parallel import mesh as mesh_lib
from rljax.parallel import sharding, steps

PROJECTIONS = {
    "q/kernel": P("fsdp", "tensor", None),
    "k/kernel": P("fsdp", "tensor", None),
    "v/kernel": P("fsdp", "tensor", None),
    "out/kernel": P("tensor", None, "fsdp"),
    "gate/kernel": P("fsdp", "tensor"),
    "up/kernel": P("fsdp", "tensor"),
    "down/kernel": P("tensor", "fsdp"),
}


def _config(family: str) -> TransformerConfig:
    return TransformerConfig(
        family=family, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64, max_len=16
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3"])
def test_tensor_rules_split_every_projection_and_keep_the_logits(family):
    cfg = _config(family)
    params = init_params(cfg, jax.random.key(0))
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 2, 2), ("data", "fsdp", "tensor")))
    shardings = sharding.tree_shardings(mesh, params, steps.LM_FSDP_TENSOR)
    specs = {
        sharding.path_str(path): s.spec
        for path, s in jax.tree_util.tree_leaves_with_path(shardings)
    }
    for name, want in PROJECTIONS.items():
        for layer in range(cfg.n_layers):
            assert specs[f"block_{layer}/{name}"] == want, (family, name)
    if family == "qwen2":  # q/k/v biases follow their heads
        assert specs["block_0/q/bias"] == P("tensor", None)
        assert specs["block_0/k/bias"] == P("tensor", None)
    if family == "qwen3":  # per-head norms: replicated
        assert specs["block_0/q_norm/scale"] == P()

    tokens = np.array([[1, 5, 9, 7, 3, 4, 8, 2]] * 4, np.int32)
    mask = np.ones_like(tokens)
    mask[1, :3] = 0  # left padding in one row

    def logits(p, t, m):
        return forward(p, cfg, t, positions_from_mask(m), causal_mask(m))[0]

    want = jax.jit(logits)(params, tokens, mask)
    sharded = jax.jit(logits)(sharding.shard(params, shardings), tokens, mask)
    np.testing.assert_allclose(np.asarray(sharded), np.asarray(want), atol=2e-5, rtol=1e-5)
