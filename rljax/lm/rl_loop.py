"""The RLVR host loop: sample prompts, roll out G answers each, score, update, log, checkpoint.

Sampling and the update are jitted; problem choice, decoding and verification run on the host.
Dynamic sampling keeps shapes static: it over-generates `oversample * B` groups, keeps the first
B groups whose rewards vary, and refills any shortfall with masked-out groups.
Resumable: the RL state is checkpointed with orbax every `checkpoint_every` steps; the problems
and keys of step s depend only on (seed, s), so a resumed run replays an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np
import tqdm

from rljax.io.checkpoints import Checkpointer
from rljax.io.metrics import MetricsWriter
from rljax.lm import rlvr
from rljax.lm.model import TransformerConfig
from rljax.lm.rollout import generate_and_score
from rljax.lm.tasks import Problem, Task


@dataclasses.dataclass(frozen=True)
class RunConfig:
    steps: int = 100  # RL updates
    prompts_per_step: int = 32  # B, groups per update
    group_size: int = 8  # G, samples per prompt
    oversample: int = 2  # dynamic sampling draws oversample * B groups
    temperature: float = 1.0  # rollout temperature
    top_p: float = 1.0  # rollout nucleus mass
    format_weight: float = 0.0  # weight of the format reward
    eval_every: int = 25  # quick held-out pass@1 (1 sample per problem) every this many steps
    eval_problems: int = 128  # problems in the quick evaluation
    checkpoint_every: int = 25  # steps between checkpoints
    seed: int = 0

    def __post_init__(self):
        for name in (
            "steps",
            "prompts_per_step",
            "group_size",
            "oversample",
            "eval_every",
            "eval_problems",
            "checkpoint_every",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"RunConfig.{name}={getattr(self, name)} must be >= 1")
        if self.group_size < 2:
            raise ValueError(f"RunConfig.group_size={self.group_size} must be >= 2")


def select_groups(rewards: np.ndarray, num_groups: int, dynamic: bool):
    """Chooses `num_groups` of the sampled groups `rewards [M, G]`.

    Without dynamic sampling: the first `num_groups`, all valid. With it: groups whose rewards
    vary first (in order), then zero-variance groups as masked-out filler.

    Returns:
      (indices [num_groups], group_mask [num_groups, G] float32).
    """
    group_size = rewards.shape[1]
    if not dynamic:
        return np.arange(num_groups), np.ones((num_groups, group_size), np.float32)
    varies = rewards.std(axis=1) > 0
    order = np.concatenate([np.flatnonzero(varies), np.flatnonzero(~varies)])[:num_groups]
    return order, np.repeat(varies[order][:, None], group_size, axis=1).astype(np.float32)


def quick_pass_at_1(params, model_cfg, task, problems, key, run: RunConfig) -> float:
    scored = generate_and_score(
        params,
        model_cfg,
        task,
        problems,
        key,
        group_size=1,
        temperature=run.temperature,
        top_p=run.top_p,
    )
    return float(scored.correct.mean())


def train(
    run: RunConfig,
    rl_cfg: rlvr.RLConfig,
    dynamic_sampling: bool,
    model_cfg: TransformerConfig,
    task: Task,
    train_problems: list[Problem],
    eval_problems: list[Problem],
    base_params,
    workdir: str,
    *,
    progress: bool = True,
):
    """Runs (or resumes) RL from `base_params`. Returns (final RLState, list of metric rows)."""
    state = rlvr.init(rl_cfg, base_params)
    checkpointer = Checkpointer(f"{workdir}/checkpoints")
    writer = MetricsWriter(workdir, name="rl_metrics")
    start = checkpointer.latest_step()
    if start is None:
        start = 0
        writer.reset()
    else:
        state, _ = checkpointer.restore(start, state)
        writer.truncate(start)
    update = jax.jit(
        lambda s, b, k: rlvr.update(s, b, k, cfg=rl_cfg, model_cfg=model_cfg), donate_argnums=(0,)
    )
    key = jax.random.key(run.seed)
    quick = eval_problems[:: max(1, len(eval_problems) // run.eval_problems)][: run.eval_problems]
    drawn = run.prompts_per_step * (run.oversample if dynamic_sampling else 1)
    bar = tqdm.tqdm(
        range(start, run.steps), initial=start, total=run.steps, disable=not progress, desc="RL"
    )
    postfix = {}
    for step in bar:
        t0 = time.perf_counter()
        rng = np.random.default_rng([run.seed, step])
        problems = [train_problems[i] for i in rng.integers(0, len(train_problems), size=drawn)]
        scored = generate_and_score(
            state.params,
            model_cfg,
            task,
            problems,
            jax.random.fold_in(key, 2 * step),
            group_size=run.group_size,
            temperature=run.temperature,
            top_p=run.top_p,
            format_weight=run.format_weight,
        )
        groups, group_mask = select_groups(
            scored.rewards.reshape(drawn, run.group_size), run.prompts_per_step, dynamic_sampling
        )
        rows = (groups[:, None] * run.group_size + np.arange(run.group_size)).reshape(-1)
        batch = rlvr.RolloutBatch(
            scored.prompt_tokens[rows],
            scored.prompt_mask[rows],
            scored.completion_tokens[rows],
            scored.completion_mask[rows],
            scored.rewards.reshape(drawn, run.group_size)[groups],
            group_mask,
        )
        state, metrics = update(state, batch, jax.random.fold_in(key, 2 * step + 1))
        metrics = {k: float(v) for k, v in metrics.items()}
        seconds = time.perf_counter() - t0
        sampled = int(scored.completion_mask.sum())
        trained = int(batch.prompt_mask.sum() + batch.completion_mask.sum())
        row = {
            "update": step + 1,
            **metrics,
            "correct/mean": float(scored.correct.mean()),
            "time/step_s": seconds,
            "tokens/sampled_per_s": sampled / seconds,
            "tokens/e2e_per_s": (sampled + trained) / seconds,
        }
        if (step + 1) % run.eval_every == 0 or step + 1 == run.steps:
            row["eval/pass@1"] = quick_pass_at_1(
                state.params,
                model_cfg,
                task,
                quick,
                jax.random.fold_in(jax.random.key(run.seed + 1), step),
                run,
            )
            postfix["pass@1"] = f"{row['eval/pass@1']:.3f}"
        writer.write([row])
        postfix.update(
            {"reward": f"{metrics['reward/mean']:.3f}", "tok/s": f"{row['tokens/e2e_per_s']:.0f}"}
        )
        bar.set_postfix(postfix)
        if (step + 1) % run.checkpoint_every == 0 or step + 1 == run.steps:
            checkpointer.save(step + 1, state, {"step": step + 1})
    checkpointer.close()
    writer.write_csv()
    return state, writer.read()
