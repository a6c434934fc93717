"""Stand-in for `rljax.train.checkpoints.Checkpointer` and `rljax.train.metrics.MetricsWriter`.

PENDING: the lead is writing these on main with the same API. Once main has them, `rl_loop.py`
and `base_model.py` import from `rljax.train` and this file is deleted.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import orbax.checkpoint as ocp


class Checkpointer:
    """Orbax checkpoints of `(state, meta)` under `directory` (atomic: finished steps only)."""

    def __init__(self, directory: str, max_to_keep: int = 3):
        self.directory = os.path.abspath(directory)
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def save(self, step: int, state: Any, meta: dict, *, force: bool = False) -> None:
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta))
        self._manager.save(step, args=args, force=force)

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def restore(self, step: int, like: Any) -> tuple[Any, dict]:
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        args = ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore()
        )
        restored = self._manager.restore(step, args=args)
        return restored["state"], restored["meta"]

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()


class MetricsWriter:
    """Rows as JSON lines in `<workdir>/<name>.jsonl`, mirrored to CSV by `write_csv`."""

    def __init__(self, workdir: str, name: str = "metrics"):
        os.makedirs(workdir, exist_ok=True)
        self.jsonl_path = os.path.join(workdir, f"{name}.jsonl")
        self.csv_path = os.path.join(workdir, f"{name}.csv")

    def read(self) -> list[dict]:
        if not os.path.exists(self.jsonl_path):
            return []
        with open(self.jsonl_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def reset(self) -> None:
        for path in (self.jsonl_path, self.csv_path):
            if os.path.exists(path):
                os.remove(path)

    def truncate(self, max_update: int) -> None:
        rows = [r for r in self.read() if r["update"] <= max_update]
        with open(self.jsonl_path + ".tmp", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        os.replace(self.jsonl_path + ".tmp", self.jsonl_path)

    def write(self, rows: list[dict]) -> None:
        with open(self.jsonl_path, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)

    def write_csv(self) -> None:
        import csv

        rows = self.read()
        columns = list(dict.fromkeys(k for r in rows for k in r))
        with open(self.csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
