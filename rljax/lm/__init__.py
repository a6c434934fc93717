"""rljax.lm."""

from rljax import prng_kernel

prng_kernel.install()  # random draws through the compiled Threefry kernel on CPU
