"""The host training loop shared by every learner.

It calls one compiled chunk of several updates at a time for all agents (seeds × grid points,
vmapped), and around it does everything that is not maths: resume from the latest checkpoint,
periodic and final checkpoints, metrics files, a progress bar, NaN detection, SIGINT/SIGTERM
handling, the learning-curve plot and the summary.
"""

import dataclasses
import json
import math
import os
import shutil
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from tqdm import tqdm

from rljax.io import checkpoints, fingerprint
from rljax.io.metrics import MetricsWriter, json_row
from rljax.train import records
from rljax.train.records import NonFiniteLossError  # noqa: F401  (raised from here)


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """What the host loop needs to know about a run."""

    workdir: str  # outputs: metrics.jsonl/csv, curves.png, summary.json, checkpoints/
    title: str  # plot title and summary prefix, e.g. "ppo CartPole-v1"
    num_updates: int  # total updates per learner
    chunk_updates: int  # updates per compiled call; must divide num_updates
    checkpoint_every: int  # chunks between periodic checkpoints
    env_steps_per_update: int  # per learner
    num_seeds: int  # S
    grid: tuple[dict[str, float], ...]  # G grid points (hyperparameter dicts)
    resume: bool  # continue from the latest checkpoint in workdir
    progress: bool = True  # show a progress bar
    final_window: float = 0.05  # fraction of the run whose episodes define the "final return"
    score_key: str = "episode/return"  # the metric curves, progress and the summary follow
    count_key: str | None = "episode/count"  # its weight per update (None: 1 where finite)
    score_name: str = "return"  # how rows, plots and the summary name the score
    x_name: str = "env_steps"  # the x axis: env_steps_per_update counts these per update
    rows_per_learner: bool = False  # one row per (update, learner) instead of per grid point
    fingerprint: dict | None = None  # the run's flat config, saved to workdir/config.json


@dataclasses.dataclass
class Summary:
    """What a finished (or interrupted) run reports."""

    # [G, S]: every learner's score at the end of the run, the same kind for every learner:
    # the loop's score (`score_name`) over the final window (a control learner's episode
    # return, an RLVR learner's last quick pass@1).
    final_score: np.ndarray
    updates_done: int
    samples: int  # per learner, in the learner's unit (LoopConfig.x_name: env steps, completions)
    compile_s: float
    run_s: float
    interrupted: bool
    stop_signal: int = 0  # the signal that interrupted the run (0: none)
    warnings: tuple[str, ...] = ()  # e.g. a loss that diverged without becoming NaN
    score_name: str = "return"  # what final_score holds (LoopConfig.score_name)

    def line(self, title: str, score: str | None = None, unit: str = "env steps", digits=1) -> str:
        """One line for people; ``score`` names the score (default: ``score_name``)."""
        score = self.score_name if score is None else score
        fr = self.final_score
        per_grid = ", ".join(
            f"{np.nanmean(r):.{digits}f} (min {np.nanmin(r):.{digits}f})"
            if np.isfinite(r).any()
            else "n/a"
            for r in fr
        )
        status = "interrupted" if self.interrupted else "done"
        warn = "".join(f" | warning: {w}" for w in self.warnings)
        return (
            f"{title}: {status} | {fr.shape[1]} seeds x {fr.shape[0]} grid point(s) | "
            f"{self.samples:,} {unit} each | final {score} {per_grid} | "
            f"{self.compile_s + self.run_s:.1f} s (compile {self.compile_s:.1f} s){warn}"
        )


class _StopFlag:
    """Turns SIGINT/SIGTERM into a flag the loop checks between chunks."""

    def __init__(self):
        self.stop = False
        self.signum = 0
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (e.g. some notebook kernels)
                pass
        return self

    def _handle(self, signum, frame):
        if self.stop:  # a second Ctrl-C exits at once
            raise KeyboardInterrupt
        self.stop = True
        self.signum = signum

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _archive_previous(workdir: str) -> None:
    """Moves an earlier run out of the way instead of deleting it.

    The folder moved is the workdir's real path (`rljax.io.workdir_lock`'s key), and the fresh
    run's folder is made there: a workdir given as a symbolic link keeps pointing at the folder
    the run's lock names, so no later spelling of it reaches an unlocked folder.
    """
    real = os.path.realpath(workdir)
    if os.path.isdir(real) and os.listdir(real):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = f"{real}-prev-{stamp}"
        shutil.move(real, dest)
        print(f"[rljax] {workdir} held an earlier run; moved it to {dest}")


