"""Flax networks and action distributions."""

from rljax.nets import distributions, recurrent
from rljax.nets.mlp import ACTIVATIONS, MLP, ActorCritic, actor_out, critic_value

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "ActorCritic",
    "actor_out",
    "critic_value",
    "distributions",
    "recurrent",
]
