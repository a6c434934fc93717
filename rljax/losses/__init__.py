"""rljax.losses."""
