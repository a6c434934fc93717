"""rljax.parallel."""
