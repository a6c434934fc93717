"""rljax: pure-functional, jitted, sharded reinforcement learning in JAX."""

__version__ = "0.1.0"
