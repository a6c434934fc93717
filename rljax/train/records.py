"""What the host loop (`rljax.train.loop`) writes and watches: metric rows per grid point or
learner, NaN and divergence checks, and the learning-curve plot. `cfg` is the loop's `LoopConfig`.
"""

import contextlib
import os
import warnings
from typing import Any

import matplotlib
import numpy as np

from rljax.train import sweep

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STATS = ("mean", "min", "max")


class NonFiniteLossError(RuntimeError):
    """A loss became NaN or infinite; the run stopped (its outputs say up to where)."""


# A loss whose mean |value| grows by this factor over its first nonzero chunk is reported as
# diverging (in the summary's warnings), even if it stays finite.
DIVERGENCE_FACTOR = 1e4
# A critic whose RMS error exceeds this multiple of the returns seen is reported as diverging.
VALUE_ERROR_FACTOR = 100.0


def rows(cfg, metrics: dict[str, np.ndarray], first_update: int, carried: np.ndarray):
    """Turns chunk metrics ``[A, n]`` into rows per (update, grid point) or per (update,
    learner) with ``cfg.rows_per_learner``; updates ``carried`` (the latest score per learner)."""
    num_grid, num_seeds = len(cfg.grid), cfg.num_seeds
    fields = sweep.swept_fields(list(cfg.grid))
    n = next(iter(metrics.values())).shape[1]
    name = cfg.score_name
    rows = []
    for i in range(n):
        update = first_update + i + 1
        ret = metrics[cfg.score_key][:, i]
        carried[:] = np.where(np.isfinite(ret), ret, carried)
        groups = (
            [(a // num_seeds, slice(a, a + 1)) for a in range(num_grid * num_seeds)]
            if cfg.rows_per_learner
            else [(g, slice(g * num_seeds, (g + 1) * num_seeds)) for g in range(num_grid)]
        )
        for g, sl in groups:
            row: dict[str, Any] = {
                "update": update,
                cfg.x_name: update * cfg.env_steps_per_update,
                "grid": g,
            }
            if cfg.rows_per_learner:
                row["seed"] = sl.start % num_seeds
            row.update({k: cfg.grid[g][k] for k in fields})
            with quiet():
                r = carried[sl]
                row[f"{name}/mean"] = float(np.nanmean(r))
                row[f"{name}/min"] = float(np.nanmin(r))
                row[f"{name}/max"] = float(np.nanmax(r))
            for key, value in metrics.items():
                if key != cfg.score_key:
                    with quiet():
                        row[key] = float(np.nanmean(value[sl, i]))
            rows.append(row)
    return rows


def learner_name(cfg, learner: int) -> str:
    """ "learner 5 (grid point 1: preset=dapo; seed 1)": how messages name one learner."""
    g, seed = divmod(int(learner), cfg.num_seeds)
    fields = sweep.swept_fields(list(cfg.grid))
    point = ", ".join(f"{k}={cfg.grid[g][k]}" for k in fields) or "no sweep"
    return f"learner {learner} (grid point {g}: {point}; seed {seed})"


@contextlib.contextmanager
def quiet():
    """Silences NumPy's warnings about NaN statistics (a learner with no score yet is NaN)."""
    with (
        np.errstate(all="ignore"),
        warnings.catch_warnings(action="ignore", category=RuntimeWarning),
    ):
        yield


def check_finite(cfg, metrics: dict[str, np.ndarray], update: int) -> None:
    for key, value in metrics.items():
        if key.startswith("loss/") and not np.all(np.isfinite(value)):
            bad = np.argwhere(~np.isfinite(value))[0]
            raise NonFiniteLossError(
                f"{key} became {value[tuple(bad)]} for {learner_name(cfg, bad[0])} within updates "
                f"{update + 1}..{update + value.shape[1]}"
            )


class DivergenceWatch:
    """Finds losses that diverge without becoming NaN; each is reported once as a warning.

    Two signs, per learner: a loss whose mean |value| over a chunk grows ``DIVERGENCE_FACTOR``-fold
    over its first nonzero chunk; and a squared-error critic (``loss/value`` = ½ mean squared
    error) whose RMS error ``sqrt(2 loss)`` exceeds ``VALUE_ERROR_FACTOR`` times the largest
    |episode return| the learner has seen (at least 10), which catches a critic that blew up in
    the very first update (CartPole at lr 1e3: RMS error ~2e4 with returns ~20).
    """

    def __init__(self):
        self.base: dict[str, np.ndarray] = {}
        self.scale: np.ndarray | None = None
        self.found: dict[str, str] = {}

    def update(self, metrics: dict[str, np.ndarray], update: int) -> None:
        end = update + next(iter(metrics.values())).shape[1]
        if "episode/return" in metrics:
            with quiet():
                seen = np.nanmax(np.abs(metrics["episode/return"]), axis=1)
            seen = np.nan_to_num(seen, nan=0.0)
            self.scale = seen if self.scale is None else np.maximum(self.scale, seen)
        for key, value in metrics.items():
            if not key.startswith("loss/") or key in self.found:
                continue
            size = np.mean(np.abs(value), axis=1)  # [A]
            base = self.base.setdefault(key, np.zeros_like(size))
            base[:] = np.where((base == 0) & (size > 0), size, base)
            grown = (base > 0) & (size > DIVERGENCE_FACTOR * np.maximum(base, 1e-3))
            if np.any(grown):
                a = int(np.argmax(np.where(grown, size / np.maximum(base, 1e-3), 0)))
                self.found[key] = (
                    f"{key} diverged for learner {a}: mean |value| {base[a]:.3g} -> {size[a]:.3g} "
                    f"by update {end}"
                )
            elif key == "loss/value" and self.scale is not None:
                rms, limit = np.sqrt(2 * size), VALUE_ERROR_FACTOR * np.maximum(self.scale, 10.0)
                if np.any(rms > limit):
                    a = int(np.argmax(rms / limit))
                    self.found[key] = (
                        f"{key} diverged for learner {a}: RMS value error {rms[a]:.3g} against "
                        f"returns of at most {self.scale[a]:.3g} by update {end}"
                    )


def plot(cfg, rows: list[dict]) -> None:
    """Saves ``workdir/curves.png``: per grid point, the mean over seeds with a min..max band."""
    if not rows:
        return
    num_grid = len(cfg.grid)
    updates = sorted({r["update"] for r in rows})
    index = {u: i for i, u in enumerate(updates)}
    name = cfg.score_name
    # [grid, seed slot, update]: per-learner rows give one value per seed, grid rows give three.
    width = cfg.num_seeds if cfg.rows_per_learner else 3
    values = np.full((num_grid, width, len(updates)), np.nan)
    for r in rows:
        keys = (f"{name}/mean",) if cfg.rows_per_learner else (f"{name}/{k}" for k in STATS)
        slots = (r["seed"],) if cfg.rows_per_learner else range(3)
        for j, key in zip(slots, keys, strict=True):
            value = r[key]
            values[r["grid"], j, index[r["update"]]] = np.nan if value is None else value
    if cfg.rows_per_learner:
        with quiet():
            values = np.stack(
                [np.nanmean(values, 1), np.nanmin(values, 1), np.nanmax(values, 1)], axis=1
            )
    measured = ~np.all(np.isnan(values[:, 0]), axis=0)  # e.g. evaluations only at chunk ends
    fields = sweep.swept_fields(list(cfg.grid))
    x = np.asarray(updates)[measured] * cfg.env_steps_per_update
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for g, point in enumerate(cfg.grid):
        mean, low, high = values[g][..., measured]
        label = sweep.label(point, fields)
        line_name = f"mean of {cfg.num_seeds} seeds, band min-max"
        line = ax.plot(x, mean, lw=1.8, label=f"{label}: {line_name}" if label else line_name)
        ax.fill_between(x, low, high, color=line[0].get_color(), alpha=0.2, lw=0)
    ax.set_xlabel(f"{cfg.x_name.replace('_', ' ')} per learner")
    ax.set_ylabel("episode return" if name == "return" else name)
    ax.set_title(cfg.title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(cfg.workdir, "curves.png"))
    plt.close(fig)
