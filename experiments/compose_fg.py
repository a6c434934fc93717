"""From f(x) and g(x) to f(g(x)) (#81 in PAPERS.md): does RL on two-function compositions teach
a model from scratch to compose, beyond what rejection-sampling fine-tuning (RFT) and next-token
training on the same data teach?

Task (`rljax.lm.tasks.compose`): eight length-preserving functions on 4-letter words with
meaningless names A-H; "BD:abcd=" asks for B(D(abcd)), answered by a trace that applies one
function per step ("B:bcde=cdeb"). The atoms are split: A-E (source) are composed in training,
F-H (target) are learned only alone, and their compositions are the held-out target task.

Stage 1, SFT from scratch (2 layers, d 64): every atom alone (level 1, all eight) and a smaller
share of level-2 compositions of the source atoms, a share of the traces with one corrupted
character (a sloppy base, as the testbed's). One base per seed set (its seed is --seed), which
the learners of every arm start from, as the testbed's learners share one base: the intervals
cover the stage-2 seeds, and a second seed set (--seed=1000) redraws the data and the base.
Stage 2, from the base, three arms on the same level-2 source-atom problems, with the same
prompts per update and the same optimizer steps per update (2 epochs x 2 minibatches, AdamW
lr 3e-4):

  RL    GRPO (`lite_ppo`), G samples per prompt, reward = the verifier;
  RFT   the same G samples, next-token loss on the correct ones only;
  NTP   next-token loss on the reference traces of the same prompts.

Held-out evaluation (prompts never in any training data, checked): pass@1 (n samples, T=1) on
source compositions of levels 1-5 and on target compositions of levels 2-3. Claims (paired per
seed, each arm against its own base; 95% bootstrap interval over seeds):

  1. RL on level 2 raises pass@1 on the unseen levels 3-5 (mean over the three);
  2. RL raises pass@1 on the held-out target compositions (level 2);
  3. RL beats RFT on levels 3-5;   4. RL beats next-token training on levels 3-5.

Rule: a claim holds when the interval of its difference is above 0, fails when below, and is "not at
this scale" otherwise (`verdicts.vs_zero`). Plots: levels.png (pass@1 by level per arm) and
rl_curve.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import machine, stats  # noqa: E402
from rljax.agents import sft  # noqa: E402
from rljax.agents.grpo import groups  # noqa: E402
from rljax.lm.model.decoder import TransformerConfig  # noqa: E402
from rljax.lm.tasks import compose, device_reward  # noqa: E402
from rljax.lm.tasks.base import Problem  # noqa: E402
from rljax.lm.tasks.batches import SeqBatch  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_scratch as _scratch  # noqa: E402

TASK = compose.TASK
PROMPT_LEN = TASK.max_prompt_chars + 1
EVAL_LEN = TASK.max_answer_chars + 3  # the longest trace (level 5) + EOS + slack
RL_LEN = 2 + compose.WORD_LEN * 2 + 2 + 3  # a level-2 trace "B:bcde=cdeb" + EOS + slack
ARMS = ("RL", "RFT", "NTP")
HIGH = ("source L3", "source L4", "source L5")


@dataclasses.dataclass(frozen=True)
class Budget:
    """Sizes of one run (the default and --quick)."""

    d_model: int
    n_layers: int
    d_ff: int
    sft_steps: int
    sft_level1: int  # level-1 SFT problems (all atoms)
    sft_level2: int  # level-2 SFT problems (source atoms)
    noise: float  # share of SFT traces with one corrupted character
    rl_problems: int  # level-2 source problems of stage 2
    prompts: int  # B per update
    group: int  # G samples per prompt (RL, RFT)
    eval_problems: int  # per evaluation set
    eval_samples: int  # n per problem


DEFAULT = Budget(64, 2, 128, 1200, 2000, 700, 0.2, 1000, 16, 8, 48, 4)
QUICK = Budget(32, 1, 64, 40, 300, 100, 0.3, 100, 4, 4, 8, 2)


def datasets(seed: int, budget: Budget) -> dict:
    """The study's problems: held-out sets first, training sets drawn without their prompts."""
    rng = np.random.default_rng(seed)
    draw = compose.generate_from  # (rng, level, atoms)
    test = {}
    for name, level, atoms in (
        *((f"source L{k}", k, compose.SOURCE) for k in range(1, 6)),
        *((f"target L{k}", k, compose.TARGET) for k in range(1, 4)),
    ):
        test[name] = _scratch.distinct(budget.eval_problems, set(), draw, rng, level, atoms)
    held = {p.prompt for ps in test.values() for p in ps}
    atoms = compose.SOURCE + compose.TARGET
    level1 = _scratch.distinct(budget.sft_level1, held, draw, rng, 1, atoms)
    level2 = _scratch.distinct(budget.sft_level2, held, draw, rng, 2, compose.SOURCE)
    rl = _scratch.distinct(budget.rl_problems, held, draw, rng, 2, compose.SOURCE)
    return {"test": test, "sft": level1 + level2, "rl": rl}


