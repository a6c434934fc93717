"""rljax.envs."""
