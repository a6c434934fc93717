"""Flax networks and action distributions."""

from rljax import prng_kernel
from rljax.nets import distributions, recurrent
from rljax.nets.mlp import ACTIVATIONS, MLP, ActorCritic, actor_out, critic_value

prng_kernel.install()  # random draws through the compiled Threefry kernel on CPU

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "ActorCritic",
    "actor_out",
    "critic_value",
    "distributions",
    "recurrent",
]
