"""Runs a population of RLVR learners (presets × swept values × seeds) in one compiled program.

The LM counterpart of `rljax.train.experiment`: it validates everything, builds (or loads) the
cached SFT base, turns every grid point into the values of one `rljax.agents.grpo.Hparams`,
creates the learners on a mesh (`rljax.parallel`), hands the vmapped, jitted chunk to the one
host loop (`rljax.train.loop`), and finally evaluates the base and every learner on the held-out
split with the host verifiers (pass@k, distinct answers, accuracy by level) and writes a
comparison table (`rljax.stats`: mean and 95% intervals over seeds per grid point).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from rljax import checks
from rljax.agents import grpo, learner, sft
from rljax.agents.grpo import presets
from rljax.io import base_reference, fingerprint, workdir_lock
from rljax.lm.agentic import calculator as calculator_env
from rljax.lm.agentic import env as env_lib
from rljax.lm.agentic import guess as guess_env
from rljax.lm.model import lora, pretrained
from rljax.lm.model.decoder import TransformerConfig, num_params
from rljax.lm.tasks import TASKS, device_reward, selection
from rljax.lm.tasks.batches import completion_length, prompt_length, spread
from rljax.lm.tasks.builders import level_splits
from rljax.parallel import learner_axis
from rljax.parallel import mesh as mesh_lib
from rljax.train import lm_base, lm_report, loop, population, rl_fields

# The one place environment names become text environments (`rljax.lm.agentic`): name ->
# (the task it runs on, its maker taking the config's `env` fields).
ENVS = {
    "calculator": ("calculator", calculator_env.CalculatorEnv.make),
    "guess": ("guess", guess_env.GuessEnv.make),
}
ENV_FIELDS = ("max_turns", "action_tokens", "observation_tokens")
SWEEPABLE = rl_fields.SWEEPABLE  # fields `sweep.<field>=a,b,...` may name
# Fields a resumed run may change: the budget, logging and the final evaluation. Any other
# change is refused before anything is built (rljax.io.fingerprint).
RESUMABLE_FIELDS = (
    "steps", "checkpoint_every", "progress", "final_problems", "final_samples", "resume",
    "workdir", "cpu_devices", "learner_map",
)  # fmt: skip

INT_FIELDS = dict.fromkeys(  # integer fields and their lowest allowed value
    ("num_seeds", "steps", "chunk_steps", "checkpoint_every", "prompts_per_step", "oversample",
     "eval_problems", "final_problems", "final_samples", "cpu_devices"), 1,
) | {"group_size": 2, "reference_samples": 0, "train_problems": 0, "log_problems": 0}  # fmt: skip
# Fields left out of a run's fingerprint while empty: the runs from before them keep theirs.
QUIET_WHEN_EMPTY = ("lora", "train_examples", "log_problems", "env")


@dataclasses.dataclass(frozen=True)
class LMRunConfig:
    """Everything a population run needs, converted from the config file at the entry point."""

    task: str  # a key of rljax.lm.tasks.TASKS
    max_level: int  # SFT, RL and evaluation on levels <= this (0 = all)
    preset: str  # the default preset of every grid point
    rl: tuple[tuple[str, object], ...]  # overrides of preset fields (None = preset value)
    sweep: tuple[tuple[str, str], ...]  # field -> "a,b,..." ("" = not swept)
    num_seeds: int  # learners per grid point
    seed: int  # learner s of every grid point uses learner_key(seed, s) (rljax.agents.learner)
    steps: int  # RL updates per learner
    chunk_steps: int  # updates per compiled call; quick evaluation after each
    checkpoint_every: int  # chunks between checkpoints
    prompts_per_step: int
    group_size: int
    oversample: int  # used only if a learner samples dynamically
    reference_samples: int  # used only if a learner needs base samples (forward KL / JS)
    temperature: float
    top_p: float
    format_weight: float
    eval_problems: int  # quick evaluation problems (inside the chunk)
    final_problems: int  # held-out problems of the final evaluation
    final_samples: int  # n of the final pass@k
    model: tuple[tuple[str, int], ...]
    sft: tuple[tuple[str, float], ...]
    data_dir: str
    base_cache_dir: str
    workdir: str
    resume: bool = False
    progress: bool = True
    cpu_devices: int = 1  # shard the learners over this many devices ("seeds" mesh axis)
    min_level: int = 1  # RL and evaluation only on levels >= this (the SFT base sees all)
    # Explicit grid points (a fractional design), each a tuple of (field, value) pairs naming the
    # same fields; used instead of the full product of `sweep` (which must then be empty).
    design: tuple[tuple[tuple[str, object], ...], ...] = ()
    train_problems: int = 0  # RL draws from the first n problems of its split (0 = all)
    train_examples: tuple[int, ...] = ()  # or from these problems of it only (1-shot's picks)
    log_problems: int = 0  # metrics: training accuracy of problems 0..n-1 at every update
    # SELF-style data curation: RL draws only from this fraction of its training problems, those
    # whose reference solution the SFT base finds least likely (0 = all problems).
    least_likely: float = 0.0
    lora: tuple[tuple[str, object], ...] = ()  # rank, alpha, targets; (): full, unfingerprinted
    learner_map: str = "vmap"  # vmap | sequential: a device's learners at once or one at a time
    # A text environment: (("name", n), ("max_turns", T), ...) with n a key of ENVS; (): none
    # (single-turn completions).
    env: tuple[tuple[str, object], ...] = ()


def from_config(config, workdir: str | None = None, cpu_devices: int = 1) -> LMRunConfig:
    """A `configs/grpo.py` ConfigDict -> the frozen run config (where config names become fields).

    The default work directory is runs/lm_<task>_<preset> (the first swept preset if swept).
    """
    preset = config.sweep.preset.split(",")[0].strip() if config.sweep.preset else config.preset
    return LMRunConfig(
        task=config.task,
        max_level=config.max_level,
        min_level=config.min_level,
        train_problems=config.train_problems,
        train_examples=tuple(config.train_examples),
        log_problems=config.log_problems,
        least_likely=config.least_likely,
        preset=config.preset,
        rl=tuple(config.rl.items()),
        sweep=tuple((k, str(v)) for k, v in config.sweep.items()),
        num_seeds=config.num_seeds,
        seed=config.seed,
        steps=config.run.steps,
        chunk_steps=config.run.chunk_steps,
        checkpoint_every=config.run.checkpoint_every,
        prompts_per_step=config.run.prompts_per_step,
        group_size=config.run.group_size,
        oversample=config.run.oversample,
        reference_samples=config.run.reference_samples,
        temperature=config.run.temperature,
        top_p=config.run.top_p,
        format_weight=config.run.format_weight,
        eval_problems=config.run.eval_problems,
        final_problems=config.eval.num_problems,
        final_samples=config.eval.num_samples,
        # remat and logits_chunk only where on: the runs from before them keep their fingerprints
        model=tuple(
            (k, v) for k, v in config.model.items() if k not in ("remat", "logits_chunk") or v
        ),
        # tool_frac only where on: the runs from before it keep their fingerprints
        sft=tuple((k, v) for k, v in config.sft.items() if k != "tool_frac" or v),
        data_dir=config.data_dir,
        base_cache_dir=config.base_cache_dir,
        workdir=workdir or os.path.join("runs", f"lm_{config.task}_{preset}"),
        resume=config.resume,
        progress=config.progress,
        cpu_devices=cpu_devices,
        lora=tuple(config.lora.items()) if config.lora.rank else (),
        learner_map=config.learner_map,
        env=tuple(config.env.items()) if config.env.name else (),
    )


def make_env(run: LMRunConfig):
    """The run's text environment (None: single-turn completions)."""
    if not run.env:
        return None
    fields = dict(run.env)
    return ENVS[fields["name"]][1](**{k: fields[k] for k in ENV_FIELDS})


