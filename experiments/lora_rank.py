"""LoRA rank study on the RLVR testbed: ranks 1, 2, 4, 8 and full parameters, one population each.

Claim ("LoRA without regret", Schulman & Thinking Machines 2025): policy-gradient RL learns
so few bits per episode that very low-rank adapters match full-parameter training. Checked here
as: the held-out pass@1 gain over the SFT base at the best LoRA rank is at least 80% of the
full-parameter gain, and likewise at rank 1.

Setup: `configs/grpo.py:arithmetic,fast` (GRPO preset, one SFT base shared by every arm). The
five arms train as five populations of `--seeds` learners over the same base and seeds
(learner s of each arm starts from learner_key(seed, s)). LoRA arms adapt every attention and
MLP projection with alpha = 32 (scale 32 / r) and a step size 10x the full-parameter one (the
ratio the report above finds optimal; no tuning here).

Verdict rule (per claim, rljax/train/verdicts.py): the 95% interval of mean(gain_LoRA) −
0.8 × mean(gain_full) (bootstrap over seeds, `rljax.stats.compare`) above zero: reproduced;
below zero: contradicted; straddling zero: not at this scale. The best rank is the one with the
highest mean gain (a selection over four ranks, so its claim is optimistic).

Plots: rank.png.
"""

from __future__ import annotations

import dataclasses
import os
import time

from rljax import xla_flags

xla_flags.set_flags()

import numpy as np  # noqa: E402

from rljax import machine, stats  # noqa: E402
from rljax.agents.grpo import presets  # noqa: E402
from rljax.train import lm_experiment, study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

RANKS = (1, 2, 4, 8)
ALPHA = 32.0
LORA_LR_FACTOR = 10.0
SHARE = 0.8  # the claimed share of the full-parameter gain


def arm_config(args, rank: int):
    """The run config of one arm (rank 0: full parameters)."""
    c = repro.testbed_config(__file__, args)
    c.num_seeds, c.seed, c.progress = args.seeds, args.seed, not args.no_progress
    c.run.steps = args.steps
    c.run.chunk_steps = min(c.run.chunk_steps, args.steps) if not args.quick else 1
    if args.quick:
        c.base_cache_dir = os.path.join(args.workdir, "lm_base")
        c.eval.num_problems, c.eval.num_samples = 8, 4
    if rank:
        c.lora.rank, c.lora.alpha = rank, ALPHA
        c.rl.learning_rate = LORA_LR_FACTOR * presets.resolve(c.preset)["learning_rate"]
    name = f"rank{rank}" if rank else "full"
    return name, lm_experiment.from_config(c, os.path.join(args.workdir, name))


def train_arm(run) -> dict:
    """One arm's population, trained here; its figures from the outcome in memory."""
    t0 = time.perf_counter()
    outcome = lm_experiment.train(run)
    wall = time.perf_counter() - t0
    summary = outcome.summary
    if summary.interrupted or outcome.learners is None:
        raise SystemExit(f"the {os.path.basename(run.workdir)} arm was stopped; rerun the study")
    tokens = float(np.sum(outcome.metrics["tokens/generated"]))
    base = outcome.base["pass@1"]
    return {
        "gains": [m["pass@1"] - base for m in outcome.learners],
        "pass@1": [m["pass@1"] for m in outcome.learners], "base_pass@1": base,
        "rl_seconds": round(summary.run_s, 1), "compile_seconds": round(summary.compile_s, 1),
        "wall_seconds": round(wall, 1), "generated_tokens_per_s": tokens / max(summary.run_s, 1e-9),
    }  # fmt: skip


def trained_bytes(run) -> int:
    """Bytes one learner trains and carries: its parameters (or adapters) + Adam's 2 moments."""
    import jax

    from rljax.agents import grpo
    from rljax.lm.model import pretrained
    from rljax.lm.model.decoder import init_params

    points = lm_experiment.validate(run)
    values = lm_experiment.resolved_points(run, points)
    cfg = lm_experiment.static_config(run, values, pretrained.model_config(dict(run.model)))
    base = jax.eval_shape(lambda: init_params(cfg.model, jax.random.PRNGKey(0)))
    hp = grpo.make_hparams(presets.hparam_values(values[0]))
    state = jax.eval_shape(
        lambda b: grpo.init(cfg, grpo.TaskData(b, None, None), jax.random.PRNGKey(0), hp), base
    )
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state.params))) * 3


