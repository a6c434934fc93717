"""Flax networks and action distributions."""

from rljax.nets import distributions
from rljax.nets.mlp import ACTIVATIONS, MLP, ActorCritic, critic_value

__all__ = ["ACTIVATIONS", "MLP", "ActorCritic", "critic_value", "distributions"]
