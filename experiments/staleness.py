"""Staleness: how many updates of sampler/learner lag RLVR tolerates, and which correction repairs
it, as one population on the RLVR testbed (issue 31, item 7).

Update t trains on completions sampled by the parameters of update t − k (`rljax.agents.
stale_grpo`: a ring of parameter snapshots inside the one compiled step, no threads; the first k
batches come from the initial policy), with one of four corrections of the mismatch between the
sampler μ and the learner's π_prox: none (PPO's ratio against π_prox, the lag ignored), truncated
IS (weight min(π_prox/μ, C)), masked IS (weight π_prox/μ, 0 where it exceeds C), C = 2 (ours),
and CISPO (its clipped, stopped ratio taken against μ; ε_high 0.28, the preset's).

Design (a fraction of the 5 × 4 grid, stated): no correction at k ∈ {0, 1, 2, 4, 8}; TIS and MIS
at k ∈ {4, 8} (at k = 0 their weights are exactly 1: they are the uncorrected learner); CISPO at
k ∈ {0, 4, 8} (``--design=claims``: only the six cells the claims compare, none at k ∈ {0, 8},
TIS and MIS at 8, CISPO at {0, 8}). A second population (the sampler's precision is static: a
second program) samples in bf16 while the learner trains in float32 (`stale_grpo.Config.
sampler_dtype`), at k = 0 with no correction, TIS and MIS. Every other field is Lite PPO's
(group mean / batch std advantages, token-level mean, 2 epochs × 2 minibatches, lr 3e-4, no KL) on
`configs/grpo.py:arithmetic,fast` (levels 1-2, 16 prompts × 8 samples per update). Metric:
held-out pass@1 gain over the SFT base (200 problems × 4 samples, host verifiers) per cell, 95%
intervals over seeds.

Claims (from the asynchronous-RL literature: PipelineRL, AReaL, the TIS/MIS notes, ScaleRL's
8-step off-policy CISPO; none gives a number at this scale), each decided by a stated rule:
1. uncorrected staleness costs accuracy: gain(none, k=8) < gain(none, k=0) (interval of the
   difference below 0);
2. importance-sampling corrections repair it: gain(TIS or MIS, k=8) > gain(none, k=8), for each
   (`verdicts.over_arms` over the two);
3. CISPO tolerates 8 updates of lag: gain(CISPO, 8) matches or beats gain(CISPO, 0) within 0.02
   (`verdicts.matches_or_beats`);
4. a bf16 sampler beside a float32 learner, uncorrected, costs accuracy: gain(bf16 none, 0) <
   gain(none, 0) (the inference-engine mismatch of the TIS note);
5. importance sampling repairs it: gain(bf16 TIS or MIS, 0) > gain(bf16 none, 0), for each.
The invariants are checked on every run from the logged metrics: at update t every learner's
sampler has the norm its own parameters had before update max(t − k, 0), and its lag is
min(t, k); the float32 k = 0 learners see no mismatch (|log π_prox/μ| = 0) and the bf16 ones see
one at every update (`lag_invariant` in results.json; the run fails if they do not hold).

Plots: gain_vs_lag.png and curves.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import dataclasses  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents import learner, stale_grpo  # noqa: E402
from rljax.agents.grpo import presets  # noqa: E402
from rljax.train import lm_experiment, lm_report, population, study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

IS_CAP = 2.0  # C of TIS and MIS (ours)
LITE = {"policy_loss": "ppo_clip", "eps_low": 0.2, "eps_high": 0.2}
CISPO = {k: presets.PRESETS["cispo"][k] for k in LITE}
DEFAULT = {"none": (0, 1, 2, 4, 8), "tis": (4, 8), "mis": (4, 8), "cispo": (0, 4, 8)}
CLAIMS = {"none": (0, 8), "tis": (8,), "mis": (8,), "cispo": (0, 8)}  # only what the claims read
QUICK = {"none": (0, 2), "tis": (2,), "mis": (2,), "cispo": (0, 2)}
SAMPLER_DTYPE = "bfloat16"  # the precision arm's sampler (the learner stays float32)
PRECISION = {"none": (0,), "tis": (0,), "mis": (0,)}
QUICK_PRECISION = {"none": (0,), "tis": (0,)}
STALE_KEYS = ("stale/lag", "stale/sampler_norm", "stale/params_norm", "stale/abs_log_ratio",
              "stale/over_cap")  # fmt: skip


def cells(quick: bool, design: str = "full") -> dict[str, tuple[str, int]]:
    """{label: (correction, k)} of the design (`--design`: full or claims)."""
    grid = QUICK if quick else CLAIMS if design == "claims" else DEFAULT
    return {f"{c} k={k}": (c, k) for c, ks in grid.items() for k in ks}


def precision_cells(quick: bool) -> dict[str, tuple[str, int]]:
    """{label: (correction, k)} of the bf16-sampler population."""
    grid = QUICK_PRECISION if quick else PRECISION
    return {f"bf16 {c} k={k}": (c, k) for c, ks in grid.items() for k in ks}


def train_all(args, design: dict, precision: dict) -> dict:
    """The float32-sampler population, then the bf16-sampler one; one result layout."""
    base = repro.testbed_config(__file__, args)
    first = train(args, base, design, "stale")
    second = train(args, base, precision, "stale_bf16", SAMPLER_DTYPE)
    out = {k: {**first[k], **second[k]} for k in ("arms", "seconds", "cpu_seconds")}
    return {**out, "updates": first["updates"]}


def train(args, base, design: dict, name: str, sampler_dtype: str = "") -> dict:
    """Trains one population; returns `study_lm.train`'s result layout plus stale curves."""
    arms = {label: CISPO if c == "cispo" else LITE for label, (c, _) in design.items()}
    pop = repro.Population(name, arms)
    run = repro.testbed(args, pop, base, chunk_steps=20, final_samples=4, final_problems=200)
    points = lm_experiment.validate(run)
    t0, c0 = time.perf_counter(), time.process_time()
    agent_cfg, data, _, values, test, _ = lm_experiment.build(run, points)
    lags = [k for _, k in design.values()]
    config = stale_grpo.Config(agent_cfg, max_lag=max(lags), sampler_dtype=sampler_dtype)
    stale_grpo.validate(config)
    hparams = [stale_grpo.make_hparams(v, k, c, IS_CAP)
               for v, (c, k) in zip(values, design.values(), strict=True)]  # fmt: skip
    spec = population.Spec(
        learner=stale_grpo, config=config, env=data,
        hparams=jax.tree.map(lambda *x: np.stack(x), *hparams),
        num_updates=run.steps, chunk_updates=run.chunk_steps, num_seeds=run.num_seeds,
        seed=run.seed, grid=tuple({"cell": label} for label in design), env_as_argument=True,
    )  # fmt: skip
    fingerprint = {**dataclasses.asdict(run), "cells": list(design), "is_cap": IS_CAP,
                   "sampler_dtype": sampler_dtype}  # fmt: skip
    result = population.run(
        spec, workdir=run.workdir, title=f"stale RLVR, {sampler_dtype or 'float32'} sampler",
        checkpoint_every=run.checkpoint_every, resume=False, progress=run.progress,
        fingerprint=fingerprint, **lm_experiment.LOOP_OPTIONS,
    )  # fmt: skip
    key = jax.random.fold_in(learner.eval_key(agent_cfg.eval_seed), 0)
    base, learners = lm_report.evaluate_learners(run, agent_cfg, result.states, data.base_params,
                                                 test, points, key)  # fmt: skip
    updates, curves = repro.read_curves(run.workdir, len(design), args.seeds)
    _, stale = repro.read_metrics(run.workdir, len(design), args.seeds, STALE_KEYS)
    out = {}
    for g, label in enumerate(design):
        out[label] = {"learners": learners[g * args.seeds : (g + 1) * args.seeds], "base": base,
                      "curves": {k: v[g] for k, v in {**curves, **stale}.items()}}  # fmt: skip
    seconds = {name: round(time.perf_counter() - t0, 1)}
    return {"arms": out, "updates": updates, "seconds": seconds,
            "cpu_seconds": {name: round(time.process_time() - c0, 1)}}  # fmt: skip


