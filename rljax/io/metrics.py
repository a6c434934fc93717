"""Metrics files: one JSON object per line (``metrics.jsonl``) and the same rows as CSV."""

import csv
import json
import math
import os
import warnings


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_row(row: dict) -> dict:
    """A row as the file holds it: NaN and infinities become null (strict JSON)."""
    return {k: _clean(v) for k, v in row.items()}


class MetricsWriter:
    """Appends rows to ``<workdir>/metrics.jsonl``; ``write_csv`` mirrors them to CSV.

    On resume, ``truncate(update, last_rows)`` drops rows written after the checkpoint being
    resumed from and puts back the checkpoint's own copy of its last update's rows (a torn last
    line may be one of them), so a resumed run's files equal an uninterrupted run's.
    """

    def __init__(self, workdir: str, name: str = "metrics"):
        os.makedirs(workdir, exist_ok=True)
        self.jsonl_path = os.path.join(workdir, f"{name}.jsonl")
        self.csv_path = os.path.join(workdir, f"{name}.csv")

    def read(self) -> list[dict]:
        """All rows written so far (empty if there is no file).

        A torn last line (what a kill in the middle of a write leaves) is dropped with a warning
        naming the file: the checkpoint being resumed from is older than that row, so the
        resumed run writes it again. A bad line anywhere else is damage, not a torn write: a
        ``ValueError`` names the file and the line.
        """
        if not os.path.exists(self.jsonl_path):
            return []
        with open(self.jsonl_path) as f:
            lines = [(i, line) for i, line in enumerate(f, 1) if line.strip()]
        rows = []
        for n, (i, line) in enumerate(lines):
            try:
                rows.append(json.loads(line))
            except ValueError:
                if n < len(lines) - 1:
                    raise ValueError(
                        f"{self.jsonl_path} line {i} is not a JSON row ({line[:40]!r}); "
                        "allowed: one JSON object per line (only the last line may be torn)"
                    ) from None
                warnings.warn(
                    f"{self.jsonl_path}: dropped a torn last line {i} ({line[:40]!r}), the "
                    "trace of a write cut short",
                    stacklevel=2,
                )
        return rows

    def reset(self) -> None:
        """Starts empty files (a fresh run)."""
        for path in (self.jsonl_path, self.csv_path):
            if os.path.exists(path):
                os.remove(path)

    def truncate(self, max_update: int, last_rows: list[dict] = ()) -> None:
        """Keeps only rows with ``row["update"] <= max_update``.

        Args:
          max_update: the update resumed from.
          last_rows: the rows of update ``max_update`` as the checkpoint holds them (empty: keep
            the file's): they replace the file's rows of that update, which a write cut short
            may have torn (the file's last line, dropped by ``read``) after the checkpoint was
            saved, or an OS crash may have lost.
        """
        rows = [r for r in self.read() if r["update"] <= max_update]
        if last_rows:
            rows = [r for r in rows if r["update"] != max_update] + list(last_rows)
        tmp = self.jsonl_path + ".tmp"
        with open(tmp, "w") as f:
            for row in rows:
                f.write(json.dumps(json_row(row)) + "\n")
        os.replace(tmp, self.jsonl_path)

    def write(self, rows: list[dict]) -> None:
        """Appends rows (flat dicts of JSON-serializable scalars; NaN becomes null), on disk
        (fsync) when it returns: a checkpoint saved after it never outlives its rows."""
        with open(self.jsonl_path, "a") as f:
            for row in rows:
                f.write(json.dumps(json_row(row)) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def write_csv(self) -> None:
        """Rewrites the CSV from the JSONL file (columns: the union of keys, in order seen)."""
        rows = self.read()
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        tmp = self.csv_path + ".tmp"
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(columns))
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.csv_path)
