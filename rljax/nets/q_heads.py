"""Action-value networks with the value heads of the DQN family.

One MLP torso maps a flattened observation to ``A × D`` outputs, reshaped ``[B, A, D]``:

* ``"mse"`` / ``"huber"``: D = 1, a scalar Q-value per action (Mnih et al. 2015).
* ``"two_hot"`` / ``"hl_gauss"``: D = N logits over a fixed support of bin centres, trained by
  cross-entropy against a two-hot or HL-Gauss target (Farebrother et al. 2024, "Stop
  Regressing"); the value is the expectation over the support.
* ``"c51"``: D = N logits of a categorical return distribution (Bellemare et al. 2017).
* ``"qr"``: D = N quantiles of the return distribution (Dabney et al. 2018, QR-DQN).

``q_values`` reads every head back to ``[B, A]`` action values for acting and bootstrapping.
"""

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.losses import classification
from rljax.nets.mlp import ACTIVATIONS

HEADS = ("mse", "huber", "two_hot", "hl_gauss", "c51", "qr")
CATEGORICAL_HEADS = ("two_hot", "hl_gauss", "c51")  # logits over `support`


def head_dim(head: str, num_bins: int) -> int:
    """Outputs per action D of ``head``: 1 for scalar heads, ``num_bins`` otherwise."""
    if head not in HEADS:
        raise ValueError(f"head={head!r} is unknown; valid: {', '.join(HEADS)}")
    return 1 if head in ("mse", "huber") else num_bins


class QNetwork(nn.Module):
    """MLP over flattened observations with ``num_actions × dim`` outputs.

    Flax's default (LeCun-normal) initialization, as in the CleanRL/purejaxrl DQN; the orthogonal
    initializer of ``rljax.nets.MLP`` costs seconds of compile time on CPU (a QR decomposition
    per layer) and buys nothing measurable here. Returns ``[B, A, D]``.
    """

    num_actions: int
    dim: int
    hidden: Sequence[int] = (120, 84)
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = act(nn.Dense(width)(x))
        out = nn.Dense(self.num_actions * self.dim)(x)
        return out.reshape(obs.shape[0], self.num_actions, self.dim)


def support(v_min: float, v_max: float, num_bins: int) -> jax.Array:
    """``num_bins`` evenly spaced bin centres from ``v_min`` to ``v_max``: ``[N]``."""
    return jnp.linspace(v_min, v_max, num_bins, dtype=jnp.float32)


def q_values(head: str, out: jax.Array, support_: jax.Array) -> jax.Array:
    """Action values ``[B, A]`` from network outputs ``[B, A, D]``.

    Scalar heads: the single output. Categorical heads: ``Σ_j softmax(logits)_j s_j``. QR: the
    mean of the N quantiles (each carries mass 1/N).
    """
    if head in ("mse", "huber"):
        return out[..., 0]
    if head in CATEGORICAL_HEADS:
        return classification.expectation(out, support_)
    if head == "qr":
        return jnp.mean(out, axis=-1)
    raise ValueError(f"head={head!r} is unknown; valid: {', '.join(HEADS)}")
