"""A small causal transformer over a sequence of feature tokens (in-context learners)."""

import flax.linen as nn
import jax.numpy as jnp


class CausalBlock(nn.Module):
    """Pre-LayerNorm block: ``x + Attn(LN(x))`` with a causal mask, then ``x + MLP(LN(x))``."""

    num_heads: int
    mlp_ratio: int = 4

    @nn.compact
    def __call__(self, x):
        d = x.shape[-1]
        mask = nn.make_causal_mask(jnp.ones(x.shape[:-1]))
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h, h, mask=mask)
        h = nn.Dense(self.mlp_ratio * d)(nn.LayerNorm()(x))
        return x + nn.Dense(d)(nn.gelu(h))


class InContextTransformer(nn.Module):
    """Tokens ``[B, L, F]`` -> logits ``[B, L, num_outputs]``; output t sees tokens 0..t only."""

    num_outputs: int
    d_model: int = 32
    num_layers: int = 2
    num_heads: int = 2

    @nn.compact
    def __call__(self, tokens):
        x = nn.Dense(self.d_model)(tokens)
        for _ in range(self.num_layers):
            x = CausalBlock(self.num_heads)(x)
        return nn.Dense(self.num_outputs)(nn.LayerNorm()(x))
