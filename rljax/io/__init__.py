"""Ground-floor writers every layer may use: orbax checkpoints and metrics files (JSONL/CSV)."""

from rljax.io import checkpoints, metrics

__all__ = ["checkpoints", "metrics"]
