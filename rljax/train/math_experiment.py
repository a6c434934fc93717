"""Math RLVR on local GSM8K / MATH files, a front end of the one population pipeline.

One run: load the train and test files (`rljax.lm.tasks.math_data`, checked disjoint), render
prompts with the template and tokenizer into problem tables (`device_reward.make_table`, as
the toy tasks do; `rljax.lm.tasks.math_task`), build the base policy
(optionally fine-tuned on `#### <answer>` completions), then hand the population (grid points
x `num_seeds` GRPO-family learners) to `rljax.train.population.run`: one vmapped, jitted chunk of
`chunk_steps` updates at a time, whose rewards come from the math-verify checker through
`jax.pure_callback` inside the program, with the pipeline's checkpoints every
`checkpoint_every` chunks, exact resume (`resume`), the config fingerprint, NaN stop, progress
bar, metrics.jsonl/csv, curves.png and the workdir lock. After every chunk each learner's
quick pass@1 on the first `eval_problems` held-out problems is in the metrics; at the end
`final_samples` completions of every held-out problem per learner give pass@k
(`rljax.lm.tasks.rollout.evaluate_policy` with the checker as verifier), written to
`<workdir>/results.json` with the config and the final evaluation's checker statistics.

Learners: the grid points are `presets` x the swept values of `sweep` (every preset field,
`rljax.train.rl_fields`, the toy RLVR front end's mechanism), and each learner's fields are its
point's, then `rl`'s overrides, then for a checkpoint model `presets.PRETRAINED` (learning rate
1e-6, no weight decay: the sources are in rljax.agents.grpo.presets), then its preset's. Every
field is checked (name, value, range) before anything is loaded.

Keys follow the pipeline's rule (`rljax.agents.learner`): learner `s` of every preset starts
from `learner_key(seed, s)`; the base (random initialization of the tiny model) from
`base_key(seed)`; the final pass@k from `fold_in(eval_key(seed), 0)`.

Models: "tiny" is the decoder built at the config's widths (random initialization, then SFT); a
checkpoint folder (config.json + safetensors, `rljax.lm.model.hf`) is read at its own sizes with
max_len = P + A and its parameters are the base (fine-tuned first only if `sft_steps > 0`).
`tokenizer` is "bytes" (`rljax.lm.model.tokenizer.ByteTokenizer`) or a tokenizer.json folder,
and `chat_template` "plain" (`math_task.PLAIN`) or "model" (the tokenizer's chat template);
the model config takes the tokenizer's stop and pad ids.

Devices: the pipeline builds the mesh `mesh_shape` x `mesh_axes` (`population.make_mesh`; a
fixed shape takes the first devices, -1 the rest). The learners ([A] rows of every state leaf)
are split over its `seeds` axis, and each learner's parameters and AdamW moments, the base and
the SFT state over `fsdp` / `tensor` by `rules` (`population.Spec.member_rules`; "fsdp" or
"fsdp_tensor" of `rljax.parallel.steps`); each learner's rows over `data` / `fsdp`. On several
processes (`distributed`, `rljax.parallel.distributed`, initialized by the entry point before
anything touches a device) every process runs this same program; the checker's callback runs on
the first device (process 0), and only process 0 judges pass@k and writes files.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

import jax
import numpy as np

from rljax.agents import grpo, learner
from rljax.agents.grpo import presets
from rljax.io import files, fingerprint, workdir_lock
from rljax.lm.model.decoder import DTYPES, init_params
from rljax.lm.tasks import device_reward, math_answers, math_data, math_task, rollout
from rljax.lm.tasks.math_checker import Checker
from rljax.parallel import distributed
from rljax.parallel import mesh as mesh_lib
from rljax.train import lm_mesh, lm_sharding, loop, math_base, population, rl_fields


@dataclasses.dataclass(frozen=True)
class MathRunConfig:
    train_path: str  # JSONL / Parquet, the problems RL draws from
    test_path: str  # held-out problems for pass@k (no question may be in the training file)
    workdir: str
    layout: str = "gsm8k"  # gsm8k | math
    fields: tuple = ()  # (("question", "prompt"), ...): field renames for other layouts
    answer_modes: tuple[str, ...] = math_answers.MODES  # how completions' answers are extracted
    model: str = "tiny"  # "tiny" or a checkpoint folder (config.json + safetensors)
    tokenizer: str = ""  # "bytes" or a tokenizer.json folder; "": bytes for tiny, else `model`
    chat_template: str = "plain"  # plain (question + "\nAnswer: ") | model (the tokenizer's)
    d_model: int = 64  # d_model .. d_ff: tiny only
    n_layers: int = 1
    n_heads: int = 4
    d_ff: int = 128
    dtype: str = "float32"  # activations: float32 | bfloat16 (parameters stay float32 masters)
    remat: bool = False  # checkpoint every block in the backward pass
    logits_chunk: int = 0  # completion log-probs apply the head this many tokens at a time
    micro_batches: int = 1  # gradient accumulation: micro-batches per minibatch (same update)
    prompt_length: int = 96  # P tokens (the rendered question, with BOS for the plain template)
    completion_length: int = 8  # A sampled tokens
    prompts_per_step: int = 4  # B
    group_size: int = 4  # G
    steps: int = 2  # RL updates per learner
    # Updates per compiled call (the largest divisor of steps up to this); quick pass@1 after each.
    chunk_steps: int = 1
    checkpoint_every: int = 1  # chunks between checkpoints
    eval_problems: int = 4  # held-out problems of the quick pass@1 after every chunk
    resume: bool = False  # continue from the latest checkpoint in workdir
    progress: bool = True  # a progress bar with rate and metrics
    presets: tuple[str, ...] = ("grpo",)  # one grid point per preset (a sweep axis)
    rl: tuple[tuple[str, object], ...] = ()  # (preset field, value) overrides of every learner
    sweep: tuple[tuple[str, str], ...] = ()  # (preset field, "a,b,..."): more grid axes
    num_seeds: int = 1  # learners per preset
    seed: int = 0
    sft_steps: int = 0  # fine-tuning steps on "#### answer" completions before RL
    sft_learning_rate: float = 3e-3
    temperature: float = 1.0
    format_weight: float = 0.0
    checker_timeout_s: float = 2.0  # per answer
    checker_workers: int = 2
    final_problems: int = 0  # held-out problems for pass@k (0: all)
    final_samples: int = 4  # n completions per problem; pass@k for k = 1..n
    mesh_shape: tuple[int, ...] = (1,)  # devices per axis; -1: the rest (all devices)
    mesh_axes: tuple[str, ...] = ("seeds",)  # seeds (learners) | data | fsdp | tensor
    rules: str = "fsdp"  # how a learner's weights split: fsdp | fsdp_tensor (lm_mesh.RULES)
    distributed: distributed.DistributedConfig = distributed.DistributedConfig()  # processes


def _positive(name: str, value, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r} is invalid; allowed: an integer >= {low}")


def validate(run: MathRunConfig) -> None:
    """Checks every field before anything is loaded or compiled."""
    for name in (
        "d_model", "n_layers", "n_heads", "d_ff", "prompt_length", "completion_length",
        "prompts_per_step", "steps", "num_seeds", "final_samples", "checker_workers",
        "chunk_steps", "checkpoint_every", "eval_problems",
    ):  # fmt: skip
        _positive(name, getattr(run, name))
    _positive("group_size", run.group_size, 2)
    _positive("sft_steps", run.sft_steps, 0)
    _positive("final_problems", run.final_problems, 0)
    _positive("logits_chunk", run.logits_chunk, 0)
    _positive("micro_batches", run.micro_batches)
    if run.dtype not in DTYPES:
        raise ValueError(f"dtype={run.dtype!r} is unknown; valid: {', '.join(DTYPES)}")
    math_data.fields_for(run.layout, **dict(run.fields))
    math_answers.check_modes(run.answer_modes)
    if not run.presets:
        raise ValueError(f"presets is empty; valid: {', '.join(presets.PRESETS)}")
    if "preset" in dict(run.sweep):
        raise ValueError("sweep names 'preset'; the presets are the field `presets`")
    for value in point_values(run):
        presets.hparam_values(value)
    math_base.check_model(run)
    if not run.checker_timeout_s > 0:
        raise ValueError(f"checker_timeout_s={run.checker_timeout_s!r}; allowed: > 0")
    if not run.temperature > 0 or not run.format_weight >= 0:
        raise ValueError("temperature must be > 0 and format_weight >= 0")
    lm_mesh.check(run.mesh_shape, run.mesh_axes, run.rules, len(grid(run)) * run.num_seeds)
    distributed.validate(run.distributed)


def grid(run: MathRunConfig) -> list[dict]:
    """The grid points: every preset x every combination of `sweep`'s values, preset-major."""
    return rl_fields.grid((("preset", ",".join(run.presets)), *run.sweep))


