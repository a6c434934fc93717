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
import functools
import itertools
import json
import math
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from rljax import stats
from rljax.agents import grpo
from rljax.io import fingerprint, workdir_lock
from rljax.lm import device_reward, presets, report, rollout, sft
from rljax.lm.data import completion_length, encode_problems, prompt_length
from rljax.lm.logprobs import completion_log_probs
from rljax.lm.model import TransformerConfig, num_params
from rljax.lm.tasks import TASKS
from rljax.lm.tasks.builders import load_problems
from rljax.parallel import mesh as mesh_lib
from rljax.parallel import population, sharding
from rljax.train import lm_base, loop

SWEEPABLE = ("preset", *presets.FIELDS)  # fields `sweep.<field>=a,b,...` may name
# Fields a resumed run may change: the budget, logging and the final evaluation. Any other
# change is refused before anything is built (rljax.io.fingerprint).
RESUMABLE_FIELDS = (
    "steps", "checkpoint_every", "progress", "final_problems", "final_samples", "resume",
    "workdir", "cpu_devices",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class LMRunConfig:
    """Everything a population run needs, converted from the config file at the entry point."""

    task: str  # a key of rljax.lm.tasks.TASKS
    max_level: int  # SFT, RL and evaluation on levels <= this (0 = all)
    preset: str  # the default preset of every grid point
    rl: tuple[tuple[str, object], ...]  # overrides of preset fields (None = preset value)
    sweep: tuple[tuple[str, str], ...]  # field -> "a,b,..." ("" = not swept)
    num_seeds: int  # learners per grid point
    seed: int  # learner s of every grid point uses seed + s
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
    # SELF-style data curation: RL draws only from this fraction of its training problems, those
    # whose reference solution the SFT base finds least likely (0 = all problems).
    least_likely: float = 0.0


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
        model=tuple(config.model.items()),
        sft=tuple(config.sft.items()),
        data_dir=config.data_dir,
        base_cache_dir=config.base_cache_dir,
        workdir=workdir or os.path.join("runs", f"lm_{config.task}_{preset}"),
        resume=config.resume,
        progress=config.progress,
        cpu_devices=cpu_devices,
    )


def _positive(name: str, value, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}={value!r} is invalid; allowed: an integer >= {minimum}")


def _parse(field: str, text: str) -> list:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if field == "preset" or field in presets.CHOICES:
        return values
    try:
        return [int(v) if field in grpo.INT_FIELDS else float(v) for v in values]
    except ValueError:
        raise ValueError(
            f"sweep.{field}={text!r} is not a comma-separated list of numbers"
        ) from None


def grid(run: LMRunConfig) -> list[dict]:
    """Grid points: `run.design` if given, else one dict per combination of swept values."""
    sweep = {k: _parse(k, v) for k, v in run.sweep if v.strip()}
    if run.design:
        return _design(run.design, sweep)
    unknown = sorted(set(sweep) - set(SWEEPABLE))
    if unknown:
        raise ValueError(f"sweep.{unknown[0]} cannot be swept; valid: {', '.join(SWEEPABLE)}")
    return [dict(zip(sweep, combo, strict=True)) for combo in itertools.product(*sweep.values())]


def _design(design, sweep: dict) -> list[dict]:
    if sweep:
        raise ValueError(
            f"sweep.{next(iter(sweep))} is set together with an explicit design; give one of them"
        )
    points = [dict(p) for p in design]
    for i, point in enumerate(points):
        unknown = sorted(set(point) - set(SWEEPABLE))
        if unknown:
            raise ValueError(
                f"design point {i} names {unknown[0]!r}; valid fields: {', '.join(SWEEPABLE)}"
            )
        if set(point) != set(points[0]):
            raise ValueError(
                f"design point {i} names {sorted(point)}, point 0 names {sorted(points[0])}; "
                "every point must name the same fields"
            )
    return points


def resolved_points(run: LMRunConfig, points: list[dict]) -> list[dict]:
    """Every grid point's full preset fields (names), validated."""
    overrides = {k: v for k, v in run.rl if v is not None}
    out = []
    for point in points:
        preset = point.get("preset", run.preset)
        fields = {**overrides, **{k: v for k, v in point.items() if k != "preset"}}
        values = presets.resolve(preset, **fields)
        presets.check(values)
        out.append(values)
    return out


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
    for name in ("num_seeds", "steps", "chunk_steps", "checkpoint_every", "prompts_per_step"):
        _positive(name, getattr(run, name))
    for name in ("oversample", "eval_problems", "final_problems", "final_samples"):
        _positive(name, getattr(run, name))
    _positive("group_size", run.group_size, 2)
    _positive("reference_samples", run.reference_samples, 0)
    _positive("train_problems", run.train_problems, 0)
    if isinstance(run.least_likely, bool) or not 0.0 <= run.least_likely < 1.0:
        raise ValueError(
            f"least_likely={run.least_likely!r} is invalid; allowed: a fraction in [0, 1) "
            "(0 = every training problem)"
        )
    if run.least_likely and run.train_problems:
        raise ValueError(
            f"least_likely={run.least_likely} with train_problems={run.train_problems}: choose "
            "one way to select the training problems (set the other to 0)"
        )
    _positive("cpu_devices", run.cpu_devices)
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
    if parsed and device_reward.KINDS[run.task] == "host":
        raise ValueError(
            f"rl.reward={parsed[0]!r} parses answers on device, which task={run.task!r} cannot "
            f"(its verifier runs on the host); allowed for it: verifier, random, none"
        )
    agent_cfg = static_config(run, values, TransformerConfig(**dict(run.model)))
    grpo.validate(agent_cfg)
    return points or [{}]