def lag_invariant(arms: dict, design: dict, precision: dict) -> dict:
    """At update t (0-based) the lag is min(t, k) and the sampler's norm is the norm the learner's
    own parameters had before update max(t − k, 0); a float32 sampler at k = 0 is the learner
    (|log π_prox/μ| = 0) and a bf16 one differs from it at every update. Checked for every
    learner and update."""
    checked, bad = 0, []
    for label, (_, k) in {**design, **precision}.items():
        c = arms[label]["curves"]
        lag, sampler, own = c["stale/lag"], c["stale/sampler_norm"], c["stale/params_norm"]
        steps = lag.shape[1]
        t = np.arange(steps)
        if not np.array_equal(lag, np.broadcast_to(np.minimum(t, k), lag.shape)):
            bad.append(f"{label}: lag {lag[0].tolist()}")
        source = np.maximum(t - k, 0)
        if not np.allclose(sampler, own[:, source], rtol=1e-6, atol=0):
            bad.append(f"{label}: sampler norm is not the norm of update t - k")
        if k > 0 and steps > k and np.allclose(own[:, k], own[:, 0]):
            bad.append(f"{label}: the parameters did not move, the check is vacuous")
        mismatch = c["stale/abs_log_ratio"]
        if label in precision and not np.all(mismatch > 0):
            bad.append(f"{label}: the bf16 sampler matches the float32 learner exactly")
        if label in design and k == 0 and not np.all(mismatch == 0):
            bad.append(f"{label}: a float32 sampler at k = 0 differs from the learner")
        checked += lag.size
    return {"holds": not bad, "checked_updates": checked, "failures": bad}