def point_values(run: MathRunConfig) -> list[dict]:
    """Every grid point's resolved preset fields (names), validated: the point's values, then
    `rl`, then `presets.PRETRAINED` for a checkpoint model, then the preset's."""
    defaults = presets.PRETRAINED if run.model != "tiny" else None
    return rl_fields.resolved_points(run.presets[0], run.rl, grid(run), defaults)


def learner_values(run: MathRunConfig) -> list[dict]:
    """Every learner's resolved preset values, grid-major (grid points x `num_seeds`)."""
    return [v for v in point_values(run) for _ in range(run.num_seeds)]


def hparams(run: MathRunConfig) -> grpo.Hparams:
    """The population's `grpo.Hparams`, one row per grid point (the learners' seeds share it)."""
    rows = [grpo.make_hparams(presets.hparam_values(v)) for v in point_values(run)]
    return jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x]), *rows)


def agent_config(run: MathRunConfig, values: list[dict], model, host_scorer) -> grpo.Config:
    dynamic = any(bool(v["dynamic_sampling"]) for v in values)
    needs_refs = any(v["divergence"] in presets.SAMPLE_DIVERGENCES for v in values)
    return grpo.Config(
        model=model,
        reward_kind="host",
        completion_length=run.completion_length,
        prompts_per_step=run.prompts_per_step,
        group_size=run.group_size,
        oversample=2 if dynamic else 1,
        max_epochs=max(int(v["num_epochs"]) for v in values),
        # each minibatch of every preset accumulates `micro_batches` equal micro-batches
        max_minibatches=math.lcm(*(int(v["num_minibatches"]) for v in values)) * run.micro_batches,
        policy_losses=grpo.used_policy_losses(values),
        reference_samples=2 if needs_refs else 0,
        temperature=run.temperature,
        format_weight=run.format_weight,
        host_scorer=host_scorer,
    )


