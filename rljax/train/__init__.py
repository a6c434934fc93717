"""Host-side training: the one loop, population experiments, plots and sweeps."""

from rljax.train import loop, plots, sweep

__all__ = ["loop", "plots", "sweep"]