def grid(run: LMRunConfig) -> list[dict]:
    """Grid points: `run.design` if given, else one dict per combination of swept values."""
    return rl_fields.grid(run.sweep, run.design)


def resolved_points(run: LMRunConfig, points: list[dict]) -> list[dict]:
    """Every grid point's full preset fields (names), validated."""
    return rl_fields.resolved_points(run.preset, run.rl, points)


def validate(run: LMRunConfig) -> list[dict]:
    """Checks the run before any data is built; returns the grid points."""
    if run.task not in TASKS:
        raise ValueError(f"task={run.task!r} is unknown; valid: {', '.join(TASKS)}")
    if not 0 <= run.max_level <= TASKS[run.task].num_levels:
        raise ValueError(
            f"max_level={run.max_level} is invalid; allowed: 0..{TASKS[run.task].num_levels}"
        )
    top = run.max_level or TASKS[run.task].num_levels
    if isinstance(run.min_level, bool) or not 1 <= run.min_level <= top:
        raise ValueError(f"min_level={run.min_level!r} is invalid; allowed: 1..{top} (max_level)")
    for name, low in INT_FIELDS.items():
        checks.check_int(name, getattr(run, name), low=low)
    if run.env:
        fields = dict(run.env)
        if fields["name"] not in ENVS:
            raise ValueError(f"env.name={fields['name']!r} is unknown; valid: {', '.join(ENVS)}")
        if ENVS[fields["name"]][0] != run.task:
            raise ValueError(
                f"env.name={fields['name']!r} runs on task {ENVS[fields['name']][0]!r}; "
                f"got task={run.task!r}"
            )
        for name in ENV_FIELDS:
            checks.check_int(f"env.{name}", fields[name], low=0 if "observation" in name else 1)
    tool_frac = dict(run.sft).get("tool_frac", 0.0)  # left out of `sft` when 0
    if tool_frac and TASKS[run.task].demonstrate is None:
        raise ValueError(
            f"sft.tool_frac={tool_frac} with task {run.task!r}, which has no tool "
            f"demonstrations; allowed: 0, or a task with them "
            f"({', '.join(n for n, t in TASKS.items() if t.demonstrate)})"
        )
    learner_axis.check_learner_map(run.learner_map)
    selection.check(run.least_likely, run.train_problems, run.train_examples)
    if run.steps % run.chunk_steps:
        raise ValueError(
            f"chunk_steps={run.chunk_steps} does not divide steps={run.steps}; allowed: a divisor"
        )
    points = grid(run)
    values = resolved_points(run, points or [{}])
    learners = max(1, len(points)) * run.num_seeds
    if learners % run.cpu_devices:
        raise ValueError(
            f"--cpu_devices={run.cpu_devices} does not divide the population of {learners} "
            f"learners (num_seeds x grid points); allowed: a divisor of {learners}"
        )
    parsed = sorted({v["reward"] for v in values} & set(presets.PARSED_REWARDS))
    agent_cfg = static_config(run, values, pretrained.model_config(dict(run.model)))
    if parsed and agent_cfg.reward_kind == "host":
        raise ValueError(
            f"rl.reward={parsed[0]!r} parses answers on device, which task={run.task!r} cannot "
            "with this tokenizer (its verifier runs on the host); allowed: verifier, random, none"
        )
    if agent_cfg.reward_kind == "host":  # `build` makes the scorer once the problems are loaded
        agent_cfg = dataclasses.replace(agent_cfg, host_scorer=device_reward.host_scorer)
    if agent_cfg.env is not None:
        env_lib.validate(
            agent_cfg.env.spec,
            prompt_length=prompt_length(TASKS[run.task]),
            max_len=agent_cfg.model.max_len,
            vocab_size=agent_cfg.model.vocab_size,
        )
    grpo.validate(agent_cfg)
    return points or [{}]