def learner_sampler(sampler, params, i: int, key) -> rollout.Sampler:
    """Learner `i` of the population `params` as `rollout.evaluate_policy`'s sampler: every row
    at once on the sharded sampler (`lm_sharding.jit_learner_sample`'s `(sample, rows)`), with
    `key` (sampled on every process; the completions only on process 0, else None)."""
    sample, row_sharding = sampler

    def sample_fn(prompt_tokens, prompt_mask, start):
        del start  # one batch: every held-out problem
        prompts = [
            jax.make_array_from_callback(x.shape, row_sharding, lambda idx, x=x: x[idx])
            for x in (prompt_tokens, prompt_mask)
        ]
        out = sample(params, np.int32(i), *prompts, key)
        return np.asarray(out.tokens) if jax.process_index() == 0 else None

    return sample_fn


# Fields a resumed run may change: the budget, logging, the final evaluation and the checker's
# pool. Any other change is refused, naming the fields, before anything is built.
RESUMABLE_FIELDS = (
    "steps", "checkpoint_every", "progress", "resume", "workdir", "final_problems", "final_samples",
    "checker_workers", "distributed",
)  # fmt: skip
LOOP_OPTIONS = dict(  # the host loop's settings: the score is the last quick pass@1
    final_window=1e-9, score_key="eval/pass@1", count_key=None, score_name="pass@1",
    x_name="samples", rows_per_learner=True,
)  # fmt: skip
RESULTS = "results.json"


