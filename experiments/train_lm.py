"""Small-LM RLVR end to end: SFT base (cached) -> RL preset -> pass@k of base vs RL.

    python experiments/train_lm.py --config=configs/grpo.py:arithmetic [--workdir=runs/x]

Writes into --workdir (default runs/lm_<task>_<preset>): rl_metrics.jsonl/.csv, checkpoints/,
results.md/.json, pass_at_k.png, training.png. Re-running resumes RL from the last checkpoint and
reuses the cached base model.
"""

from rljax import xla_flags

xla_flags.set_flags()  # before jax is imported: avoids a known 2-core CPU scheduler hang

import dataclasses  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.lm import base_model, presets, report, rl_loop, rollout, sft  # noqa: E402
from rljax.lm.data import completion_length, prompt_length  # noqa: E402
from rljax.lm.model import TransformerConfig, num_params  # noqa: E402
from rljax.lm.tasks import TASKS  # noqa: E402
from rljax.lm.tasks.builders import load_problems  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory.")


def run(config, workdir: str) -> dict:
    """The whole pipeline for one config; returns the results dict."""
    if config.task not in TASKS:
        raise ValueError(f"task={config.task!r} is not one of {sorted(TASKS)}")
    task = TASKS[config.task]
    if not 0 <= config.max_level <= task.num_levels:
        raise ValueError(f"max_level={config.max_level} must be in [0, {task.num_levels}]")
    os.makedirs(workdir, exist_ok=True)
    max_level = config.max_level or task.num_levels
    train = [p for p in load_problems(task.name, "train", config.data_dir) if p.level <= max_level]
    test = [p for p in load_problems(task.name, "test", config.data_dir) if p.level <= max_level]
    test = sorted(test, key=lambda p: (p.level, p.prompt))
    # Evenly spaced over the level-sorted list, so every level is represented.
    picks = np.linspace(0, len(test) - 1, min(config.eval.num_problems, len(test)))
    test = [test[int(round(i))] for i in picks]
    model_cfg = TransformerConfig(
        max_len=prompt_length(task) + completion_length(task), **config.model
    )
    sft_cfg = sft.SFTConfig(seed=config.seed, **config.sft)
    overrides = {k: v for k, v in config.rl.items() if v is not None}
    rl_cfg, dynamic = presets.make_rl_config(
        config.preset, completion_length=completion_length(task), **overrides
    )
    run_cfg = rl_loop.RunConfig(seed=config.seed, **config.run)

    t0 = time.perf_counter()
    base_params, base_info = base_model.train_or_load(
        model_cfg, sft_cfg, task, train, config.base_cache_dir
    )
    t_base = time.perf_counter() - t0
    print(
        f"base: {num_params(base_params):,} params, cached={base_info['cached']}, "
        f"{t_base:.0f}s ({base_info['path']})"
    )

    def evaluate(params):
        return rollout.evaluate(
            params,
            model_cfg,
            task,
            test,
            jax.random.key(config.seed + 7),
            num_samples=config.eval.num_samples,
            temperature=config.eval.temperature,
            top_p=1.0,
        )

    base_eval = evaluate(base_params)
    t1 = time.perf_counter()
    state, rows = rl_loop.train(
        run_cfg, rl_cfg, dynamic, model_cfg, task, train, test, base_params, workdir
    )
    t_rl = time.perf_counter() - t1
    rl_eval = evaluate(state.params)
    results = {"base": base_eval, f"RL ({config.preset})": rl_eval}
    extra = {
        "task": task.name,
        "levels": f"1-{max_level}",
        "preset": config.preset,
        "params": num_params(base_params),
        "base_cached": base_info["cached"],
        "base_seconds": round(t_base, 1),
        "rl_seconds": round(t_rl, 1),
        "rl_steps": run_cfg.steps,
        "samples_per_step": run_cfg.prompts_per_step * run_cfg.group_size,
        "pass@1_gain": round(rl_eval["pass@1"] - base_eval["pass@1"], 4),
        "rl_config": presets.resolve(config.preset, **overrides),
        "run_config": dataclasses.asdict(run_cfg),
    }
    report.plot_pass_at_k(
        results,
        os.path.join(workdir, "pass_at_k.png"),
        f"{task.name}: base vs RL ({config.preset})",
    )
    if rows:
        report.plot_training(rows, os.path.join(workdir, "training.png"))
    print(report.write_tables(results, extra, workdir))
    return {"results": results, **extra}


def main(argv):
    del argv
    config = _CONFIG.value
    run(config, _WORKDIR.value or os.path.join("runs", f"lm_{config.task}_{config.preset}"))


if __name__ == "__main__":
    app.run(main)