def static_config(run: LMRunConfig, values: list[dict], model: TransformerConfig) -> grpo.Config:
    """The population's shared static settings, derived from every learner's values."""
    task = TASKS[run.task]
    dynamic = any(bool(v["dynamic_sampling"]) for v in values)
    needs_refs = any(v["divergence"] in presets.SAMPLE_DIVERGENCES for v in values)
    kind = device_reward.KINDS[task.name]
    return grpo.Config(
        model=dataclasses.replace(model, max_len=prompt_length(task) + completion_length(task)),
        reward_kind=kind,
        completion_length=completion_length(task),
        prompts_per_step=run.prompts_per_step,
        group_size=run.group_size,
        oversample=run.oversample if dynamic else 1,
        max_epochs=max(int(v["num_epochs"]) for v in values),
        max_minibatches=math.lcm(*(int(v["num_minibatches"]) for v in values)),
        reference_samples=run.reference_samples if needs_refs else 0,
        temperature=run.temperature,
        top_p=run.top_p,
        format_weight=run.format_weight,
        eval_levels=task.num_levels,
        num_levels=task.num_levels,
    )


def _split(run: LMRunConfig, split: str, min_level: int = 1):
    task = TASKS[run.task]
    max_level = run.max_level or task.num_levels
    problems = [
        p
        for p in load_problems(task.name, split, run.data_dir)
        if min_level <= p.level <= max_level
    ]
    return sorted(problems, key=lambda p: (p.level, p.prompt)) if split == "test" else problems


def spread(problems: list, count: int) -> list:
    """`count` problems evenly spaced over a level-sorted list, so every level is represented."""
    picks = np.linspace(0, len(problems) - 1, min(count, len(problems)))
    return [problems[int(round(i))] for i in picks]


def problems(run: LMRunConfig) -> tuple[list, list, list]:
    """(SFT problems, RL training problems, held-out problems) of a run."""
    sft_problems = _split(run, "train")  # the base sees every level up to max_level
    train = [p for p in sft_problems if p.level >= run.min_level]
    train = train[: run.train_problems] if run.train_problems else train  # 1-shot RLVR & co.
    return sft_problems, train, _split(run, "test", run.min_level)


def reference_log_likelihood(params, model: TransformerConfig, task, problems: list) -> np.ndarray:
    """log π(reference solution | prompt) of each problem: the sum of the completion's token
    log-probs under `params` (teacher forcing, in batches of 256). Shape `[N]`."""
    score = jax.jit(lambda p, b: jnp.sum(completion_log_probs(p, model, *b)[0], axis=1))
    out = [
        np.asarray(score(params, encode_problems(task, problems[i : i + 256])))
        for i in range(0, len(problems), 256)
    ]
    return np.concatenate(out)


def least_likely(params, model: TransformerConfig, task, problems: list, fraction: float) -> list:
    """The ceil(fraction x N) problems whose reference solution `params` finds least likely, in
    their original order (SELF's curation: RLVR's winner-take-all favours already-likely
    problems, so train on the others)."""
    loglik = reference_log_likelihood(params, model, task, problems)
    keep = np.sort(np.argsort(loglik, kind="stable")[: math.ceil(fraction * len(problems))])
    return [problems[i] for i in keep]


