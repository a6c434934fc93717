"""rljax.nets."""