def _distinct(labels: list[str], gains: dict) -> list[tuple[str, ...]]:
    """``labels`` grouped by equal per-seed gains (arms that are one learner count once)."""
    groups: list[tuple[str, ...]] = []
    for label in labels:
        for i, group in enumerate(groups):
            if np.array_equal(gains[group[0]], gains[label]):
                groups[i] = (*group, label)
                break
        else:
            groups.append((label,))
    return groups


def decide(arms: dict, design: dict, precision: dict) -> dict:
    """The five claims from the arms' per-seed numbers (a pure function of them)."""
    top = max(k for _, k in design.values())
    iv = lambda c: study.diff_text(c["diff"], c["diff_ci"], 3)  # noqa: E731
    fixes16 = [c for c, _ in precision.values() if c != "none"]
    g = {label: repro.gains(a) for label, a in arms.items()}
    pairs = [(f"none k={top}", "none k=0"), *((f"{c} k={top}", f"none k={top}") for c in
             ("tis", "mis")), (f"cispo k={top}", "cispo k=0"), ("bf16 none k=0", "none k=0"),
             *((f"bf16 {c} k=0", "bf16 none k=0") for c in fixes16)]  # fmt: skip
    comparisons = {f"{a} vs {b}": repro.effect(g[a], g[b]) for a, b in pairs}
    d1 = comparisons[f"none k={top} vs none k=0"]
    v1 = verdicts.vs_zero(d1["diff_ci"], higher_is_claimed=False)
    why1 = f"gain(none, k={top}) − gain(none, k=0) = {iv(d1)}"
    each = {c: verdicts.vs_zero(comparisons[f"{c} k={top} vs none k={top}"]["diff_ci"])
            for c in ("tis", "mis")}  # fmt: skip
    v2 = verdicts.over_arms(each.values())
    fixes = {c: comparisons[f"{c} k={top} vs none k={top}"] for c in each}
    why2 = "; ".join(f"{c.upper()} − none at k={top} = {iv(fixes[c])} ({s})"
                     for c, s in each.items())  # fmt: skip
    d3 = comparisons[f"cispo k={top} vs cispo k=0"]
    v3 = verdicts.matches_or_beats(d3["diff_ci"], margin=0.02)
    why3 = f"gain(CISPO, k={top}) − gain(CISPO, k=0) = {iv(d3)}, margin 0.02"
    d4 = comparisons["bf16 none k=0 vs none k=0"]
    v4 = verdicts.vs_zero(d4["diff_ci"], higher_is_claimed=False)
    why4 = f"gain(bf16 none, k=0) − gain(none, k=0) = {iv(d4)}"
    # When no ratio exceeds C, TIS and MIS weigh every token alike: the same learner, the same
    # numbers. Such arms count once (one arm, not two agreeing ones).
    distinct16 = _distinct([f"bf16 {c} k=0" for c in fixes16], g)
    each16 = {c: verdicts.vs_zero(comparisons[f"{c[0]} vs bf16 none k=0"]["diff_ci"])
              for c in distinct16}  # fmt: skip
    v5 = verdicts.over_arms(each16.values())
    why5 = "; ".join(
        f"{' = '.join(a.removesuffix(' k=0') for a in c)} − bf16 none = "
        f"{iv(comparisons[f'{c[0]} vs bf16 none k=0'])} ({st})"
        for c, st in each16.items()
    )
    names16 = " and ".join(c.upper() for c in fixes16)
    claims = {
        f"uncorrected staleness (k={top}) lowers the gain": (v1, why1),
        f"TIS and MIS repair k={top} (each beats no correction)": (v2, why2),
        f"CISPO tolerates k={top} (matches its k=0 within 0.02)": (v3, why3),
        "a bf16 sampler beside a float32 learner, uncorrected, lowers the gain": (v4, why4),
        f"{names16} repair{'s' if len(fixes16) == 1 else ''} the bf16 sampler (each beats no "
        "correction)": (v5, why5),
    }
    return {"claims": claims, "comparisons": comparisons}


