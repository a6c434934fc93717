"""Results of an LM RL run: the final held-out evaluation of the base and every learner, pass@k
plots (base vs RL), markdown + JSON tables (mean and 95% intervals over seeds per grid point)."""

from __future__ import annotations

import json
import os

import jax
import matplotlib
import numpy as np

from rljax import stats
from rljax.lm.model import lora, tokenizer
from rljax.lm.tasks import TASKS, rollout
from rljax.lm.tasks.batches import spread

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_pass_at_k(results: dict[str, dict], path: str, title: str) -> None:
    """pass@k vs k with 95% bands, one line per model (e.g. {"base": ..., "RL": ...})."""
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, summary in results.items():
        curve = summary["pass_at_k"]
        ax.plot(curve["k"], curve["pass"], marker="o", ms=3, label=name)
        ax.fill_between(curve["k"], curve["low"], curve["high"], alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k (held-out)")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_training(rows: list[dict], path: str) -> None:
    """Reward, quick held-out pass@1 and entropy over RL updates."""
    fig, axes = plt.subplots(1, 3, figsize=(11, 3))
    updates = [r["update"] for r in rows]
    axes[0].plot(updates, [r["reward/mean"] for r in rows])
    axes[0].set_title("train reward")
    evals = [(r["update"], r["eval/pass@1"]) for r in rows if "eval/pass@1" in r]
    if evals:
        axes[1].plot(*zip(*evals, strict=True), marker="o")
    axes[1].set_title("held-out pass@1 (quick)")
    axes[2].plot(updates, [r["entropy"] for r in rows])
    axes[2].set_title("policy entropy")
    for ax in axes:
        ax.set_xlabel("RL update")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_tables(results: dict[str, dict], extra: dict, workdir: str) -> str:
    """Writes results.json and results.md; returns the markdown."""
    n = min(s["num_samples"] for s in results.values())
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= n]
    header = ["model", *(f"pass@{k}" for k in ks), "distinct correct", "pass@1 by level"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in results.items():
        passes = [f"{s['pass_at_k']['pass'][k - 1]:.3f}" for k in ks]
        levels = ", ".join(f"L{lv}: {v:.2f}" for lv, v in s["pass@1_by_level"].items())
        lines.append(
            f"| {name} | "
            + " | ".join(passes)
            + f" | {s['distinct_correct_per_problem']:.2f} | {levels} |"
        )
    lines += ["", *(f"- {k}: {v}" for k, v in extra.items())]
    markdown = "\n".join(lines) + "\n"
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(markdown)
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump({"results": results, **extra}, f, indent=1)
    return markdown


def _label(point: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items()) or "default"


def evaluate_learners(run, agent_cfg, states, base_params, test, points, key, tok=tokenizer.CHAR):
    """Final held-out evaluation of the base and every learner with the host verifiers.

    `run`: the `rljax.train.lm_experiment.LMRunConfig`; `key`: the evaluation key (shared by all);
    `tok`: the run's tokenizer (`rljax.lm.model.pretrained.tokenizer`).
    """
    task = TASKS[run.task]
    problems = spread(test, run.final_problems)

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
            tok=tok,
            env=agent_cfg.env,
        )

    base = evaluate(base_params)
    params = jax.device_get(states.params)
    learners = []
    for a in range(len(points) * run.num_seeds):
        own = jax.tree.map(lambda x, a=a: x[a], params)
        if agent_cfg.lora is not None:  # LoRA: sampled merged, as exported
            own = lora.merge(base_params, own, agent_cfg.lora)
        learners.append(evaluate(own))
    return base, learners


def timings(summary, base_s: float, eval_s: float, num_learners: int) -> dict:
    """A run's times and size, as results.md lists them (`summary`: a `loop.Summary`)."""
    return {
        "base_seconds": round(base_s, 1),
        "rl_compile_seconds": round(summary.compile_s, 1),
        "rl_seconds": round(summary.run_s, 1),
        "eval_seconds": round(eval_s, 1),
        "num_learners": num_learners,
        "rl_steps": summary.updates_done,
        "interrupted": summary.interrupted,
    }


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
        f"({base['num_problems']} held-out problems, n = {n}). Intervals: 95% t intervals over "
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
    plot_pass_at_k(
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