def build(run: LMRunConfig, points: list[dict]):
    """Problems, the cached base and the population's static config and hyperparameters."""
    task = TASKS[run.task]
    sft_problems, train, test = problems(run)
    model = TransformerConfig(
        max_len=prompt_length(task) + completion_length(task), **dict(run.model)
    )
    sft_cfg = sft.SFTConfig(**dict(run.sft))  # its own seed: every learner seed shares the base
    base_params, info = lm_base.train_or_load(
        model, sft_cfg, task, sft_problems, run.base_cache_dir, progress=run.progress
    )
    if run.least_likely:
        train = least_likely(base_params, model, task, train, run.least_likely)
    values = resolved_points(run, points)
    agent_cfg = static_config(run, values, model)
    quick = spread(test, run.eval_problems)
    if agent_cfg.reward_kind == "host":  # one host list: training problems, then the quick set
        scorer = device_reward.host_scorer(task, train + quick, run.format_weight)
        agent_cfg = dataclasses.replace(agent_cfg, host_scorer=scorer)
    eval_table = device_reward.make_table(task, quick)
    eval_table = eval_table._replace(index=eval_table.index + len(train))
    data = grpo.TaskData(
        base_params,
        jax.tree.map(jnp.asarray, device_reward.make_table(task, train)),
        jax.tree.map(jnp.asarray, eval_table),
    )
    hparams = [presets.hparam_values(v) for v in values]
    return agent_cfg, data, hparams, values, test, info


def init_learners(agent_cfg, data, hparams: list[dict], run: LMRunConfig, mesh=None):
    """All `G × S` learners stacked grid-major; learner (g, s) has root key PRNGKey(seed + s)."""
    per_learner = [h for h in hparams for _ in range(run.num_seeds)]
    hp = jax.tree.map(lambda *x: jnp.stack(x), *(grpo.make_hparams(h) for h in per_learner))
    seeds = np.tile(np.arange(run.num_seeds) + run.seed, len(hparams))
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds))
    init = jax.vmap(functools.partial(grpo.init, agent_cfg, data), in_axes=(0, 0))
    if mesh is None:
        return jax.jit(init)(keys, hp), None
    shapes = jax.eval_shape(init, keys, hp)
    shardings = population.shardings(mesh, shapes, population.SEEDS)
    return jax.jit(init, out_shardings=shardings[0])(keys, hp), shardings


def make_chunk_fn(agent_cfg, steps: int, shardings=None):
    """The jitted chunk `(learners[L], data) -> (learners, metrics[L, steps])`; donates learners."""
    chunk = jax.vmap(
        functools.partial(grpo.train_chunk, agent_cfg, num_updates=steps), in_axes=(None, 0)
    )
    fn = lambda states, data: chunk(data, states)  # noqa: E731
    if shardings is None:
        return jax.jit(fn, donate_argnums=0)
    state_sh, metrics_sh = shardings
    return jax.jit(fn, donate_argnums=0, out_shardings=(state_sh, metrics_sh))


def _label(point: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items()) or "default"


def evaluate_learners(run, agent_cfg, states, base_params, test, points):
    """Final held-out evaluation of the base and every learner with the host verifiers."""
    task = TASKS[run.task]
    problems = spread(test, run.final_problems)
    key = jax.random.PRNGKey(agent_cfg.eval_seed + 1)

    def evaluate(params):
        return rollout.evaluate(
            params,
            agent_cfg.model,
            task,
            problems,
            key,
            num_samples=run.final_samples,
            temperature=run.temperature,
            top_p=run.top_p,
        )

    base = evaluate(base_params)
    params = jax.device_get(states.params)
    learners = []
    for a in range(len(points) * run.num_seeds):
        learners.append(evaluate(jax.tree.map(lambda x, a=a: x[a], params)))
    return base, learners


def write_report(run, points, values, base, learners, timings, workdir) -> str:
    """Per grid point over seeds: pass@1 / pass@n / gain with 95% intervals; plots; tables."""
    n = run.final_samples
    arms, compare, curves = {}, {}, {}
    for g, point in enumerate(points):
        members = learners[g * run.num_seeds : (g + 1) * run.num_seeds]
        name = _label(point)
        gain = [m["pass@1"] - base["pass@1"] for m in members]
        arms[name] = {
            "pass@1": stats.summarize([m["pass@1"] for m in members]),
            f"pass@{n}": stats.summarize([m[f"pass@{n}"] for m in members]),
            "gain_pass@1": stats.summarize(gain),
            "distinct_correct": stats.summarize(
                [m["distinct_correct_per_problem"] for m in members]
            ),
            "hparams": values[g],
        }
        curves[name] = {"pass_at_k": _mean_curve(members)}
    if len(points) > 1:
        first = _label(points[0])
        for g, point in enumerate(points[1:], 1):
            a = [m["pass@1"] for m in learners[g * run.num_seeds : (g + 1) * run.num_seeds]]
            b = [m["pass@1"] for m in learners[: run.num_seeds]]
            compare[f"{_label(point)} vs {first}"] = stats.compare(a, b)
    lines = [
        f"# RLVR population: {run.task}, {len(points)} grid point(s) x {run.num_seeds} seed(s)",
        "",
        f"Base: pass@1 {base['pass@1']:.3f}, pass@{n} {base[f'pass@{n}']:.3f} "
        f"({base['num_problems']} held-out problems, n = {n}). Intervals: 95% bootstrap over "
        "seeds.",
        "",
        f"| grid point | pass@1 | pass@{n} | pass@1 gain over base | distinct correct |",
        "|---|---|---|---|---|",
    ]
    for name, arm in arms.items():
        lines.append(
            f"| {name} | {stats.format_interval(arm['pass@1'])} | "
            f"{stats.format_interval(arm[f'pass@{n}'])} | "
            f"{stats.format_interval(arm['gain_pass@1'])} | "
            f"{stats.format_interval(arm['distinct_correct'], digits=2)} |"
        )
    if compare:
        lines += [
            "",
            "| comparison (pass@1) | difference [95% CI] | P(improvement) |",
            "|---|---|---|",
        ]
        for name, c in compare.items():
            lo, hi = c["diff_ci"]
            lines.append(
                f"| {name} | {c['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
                f"{c['prob_improvement']:.2f} |"
            )
    lines += ["", *(f"- {k}: {v}" for k, v in timings.items())]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(
            {"base": base, "arms": arms, "compare": compare, "learners": learners, **timings},
            f,
            indent=1,
        )
    report.plot_pass_at_k(
        {"base": base, **curves},
        os.path.join(workdir, "pass_at_k.png"),
        f"{run.task}: base vs RL (mean over {run.num_seeds} seed(s))",
    )
    return text