def sft_traces(problems: list[Problem], noise: float, rng) -> list[str]:
    """Reference traces, a `noise` share with one corrupted character."""
    return [sft.corrupt(p.answer, rng) if rng.uniform() < noise else p.answer for p in problems]


def _nll_epochs(params, opt_state, batch: SeqBatch, key, *, model_cfg, optimizer):
    """2 epochs x 2 minibatches of next-token loss on `batch` (the RL arm's step schedule)."""
    rows = batch.prompt_tokens.shape[0]
    for epoch in range(2):
        order = jax.random.permutation(jax.random.fold_in(key, epoch), rows)
        for half in jnp.split(order, 2):
            mb = jax.tree.map(lambda x, h=half: x[h], batch)
            grads = jax.grad(lambda p, b=mb: sft.loss_fn(p, model_cfg, b)[0])(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            params = jax.tree.map(lambda p, u: p + u, params, updates)
    return params, opt_state


def supervised_arm(kind: str, config, bases, rl_table, references: SeqBatch, steps: int,
                   seed: int):  # fmt: skip
    """RFT (`kind="rft"`) or next-token training (`"ntp"`) from each base for `steps` updates.

    Returns (params `[N, ...]`, training accuracy of the samples per update `[N, steps]`; NaN
    for next-token training, which samples nothing).
    """
    optimizer = _scratch.nll_optimizer(3e-4, 1e-4)
    B, G = config.prompts_per_step, config.group_size
    num = rl_table.level.shape[0]

    def update(carry, step_key):
        params, opt_state = carry
        k_rows, k_sample, k_order = jax.random.split(step_key, 3)
        rows = jax.random.randint(k_rows, (B,), 0, num)
        if kind == "rft":
            rows = jnp.repeat(rows, G)
            out, _, correct = groups.sample_and_score(config, params, rl_table, rows, k_sample)
            mask = out.mask * correct[:, None].astype(out.mask.dtype)
            batch = SeqBatch(rl_table.prompt_tokens[rows], rl_table.prompt_mask[rows], out.tokens,
                             mask)  # fmt: skip
            accuracy = jnp.mean(correct.astype(jnp.float32))
        else:
            batch = jax.tree.map(lambda x: jnp.asarray(x)[rows], references)
            accuracy = jnp.float32(jnp.nan)
        params, opt_state = _nll_epochs(params, opt_state, batch, k_order, model_cfg=config.model,
                                        optimizer=optimizer)  # fmt: skip
        return (params, opt_state), accuracy

    def train(params, key):
        step_keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(jnp.arange(steps))
        (params, _), accuracy = jax.lax.scan(update, (params, optimizer.init(params)), step_keys)
        return params, accuracy

    n = jax.tree.leaves(bases)[0].shape[0]
    params, accuracy = jax.jit(jax.vmap(train))(bases, _scratch.keys(seed, n, 3))
    return params, np.asarray(accuracy)


def run(args) -> dict:
    budget = QUICK if args.quick else DEFAULT
    data = datasets(args.seed, budget)
    rng = np.random.default_rng(args.seed + 1)
    model_cfg = TransformerConfig(d_model=budget.d_model, n_layers=budget.n_layers, n_heads=4,
                                  d_ff=budget.d_ff, max_len=PROMPT_LEN + EVAL_LEN)  # fmt: skip
    sft_set = _scratch.encode(data["sft"], sft_traces(data["sft"], budget.noise, rng), PROMPT_LEN,
                              EVAL_LEN)  # fmt: skip
    sft_cfg = sft.SFTConfig(steps=budget.sft_steps, batch_size=32, learning_rate=3e-3,
                            warmup_steps=min(20, budget.sft_steps // 4), weight_decay=0.01,
                            seed=args.seed)  # fmt: skip
    t0 = time.perf_counter()
    base, nll = _scratch.train_bases(sft_cfg, model_cfg, [sft_set], args.seed)
    bases = jax.tree.map(lambda x: jnp.repeat(x, args.seeds, 0), base)  # every learner's start
    t_sft = time.perf_counter() - t0
    print(f"[compose_fg] SFT base in {t_sft:.0f} s, final NLL {nll}", flush=True)
    rl_problems = data["rl"]
    scorer = device_reward.host_scorer(TASK, rl_problems, 0.0)
    config = _scratch.grpo_config(model_cfg, RL_LEN, scorer, prompts=budget.prompts,
                                  group=budget.group)  # fmt: skip
    rl_table = _scratch.table(rl_problems, PROMPT_LEN)
    refs = _scratch.encode(rl_problems, [p.answer for p in rl_problems], PROMPT_LEN, RL_LEN)
    refs = SeqBatch(*(np.asarray(x) for x in refs[:4]))
    arms, curves = {}, {}
    t1 = time.perf_counter()
    arms["RL"], metrics = _scratch.grpo_train(config, bases, rl_table, _scratch.lite_ppo(),
                                              args.steps, args.seed)  # fmt: skip
    curves["RL"] = metrics["correct/mean"]
    for arm, kind in (("RFT", "rft"), ("NTP", "ntp")):
        arms[arm], curves[arm] = supervised_arm(kind, config, bases, rl_table, refs, args.steps,
                                                args.seed)  # fmt: skip
    t_train = time.perf_counter() - t1
    print(f"[compose_fg] stage 2 (RL, RFT, NTP) in {t_train:.0f} s", flush=True)
    t2 = time.perf_counter()
    stacked = jax.tree.map(lambda *x: jnp.concatenate(x), base, *(arms[a] for a in ARMS))
    key = jax.random.fold_in(jax.random.PRNGKey(args.seed), 7)
    passes = {}
    for name, problems in data["test"].items():
        correct, _, _ = _scratch.sample(stacked, model_cfg, TASK, problems, key,
                                        num_samples=budget.eval_samples, max_new_tokens=EVAL_LEN,
                                        prompt_len=PROMPT_LEN)  # fmt: skip
        value = correct.mean((1, 2))  # [1 + arms x seeds]: the base, then every learner
        passes[name] = np.concatenate(
            [np.full((1, args.seeds), value[0]), value[1:].reshape(len(ARMS), args.seeds)]
        )
    t_eval = time.perf_counter() - t2
    return {
        "data": data, "passes": passes, "curves": curves, "sft_nll": nll.tolist(),
        "seconds": {"sft": round(t_sft, 1), "train": round(t_train, 1), "eval": round(t_eval, 1)},
    }  # fmt: skip


def decide(passes: dict) -> tuple[dict, dict, dict]:
    """Per-seed numbers, comparisons and claims from pass@1 `[base + arms, seeds]` per set."""
    rows = ("base", *ARMS)
    high = {r: np.mean([passes[s][i] for s in HIGH], 0) for i, r in enumerate(rows)}
    target = {r: passes["target L2"][i] for i, r in enumerate(rows)}
    comparisons = {
        "RL - base, levels 3-5": _scratch.paired(high["RL"], high["base"]),
        "RL - base, target L2": _scratch.paired(target["RL"], target["base"]),
        "RL - RFT, levels 3-5": _scratch.paired(high["RL"], high["RFT"]),
        "RL - NTP, levels 3-5": _scratch.paired(high["RL"], high["NTP"]),
        "RFT - base, levels 3-5": _scratch.paired(high["RFT"], high["base"]),
        "NTP - base, levels 3-5": _scratch.paired(high["NTP"], high["base"]),
        "RL - base, source L2 (trained)": _scratch.paired(passes["source L2"][1],
                                                          passes["source L2"][0]),
    }  # fmt: skip
    claims = {}
    for claim, key in (
        ("RL on level 2 raises pass@1 on unseen levels 3-5", "RL - base, levels 3-5"),
        ("RL transfers to the held-out target compositions", "RL - base, target L2"),
        ("RL beats RFT on levels 3-5", "RL - RFT, levels 3-5"),
        ("RL beats next-token training on levels 3-5", "RL - NTP, levels 3-5"),
    ):
        c = comparisons[key]
        status = verdicts.vs_zero(c["mean_ci"])
        claims[claim] = (status, f"{key} = {stats.format_interval(c)}")
    return {"levels 3-5": high, "target L2": target}, comparisons, claims


def plot(args, out: dict, _) -> None:
    passes, curves, workdir = out["passes"], out["curves"], args.workdir
    with open(os.path.join(workdir, "splits.json"), "w") as f:
        json.dump({k: len(v) for k, v in out["data"]["test"].items()}, f)
    names = list(passes)
    rows = ("base", *ARMS)
    x = np.arange(len(names))
    stats.plot_bands(
        x, {r: np.stack([passes[n][i] for n in names], 1) for i, r in enumerate(rows)},
        os.path.join(workdir, "levels.png"),
        title="f(g(x)): held-out pass@1 by set (" + ", ".join(f"{i}={n}" for i, n in
                                                             enumerate(names)) + ")",
        xlabel="evaluation set (index)", ylabel="pass@1",
    )  # fmt: skip
    steps = next(iter(curves.values())).shape[1]
    stats.plot_bands(np.arange(1, steps + 1), {a: curves[a] for a in ("RL", "RFT")},
                     os.path.join(workdir, "rl_curve.png"),
                     title="f(g(x)): training accuracy of the sampled level-2 answers",
                     xlabel="update", ylabel="accuracy (samples)")  # fmt: skip


def report(args, out: dict, record: dict) -> study.Report:
    passes, budget = out["passes"], QUICK if args.quick else DEFAULT
    per_seed, comparisons, claims = decide(passes)
    rows = ("base", *ARMS)
    table = {r: {name: stats.summarize(passes[name][i]) for name in passes}
             for i, r in enumerate(rows)}  # fmt: skip
    seconds = round(record["seconds"], 1)
    comp_lines = study.md_table(
        ("comparison (paired per seed)", "mean [95% CI]"),
        ((k, stats.format_interval(c)) for k, c in comparisons.items()),
    )
    notes = [
        "Per-claim verdicts (95% bootstrap intervals over seeds of the paired differences):",
        "",
        *study.claim_lines(claims),
        "",
        f"Held-out pass@1 ({budget.eval_problems} problems per set x {budget.eval_samples} "
        "samples, T=1), mean [95% CI] over seeds; L = number of composed functions:",
        "",
        *study.table(table, list(passes)),
        "",
        *comp_lines,
        "",
        f"Setup: {args.seeds} seeds from --seed={args.seed}; model {budget.n_layers} layers, d "
        f"{budget.d_model}; SFT {budget.sft_steps} steps on {budget.sft_level1} level-1 (all "
        f"atoms) + {budget.sft_level2} level-2 (source atoms) traces, {budget.noise:.0%} with one "
        f"corrupted character (final NLL {[round(v, 3) for v in out['sft_nll']]}); "
        f"stage 2 {args.steps} updates x {budget.prompts} prompts (G={budget.group}) on "
        f"{budget.rl_problems} level-2 source problems.",
        f"Machine: {machine.describe()}. Wall clock {seconds:.0f} s (under load; SFT "
        f"{out['seconds']['sft']} s, stage 2 {out['seconds']['train']} s, evaluation "
        f"{out['seconds']['eval']} s).",
    ]
    return study.Report(
        title="From f(x) and g(x) to f(g(x)): RL vs RFT vs next-token training (#81)",
        claim="RL on level-2 compositions teaches composition: it generalizes to deeper "
        "compositions and to a held-out target task, where RFT and next-token training on the "
        "same data do not.",
        claims=claims, reason="; ".join(f"{v}: {why}" for v, why in claims.values()),
        arms={r: stats.summarize(per_seed["levels 3-5"][r]) for r in rows},
        metric="held-out pass@1, levels 3-5", notes=notes,
        extra={"table": table, "claims": claims, "comparisons": comparisons,
               **_scratch.run_extra(args, budget, seconds, out["seconds"])},
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/compose_fg", run=run, report=report, plot=plot,
    seeds=3, steps=30, quick=_scratch.QUICK, low=_scratch.LOW,
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
