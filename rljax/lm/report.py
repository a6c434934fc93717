"""Results of an LM RL run: pass@k plots (base vs RL), training curves, markdown + JSON tables."""

from __future__ import annotations

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_pass_at_k(results: dict[str, dict], path: str, title: str) -> None:
    """pass@k vs k with 95% bootstrap bands, one line per model (e.g. {"base": ..., "RL": ...})."""
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