def _mean_curve(members: list[dict]) -> dict:
    stacked = {
        k: np.mean([m["pass_at_k"][k] for m in members], axis=0) for k in ("pass", "low", "high")
    }
    return {"k": members[0]["pass_at_k"]["k"], **{k: v.tolist() for k, v in stacked.items()}}


def run(run_cfg: LMRunConfig):
    """Validates, builds, trains the population, evaluates and reports.

    Returns:
      (final states, loop Summary, results markdown).
    """
    points = validate(run_cfg)
    config = dataclasses.asdict(run_cfg)
    start = fingerprint.resume_point(
        run_cfg.workdir,
        config,
        mutable=RESUMABLE_FIELDS,
        num_updates=run_cfg.steps,
        resume=run_cfg.resume,
    )
    if start == run_cfg.steps:  # finished already: nothing to build, compile or run
        return None, loop.load_summary(run_cfg.workdir, run_cfg.steps), ""
    if jax.process_index() == 0:  # one run per workdir, refused before anything is built
        workdir_lock.acquire(run_cfg.workdir)
    t0 = time.perf_counter()
    agent_cfg, data, hparams, values, test, info = build(run_cfg, points)
    base_s = time.perf_counter() - t0
    print(
        f"base: {num_params(data.base_params):,} params, cached={info['cached']}, "
        f"{base_s:.0f} s ({info['path']})"
    )
    mesh = None
    if run_cfg.cpu_devices > 1:
        mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((run_cfg.cpu_devices,), ("seeds",)))
    if mesh is not None:  # the shared task data (a restored base is committed to one device)
        data = jax.device_put(data, sharding.replicated(mesh))
    states, shardings = init_learners(agent_cfg, data, hparams, run_cfg, mesh)
    loop_cfg = loop.LoopConfig(
        workdir=run_cfg.workdir,
        title=f"RLVR {run_cfg.task}",
        num_updates=run_cfg.steps,
        chunk_updates=run_cfg.chunk_steps,
        checkpoint_every=run_cfg.checkpoint_every,
        env_steps_per_update=run_cfg.prompts_per_step * run_cfg.group_size,
        num_seeds=run_cfg.num_seeds,
        grid=tuple(points),
        resume=run_cfg.resume,
        progress=run_cfg.progress,
        final_window=1e-9,  # the last quick evaluation
        score_key="eval/pass@1",
        count_key=None,
        score_name="pass@1",
        x_name="samples",
        rows_per_learner=True,
        fingerprint=config,
    )
    chunk_fn = make_chunk_fn(agent_cfg, run_cfg.chunk_steps, shardings)
    states, summary = loop.run(loop_cfg, states, chunk_fn, data)
    if jax.process_index() != 0:
        return states, summary, ""
    t1 = time.perf_counter()
    base, learners = evaluate_learners(run_cfg, agent_cfg, states, data.base_params, test, points)
    timings = {
        "base_seconds": round(base_s, 1),
        "rl_compile_seconds": round(summary.compile_s, 1),
        "rl_seconds": round(summary.run_s, 1),
        "eval_seconds": round(time.perf_counter() - t1, 1),
        "num_learners": len(points) * run_cfg.num_seeds,
        "rl_steps": summary.updates_done,
        "interrupted": summary.interrupted,
    }
    text = write_report(run_cfg, points, values, base, learners, timings, run_cfg.workdir)
    workdir_lock.release(run_cfg.workdir)
    return states, summary, text
