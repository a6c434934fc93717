"""The SFT base model, cached on disk under a hash of everything that determines it.

A second run with the same model, SFT and task configuration restores the checkpoint instead of
training again, so RL ablations all start from one identical base.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import jax

from rljax.io.checkpoints import Checkpointer
from rljax.lm import sft
from rljax.lm.model import TransformerConfig, init_params
from rljax.lm.tasks import Problem, Task
from rljax.lm.tasks.builders import NUM_TRAIN_PER_LEVEL, SEED, _TaskBuilder

_VERSION = 1  # bump when the model or SFT code changes what a config produces


def cache_key(
    model_cfg: TransformerConfig, sft_cfg: sft.SFTConfig, task: Task, problems: list[Problem]
) -> str:
    """A short hash of the model config, SFT config, task name, dataset version and the very
    problems the base is trained on (so bases of different level ranges never share a cache)."""
    digest = hashlib.sha256(
        "\n".join(f"{p.level}|{p.prompt}|{p.answer}" for p in problems).encode()
    ).hexdigest()
    blob = json.dumps(
        {
            "model": dataclasses.asdict(model_cfg),
            "sft": dataclasses.asdict(sft_cfg),
            "task": task.name,
            "data": [NUM_TRAIN_PER_LEVEL, SEED, str(_TaskBuilder.VERSION)],
            "problems": digest,
            "version": _VERSION,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_or_load(
    model_cfg: TransformerConfig,
    sft_cfg: sft.SFTConfig,
    task: Task,
    problems: list[Problem],
    cache_dir: str,
):
    """Returns (params, info); info["cached"] says whether the base came from `cache_dir`."""
    directory = os.path.join(
        cache_dir, f"{task.name}-{cache_key(model_cfg, sft_cfg, task, problems)}"
    )
    checkpointer = Checkpointer(directory, max_to_keep=1)
    if checkpointer.latest_step() is not None:
        like = init_params(model_cfg, jax.random.key(0))
        params, meta = checkpointer.restore(checkpointer.latest_step(), like)
        checkpointer.close()
        return params, {**meta, "cached": True, "path": directory}
    params, metrics = sft.train(sft_cfg, model_cfg, task, problems)
    meta = {"sft_metrics": metrics}
    checkpointer.save(sft_cfg.steps, params, meta)
    checkpointer.close()
    return params, {**meta, "cached": False, "path": directory}
