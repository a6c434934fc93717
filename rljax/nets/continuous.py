"""Networks of the off-policy actor-critic learners (SAC, TD3/DDPG, MPO).

- ``Critics``: K independent Q-networks in one module; ``Q(s, a)`` ``[K, B]`` for continuous
  actions (the action is concatenated to the observation) or ``Q(s, ·)`` ``[K, B, A]`` for
  discrete ones.
- ``GaussianActor``: a state-dependent diagonal Gaussian head, ``(mean, raw_scale)`` ``[B, D]``
  each; the learner maps ``raw_scale`` to a standard deviation (``sac_log_std``, ``mpo_std``).
- ``DeterministicActor``: ``μ(s) = tanh(MLP(s))`` ``[B, D]`` in ``[-1, 1]``.

Actions inside the learners are normalized to ``[-1, 1]`` per dimension
(``rljax.agents.offpolicy`` maps them to and from the environment's bounds).
"""

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.nets.mlp import MLP

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # SAC's log σ range (tanh-rescaled, smooth at the ends)
MIN_STD = 1e-3  # MPO's floor on σ


class Critics(nn.Module):
    """K Q-networks with separate parameters; ``num_actions = 0`` for continuous actions."""

    hidden: Sequence[int]
    num_critics: int = 2
    num_actions: int = 0  # > 0: discrete, one output per action
    activation: str = "relu"
    row_grad: bool = False  # one-column outputs take ``rljax.nets.mlp.row_grad_dot_general``

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array | None = None) -> jax.Array:
        x = obs.reshape(obs.shape[0], -1)
        if self.num_actions == 0:
            x = jnp.concatenate([x, action.reshape(action.shape[0], -1)], axis=-1)
        out_dim = max(self.num_actions, 1)
        qs = [
            MLP(self.hidden, out_dim, self.activation, row_grad=self.row_grad)(x)
            for _ in range(self.num_critics)
        ]
        q = jnp.stack(qs)  # [K, B, out]
        return q if self.num_actions else q[..., 0]


class GaussianActor(nn.Module):
    """``(mean, raw_scale)`` of a diagonal Gaussian over D action dimensions, ``[B, D]`` each."""

    action_dim: int
    hidden: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = obs.reshape(obs.shape[0], -1)
        out = MLP(self.hidden, 2 * self.action_dim, self.activation, out_scale=0.01)(x)
        return out[:, : self.action_dim], out[:, self.action_dim :]


class DeterministicActor(nn.Module):
    """``μ(s) = tanh(MLP(s))`` ``[B, D]``."""

    action_dim: int
    hidden: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape(obs.shape[0], -1)
        return jnp.tanh(MLP(self.hidden, self.action_dim, self.activation, out_scale=0.01)(x))


def sac_log_std(raw_scale: jax.Array) -> jax.Array:
    """``log σ`` in ``[LOG_STD_MIN, LOG_STD_MAX]``, a smooth tanh rescaling of the raw output."""
    return LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (jnp.tanh(raw_scale) + 1.0)


def mpo_std(raw_scale: jax.Array, init_std: float | jax.Array) -> jax.Array:
    """``σ = softplus(raw + softplus⁻¹(init_std)) + MIN_STD``: ``init_std`` at ``raw = 0``."""
    shift = jnp.log(jnp.expm1(init_std))
    return jax.nn.softplus(raw_scale + shift) + MIN_STD


def tanh_gaussian(
    mean: jax.Array, log_std: jax.Array, noise: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """A tanh-squashed Gaussian sample ``a = tanh(μ + σ ε)`` and its log-density.

    ``log π(a) = log N(u; μ, σ²) - Σ_d log(1 - tanh²(u_d))`` (Haarnoja et al. 2018, App. C),
    with ``log(1 - tanh²(u)) = 2 (log 2 - u - softplus(-2u))`` for numerical stability.

    Args:
      mean, log_std: ``[B, D]``.
      noise: standard normal ``ε`` ``[B, D]`` (the reparameterization: gradients flow to μ, σ).

    Returns:
      ``(action [B, D] in (-1, 1), logp [B])``.
    """
    u = mean + jnp.exp(log_std) * noise
    log_normal = jnp.sum(-0.5 * jnp.square(noise) - log_std - 0.5 * jnp.log(2.0 * jnp.pi), -1)
    log_det = jnp.sum(2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)
    return jnp.tanh(u), log_normal - log_det
