"""Supervised fine-tuning on task traces: the base model that RL starts from.

`loss_fn` is next-token cross-entropy on completion tokens only, averaged over real tokens with
`reduce.masked_mean`. `update` is one AdamW step and `train_chunk` scans it over a chunk of
batches; `TraceFeed` is the host pipeline that draws the batches. The host loop that runs them
(checkpoints, resume, progress, NaN stop) is `rljax.train.loop`, driven by
`rljax.train.lm_base.train`.
"""

from __future__ import annotations

import dataclasses
import functools
import string
from typing import NamedTuple

import jax
import numpy as np
import optax

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.logprobs import completion_log_probs
from rljax.lm.tasks import Problem, Task
from rljax.lm.tasks.batches import SeqBatch, encode_demonstrations, encode_problems
from rljax.losses import reduce


@dataclasses.dataclass(frozen=True)
class SFTConfig:
    steps: int = 300  # optimizer steps; few enough that the base stays modest
    batch_size: int = 64  # problems per step
    learning_rate: float = 1e-3  # AdamW peak learning rate (cosine decay after warm-up)
    warmup_steps: int = 20  # linear warm-up steps
    weight_decay: float = 0.01  # AdamW weight decay
    noise: float = 0.0  # probability that a trace has one character replaced (noisy traces)
    direct_frac: float = 0.0  # probability that a trace is cut to its final answer (no steps)
    direct_noise: float = 0.0  # probability that such a bare answer is corrupted (a bad guess)
    seed: int = 0  # initialization, batch order and noise
    # probability that a trace is the task's multi-turn tool demonstration (`Task.demonstrate`)
    tool_frac: float = 0.0

    def __post_init__(self):
        for name in ("steps", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"SFTConfig.{name}={getattr(self, name)} must be >= 1")
        if not self.learning_rate > 0:
            raise ValueError(f"SFTConfig.learning_rate={self.learning_rate} must be > 0")
        for name in ("noise", "direct_frac", "direct_noise", "tool_frac"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"SFTConfig.{name}={getattr(self, name)} must be in [0, 1]")
        if not 0 <= self.warmup_steps or not max(self.warmup_steps, 1) < self.steps:
            raise ValueError(
                f"SFTConfig.warmup_steps={self.warmup_steps} with steps={self.steps}: warm-up "
                "must be >= 0 and leave at least one decay step (warmup_steps < steps, steps >= 2)"
            )


class SFTState(NamedTuple):
    params: dict
    opt_state: optax.OptState
    step: jax.Array


def make_optimizer(cfg: SFTConfig) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, cfg.learning_rate, max(cfg.warmup_steps, 1), cfg.steps, cfg.learning_rate * 0.1
    )
    return optax.chain(
        optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=cfg.weight_decay)
    )


def init(cfg: SFTConfig, model_cfg: TransformerConfig, key: jax.Array) -> SFTState:
    params = init_params(model_cfg, key)
    return SFTState(params, make_optimizer(cfg).init(params), jax.numpy.zeros((), jax.numpy.int32))


def loss_fn(params, model_cfg: TransformerConfig, batch: SeqBatch):
    """Mean negative log-likelihood per trained completion token (`batch.loss_mask`, or every
    real one). Returns (loss, metrics)."""
    logp, _ = completion_log_probs(params, model_cfg, *batch[:4])
    trained = batch.completion_mask if batch.loss_mask is None else batch.loss_mask
    nll = reduce.masked_mean(-logp, trained)
    return nll, {"loss/nll": nll}


def update(state: SFTState, batch: SeqBatch, *, cfg: SFTConfig, model_cfg: TransformerConfig):
    """One AdamW step on `batch`. Returns (state, metrics)."""
    (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, model_cfg, batch)
    updates, opt_state = make_optimizer(cfg).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics["grad_norm"] = optax.tree.norm(grads)
    return SFTState(params, opt_state, state.step + 1), metrics