def static_config(run: LMRunConfig, values: list[dict], model: TransformerConfig) -> grpo.Config:
    """The population's shared static settings, derived from every learner's values."""
    task = TASKS[run.task]
    dynamic = any(bool(v["dynamic_sampling"]) for v in values)
    needs_refs = any(v["divergence"] in presets.SAMPLE_DIVERGENCES for v in values)
    kind = device_reward.reward_kind(task.name, pretrained.tokenizer(dict(run.model)))
    env = make_env(run)
    length = completion_length(task) if env is None else env.spec.episode_length()
    max_len = prompt_length(task) + max(length, completion_length(task))  # SFT's, RL's
    return grpo.Config(
        model=dataclasses.replace(model, max_len=max_len),
        reward_kind=kind,
        completion_length=length,
        env=env,
        prompts_per_step=run.prompts_per_step,
        group_size=run.group_size,
        oversample=run.oversample if dynamic else 1,
        max_epochs=max(int(v["num_epochs"]) for v in values),
        max_minibatches=math.lcm(*(int(v["num_minibatches"]) for v in values)),
        policy_losses=grpo.used_policy_losses(values),
        reference_samples=run.reference_samples if needs_refs else 0,
        temperature=run.temperature,
        top_p=run.top_p,
        format_weight=run.format_weight,
        eval_levels=task.num_levels,
        num_levels=task.num_levels,
        eval_seed=run.seed,
        lora=lora.from_fields(dict(run.lora)),
        log_problems=run.log_problems,
    )


