"""The SFT base model: trained by the one host loop, cached on disk under a hash of everything
that determines it.

A second run with the same model, SFT and task configuration restores the checkpoint instead of
training again, so RL ablations all start from one identical base. Training runs in
`rljax.train.loop` like every other learner: chunks of `rljax.agents.sft.train_chunk` fed by the
host pipeline `sft.TraceFeed`, with its progress bar, metrics files and NaN stop, and periodic
checkpoints in `<cache>/<task>-<key>-sft/` from which a killed SFT resumes to the same base.

One writer per cached base: `train_or_load` holds the lock of `<cache>/<task>-<key>`
(`rljax.io.workdir_lock.holding(..., wait=True)`, keyed on the real path) while it looks for,
trains and saves the base. A second run that needs the same base while the first trains it waits
(one line names the pid it waits for), then finds the base in the cache and reads it: two runs
never train one base into one folder. The lock dies with its process, so a run that waits on a
killed trainer takes over and resumes its SFT from the last checkpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil
import tempfile

import jax

from rljax.agents import sft
from rljax.io import workdir_lock
from rljax.io.checkpoints import Checkpointer
from rljax.io.metrics import MetricsWriter
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.decoder import fingerprint as model_fingerprint
from rljax.lm.tasks import Problem, Task
from rljax.lm.tasks.builders import NUM_TRAIN_PER_LEVEL, SEED, _TaskBuilder
from rljax.train import loop


class SFTInterrupted(RuntimeError):
    """SIGINT/SIGTERM stopped an SFT run; its checkpoint resumes it, nothing was cached."""


CHUNK_STEPS = 50  # at most this many SFT steps per compiled call
CHECKPOINT_STEPS = 250  # about this many steps between the resumable SFT checkpoints

_VERSION = 1  # bump when the model or SFT code changes what a config produces


def cache_key(
    model_cfg: TransformerConfig,
    sft_cfg: sft.SFTConfig,
    task: Task,
    problems: list[Problem],
    tok=tokenizer.CHAR,
) -> str:
    """A short hash of the model config, SFT config, task name, dataset version and the very
    problems the base is trained on (so bases of different level ranges never share a cache),
    and of the tokenizer where it is not the character one (whose keys stay as they were)."""
    digest = hashlib.sha256(
        "\n".join(f"{p.level}|{p.prompt}|{p.answer}" for p in problems).encode()
    ).hexdigest()
    fields = {
        "model": model_fingerprint(model_cfg),
        # tool_frac only where on: the bases from before it keep their keys
        "sft": {k: v for k, v in dataclasses.asdict(sft_cfg).items() if v or k != "tool_frac"},
        "task": task.name,
        "data": [NUM_TRAIN_PER_LEVEL, SEED, str(_TaskBuilder.VERSION)],
        "problems": digest,
        "version": _VERSION,
    }
    if tok.fingerprint():
        fields["tokenizer"] = tok.fingerprint()
    if sft_cfg.tool_frac:  # the demonstrations the base learns the tool syntax from
        demos = "\n".join(repr(task.demonstrate(p)) for p in problems)
        fields["demonstrations"] = hashlib.sha256(demos.encode()).hexdigest()
    blob = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train(
    cfg: sft.SFTConfig,
    model_cfg: TransformerConfig,
    task: Task,
    problems: list[Problem],
    workdir: str | None = None,
    progress: bool = False,
    tok=tokenizer.CHAR,
):
    """Trains a base model from scratch on `problems` (encoded by `tok`) in the host loop.

    Args:
      workdir: the loop's outputs (metrics.jsonl/csv, curves.png, summary.json, checkpoints/);
        an existing run there resumes. None: a temporary directory, removed afterwards.

    Returns:
      (params, metrics of the last step). Raises `SFTInterrupted` on SIGINT/SIGTERM (after the
      loop's checkpoint) and `loop.NonFiniteLossError` if the loss becomes NaN.
    """
    feed = sft.TraceFeed(cfg, task, problems, tok)  # checks the problems before anything compiles
    if workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return train(cfg, model_cfg, task, problems, tmp, progress, tok)
    n = loop.chunk_size(cfg.steps, CHUNK_STEPS)
    loop_cfg = loop.LoopConfig(
        workdir=workdir,
        title=f"SFT {task.name}",
        num_updates=cfg.steps,
        chunk_updates=n,
        checkpoint_every=max(1, CHECKPOINT_STEPS // n),
        env_steps_per_update=cfg.batch_size,
        num_seeds=1,
        grid=({},),
        resume=True,  # the directory is named by the config's hash: a run there is this run
        progress=progress,
        final_window=1e-9,
        score_key="loss/nll",
        count_key=None,
        score_name="nll",
        x_name="sequences",
        fingerprint={"sft": dataclasses.asdict(cfg), "model": model_fingerprint(model_cfg)},
    )
    chunk = functools.partial(sft.train_chunk, cfg=cfg, model_cfg=model_cfg)
    state = sft.init(cfg, model_cfg, jax.random.key(cfg.seed))
    state, summary = loop.run(loop_cfg, state, jax.jit(chunk, donate_argnums=0), feed=feed)
    if summary.interrupted:
        raise SFTInterrupted(
            f"SFT interrupted after step {summary.updates_done} of {cfg.steps}; the same command "
            f"resumes it from the checkpoint in {workdir}"
        )
    last = [r for r in MetricsWriter(workdir).read() if r["update"] == cfg.steps][-1]
    return state.params, {"loss/nll": last["nll/mean"], "grad_norm": last["grad_norm"]}


def train_or_load(
    model_cfg: TransformerConfig,
    sft_cfg: sft.SFTConfig,
    task: Task,
    problems: list[Problem],
    cache_dir: str,
    progress: bool = False,
    tok=tokenizer.CHAR,
):
    """Returns (params, info); info["cached"] says whether the base came from `cache_dir`.
    A base not yet cached is trained (resuming a killed SFT of the same config), by one process
    at a time: another that trains the same base is waited for, and its base read."""
    directory = os.path.join(
        cache_dir, f"{task.name}-{cache_key(model_cfg, sft_cfg, task, problems, tok)}"
    )
    with workdir_lock.holding(directory, primary=jax.process_index() == 0, wait=True):
        return _train_or_load(model_cfg, sft_cfg, task, problems, directory, progress, tok)


def _train_or_load(model_cfg, sft_cfg, task, problems, directory: str, progress: bool, tok):
    checkpointer = Checkpointer(directory, max_to_keep=1)
    if checkpointer.latest_step() is not None:
        like = init_params(model_cfg, jax.random.key(0))
        try:  # a cached base that does not read back is set aside (named) and trained again
            restored = checkpointer.restore_newest_readable(like)
        except RuntimeError:
            restored = None
        if restored is not None:
            checkpointer.close()
            _, params, meta = restored
            return params, {**meta, "cached": True, "path": directory}
        print(f"[rljax] the cached SFT base in {directory} is unreadable; training it again")
    params, metrics = train(sft_cfg, model_cfg, task, problems, f"{directory}-sft", progress, tok)
    meta = {"sft_metrics": metrics}
    checkpointer.save(sft_cfg.steps, params, meta)
    checkpointer.close()
    # the base is in the cache now; the SFT run keeps its metrics and curves, not its checkpoints
    shutil.rmtree(os.path.join(f"{directory}-sft", "checkpoints"), ignore_errors=True)
    return params, {**meta, "cached": False, "path": directory}
