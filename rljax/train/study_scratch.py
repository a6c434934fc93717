"""The from-scratch LM studies' pieces (experiments/compose_fg.py, experiments/backtracking.py).

Unlike the testbed studies (`rljax.train.study_lm`), these train one SFT base per learner (the
seed changes the initialization and the batch order, so an interval over seeds covers the base
too) on data the study builds itself, then run RL from each learner's own base. Learners of one
program are vmapped: `sft` trains N bases at once, `grpo_train` N GRPO learners
(`rljax.agents.grpo`), and `sample` draws completions from N models; the verdicts come from the
host verifiers.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rljax import machine, stats
from rljax.agents import grpo, learner, sft
from rljax.agents.grpo import presets
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.sampling import sample as sample_one
from rljax.lm.tasks import Problem, Task, device_reward, safe_verify
from rljax.lm.tasks.batches import SeqBatch
from rljax.lm.tasks.evaluation import pass_at_k

# The shared flags of the two studies: Study(seeds=3, steps=..., quick=QUICK, low=LOW).
QUICK = {"steps": 2}  # with the study's tiny budget: 2 updates per learner
LOW = {"seeds": 3, "steps": 1}


def distinct(count: int, exclude: set, generate: Callable[..., Problem], *args, **kwargs) -> list:
    """``count`` problems ``generate(*args, **kwargs)`` with distinct prompts, none in ``exclude``
    (drawn until there are enough; a repeat costs one more draw of the generator's RNG)."""
    out, seen = [], set(exclude)
    while len(out) < count:
        p = generate(*args, **kwargs)
        if p.prompt not in seen:
            seen.add(p.prompt)
            out.append(p)
    return out


def encode(problems: list[Problem], answers: list[str], prompt_len: int, completion_len: int):
    """The SFT batch of `problems` with `answers` as completions (NumPy `SeqBatch`)."""
    pt, pm = tokenizer.encode_prompts([p.prompt for p in problems], prompt_len)
    ct, cm = tokenizer.encode_completions(answers, completion_len)
    return SeqBatch(pt, pm, ct, cm)


def table(problems: list[Problem], prompt_len: int) -> device_reward.ProblemTable:
    """A host-scored problem table: prompts, levels and each row's index in `problems`."""
    pt, pm = tokenizer.encode_prompts([p.prompt for p in problems], prompt_len)
    n = len(problems)
    return device_reward.ProblemTable(
        prompt_tokens=jnp.asarray(pt),
        prompt_mask=jnp.asarray(pm),
        target_int=jnp.zeros(n, jnp.int32),
        target_tokens=jnp.zeros((n, 1), jnp.int32),
        target_len=jnp.zeros(n, jnp.int32),
        level=jnp.asarray([p.level for p in problems], jnp.int32),
        index=jnp.arange(n, dtype=jnp.int32),
    )


def keys(seed: int, n: int, branch: int) -> jax.Array:
    """`[n]` learner keys of one purpose (`branch`): fold_in(learner_key(seed, i), branch)."""
    return jnp.stack([jax.random.fold_in(learner.learner_key(seed, i), branch) for i in range(n)])


def train_bases(cfg: sft.SFTConfig, model_cfg: TransformerConfig, data: list[SeqBatch], seed: int):
    """Trains one base per dataset in `data` (learner i on data[i], init key i), vmapped.

    Batches are drawn with replacement by `np.random.default_rng(seed)`. Returns (params with a
    leading learner axis, final NLL per learner `[N]`).
    """
    n = len(data)
    state = jax.vmap(lambda k: _sft_init(cfg, model_cfg, k))(keys(seed, n, 1))
    chunk = min(50, cfg.steps)
    step = functools.partial(_sft_update, cfg=cfg, model_cfg=model_cfg)
    run = jax.jit(lambda s, b: jax.lax.scan(jax.vmap(step), s, b), donate_argnums=0)
    rng = np.random.default_rng(seed)
    nll = None
    for start in range(0, cfg.steps, chunk):
        size = min(chunk, cfg.steps - start)
        rows = [rng.integers(0, len(d.prompt_tokens), (size, cfg.batch_size)) for d in data]
        fields = zip(*(d[:4] for d in data), strict=True)  # per field: the N learners' arrays
        batches = SeqBatch(
            *(np.stack([f[r] for f, r in zip(fs, rows, strict=True)], 1) for fs in fields)
        )
        state, metrics = run(state, batches)
        nll = np.asarray(metrics["loss/nll"][-1])
    return state.params, nll


def _sft_init(cfg, model_cfg, key):
    return sft.init(cfg, model_cfg, key)


def _sft_update(state, batch, *, cfg, model_cfg):
    return sft.update(state, batch, cfg=cfg, model_cfg=model_cfg)


def grpo_config(model_cfg, completion_len, scorer, *, prompts: int, group: int) -> grpo.Config:
    """The static GRPO config of a host-verified task (lite_ppo's epochs and minibatches)."""
    config = grpo.Config(
        model=model_cfg,
        reward_kind="host",
        completion_length=completion_len,
        prompts_per_step=prompts,
        group_size=group,
        host_scorer=scorer,
    )
    grpo.validate(config)
    return config


def lite_ppo(**overrides) -> grpo.Hparams:
    """`lite_ppo`'s hyperparameters (the testbed's preset) with `overrides`."""
    return grpo.make_hparams(presets.hparam_values(presets.resolve("lite_ppo", **overrides)))


def grpo_train(config: grpo.Config, bases, train: device_reward.ProblemTable, hp, steps: int,
               seed: int, chunk: int = 10):  # fmt: skip
    """GRPO from each learner's own base (leading axis N of `bases`) for `steps` updates.

    Returns (params `[N, ...]`, metrics {key: `[N, steps]`}).
    """
    chunk = max(c for c in range(1, chunk + 1) if steps % c == 0)  # one compiled size
    n = jax.tree.leaves(bases)[0].shape[0]
    data_axes = grpo.TaskData(0, None, None)
    data = grpo.TaskData(bases, train, train)
    init = jax.vmap(grpo.init, in_axes=(None, data_axes, 0, None))
    state = init(config, data, keys(seed, n, 2), hp)
    history = []
    for start in range(0, steps, chunk):
        size = min(chunk, steps - start)
        state, metrics = _grpo_chunk(config, size)(data, state)
        history.append(jax.tree.map(np.asarray, metrics))
    metrics = {k: np.concatenate([h[k] for h in history], 1) for k in history[0]}
    return state.params, metrics


@functools.lru_cache(maxsize=8)
def _grpo_chunk(config, size):
    body = functools.partial(learner.train_chunk, grpo.update, config, num_updates=size)
    mapped = jax.vmap(lambda d, s: body(d, s), in_axes=(grpo.TaskData(0, None, None), 0))
    return jax.jit(mapped, donate_argnums=1)


def nll_optimizer(learning_rate: float, weight_decay: float) -> optax.GradientTransformation:
    """Constant-step AdamW with GRPO's clipping and b2 (the RL arms' optimizer)."""
    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.adamw(learning_rate, b2=0.99, weight_decay=weight_decay),
    )