def plot(args, result: dict, _) -> None:
    arms, design, workdir = result["arms"], cells(args.quick, args.design), args.workdir
    lags = sorted({k for _, k in design.values()})
    curves = {}
    for correction in ("none", "tis", "mis", "cispo"):
        mine = [k for k in lags if f"{correction} k={k}" in arms]
        if len(mine) < 2:
            continue
        # x: the design's lags; a lag this correction does not run is NaN (a gap in its band)
        per_seed = np.full((len(arms[f"{correction} k={mine[0]}"]["learners"]), len(lags)), np.nan)
        for i, k in enumerate(lags):
            if k in mine:
                per_seed[:, i] = repro.gains(arms[f"{correction} k={k}"])
        curves[correction] = per_seed
    stats.plot_bands(np.asarray(lags, float), curves, os.path.join(workdir, "gain_vs_lag.png"),
                     title="Staleness: held-out pass@1 gain vs sampler lag k",
                     xlabel="lag k (updates)", ylabel="pass@1 gain over the SFT base")  # fmt: skip
    top = max(lags)
    chosen = {k: a for k, a in arms.items() if k in ("none k=0", f"none k={top}", f"tis k={top}",
              f"mis k={top}", f"cispo k={top}")}  # fmt: skip
    repro.plot_curve(chosen, result["updates"], "correct/mean", os.path.join(workdir, "curves.png"),
                     title="Staleness: training pass rate",
                     ylabel="pass rate of the trained batch")  # fmt: skip


def check(args) -> None:
    if args.steps <= max(k for _, k in cells(args.quick, args.design).values()):
        raise cli.ConfigError(f"--steps={args.steps} is invalid; allowed: an integer > the "
                              "largest lag")  # fmt: skip


def run(args) -> dict:
    design, precision = cells(args.quick, args.design), precision_cells(args.quick)
    result = train_all(args, design, precision)
    invariant = lag_invariant(result["arms"], design, precision)
    if not invariant["holds"]:
        raise RuntimeError(f"the lag invariant fails: {invariant['failures']}")
    return {**result, "lag_invariant": invariant}


def report(args, result: dict, record: dict) -> study.Report:
    arms, invariant = result["arms"], result["lag_invariant"]
    design, precision = cells(args.quick, args.design), precision_cells(args.quick)
    rows = repro.summaries(arms, {
        "gain": repro.gains, "pass@1": repro.at("pass@1"),
        "|log π_prox/μ|": repro.late_of("stale/abs_log_ratio", 1.0),
        "share over C": repro.late_of("stale/over_cap", 1.0), "entropy": repro.late_of("entropy"),
    })  # fmt: skip
    base = next(iter(arms.values()))["base"]
    context = [
        f"Base held-out pass@1: {base['pass@1']:.3f}. Lag invariant: holds on all "
        f"{invariant['checked_updates']} (learner, update) pairs.",
        "",
        "Design: see the script's docstring (TIS and MIS at k = 0 are the uncorrected learner; "
        "the bf16 cells sample in bf16 and learn in float32).",
    ]
    return repro.report(
        args, result, record, decide(arms, design, precision), rows,
        title="Staleness: RLVR fed by completions sampled k updates ago or in bf16, four "
        "corrections",
        claim="Uncorrected sampler/learner staleness lowers the RLVR gain; truncated or masked "
        "importance sampling repairs it; CISPO tolerates 8 updates of lag; a bf16 sampler "
        "beside a float32 learner lowers the gain and importance sampling repairs it.",
        headline="gain", metric="held-out pass@1 gain over the base", context=context,
        extra={"lag_invariant": invariant,
               "design": {k: list(v) for k, v in {**design, **precision}.items()},
               "is_cap": IS_CAP, "sampler_dtype": {k: SAMPLER_DTYPE for k in precision}},
    )  # fmt: skip


def add_flags(parser) -> None:
    repro.flags(parser)
    parser.add_argument(
        "--design", choices=("full", "claims"), default="full",
        help="full: the 12 cells of the docstring; claims: only the 6 the claims compare",
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/staleness", run=run, report=report, plot=plot,
    flags=add_flags, check=check, seeds=3, steps=40, low=repro.LOW,
    quick={**repro.QUICK, "steps": 6},  # enough updates for the lag to show (k = 2)
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
