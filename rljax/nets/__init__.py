"""Flax networks and action distributions."""

from rljax.nets import distributions
from rljax.nets.mlp import ACTIVATIONS, MLP, ActorCritic

__all__ = ["ACTIVATIONS", "MLP", "ActorCritic", "distributions"]
