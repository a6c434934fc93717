"""Multilayer perceptrons and the actor-critic network used by policy-gradient agents."""

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}


def _orthogonal(scale: float):
    return nn.initializers.orthogonal(scale)


class MLP(nn.Module):
    """``Dense -> act`` for each hidden size, then a final ``Dense(out_dim)``.

    Inputs ``[..., *obs_shape]`` are flattened over the observation dims given by ``flatten``.
    Orthogonal init with gain √2 on hidden layers and ``out_scale`` on the output layer, as in
    Andrychowicz et al. 2021 ("What Matters In On-Policy RL").
    """

    hidden: Sequence[int]
    out_dim: int
    activation: str = "tanh"
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = act(nn.Dense(width, kernel_init=_orthogonal(np.sqrt(2)))(x))
        return nn.Dense(self.out_dim, kernel_init=_orthogonal(self.out_scale))(x)


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs over flattened observations.

    Returns ``(policy_out, value)``: for a discrete policy ``policy_out`` is logits ``[B, A]``;
    for a Gaussian policy it is the mean ``[B, D]`` and ``log_std`` ``[D]`` is a free parameter
    read with ``Gaussian.log_std`` via ``params["params"]["log_std"]``.
    """

    num_actions: int
    discrete: bool
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        x = obs.reshape(obs.shape[0], -1)
        policy_out = MLP(self.hidden, self.num_actions, self.activation, out_scale=0.01)(x)
        value = MLP(self.hidden, 1, self.activation, out_scale=1.0)(x)[..., 0]
        if self.discrete:
            log_std = jnp.zeros((0,), policy_out.dtype)
        else:
            log_std = self.param("log_std", nn.initializers.zeros, (self.num_actions,))
        return policy_out, log_std, value


def critic_value(
    params, obs: jax.Array, hidden: Sequence[int], activation: str = "tanh"
) -> jax.Array:
    """The critic of ``ActorCritic`` alone, ``V(obs)`` ``[B]``: half the work of the network.

    ``params`` are the whole ``ActorCritic``'s; its critic is the second MLP (``MLP_1``).
    """
    mlp = MLP(hidden, 1, activation, out_scale=1.0)
    return mlp.apply({"params": params["params"]["MLP_1"]}, obs.reshape(obs.shape[0], -1))[..., 0]