def corrupt(answer: str, rng: np.random.Generator) -> str:
    """Replaces one digit or letter of `answer` by another of the same kind (a noisy trace)."""
    positions = [i for i, c in enumerate(answer) if c.isdigit() or c.islower()]
    if not positions:
        return answer
    i = int(rng.choice(positions))
    alphabet = string.digits if answer[i].isdigit() else string.ascii_lowercase
    return answer[:i] + str(rng.choice([c for c in alphabet if c != answer[i]])) + answer[i + 1 :]


def direct(answer: str) -> str:
    """A worked trace cut to its final answer, the text after the last '=' (a guess, no steps)."""
    return answer.rsplit("=", 1)[-1]


def train_chunk(state: SFTState, batches: SeqBatch, *, cfg: SFTConfig, model_cfg):
    """`n` steps over `batches` stacked `[n, B, ...]`. Returns (state, metrics `[1, n]`): one
    learner, in the host loop's `[learners, updates]` layout."""
    step = functools.partial(update, cfg=cfg, model_cfg=model_cfg)
    state, metrics = jax.lax.scan(step, state, batches)
    return state, jax.tree.map(lambda m: m[None], metrics)


class TraceFeed:
    """The SFT batches, drawn on the host in order from one `np.random.default_rng(cfg.seed)`.

    Each problem's trace is a mixture: with probability `cfg.direct_frac` it is cut to its final
    answer (a bare guess, corrupted with probability `cfg.direct_noise`), and with probability
    `cfg.noise` any trace gets one corrupted character. Either makes a base that is right only
    part of the time, so RL has something to improve. Called as `feed(first_step, n)` it returns
    `(batches,)` with the batches of steps `first_step + 1 .. first_step + n` stacked `[n, ...]`;
    asked for a step other than the next one (a resumed run), it replays the draws from the
    start, so a resumed SFT sees exactly the batches of an uninterrupted one.
    """

    def __init__(self, cfg: SFTConfig, task: Task, problems: list[Problem], tok=tokenizer.CHAR):
        if not problems:
            raise ValueError("SFT needs at least one training problem, got an empty list")
        if cfg.tool_frac and task.demonstrate is None:
            raise ValueError(
                f"sft.tool_frac={cfg.tool_frac} with task {task.name!r}, which has no tool "
                "demonstrations; allowed: 0, or a multi-turn task (rljax.lm.tasks.calculator)"
            )
        self.cfg, self.task, self.problems, self.tok = cfg, task, problems, tok
        self._restart()

    def _restart(self) -> None:
        self.rng, self.position = np.random.default_rng(self.cfg.seed), 0

    def _next(self) -> SeqBatch:
        cfg, rng = self.cfg, self.rng
        chosen = [self.problems[i] for i in rng.integers(0, len(self.problems), cfg.batch_size)]
        cut = rng.uniform(size=len(chosen)) < cfg.direct_frac
        chosen = [
            p._replace(answer=direct(p.answer)) if c else p
            for p, c in zip(chosen, cut, strict=True)
        ]
        noisy = (rng.uniform(size=len(chosen)) < cfg.noise) | (
            cut & (rng.uniform(size=len(chosen)) < cfg.direct_noise)
        )
        self.position += 1
        chosen = [
            p._replace(answer=corrupt(p.answer, rng)) if n else p
            for p, n in zip(chosen, noisy, strict=True)
        ]
        if not cfg.tool_frac:  # (no draw: the batches of the runs from before stay the same)
            return encode_problems(self.task, chosen, self.tok)
        demo = rng.uniform(size=len(chosen)) < cfg.tool_frac
        return encode_demonstrations(self.task, chosen, demo, self.tok)

    def __call__(self, first_step: int, n: int) -> tuple[SeqBatch]:
        if first_step != self.position:
            self._restart()
            for _ in range(first_step):
                self._next()
        batches = [self._next() for _ in range(n)]
        return (jax.tree.map(lambda *x: np.stack(x), *batches),)
