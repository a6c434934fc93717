"""ROVER stage B (#20 in PAPERS.md): ROVER against GRPO on the LM task, as one population.

Stage A (`experiments/rover_trees.py`) is exact on random trees. Here both learners train on the
hard split of `experiments/passk_divergence.py` (level-3 arithmetic for a base SFT-trained
briefly on noisy traces: pass@1 a few percent, most problems solved within 256 samples; the
same cached base), so pass@256 and the number of distinct correct completions have room to move
either way. Arms, one population, the same sampling, budget and optimizer (AdamW 3e-4, 2 epochs
× 2 minibatches, token-mean aggregation):

  GRPO: group mean/std advantages, PPO-clip 0.2, no KL (in the pass@k study GRPO without a
    divergence lost a third of the base's pass@256);
  ROVER ρ = 1 and ρ = 0.25 (the `rover` preset): Q(s_t, a) = ρ log(π_θ/π_old)(a|s_t) is
    regressed onto r̃ + (1/|V|) Σ_a Q(s_{t+1}, a), the uniform random policy's Bellman target,
    with the group-centred reward r̃ = r − mean given to every token (the paper's reward
    broadcast; `rljax.losses.implicit.rover`). ρ is the temperature of softmax(Q/ρ):
    stage A found the spread τ-sensitive, so two values.

Metrics on 64 held-out level-3 problems, n = 256 samples each: unbiased pass@1 and pass@256,
and diversity = distinct correct completions per problem / 256 (the paper's "distinct correct
solutions divided by k"); per seed, 95% bootstrap intervals over seeds. Claim (paper: +8.2
pass@1, +16.8 pass@256, +17.6% diversity on real LLMs): ROVER keeps more distinct correct
solutions than GRPO and beats it at pass@256 (and pass@1).

The default takes about 8.5 min on one core (the SFT base cached by passk_divergence.py). Plots:
pass_at_k.png and entropy.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402

import passk_divergence  # noqa: E402  (the split and its base)

from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

GRPO = "GRPO (no KL)"
# Every arm names the same fields (one population); what they share:
_SHARED = {"divergence": "none", "kl_coef": 0.0, "aggregation": "token_mean"}
_ROVER = {**_SHARED, "preset": "rover", "policy_loss": "rover", "advantage": "dr_grpo"}
ARMS = {
    GRPO: {**_SHARED, "preset": "grpo", "policy_loss": "ppo_clip", "advantage": "grpo",
           "rover_rho": 1.0},
    "ROVER ρ=1": {**_ROVER, "rover_rho": 1.0},
    "ROVER ρ=0.25": {**_ROVER, "rover_rho": 0.25},
}  # fmt: skip


def diversity(arm: dict, n: int) -> list[float]:
    """Distinct correct completions per problem over the n samples, divided by n, per seed."""
    return [v / n for v in repro.final(arm, "distinct_correct_per_problem")]


def decide(arms: dict, n: int) -> dict:
    comparisons, claims = {}, {}
    metrics = {
        "diversity": lambda a: diversity(a, n), f"pass@{n}": repro.at(f"pass@{n}"),
        "pass@1": repro.at("pass@1"),
    }  # fmt: skip
    rovers = [name for name in arms if name != GRPO]
    for metric, fn in metrics.items():
        for name in rovers:
            comparisons[f"{name} − {GRPO} ({metric})"] = repro.effect(fn(arms[name]),
                                                                      fn(arms[GRPO]))  # fmt: skip
    for metric, claim in (
        ("diversity", "ROVER keeps more distinct correct solutions than GRPO"),
        (f"pass@{n}", f"ROVER beats GRPO at pass@{n}"),
        ("pass@1", "ROVER beats GRPO at pass@1"),
    ):
        signs = {name: comparisons[f"{name} − {GRPO} ({metric})"] for name in rovers}
        why = f"{metric} − GRPO: " + "; ".join(
            f"{name} {study.diff_text(c['diff'], c['diff_ci'], 3)}" for name, c in signs.items()
        )
        claims[claim] = (verdicts.from_signs(c["sign"] for c in signs.values()), why)
    return {"claims": claims, "comparisons": comparisons}


def run(args) -> dict:
    pops = [repro.Population("rover", ARMS, sft=passk_divergence.SFT, run=passk_divergence.HARD)]
    return repro.train(args, pops, repro.testbed_config(__file__, args), chunk_steps=20,
                       final_samples=256, final_problems=64)  # fmt: skip


def report(args, result: dict, record: dict) -> study.Report:
    arms = result["arms"]
    n = 4 if args.quick else 256
    columns = repro.pass_columns(n)
    columns["diversity"] = lambda a: diversity(a, n)
    rows = repro.summaries(arms, {f"pass@{n}": columns.pop(f"pass@{n}"), **columns})
    base = next(iter(arms.values()))["base"]
    context = [
        f"Base on the split: pass@1 {base['pass@1']:.3f}, pass@{n} {base[f'pass@{n}']:.3f}, "
        f"diversity {base['distinct_correct_per_problem'] / n:.3f} "
        f"({base['num_problems']} problems). The base is one model; the claims compare the RL "
        "arms with each other over seeds.",
    ]
    return repro.report(
        args, result, record, decide(arms, n), rows,
        title="ROVER vs GRPO on the LM task (#20, stage B)",
        claim="ROVER (the uniform random policy's Q, softmax sampling) keeps more distinct "
        f"correct solutions than GRPO and beats it at pass@{n} and pass@1.",
        headline=f"pass@{n}", metric=f"held-out level-3 pass@{n}", context=context,
        extra={"base": {k: v for k, v in base.items() if k != "pass_at_k"}},
    )  # fmt: skip


def plot(args, result: dict, _) -> None:
    n = 4 if args.quick else 256
    path = os.path.join(args.workdir, "pass_at_k.png")
    repro.plot_pass_at_k(result["arms"], path, f"Level-3 pass@k: ROVER vs GRPO (n = {n})")
    repro.plot_curve(result["arms"], result["updates"], "entropy",
                     os.path.join(args.workdir, "entropy.png"), title="Policy entropy during RL",
                     ylabel="mean token entropy (nats)")  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/rover_lm", run=run, report=report, plot=plot,
    seeds=4, steps=100, quick=repro.QUICK, low=repro.LOW, flags=repro.flags,
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
