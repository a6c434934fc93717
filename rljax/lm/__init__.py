"""rljax.lm."""