def fingerprint_config(run: MathRunConfig) -> dict:
    """The run's fields as its fingerprint (`<workdir>/config.json`) holds them (`rl` and
    `sweep` only when set: the runs from before them keep their fingerprints)."""
    return {k: v for k, v in dataclasses.asdict(run).items() if v or k not in ("rl", "sweep")}


def _results_config(run: MathRunConfig) -> dict:
    """What results.json records of the config: every field but how this process was started
    (`resume`, `progress`), so a resumed run writes the file an uninterrupted one writes."""
    return {k: v for k, v in dataclasses.asdict(run).items() if k not in ("resume", "progress")}


def learner_names(run: MathRunConfig) -> list[str]:
    """`<preset>[,<field>=<value>...]/seed<s>` of every learner (the swept fields of its grid
    point), grid-major as the pipeline orders them."""
    names = []
    for point in grid(run):
        label = ",".join(
            [point["preset"], *(f"{k}={v}" for k, v in point.items() if k != "preset")]
        )
        names += [f"{label}/seed{s}" for s in range(run.num_seeds)]
    return names


def run(run: MathRunConfig) -> dict:
    """Trains and evaluates; returns the results written to `<workdir>/results.json` (on
    process 0; the other processes return the same dict without learners' pass@k).

    A finished run (results.json written, its fingerprint equal) returns its results having
    done nothing; one stopped after a checkpoint resumes with `resume=True` to the same numbers.
    """
    validate(run)
    config = fingerprint_config(run)
    start = fingerprint.resume_point(
        run.workdir, config, mutable=RESUMABLE_FIELDS, num_updates=run.steps, resume=run.resume
    )
    done = os.path.join(run.workdir, RESULTS)
    if start == run.steps and os.path.isfile(done):  # finished already: nothing to build
        return files.read_json(done)
    with workdir_lock.holding(run.workdir, primary=jax.process_index() == 0):
        return _train_and_evaluate(run, config)


