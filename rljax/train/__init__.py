"""Host-side training: loop, checkpoints, metrics files, plots and sweeps."""

from rljax.train import checkpoints, loop, metrics, plots, sweep

__all__ = ["checkpoints", "loop", "metrics", "plots", "sweep"]