def problems(run: LMRunConfig) -> tuple[list, list, list]:
    """(SFT problems, RL training problems, held-out problems) of a run (`level_splits`)."""
    levels = dict(max_level=run.max_level, min_level=run.min_level)
    picks = dict(train_problems=run.train_problems, train_examples=run.train_examples)
    return level_splits(run.task, run.data_dir, **levels, **picks)


def build(run: LMRunConfig, points: list[dict]):
    """Problems, the cached base and the population's static config and hyperparameters."""
    task = TASKS[run.task]
    sft_problems, train, test = problems(run)
    model = pretrained.model_config(
        dict(run.model), max_len=prompt_length(task) + completion_length(task)
    )
    sft_cfg = sft.SFTConfig(**dict(run.sft))  # its own seed: every learner seed shares the base
    tok = pretrained.tokenizer(dict(run.model))
    if dict(run.model).get("path"):
        base_params, info = pretrained.load_base(dict(run.model), model)
    else:
        base_params, info = lm_base.train_or_load(
            model, sft_cfg, task, sft_problems, run.base_cache_dir, run.progress, tok
        )
    if run.least_likely:
        train = selection.least_likely(base_params, model, task, train, run.least_likely, tok)
    values = resolved_points(run, points)
    agent_cfg = static_config(run, values, model)
    quick = spread(test, run.eval_problems)
    if agent_cfg.reward_kind == "host":  # one host list: training problems, then the quick set
        scorer = device_reward.host_scorer(task, train + quick, run.format_weight, tok)
        agent_cfg = dataclasses.replace(agent_cfg, host_scorer=scorer)
    eval_table = device_reward.make_table(task, quick, tok)
    eval_table = eval_table._replace(index=eval_table.index + len(train))
    data = grpo.TaskData(
        base_params,
        jax.tree.map(jnp.asarray, device_reward.make_table(task, train, tok)),
        jax.tree.map(jnp.asarray, eval_table),
    )
    hparams = [presets.hparam_values(v) for v in values]
    return agent_cfg, data, hparams, values, test, info


def spec(run_cfg: LMRunConfig, agent_cfg, data, hparams: list[dict], points) -> population.Spec:
    """The run's ``population.Spec``: the task data is every chunk's (replicated) argument."""
    cpu_devices = run_cfg.cpu_devices
    mesh = mesh_lib.MeshConfig((cpu_devices,), ("seeds",)) if cpu_devices > 1 else None
    return population.Spec(
        learner=grpo,
        config=agent_cfg,
        env=data,
        hparams=jax.tree.map(lambda *x: np.stack(x), *(grpo.make_hparams(h) for h in hparams)),
        num_updates=run_cfg.steps,
        chunk_updates=run_cfg.chunk_steps,
        num_seeds=run_cfg.num_seeds,
        seed=run_cfg.seed,
        grid=tuple(points),
        env_as_argument=True,
        mesh=mesh,
        keep_metrics=True,  # the reproductions read every learner's curves in memory
        learner_map=run_cfg.learner_map,
        # A learner alone rounds as each of a population sharded one learner per device (the
        # members-equal-their-solo-runs guarantee; tests/train/test_lm_lora.py).
        unbatch_one=False,
    )


