"""rljax.dp."""
