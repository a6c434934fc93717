"""Host-side training: the one population pipeline, its loop, front ends and sweeps."""

from rljax.train import loop, population, sweep

__all__ = ["loop", "population", "sweep"]