def run(
    cfg: LoopConfig,
    states: Any,
    chunk_fn: Callable[..., tuple[Any, dict]],
    *args: Any,
    feed: Callable[[int, int], tuple] | None = None,
    after_chunk: Callable[[Any, int, dict], None] | None = None,
) -> tuple[Any, Summary]:
    """Trains ``states`` (leaves ``[A, ...]``) by repeated calls of the jitted ``chunk_fn``.

    Args:
      cfg: loop settings.
      states: initial learner states, A = G × S on the leading axis (used as the restore template;
        a single learner's state may also go without that axis, its metrics keep it).
      chunk_fn: jitted ``(states, *args, *fed) -> (states, metrics)`` doing ``cfg.chunk_updates``
        updates; each metric is ``[A, chunk_updates]`` and ``cfg.score_key`` is NaN where no
        score was measured (no episode ended, no evaluation ran).
      *args: further arguments of every call (e.g. the LM learners' shared task data).
      feed: a host data pipeline, ``(first_update, n) -> fed``: the extra arguments of the chunk
        doing updates ``first_update + 1 .. first_update + n`` (e.g. SFT batches stacked
        ``[n, ...]``). It is asked for the chunks in order, from the resume point on.
      after_chunk: ``(states, updates done, the chunk's metrics) -> None`` after every chunk
        that trained (e.g. an evaluation), before the checkpoint; not after a NaN loss.

    Returns:
      The final states and the run ``Summary``. Raises ``NonFiniteLossError`` on NaN/inf losses,
      after writing metrics.csv, curves.png and summary.json for the part that ran.
    """
    if cfg.num_updates % cfg.chunk_updates:
        raise ValueError(
            f"chunk_updates={cfg.chunk_updates} must divide num_updates={cfg.num_updates}"
        )
    ckpt_dir = os.path.join(cfg.workdir, "checkpoints")
    # On several hosts (rljax.parallel.distributed) only process 0 writes the host-side files;
    # every process takes part in the (collective) checkpoint saves and restores.
    primary = jax.process_index() == 0
    if not cfg.resume and primary:
        _archive_previous(cfg.workdir)
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices("rljax.train.loop: workdir ready")
    os.makedirs(os.path.realpath(cfg.workdir), exist_ok=True)  # through a symbolic link too
    ckpt = checkpoints.Checkpointer(ckpt_dir)
    writer = MetricsWriter(cfg.workdir)
    num_learners = len(cfg.grid) * cfg.num_seeds
    carried = np.full(num_learners, np.nan)
    window_start = cfg.num_updates - max(1, math.ceil(cfg.final_window * cfg.num_updates))
    win_sum, win_count = np.zeros(num_learners), np.zeros(num_learners)
    start = 0
    restored = ckpt.restore_newest_readable(states) if cfg.resume else None
    if restored is not None:
        start, states, meta = restored
        if start > cfg.num_updates or (cfg.num_updates - start) % cfg.chunk_updates:
            ckpt.close()
            raise ValueError(
                f"cannot resume from update {start} with {cfg.num_updates} updates in chunks of "
                f"{cfg.chunk_updates}; allowed: a budget >= {start} that the chunks reach exactly"
            )
        carried = np.asarray(meta["carried"], np.float64)
        win_sum, win_count = np.asarray(meta["win_sum"]), np.asarray(meta["win_count"])
        last_rows = meta.get("last_rows", [])  # checkpoints from before it: the file's rows
        if primary:
            writer.truncate(start, last_rows)
        print(f"[rljax] resumed from update {start} in {ckpt_dir}")
    else:
        last_rows = []
        if primary:
            writer.reset()
    if primary and cfg.fingerprint is not None:
        fingerprint.save(cfg.workdir, cfg.fingerprint)

    def meta():
        return {
            "carried": [None if not np.isfinite(c) else float(c) for c in carried],
            "win_sum": win_sum.tolist(),
            "win_count": win_count.tolist(),
            # the rows of the checkpoint's own update, put back on resume: a torn last line of
            # metrics.jsonl may be one of them (MetricsWriter.truncate)
            "last_rows": last_rows,
            # every checkpoint records the config that made it (also in workdir/config.json)
            "config": None if cfg.fingerprint is None else fingerprint.to_json(cfg.fingerprint),
        }

    def chunk_args(first_update: int) -> tuple:
        return (*args, *feed(first_update, cfg.chunk_updates)) if feed else args

    finished = start >= cfg.num_updates  # restored at the end: nothing to compile or feed
    fed = args if finished else chunk_args(start)
    t0 = time.perf_counter()
    lower = hasattr(chunk_fn, "lower") and not finished
    compiled = chunk_fn.lower(states, *fed).compile() if lower else chunk_fn
    compile_s = time.perf_counter() - t0
    update, interrupted = start, False
    bar = tqdm(
        total=cfg.num_updates, initial=start, unit="upd", disable=not cfg.progress, smoothing=0.1
    )
    t0 = time.perf_counter()
    chunks_done, nonfinite, watch, stop_signal = 0, None, records.DivergenceWatch(), 0
    try:
        with _StopFlag() as flag:
            while update < cfg.num_updates:
                if update > start:
                    fed = chunk_args(update)
                states, metrics = compiled(states, *fed)
                metrics = jax.device_get(metrics)
                try:
                    records.check_finite(cfg, metrics, update)
                    watch.update(metrics, update)
                except NonFiniteLossError as e:
                    nonfinite = e  # the chunk's rows are still written: they show the blow-up
                ret = metrics[cfg.score_key]
                cnt = metrics[cfg.count_key] if cfg.count_key else np.isfinite(ret).astype(np.int32)
                in_window = (np.arange(update, update + cfg.chunk_updates) >= window_start)[None]
                win_sum += np.sum(np.where(in_window & (cnt > 0), np.nan_to_num(ret) * cnt, 0), 1)
                win_count += np.sum(np.where(in_window, cnt, 0), 1)
                rows = records.rows(cfg, metrics, update, carried)
                if primary:
                    writer.write(rows)
                update += cfg.chunk_updates
                last_rows = [json_row(r) for r in rows if r["update"] == update]
                chunks_done += 1
                elapsed = time.perf_counter() - t0
                sps = chunks_done * cfg.chunk_updates * cfg.env_steps_per_update * num_learners
                with records.quiet():
                    bar.set_postfix(
                        {
                            f"{cfg.x_name.replace('_', '-')}/s": f"{sps / elapsed:,.0f}",
                            cfg.score_name: f"{np.nanmean(carried):.3g}",
                        }
                    )
                bar.update(cfg.chunk_updates)
                if nonfinite is not None:
                    break
                if after_chunk is not None:
                    after_chunk(states, update, metrics)
                if flag.stop:
                    interrupted, stop_signal = True, flag.signum
                    break
                if chunks_done % cfg.checkpoint_every == 0 and update < cfg.num_updates:
                    ckpt.save(update, states, meta())
        if nonfinite is None and update > start:  # never checkpoint a NaN state or a step twice
            ckpt.save(update, states, meta(), force=True)
    finally:
        bar.close()
        ckpt.close()
    run_s = time.perf_counter() - t0
    if primary:
        writer.write_csv()
        records.plot(cfg, writer.read())
    with records.quiet():
        final = np.where(win_count > 0, win_sum / np.maximum(win_count, 1), np.nan)
    summary = Summary(
        final_score=final.reshape(len(cfg.grid), cfg.num_seeds),
        updates_done=update,
        samples=update * cfg.env_steps_per_update,
        compile_s=compile_s,
        run_s=run_s,
        interrupted=interrupted,
        stop_signal=stop_signal,
        warnings=tuple(watch.found.values()),
        score_name=cfg.score_name,
    )
    last_checkpoint = checkpoints.latest_step(ckpt_dir)
    status = "nonfinite" if nonfinite else "interrupted" if interrupted else "done"
    if primary:
        with open(os.path.join(cfg.workdir, "summary.json"), "w") as f:
            json.dump(
                {
                    "title": cfg.title,
                    "updates": update,
                    "samples_per_learner": summary.samples,
                    "x_name": cfg.x_name,
                    "score": cfg.score_name,
                    "final_score": [
                        [None if not np.isfinite(v) else v for v in g]
                        for g in final.reshape(len(cfg.grid), -1).tolist()
                    ],
                    "grid": list(cfg.grid),
                    "compile_s": compile_s,
                    "run_s": run_s,
                    "interrupted": interrupted,
                    "status": status,
                    "stop_signal": stop_signal,
                    "warnings": list(summary.warnings),
                    "error": None if nonfinite is None else str(nonfinite),
                    "last_checkpoint": last_checkpoint,
                },
                f,
                indent=1,
            )
    if nonfinite is not None:
        kept = (
            f"the last good checkpoint is update {last_checkpoint} in {ckpt_dir}"
            if last_checkpoint is not None
            else "no checkpoint was written before it"
        )
        raise NonFiniteLossError(
            f"{nonfinite}; stopped at update {update}: {kept}; metrics.csv, curves.png and "
            f"summary.json in {cfg.workdir} cover the updates that ran"
        )
    return states, summary


