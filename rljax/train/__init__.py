"""rljax.train."""
