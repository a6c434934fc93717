"""rljax.agents."""