LOOP_OPTIONS = dict(  # the host loop's settings of an RLVR population (the last quick evaluation)
    final_window=1e-9, score_key="eval/pass@1", count_key=None, score_name="pass@1",
    x_name="samples", rows_per_learner=True,
)  # fmt: skip


def fingerprint_config(run: LMRunConfig) -> dict:
    """The run's fields as its fingerprint holds them (`QUIET_WHEN_EMPTY` ones only when set)."""
    return {k: v for k, v in dataclasses.asdict(run).items() if v or k not in QUIET_WHEN_EMPTY}


@dataclasses.dataclass
class Outcome:
    """A population run in memory (on process 0 after training; else states and summary only)."""

    states: object  # final learner states [A, ...] (None: the run had finished already)
    summary: loop.Summary
    text: str = ""  # results.md
    base: dict | None = None  # the base's held-out evaluation (rljax.lm.tasks.evaluation.summarize)
    learners: list | None = None  # the same per learner, grid-major
    values: list | None = None  # every grid point's full preset fields
    metrics: dict | None = None  # every training metric per learner, {key: [A, updates run]}


def run(run_cfg: LMRunConfig):
    """``train`` as (final states, loop Summary, results markdown)."""
    outcome = train(run_cfg)
    return outcome.states, outcome.summary, outcome.text


def train(run_cfg: LMRunConfig) -> Outcome:
    """Validates, builds, trains the population, evaluates and reports (results.md/json)."""
    points = validate(run_cfg)
    config = fingerprint_config(run_cfg)
    start = fingerprint.resume_point(
        run_cfg.workdir,
        config,
        mutable=(*RESUMABLE_FIELDS, base_reference.FIELD),  # the base is checked once built
        num_updates=run_cfg.steps,
        resume=run_cfg.resume,
    )
    if start == run_cfg.steps:  # finished already: nothing to build, compile or run
        return Outcome(None, loop.load_summary(run_cfg.workdir, run_cfg.steps))
    # One run per workdir, refused before anything is built; given back however the run ends.
    with workdir_lock.holding(run_cfg.workdir, primary=jax.process_index() == 0):
        return _train(run_cfg, points, config)


def _train(run_cfg: LMRunConfig, points: list[dict], config: dict) -> Outcome:
    t0 = time.perf_counter()
    agent_cfg, data, hparams, values, test, info = build(run_cfg, points)
    base_s = time.perf_counter() - t0
    base_reference.record(config, run_cfg.workdir, data.base_params, resume=run_cfg.resume)
    print(
        f"base: {num_params(data.base_params):,} params, cached={info['cached']}, "
        f"{base_s:.0f} s ({info['path']})"
    )
    result = population.run(
        spec(run_cfg, agent_cfg, data, hparams, points),
        workdir=run_cfg.workdir,
        title=f"RLVR {run_cfg.task}",
        checkpoint_every=run_cfg.checkpoint_every,
        resume=run_cfg.resume,
        progress=run_cfg.progress,
        fingerprint=config,
        **LOOP_OPTIONS,
    )
    states, summary = result.states, result.summary
    if jax.process_index() != 0:
        return Outcome(states, summary)
    t1 = time.perf_counter()
    key = jax.random.fold_in(learner.eval_key(agent_cfg.eval_seed), 0)  # quick evals: steps >= 1
    tok = pretrained.tokenizer(dict(run_cfg.model))
    base, learners = lm_report.evaluate_learners(
        run_cfg, agent_cfg, states, data.base_params, test, points, key, tok
    )
    learners_run = len(points) * run_cfg.num_seeds
    timings = lm_report.timings(summary, base_s, time.perf_counter() - t1, learners_run)
    text = lm_report.write_report(run_cfg, points, values, base, learners, timings, run_cfg.workdir)
    return Outcome(states, summary, text, base, learners, values, result.metrics)
