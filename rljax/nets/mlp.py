"""Multilayer perceptrons and the actor-critic network used by policy-gradient agents."""

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "swish": nn.swish}


def _orthogonal(scale: float):
    return nn.initializers.orthogonal(scale)


@jax.custom_vjp
def _matmul_cpu(x: jax.Array, w: jax.Array) -> jax.Array:
    return x @ w


def _matmul_cpu_fwd(x, w):
    return x @ w, (x, w)


def _matmul_cpu_bwd(residuals, g):
    x, w = residuals
    # The weight gradient x^T g contracts over the batch, the first axis of both operands.
    # XLA:CPU folds a transpose into such a dot and runs it on a path about 2x slower than a
    # row-major product (an MLP step of the classic PPO setup spends half its time there);
    # materializing x^T behind an optimization barrier keeps the product row-major.
    x_t = jax.lax.optimization_barrier(jnp.swapaxes(x, -1, -2))
    return g @ jnp.swapaxes(w, -1, -2), x_t @ g


_matmul_cpu.defvjp(_matmul_cpu_fwd, _matmul_cpu_bwd)


@jax.custom_vjp
def _matmul_cpu_row_grad(x: jax.Array, w: jax.Array) -> jax.Array:
    return x @ w


def _matmul_cpu_row_grad_bwd(residuals, g):
    x, w = residuals
    # For a one-column output ``g`` is ``[B, 1]`` and ``x^T g`` is a matrix-vector product,
    # which XLA:CPU emits as a loop fused with ``x``'s transpose and with every elementwise op
    # that computes ``g``, recomputing them for each of the ``in`` weights. Taken as the row
    # ``g^T x`` (a vector-matrix product over the rows of ``x``), ``x`` needs no transpose and
    # ``g`` is computed once. Same maths, other rounding (the sum over the batch is ordered
    # differently).
    return g @ jnp.swapaxes(w, -1, -2), jnp.swapaxes(jnp.swapaxes(g, -1, -2) @ x, -1, -2)


_matmul_cpu_row_grad.defvjp(_matmul_cpu_fwd, _matmul_cpu_row_grad_bwd)


def dense_dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """``lax.dot_general`` for ``nn.Dense``; on CPU a ``[B, in] @ [in, out]`` product gets the
    faster weight-gradient layout of ``_matmul_cpu_bwd`` (same values; measured in README)."""
    return _dense_dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                              _matmul_cpu)  # fmt: skip


def row_grad_dot_general(
    lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None
):  # fmt: skip
    """``dense_dot_general``, except that on CPU a one-column output (``out = 1``) takes its
    weight gradient as the row ``g^T x`` (``_matmul_cpu_row_grad_bwd``): faster where the
    output's gradient is a long elementwise chain (SAC's critics: 17% of a 1-seed run), with
    other rounding than ``dense_dot_general``."""
    matmul = _matmul_cpu_row_grad if rhs.shape[-1] == 1 else _matmul_cpu  # used if 2-D
    return _dense_dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                              matmul)  # fmt: skip


def _dense_dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type, matmul):
    (lhs_c, rhs_c), (lhs_b, _) = dimension_numbers
    plain = lhs.ndim == 2 and rhs.ndim == 2 and tuple(lhs_c) == (1,) and tuple(rhs_c) == (0,)
    if plain and not lhs_b and jax.default_backend() == "cpu" and precision is None:
        return matmul(lhs, rhs)
    return jax.lax.dot_general(
        lhs, rhs, dimension_numbers, precision=precision,
        preferred_element_type=preferred_element_type,
    )  # fmt: skip


def _dense(width: int, scale: float, dot_general=dense_dot_general) -> nn.Dense:
    return nn.Dense(width, kernel_init=_orthogonal(scale), dot_general=dot_general)


class MLP(nn.Module):
    """``Dense -> act`` for each hidden size, then a final ``Dense(out_dim)``.

    The layers act on the last axis of the input ``[..., features]``.
    Orthogonal init with gain √2 on hidden layers and ``out_scale`` on the output layer, as in
    Andrychowicz et al. 2021 ("What Matters In On-Policy RL").
    """

    hidden: Sequence[int]
    out_dim: int
    activation: str = "tanh"
    out_scale: float = 1.0
    row_grad: bool = False  # a one-column output layer uses ``row_grad_dot_general``

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = act(_dense(width, np.sqrt(2))(x))
        out_dot = row_grad_dot_general if self.row_grad else dense_dot_general
        return _dense(self.out_dim, self.out_scale, out_dot)(x)


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


def actor_out(params, obs: jax.Array, net: ActorCritic) -> tuple[jax.Array, jax.Array]:
    """The actor of ``ActorCritic`` alone: ``(policy_out, log_std)`` as the network returns them.

    ``params`` are the whole ``ActorCritic``'s; its actor is the first MLP (``MLP_0``).
    """
    mlp = MLP(net.hidden, net.num_actions, net.activation, out_scale=0.01)
    out = mlp.apply({"params": params["params"]["MLP_0"]}, obs.reshape(obs.shape[0], -1))
    log_std = jnp.zeros((0,), out.dtype) if net.discrete else params["params"]["log_std"]
    return out, log_std
