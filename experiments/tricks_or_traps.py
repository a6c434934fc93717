"""Tricks or Traps (#3 in PAPERS.md): advantage normalization, clip-higher and aggregation, from a
lightly and a heavily trained initialization, as populations on the RLVR testbed.

Design (a one-factor-at-a-time fraction of the 4 × 2 × 2 × 2 factorial, stated): around the centre
point "group mean+std advantages, token-level mean, ε_high = 0.2" each factor moves alone:
advantage normalization {group mean+std (GRPO), group mean + batch std (Lite PPO), group mean only
(Dr.GRPO), batch mean+std}, aggregation {token, sequence (mean of per-sequence token means)},
ε_high {0.2, 0.28}; plus DAPO (clip-higher + dynamic sampling) in its own population (it
oversamples). All arms: no KL, 2 epochs × 2 minibatches, lr 3e-4, ε_low 0.2 (`lite_ppo`'s
values), on `configs/grpo.py:arithmetic,fast` (levels 1-2, 16 prompts × 8 samples per step).
Each arm runs from two SFT bases: "base" (the testbed's 1,200 steps on traces with 50% of them
carrying one corrupted character) and "aligned" (4,000 steps on clean traces).

Metrics per arm over seeds: held-out pass@1 and pass@16 (200 problems × 16 samples, host
verifiers), training entropy and response length (mean over the last 20% of updates).

The default takes about 10 min on the idle 2-core CPU (SFT bases cached; the aligned base's 4,000
SFT steps take 3 min once). Plots: curves_<init>.png / entropy_<init>.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402

from rljax.train import study  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

INITS = {
    "base": {},  # the testbed's own SFT (sloppy traces)
    "aligned": {"steps": 4000, "noise": 0.0},  # much longer SFT on clean traces
}
CENTRE = {"advantage": "grpo", "aggregation": "token_mean", "eps_high": 0.2, "dynamic_sampling": 0}
ARMS = {
    "GRPO norm": {}, "Lite PPO": {"advantage": "lite_ppo"},
    "Dr.GRPO norm": {"advantage": "dr_grpo"}, "batch norm": {"advantage": "batch"},
    "GRPO norm, sequence-level": {"aggregation": "seq_mean_token_mean"},
    "GRPO norm, clip-higher": {"eps_high": 0.28},
}  # fmt: skip
DAPO = {"DAPO": {"eps_high": 0.28, "dynamic_sampling": 1}}
CHUNK = 20  # updates between quick evaluations


def populations(quick: bool) -> list[repro.Population]:
    """One population per init and static shape (`--quick`: DAPO trains with the others)."""
    pops = []
    for init, sft in INITS.items():
        for name, arms in (("", {**ARMS, **DAPO}),) if quick else (("", ARMS), ("_dapo", DAPO)):
            arms = {f"{label} [{init}]": {**CENTRE, **a} for label, a in arms.items()}
            pops.append(repro.Population(name=f"{init}{name}", arms=arms, sft=sft))
    return pops


def decide(arms: dict) -> dict:
    """The three claims, each decided by 95% intervals of differences over seeds."""
    p1 = {k: repro.final(a, "pass@1") for k, a in arms.items()}
    ent = {k: repro.late(a, "entropy") for k, a in arms.items()}
    comparisons = {}
    for init in INITS:
        for rival in ("GRPO norm", "DAPO"):
            name = f"Lite PPO vs {rival} [{init}] (pass@1)"
            comparisons[name] = repro.effect(p1[f"Lite PPO [{init}]"], p1[f"{rival} [{init}]"])
        comparisons[f"sequence vs token [{init}] (pass@1)"] = repro.effect(
            p1[f"GRPO norm, sequence-level [{init}]"], p1[f"GRPO norm [{init}]"]
        )
        comparisons[f"clip-higher vs 0.2 [{init}] (entropy)"] = repro.effect(
            ent[f"GRPO norm, clip-higher [{init}]"], ent[f"GRPO norm [{init}]"])  # fmt: skip
    signs = {k: c["sign"] for k, c in comparisons.items()}

    lite = [signs[f"Lite PPO vs {r} [{i}] (pass@1)"] for i in INITS for r in ("GRPO norm", "DAPO")]
    if "-" not in lite:
        v1 = "reproduced"
        why1 = f"Lite PPO is never significantly worse ({lite.count('+')} of 4 wins, rest ties)"
    elif lite.count("-") == 4:
        v1, why1 = "contradicted", "Lite PPO is significantly worse in all 4 comparisons"
    else:
        v1, why1 = "partly", f"Lite PPO is significantly worse in {lite.count('-')} of 4"

    seq_base, seq_al = (signs[f"sequence vs token [{i}] (pass@1)"] for i in ("base", "aligned"))
    if (seq_base, seq_al) == ("-", "+"):
        v2, why2 = "reproduced", "token-level wins on the base, sequence-level on the aligned model"
    elif seq_base == "+" or seq_al == "-":
        v2 = "contradicted"
        why2 = f"sequence − token is {seq_base} on the base and {seq_al} on the aligned model"
    elif (seq_base, seq_al) == ("0", "0"):
        v2, why2 = "not at this scale", "no significant aggregation effect on either model"
    else:
        v2 = "partly"
        why2 = f"sequence − token is {seq_base} on the base and {seq_al} on the aligned model"

    d_base = comparisons["clip-higher vs 0.2 [base] (entropy)"]
    d_al = comparisons["clip-higher vs 0.2 [aligned] (entropy)"]
    if d_al["sign"] == "+" and d_al["diff"] > d_base["diff"] and d_base["sign"] != "+":
        v3, why3 = "reproduced", "clip-higher raises entropy on the aligned model only"
    elif d_al["sign"] == "+":
        v3, why3 = "partly", "clip-higher raises entropy on the aligned model, and on the base too"
    elif d_al["sign"] == "-":
        v3, why3 = "contradicted", "clip-higher lowers the aligned model's entropy"
    else:
        v3 = "not at this scale"
        why3 = "no significant entropy effect of clip-higher on the aligned model"
    claims = {
        "Lite PPO matches or beats GRPO and DAPO": (v1, why1),
        "token-level suits the base, sequence-level the aligned model": (v2, why2),
        "clip-higher mainly protects the aligned model's entropy": (v3, why3),
    }
    return {"claims": claims, "comparisons": comparisons}


def plot(args, result: dict, _) -> None:
    updates, workdir = result["updates"], args.workdir
    ends = repro.chunk_ends(updates, 1 if args.quick else CHUNK)
    for init in INITS:
        mine = {k.removesuffix(f" [{init}]"): a for k, a in result["arms"].items()
                if k.endswith(f"[{init}]")}  # fmt: skip
        repro.plot_curve(mine, updates, "pass@1/mean", os.path.join(workdir, f"curves_{init}.png"),
                         title=f"Tricks or Traps, {init} init: quick held-out pass@1",
                         ylabel="pass@1 (128 held-out problems)", at=ends)  # fmt: skip
        repro.plot_curve(mine, updates, "entropy", os.path.join(workdir, f"entropy_{init}.png"),
                         title=f"Tricks or Traps, {init} init: policy entropy",
                         ylabel="mean token entropy (nats)")  # fmt: skip


def run(args) -> dict:
    return repro.train(args, populations(args.quick), repro.testbed_config(__file__, args),
                       chunk_steps=CHUNK, final_samples=16, final_problems=200)  # fmt: skip


def report(args, result: dict, record: dict) -> study.Report:
    arms = result["arms"]
    n = 4 if args.quick else 16
    rows = repro.summaries(arms, {"pass@1": repro.at("pass@1"), f"pass@{n}": repro.at(f"pass@{n}"),
                                  "entropy": repro.late_of("entropy"),
                                  "length": repro.late_of("response/length")})  # fmt: skip
    bases = {i: next(a["base"] for k, a in arms.items() if k.endswith(f"[{i}]")) for i in INITS}
    context = [
        f"Bases (held-out pass@1 / pass@{n}): "
        + ", ".join(f"{i} {b['pass@1']:.3f} / {b[f'pass@{n}']:.3f}" for i, b in bases.items()),
        "",
        "Design: one factor at a time around the centre point (see the script's docstring).",
    ]
    return repro.report(
        args, result, record, decide(arms), rows,
        title="Tricks or Traps (#3): advantage normalization × clip-higher × aggregation × init",
        claim="Lite PPO matches or beats GRPO and DAPO; token-level aggregation suits the base "
        "model, sequence-level the aligned one; clip-higher mainly protects the aligned model's "
        "entropy.", headline="pass@1", metric="held-out pass@1", context=context,
        extra={"bases": bases},
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/tricks_or_traps", run=run, report=report, plot=plot,
    seeds=3, steps=60, quick=repro.QUICK, low=repro.LOW, flags=repro.flags,
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
