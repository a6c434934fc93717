"""A GRU actor-critic whose hidden state resets at episode boundaries.

``obs -> Dense(embed) -> act -> GRU(core) -> (actor MLP, critic MLP)``: one recurrent core
shared by the policy and the value, as in the recurrent PPO of purejaxrl and Stoix. The core's
state ``h [B, core]`` is carried across the steps of a rollout and across rollouts; it is zeroed
before the first observation of every episode, so no information leaks from one episode into the
next, in acting and in training alike (``unroll``).
"""

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from rljax.nets.mlp import ACTIVATIONS, MLP, _dense


class RecurrentActorCritic(nn.Module):
    """GRU core with separate actor and critic heads.

    Methods (apply with ``method=``): ``embed(obs [N, ...]) -> x [N, embed]``,
    ``core(h [B, H], x [B, embed]) -> h' [B, H]`` (one GRU step, Cho et al. 2014), and
    ``heads(h [N, H]) -> (policy_out [N, A or D], log_std [D] or [0], value [N])``.
    Calling the module runs all three for one step: ``(h, obs) -> (h', (policy_out, log_std,
    value))``.
    """

    num_actions: int
    discrete: bool
    embed_size: int = 64
    core_size: int = 64
    hidden: Sequence[int] = (64,)
    activation: str = "tanh"

    def setup(self):
        self.embed_layer = _dense(self.embed_size, np.sqrt(2))
        self.cell = nn.GRUCell(self.core_size)
        self.actor = MLP(self.hidden, self.num_actions, self.activation, out_scale=0.01)
        self.critic = MLP(self.hidden, 1, self.activation, out_scale=1.0)
        if not self.discrete:
            self.log_std = self.param("log_std", nn.initializers.zeros, (self.num_actions,))

    def embed(self, obs: jax.Array) -> jax.Array:
        return ACTIVATIONS[self.activation](self.embed_layer(obs.reshape(obs.shape[0], -1)))

    def core(self, h: jax.Array, x: jax.Array) -> jax.Array:
        return self.cell(h, x)[0]

    def heads(self, h: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        policy_out = self.actor(h)
        value = self.critic(h)[..., 0]
        log_std = jnp.zeros((0,), policy_out.dtype) if self.discrete else self.log_std
        return policy_out, log_std, value

    def __call__(self, h: jax.Array, obs: jax.Array):
        h = self.core(h, self.embed(obs))
        return h, self.heads(h)


def reset_where(first: jax.Array, h: jax.Array) -> jax.Array:
    """``h`` with the rows where ``first`` (``[B]``, 1 = a new episode starts) set to zero."""
    return jnp.where(first[:, None], jnp.zeros_like(h), h)


def unroll(
    net: RecurrentActorCritic, params, h0: jax.Array, obs: jax.Array, first: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The core over a time-major sequence, reset at episode starts.

    ``h_t = GRU(first_t ? 0 : h_{t-1}, embed(obs_t))`` with ``h_{-1} = h0``. Gradients reach
    ``h_{t-1}`` only where ``first_t = 0``: backpropagation through time stops at every episode
    start and at the start of the sequence (``h0`` is an input).

    Args:
      net: the module (static).
      params: its parameters.
      h0: the state before the first step ``[B, H]``.
      obs: observations ``[T, B, ...]``.
      first: 1 where ``obs_t`` is the first observation of an episode ``[T, B]``.

    Returns:
      ``(h_T-1 [B, H], states [T, B, H])``: the last state and the state after each step.
    """
    t, b = first.shape
    # The embedding has no recurrence: one batched pass, then a scan of the GRU cell alone.
    x = net.apply(params, obs.reshape(t * b, *obs.shape[2:]), method=net.embed)
    x = x.reshape(t, b, -1)

    def _step(h, inputs):
        x_t, first_t = inputs
        h = net.apply(params, reset_where(first_t, h), x_t, method=net.core)
        return h, h

    return jax.lax.scan(_step, h0, (x, first))


def initial_state(net: RecurrentActorCritic, batch: int) -> jax.Array:
    """The all-zeros core state ``[B, H]``."""
    return jnp.zeros((batch, net.core_size), jnp.float32)