def chunk_size(total: int, requested: int) -> int:
    """The largest divisor of ``total`` not above ``requested`` (``0``: about ``total / 16``)."""
    target = requested or max(1, round(total / 16))
    return max(d for d in range(1, min(target, total) + 1) if total % d == 0)


def load_summary(workdir: str, num_updates: int) -> Summary:
    """The ``Summary`` of a finished run from its ``summary.json`` (NaN returns if it is gone).

    A resume of a finished run trains nothing, but its metrics.jsonl is made whole first: the
    final checkpoint's copy of the last update's rows replaces a torn last line
    (``complete_metrics``).
    """
    complete_metrics(workdir, num_updates)
    try:
        with open(os.path.join(workdir, "summary.json")) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {}
    # None (no score): NaN; "final_return" in a summary.json written before "final_score"
    final = np.asarray(data.get("final_score", data.get("final_return", [[None]])), np.float64)
    # "env_steps_per_agent" in a summary.json written before "samples_per_learner"
    done = data.get("samples_per_learner", data.get("env_steps_per_agent", 0))
    per_update = done // max(data.get("updates", 1), 1)
    return Summary(
        final_score=final,
        updates_done=num_updates,
        samples=num_updates * per_update,
        compile_s=0.0,
        run_s=0.0,
        interrupted=False,
        warnings=tuple(data.get("warnings", ())),
        score_name=data.get("score", "return"),
    )


def complete_metrics(workdir: str, update: int) -> None:
    """Puts the checkpoint at ``update``'s copy of that update's rows back into metrics.jsonl
    (and metrics.csv) where the file's differ, e.g. a torn last line. Nothing without such a
    checkpoint (or one written before the copy was kept)."""
    ckpt_dir = os.path.join(workdir, "checkpoints")
    if jax.process_index() != 0 or checkpoints.latest_step(ckpt_dir) != update:
        return
    ckpt = checkpoints.Checkpointer(ckpt_dir)
    try:
        last_rows = ckpt.restore_meta(update).get("last_rows", [])
    finally:
        ckpt.close()
    writer = MetricsWriter(workdir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn line: the repair below is the news
        if not last_rows or [r for r in writer.read() if r["update"] == update] == last_rows:
            return
        print(f"[rljax] {writer.jsonl_path}: rows of update {update} put back from its checkpoint")
        writer.truncate(update, last_rows)
    writer.write_csv()
