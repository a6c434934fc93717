"""NFT ≡ GRPO on policy (#210), then GRPO, NFT, PACS (#85) and CISPO (#54) trained as one
population on the RLVR testbed, compared on pass@1 and pass@k up to k = 256.

Part (i), exact: on random on-policy batches (π_old = π_θ, 64 groups of 8 with 0/1 rewards and
lengths 1-5) the gradient of rljax's NFT loss is compared with the policy gradient under
GRPO's and Dr.GRPO's advantages (`rljax.train.study_checks.nft_identity`). NFT's on-policy
gradient is −∇log π on positives and r_q/(1 − r_q)·∇log π on negatives (r_q the prompt's
accuracy): times (1 − r_q) it is Dr.GRPO's −(r_i − r_q)∇log π exactly; GRPO's additionally
divides by the group std, so the identity needs the per-prompt weight sqrt((1 − r_q)/r_q) with
the population std (ddof = 0), and sqrt((1 − r_q)/r_q)·sqrt((G − 1)/G) with rljax's default
ddof = 1. Unweighted, the directions differ whenever prompts' accuracies differ (cosine reported).

Part (ii): the presets `grpo` (k3 KL 0.04 in the loss, sequence-mean aggregation), `nft`, `pacs`
and `cispo` as named in `rljax.agents.grpo.presets` (2 epochs × 2 minibatches, lr 3e-4), one
population on `configs/grpo.py:arithmetic,fast`; held-out pass@k for k = 1..256 from n = 256
samples on 64 problems spread over levels 1-2 (unbiased estimator), over seeds.

The default takes about 10 min on the idle 2-core CPU (SFT base cached). Plots: pass_at_k.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402

from rljax.train import study, study_checks, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

PRESETS = ("grpo", "nft", "pacs", "cispo")


def identity(seeds: int) -> dict:
    """Part (i) over `seeds` random batches: the largest relative differences and cosines."""
    checks = [study_checks.nft_identity(seed=s) for s in range(seeds)]
    return {k: [c[k] for c in checks] for k in checks[0]}


def decide(arms: dict, exact: dict, n: int) -> dict:
    top = {k: repro.final(a, f"pass@{n}") for k, a in arms.items()}
    p1 = {k: repro.final(a, "pass@1") for k, a in arms.items()}
    comparisons = {
        f"pacs vs grpo (pass@{n})": repro.effect(top["pacs"], top["grpo"]),
        f"pacs vs nft (pass@{n})": repro.effect(top["pacs"], top["nft"]),
        "nft vs grpo (pass@1)": repro.effect(p1["nft"], p1["grpo"]),
        "pacs vs grpo (pass@1)": repro.effect(p1["pacs"], p1["grpo"]),
        "cispo vs grpo (pass@1)": repro.effect(p1["cispo"], p1["grpo"]),
    }
    worst = max(max(exact["grpo_ddof0_max_rel_diff"]), max(exact["grpo_ddof1_max_rel_diff"]))
    worst = max(worst, max(exact["dr_grpo_max_rel_diff"]))
    cos = exact["unweighted_vs_grpo_cosine"]
    if worst < 1e-4:
        v1 = "reproduced"
        why1 = (
            f"weighted NFT equals GRPO/Dr.GRPO to {worst:.1e} relative; unweighted cosine "
            f"{min(cos):.3f}-{max(cos):.3f}"
        )
    else:
        v1, why1 = "contradicted", f"the gradients differ by {worst:.1e} relative"
    signs = [comparisons[f"pacs vs {r} (pass@{n})"]["sign"] for r in ("grpo", "nft")]
    v2 = verdicts.from_signs(signs)
    why2 = {
        "reproduced": f"PACS has the higher pass@{n} than GRPO and NFT",
        "not at this scale": f"PACS ties GRPO and NFT at pass@{n}",
    }.get(v2, f"PACS − GRPO is {signs[0]}, PACS − NFT is {signs[1]}")
    claims = {
        "on policy, NFT's gradient equals GRPO's up to the normalization": (v1, why1),
        f"PACS has the better pass@{n}": (v2, why2),
    }
    return {"claims": claims, "comparisons": comparisons}


def run(args) -> dict:
    exact = identity(3 if args.quick else args.identity_batches)
    pop = repro.Population("population", {p: {"preset": p} for p in PRESETS})
    result = repro.train(args, [pop], repro.testbed_config(__file__, args), chunk_steps=25,
                         final_samples=256, final_problems=64)  # fmt: skip
    return {**result, "identity": exact}


def report(args, result: dict, record: dict) -> study.Report:
    arms, exact = result["arms"], result["identity"]
    n = 4 if args.quick else 256
    rows = repro.summaries(arms, repro.pass_columns(n))
    base = next(iter(arms.values()))["base"]
    context = [
        f"Part (i) over {len(exact['dr_grpo_max_rel_diff'])} random on-policy batches: largest "
        "relative gradient difference NFT·(1 − r_q) vs Dr.GRPO "
        f"{max(exact['dr_grpo_max_rel_diff']):.1e}; NFT·sqrt((1 − r_q)/r_q) vs GRPO (ddof 0) "
        f"{max(exact['grpo_ddof0_max_rel_diff']):.1e}; with sqrt((G − 1)/G) vs GRPO (ddof 1) "
        f"{max(exact['grpo_ddof1_max_rel_diff']):.1e}; unweighted NFT vs GRPO cosine "
        f"{min(exact['unweighted_vs_grpo_cosine']):.3f}-"
        f"{max(exact['unweighted_vs_grpo_cosine']):.3f}.",
        "",
        f"Base: pass@1 {base['pass@1']:.3f}, pass@{n} {base[f'pass@{n}']:.3f} "
        f"({base['num_problems']} held-out problems, n = {n}).",
    ]
    return repro.report(
        args, result, record, decide(arms, exact, n), rows,
        title="NFT ≡ GRPO (#210); GRPO vs NFT vs PACS (#85) vs CISPO (#54)",
        claim="On policy NFT's gradient is GRPO's up to the normalization; trained, PACS has "
        "the better pass@256.", headline=f"pass@{n}", metric=f"held-out pass@{n}", context=context,
        extra={"identity": exact, "base": {k: v for k, v in base.items() if k != "pass_at_k"}},
    )  # fmt: skip


def plot(args, result: dict, _) -> None:
    n = 4 if args.quick else 256
    repro.plot_pass_at_k(result["arms"], os.path.join(args.workdir, "pass_at_k.png"),
                         f"GRPO, NFT, PACS, CISPO: held-out pass@k (n = {n})")  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/nft_pacs", run=run, report=report, plot=plot,
    seeds=5, steps=100, quick=repro.QUICK, low={**repro.LOW, "identity_batches": 3},
    flags=repro.flags, options={"identity_batches": (10, "random batches, (i)")},
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