def _table(path: str, problems, tok, prompts: dict):
    """The problem table of a data file's problems; a prompt too long names the file."""
    try:
        return device_reward.make_table(None, problems, tok, **prompts)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _train_and_evaluate(run: MathRunConfig, config: dict) -> dict:
    values = learner_values(run)
    mesh_config = mesh_lib.MeshConfig(tuple(run.mesh_shape), tuple(run.mesh_axes))
    lm_mesh.check_processes(run.distributed)
    mesh = population.make_mesh(mesh_config)
    lm_mesh.check_learners(mesh, len(values))
    fields = math_data.fields_for(run.layout, **dict(run.fields))
    train, test = math_data.load_splits(run.train_path, run.test_path, fields)
    test = test[: run.final_problems] if run.final_problems else test
    quick = test[: run.eval_problems]
    tok, template = math_base.load_tokenizer(run)
    model = math_base.model_config(run, tok)
    prompts = dict(template=template, prompt_length=run.prompt_length)
    train_table = _table(run.train_path, train, tok, prompts)
    test_table = _table(run.test_path, test, tok, prompts)
    # The quick set is the first rows of the held-out table; the scorer's problems are the
    # training ones, then the quick set (its rows offset).
    quick_table = jax.tree.map(lambda x: x[: len(quick)], test_table)
    quick_table = quick_table._replace(index=quick_table.index + len(train))
    shapes = grpo.TaskData(
        jax.eval_shape(lambda k: init_params(model, k), learner.base_key(run.seed)),
        train_table,
        quick_table,
    )
    # Every sharding is checked on shapes here, before the base is loaded or anything compiles.
    try:
        spec = _spec(
            run, mesh, mesh_config, agent_config(run, values, model, _never_called), shapes
        )
        population.state_shardings(spec, mesh, population.init(spec, abstract=True))
        population.env_shardings(spec, mesh)
    except ValueError as e:
        raise ValueError(f"rules={run.rules!r} on mesh {dict(mesh.shape)}: {e}") from None
    base = math_base.base_params(run, model, train, tok, template, learner.base_key(run.seed), mesh)
    main = jax.process_index() == 0
    with Checker(timeout_s=run.checker_timeout_s, num_workers=run.checker_workers) as checker:
        scorer = math_task.math_scorer(
            checker, train + quick, tok, format_weight=run.format_weight, modes=run.answer_modes
        )
        agent_cfg = agent_config(run, values, model, scorer)
        grpo.validate(agent_cfg)
        data = grpo.TaskData(base, train_table, quick_table)
        result = population.run(
            _spec(run, mesh, mesh_config, agent_cfg, data),
            workdir=run.workdir, title=f"math {run.layout}", checkpoint_every=run.checkpoint_every,
            resume=run.resume, progress=run.progress, fingerprint=config, **LOOP_OPTIONS,
        )  # fmt: skip
        if result.summary.interrupted:
            return {"config": _results_config(run), "interrupted": True, "learners": {}}
        states = result.states
        checker.forget()  # the final evaluation's own counts, the same after a resume
        sampler = lm_sharding.jit_learner_sample(
            mesh, jax.tree.map(lambda x: x.sharding, states.params), model_cfg=agent_cfg.model,
            max_new_tokens=run.completion_length, num_rows=len(test) * run.final_samples,
            temperature=run.temperature,
        )  # fmt: skip
        results = {"config": _results_config(run), "mesh": dict(mesh.shape), "learners": {}}
        # every learner's resolved fields: what its Hparams held (rules and overrides applied)
        results["hparams"] = dict(zip(learner_names(run), learner_values(run), strict=True))
        key = jax.random.fold_in(learner.eval_key(run.seed), 0)  # quick evaluations: steps >= 1
        verify = math_task.verifier(checker, run.answer_modes)
        for i, name in enumerate(learner_names(run)):
            summary = rollout.evaluate_policy(
                learner_sampler(sampler, states.params, i, key), verify, tok, test,
                test_table.prompt_tokens, test_table.prompt_mask, num_samples=run.final_samples,
            )  # fmt: skip
            if main:
                results["learners"][name] = summary
        results["checker"] = dict(checker.stats)
    if main:
        tmp = os.path.join(run.workdir, RESULTS + ".tmp")
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, os.path.join(run.workdir, RESULTS))
    return results


def _spec(run: MathRunConfig, mesh, mesh_config, agent_cfg: grpo.Config, data) -> population.Spec:
    """The run's population: grid points x seeds of the GRPO learner, learners on `seeds`, each
    one's weights (and the shared base) split by `rules`, each step's rows over data / fsdp."""
    agent_cfg = dataclasses.replace(
        agent_cfg,
        row_sharding=lm_sharding.row_sharding(mesh, agent_cfg),
        eval_seed=run.seed,
    )
    rules = lm_mesh.RULES[run.rules]
    return population.Spec(
        learner=grpo,
        config=agent_cfg,
        env=data,
        hparams=hparams(run),
        num_updates=run.steps,
        chunk_updates=loop.chunk_size(run.steps, run.chunk_steps),
        num_seeds=run.num_seeds,
        seed=run.seed,
        grid=tuple(grid(run)),
        env_as_argument=True,
        mesh=mesh_config,
        member_rules=rules,
        env_rules=rules,
        # A learner alone rounds as each of a population (members equal their solo runs).
        unbatch_one=False,
    )


def _never_called(tokens, problem):
    """Stands in for the checker while the shardings are checked on shapes (nothing runs)."""
    raise AssertionError("the shardings are checked on shapes; the step never runs")