@functools.partial(jax.jit, static_argnames=("model_cfg", "max_new_tokens", "temperature"))
def _sample(params, prompt_tokens, prompt_mask, key, *, model_cfg, max_new_tokens, temperature):
    fn = functools.partial(
        sample_one, cfg=model_cfg, max_new_tokens=max_new_tokens, temperature=temperature
    )
    return jax.vmap(lambda p: fn(p, prompt_tokens=prompt_tokens, prompt_mask=prompt_mask,
                                 key=key))(params)  # fmt: skip


def sample(params, model_cfg, task: Task, problems, key, *, num_samples: int, max_new_tokens: int,
           prompt_len: int, temperature: float = 1.0, batch: int = 64):  # fmt: skip
    """`num_samples` completions per problem from each of N models, verified on the host.

    Returns (correct `[N, M, n]` bool, tokens `[N, M, n]` generated up to and with EOS (the whole
    budget when unfinished), texts: N lists of M lists of n strings).
    """
    correct, lengths, texts = [], [], []
    for start in range(0, len(problems), batch):
        chunk = problems[start : start + batch]
        pt, pm = tokenizer.encode_prompts([p.prompt for p in chunk], prompt_len)
        pt, pm = np.repeat(pt, num_samples, 0), np.repeat(pm, num_samples, 0)
        out = _sample(
            params, pt, pm, jax.random.fold_in(key, start), model_cfg=model_cfg,
            max_new_tokens=max_new_tokens, temperature=temperature,
        )  # fmt: skip
        tokens, mask = np.asarray(out.tokens), np.asarray(out.mask)
        c, t = [], []
        for row_tokens in tokens:
            decoded = [tokenizer.decode(r) for r in row_tokens]
            ok = [
                done and safe_verify(task, chunk[i // num_samples], text).correct
                for i, (text, done) in enumerate(decoded)
            ]
            c.append(np.asarray(ok).reshape(len(chunk), num_samples))
            t.append([d[0] for d in decoded])
        correct.append(np.stack(c))
        lengths.append(mask.sum(-1).reshape(len(tokens), len(chunk), num_samples))
        texts.append(t)
    n = len(correct[0])
    flat = [[s for part in texts for s in part[i]] for i in range(n)]
    per_problem = [
        [row[j : j + num_samples] for j in range(0, len(row), num_samples)] for row in flat
    ]
    return np.concatenate(correct, 1), np.concatenate(lengths, 1), per_problem


def pass_curve(correct: np.ndarray, ks) -> np.ndarray:
    """Mean unbiased pass@k over problems for each learner: `[N, len(ks)]` from `[N, M, n]`."""
    n = correct.shape[-1]
    counts = correct.sum(-1)
    return np.asarray([[pass_at_k(n, c, k).mean() for k in ks] for c in counts])


def run_extra(args, budget, seconds: float, phase_seconds: dict) -> dict:
    """results.json's record of a from-scratch run: times, seeds, budget (a dataclass), machine."""
    return {
        "seconds": seconds, "phase_seconds": phase_seconds, "seeds": args.seeds, "seed": args.seed,
        "steps": args.steps, "budget": dataclasses.asdict(budget), "machine": machine.describe(),
    }  # fmt: skip


def paired(a, b) -> dict:
    """Summary (mean and 95% t interval over seeds) of the per-seed differences a - b."""
    return stats.summarize(np.asarray(a, np.float64) - np.asarray(b, np.float64))