def claim(lora_gains, full_gains) -> dict:
    c = stats.compare(list(lora_gains), [SHARE * g for g in full_gains])
    status = verdicts.vs_zero(c["diff_ci"])
    return {"diff": c["diff"], "diff_ci": c["diff_ci"], "status": status}


def plot(args, out: dict, _) -> None:
    arms, path = out["arms"], os.path.join(args.workdir, "rank.png")
    names = list(arms)
    with study.figure(path, figsize=(5, 3.5)) as (_, ax):
        for i, name in enumerate(names):
            s = arms[name]["gain"]
            lo, hi = s["mean_ci"]
            ax.errorbar(i, s["mean"], yerr=[[s["mean"] - lo], [hi - s["mean"]]], fmt="o", capsize=4)
            ax.scatter([i] * len(s["values"]), s["values"], s=8, alpha=0.4, color="gray")
        full = arms["full"]["gain"]["mean"]
        ax.axhline(SHARE * full, ls="--", color="gray", lw=1, label=f"{SHARE:.0%} of full")
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel("held-out pass@1 gain over base")
        ax.set_title(f"LoRA rank vs full ({args.seeds} seeds)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)


def run(args) -> dict:
    runs = dict(arm_config(args, rank) for rank in (0, *RANKS))
    for run in runs.values():  # every arm checked before anything trains
        lm_experiment.validate(run)
    sizes = {name: trained_bytes(run) for name, run in runs.items()}  # abstract shapes only
    arms = {}
    for name, run in runs.items():
        arms[name] = train_arm(run)
        arms[name]["bytes_per_learner"] = sizes[name]
        arms[name]["gain"] = stats.summarize(arms[name]["gains"])
    return {"arms": arms, "config": dataclasses.asdict(runs["full"])}


def report(args, out: dict, record: dict) -> study.Files:
    arms = out["arms"]
    lora_names = [f"rank{r}" for r in RANKS]
    best = max(lora_names, key=lambda n: arms[n]["gain"]["mean"])
    claims = {
        f"best rank ({best}) >= {SHARE:.0%} of full": claim(
            arms[best]["gains"], arms["full"]["gains"]
        ),
        f"rank 1 >= {SHARE:.0%} of full": claim(arms["rank1"]["gains"], arms["full"]["gains"]),
    }
    verdict = verdicts.overall({k: c["status"] for k, c in claims.items()})
    full_mean = arms["full"]["gain"]["mean"]
    lines = [
        f"# LoRA rank study: {'arithmetic,tiny (quick)' if args.quick else 'arithmetic,fast'}, "
        f"{args.seeds} seeds (from {args.seed}), {args.steps} updates",
        "",
        f"{time.strftime('%Y-%m-%d')} | {machine.describe()}",
        "",
    ]
    share = lambda a: a["gain"]["mean"] / full_mean if full_mean else float("nan")  # noqa: E731
    lines += study.md_table(
        ("arm", "pass@1 gain [95% CI]", "share of full gain", "generated tokens/s",
         "trained bytes per learner", "RL s (compile s)"),
        ((name, stats.format_interval(a["gain"]), f"{share(a):.0%}",
          f"{a['generated_tokens_per_s']:,.0f}", f"{a['bytes_per_learner']:,}",
          f"{a['rl_seconds']:.0f} ({a['compile_seconds']:.0f})")
         for name, a in arms.items()))  # fmt: skip
    lines += ["", *study.md_table(("claim", "LoRA − 0.8 × full [95% CI]", "status"), (
        (name, study.diff_text(c["diff"], c["diff_ci"], 3), c["status"])
        for name, c in claims.items()))]  # fmt: skip
    lines += ["", f"Verdict: **{verdict}** (rule: module docstring of experiments/lora_rank.py)"]
    return study.Files(
        {
            "arms": arms, "claims": claims, "verdict": verdict, "best_rank": best,
            "seeds": args.seeds, "seed": args.seed, "steps": args.steps, "quick": args.quick,
            "machine": record["machine"], "date": record["date"],
            "config": out["config"] | {"lora_alpha": ALPHA, "lora_lr_factor": LORA_LR_FACTOR},
        },
        "\n".join(lines) + "\n",
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir=os.path.join("runs", "lora_rank"), run=run, report=report,
    plot=plot, seeds=5, steps=100, quick=repro.QUICK, low=repro.LOW, flags=repro.flags,
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
