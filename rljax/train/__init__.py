"""Host-side training: the one population pipeline, its loop, front ends and sweeps."""

from rljax import prng_kernel
from rljax.train import loop, population, sweep

prng_kernel.install()  # random draws through the compiled Threefry kernel on CPU

__all__ = ["loop", "population", "sweep"]
