"""rljax.nets.in_context: output shapes, and output t depends on tokens 0..t only (causal mask)."""

import jax
import numpy as np

from rljax.nets.in_context import InContextTransformer


def test_shapes_and_causality():
    net = InContextTransformer(num_outputs=3, d_model=8, num_layers=1, num_heads=2)
    tokens = jax.random.normal(jax.random.key(0), (2, 5, 4))
    params = net.init(jax.random.key(1), tokens)
    out = net.apply(params, tokens)
    assert out.shape == (2, 5, 3)
    later = net.apply(params, tokens.at[:, 3:].add(1.0))
    np.testing.assert_allclose(later[:, :3], out[:, :3], atol=1e-6)  # 0..2 never see 3..4
    assert not np.allclose(later[:, 3:], out[:, 3:])
