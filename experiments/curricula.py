"""Difficulty filtering and curricula (#182, #175, #177 in PAPERS.md; ablation 11): which prompts
are worth sampling, as populations on the RLVR testbed.

The base is the testbed model (`configs/grpo.py:arithmetic,fast`, 2 layers, d 64) SFT-trained on
all three arithmetic levels (1,200 steps on sloppy traces); RL and evaluation on all three levels
(``max_level=0``) with `lite_ppo`'s values (GRPO advantages, no KL, token mean, 2 epochs × 2
minibatches, lr 3e-4). Each arm changes only which prompts a step trains on
(`rljax.agents.grpo.curriculum`):

  uniform            plain GRPO: B problems uniformly from the split;
  dynamic 0<p̂<1      balanced filtering's wide band = DAPO's dynamic sampling: 2B groups drawn,
                     the first B with mixed rewards trained (p̂ = in-group pass rate);
  balanced p̂∈[¼,¾]   the narrow band of #182, |p̂ − ½| ≤ ¼: of 2B drawn groups, the first B
                     with p̂ in [¼, ¾];
  SEC                a bandit over the 3 levels (#175): value = TD(0) running mean of the groups'
                     mean |A| (α = 0.5), levels ~ softmax(value/τ), τ = 0.2;
  UCB                DUMP (#177): the same values plus c √(2 ln N / n_ℓ), c = 1, softmax at τ = 0.2.

(τ, α and c are ours: the abstracts give none.) Filtering arms sample 2B groups a step, so they
train apart from the others (a population shares its static shape).

Metrics per arm over seeds: the quick held-out pass@1 (all levels and per level) every 10
updates against updates, generated tokens (the completion tokens a learner sampled, discarded
groups included) and wall clock (each population's measured RL seconds per learner-step × updates:
load-dependent); the share of zero-variance groups in the trained batch; the drawn-level shares;
final held-out pass@1 per level (300 problems × 16 samples, host verifiers). Claims, each decided
from the numbers: (1) balanced filtering reaches plain GRPO's final quick pass@1 with fewer
generated tokens (ratio of tokens to reach it, 95% bootstrap interval over seeds); (2) the
curricula end higher than uniform on the hardest level (level 3).

Default: 5 arms × 4 seeds × 100 updates: 8 min 57 s wall, 865 s CPU on the nearly idle 2-core Intel
Xeon (jax 0.10.2); results.md records the times of each run. Plots: accuracy_updates.png,
accuracy_tokens.png, accuracy_wall.png, accuracy_level<k>.png, zero_var.png and levels.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import json  # noqa: E402
import os  # noqa: E402

import numpy as np  # noqa: E402

from rljax import stats  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

DELTA = 0.25  # the narrow balanced band |p̂ − ½| ≤ δ
PLAIN = {
    "uniform": {"curriculum": "uniform", "dynamic_sampling": 0, "balance_delta": 0.5},
    "SEC": {"curriculum": "sec", "dynamic_sampling": 0, "balance_delta": 0.5},
    "UCB": {"curriculum": "ucb", "dynamic_sampling": 0, "balance_delta": 0.5},
}
FILTERED = {
    "dynamic 0<p̂<1": {"curriculum": "uniform", "dynamic_sampling": 1, "balance_delta": 0.5},
    "balanced p̂∈[¼,¾]": {"curriculum": "uniform", "dynamic_sampling": 1, "balance_delta": DELTA},
}
ALL_LEVELS = {"max_level": 0}  # SFT, RL and evaluation on levels 1-3
HARDEST = "3"
RESAMPLES = 1000
CHUNK = 10  # updates between quick evaluations


def populations(quick: bool) -> list[repro.Population]:
    if quick:  # one compile: every arm oversamples
        return [repro.Population("all", {**PLAIN, **FILTERED}, run=ALL_LEVELS)]
    return [
        repro.Population("plain", PLAIN, run=ALL_LEVELS),
        repro.Population("filtered", FILTERED, run=ALL_LEVELS),
    ]


def seconds_per_step(workdir: str, pops: list[repro.Population]) -> dict[str, float]:
    """Measured RL wall seconds per learner-step of each population (compile excluded)."""
    out = {}
    for pop in pops:
        with open(os.path.join(workdir, pop.name, "results.json")) as f:
            res = json.load(f)
        per = res["rl_seconds"] / max(res["num_learners"] * res["rl_steps"], 1)
        out.update({label: per for label in pop.arms})
    return out


def eval_curves(result: dict, chunk: int) -> dict:
    """Per arm at each quick evaluation: updates, pass@1 [S, C], cumulative tokens [S, C]."""
    ends = repro.chunk_ends(result["updates"], chunk)
    out = {}
    for label, arm in result["arms"].items():
        tokens = np.cumsum(np.nan_to_num(arm["curves"]["tokens/generated"]), axis=1)
        out[label] = {"updates": result["updates"][ends], "tokens": tokens[:, ends],
                      "pass@1": arm["curves"]["pass@1/mean"][:, ends]}  # fmt: skip
    return out


def _cost_to_reach(acc: np.ndarray, cost: np.ndarray, target: float) -> float:
    """Mean cost at the first evaluation whose seed-mean accuracy reaches `target` (inf: never)."""
    hit = np.flatnonzero(np.nanmean(acc, axis=0) >= target - 1e-9)
    return float(np.mean(cost[:, hit[0]])) if hit.size else float("inf")


def reach_ratio(base: dict, arm: dict, key: str, scale: tuple[float, float] = (1.0, 1.0)):
    """Cost for `arm` to reach `base`'s final seed-mean quick pass@1, over `base`'s own cost to
    reach it; a 95% bootstrap interval resampling the seeds of each arm independently.

    The target is fixed by a rule set in advance (the base's mean at its last evaluation), not
    the best point of its noisy curve: a maximum of noisy means sits above what the base really
    reaches, which would bias the other arms toward "never".

    `key` is "tokens" or "updates" (× the per-step seconds `scale` of base and arm: wall clock).
    """

    def ratio(b_idx, a_idx):
        b_acc, a_acc = base["pass@1"][b_idx], arm["pass@1"][a_idx]
        b_cost = np.broadcast_to(base[key], base["pass@1"].shape)[b_idx] * scale[0]
        a_cost = np.broadcast_to(arm[key], arm["pass@1"].shape)[a_idx] * scale[1]
        target = float(np.nanmean(b_acc[:, -1]))
        own = _cost_to_reach(b_acc, b_cost, target)
        return _cost_to_reach(a_acc, a_cost, target) / own, target

    sb, sa = base["pass@1"].shape[0], arm["pass@1"].shape[0]
    point, target = ratio(np.arange(sb), np.arange(sa))
    rng = np.random.default_rng(0)
    draws = [ratio(rng.integers(0, sb, sb), rng.integers(0, sa, sa))[0] for _ in range(RESAMPLES)]
    # inf where a resample never reaches the target: quantiles without interpolation
    lo, hi = np.quantile(draws, [0.025, 0.975], method="inverted_cdf")
    return {"ratio": point, "ci": [float(lo), float(hi)], "target": target}


def decide(arms: dict, curves: dict, per_step: dict) -> dict:
    reach = {}
    for label in FILTERED:
        reach[f"{label}: tokens"] = reach_ratio(curves["uniform"], curves[label], "tokens")
        scale = (per_step["uniform"], per_step[label])
        reach[f"{label}: wall clock"] = reach_ratio(curves["uniform"], curves[label], "updates",
                                                    scale)  # fmt: skip
    signs = []
    for label in FILTERED:
        r = reach[f"{label}: tokens"]
        signs.append("+" if r["ci"][1] < 1 else "-" if r["ci"][0] > 1 else "0")
    why1 = "; ".join(
        f"{label} needs {_ratio(reach[f'{label}: tokens'])} plain GRPO's generated tokens to "
        "reach its final quick pass@1"
        for label in FILTERED
    )
    v1 = _combine(signs)
    hard = {k: [m["pass@1_by_level"][HARDEST] for m in a["learners"]] for k, a in arms.items()}
    comparisons = {
        f"{k} vs uniform (level-{HARDEST} pass@1)": repro.effect(hard[k], hard["uniform"])
        for k in ("SEC", "UCB", *FILTERED)
    }
    comparisons.update({
        f"{k} vs uniform (pass@1)": repro.effect(repro.final(arms[k], "pass@1"),
                                                 repro.final(arms["uniform"], "pass@1"))
        for k in ("SEC", "UCB", *FILTERED)
    })  # fmt: skip
    s2 = [comparisons[f"{k} vs uniform (level-{HARDEST} pass@1)"]["sign"] for k in ("SEC", "UCB")]
    v2 = _combine(s2)
    hardest = {k: comparisons[f"{k} vs uniform (level-{HARDEST} pass@1)"] for k in ("SEC", "UCB")}
    why2 = ", ".join(f"{k} − uniform {c['diff']:+.3f} ({s})"
                     for (k, c), s in zip(hardest.items(), s2, strict=True))  # fmt: skip
    claims = {
        "balanced filtering reaches plain GRPO's final accuracy sooner (generated tokens)":
            (v1, why1),
        f"the curricula generalize better to the hardest level ({HARDEST})": (v2, why2),
    }  # fmt: skip
    return {"claims": claims, "comparisons": comparisons, "reach": reach}


def _ratio(r: dict) -> str:
    """ "0.62× [0.41, 0.95]"; "inf" reads "never"."""
    f = lambda v: "never" if v == float("inf") else f"{v:.2f}×"  # noqa: E731
    return f"{f(r['ratio'])} [{f(r['ci'][0])}, {f(r['ci'][1])}]"


def _combine(signs: list[str]) -> str:
    """A claim made for both arms, from their signs: ``verdicts.over_arms``, the one rule (all
    '+': reproduced; some '+': partly; no '+' and some '-': contradicted; all '0': not at this
    scale)."""
    return verdicts.over_arms([verdicts.SIGNS[s] for s in signs])


def _plot_lines(series: dict, path: str, *, title: str, xlabel: str, ylabel: str) -> None:
    """Seed-mean curves whose x differs per arm: series[arm] = (x [C], y [S, C])."""
    with study.figure(path, figsize=(6.4, 4.0)) as (_, ax):
        for name, (x, y) in series.items():
            ax.plot(x, np.nanmean(y, axis=0), marker=".", label=f"{name} (n={y.shape[0]})")
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)


def plot(args, result: dict, _) -> None:
    arms, curves, per_step, workdir = (result["arms"], result["curves"], result["per_step"],
                                       args.workdir)  # fmt: skip
    ends = repro.chunk_ends(result["updates"], 1 if args.quick else CHUNK)
    x = result["updates"][ends]
    stats.plot_bands(x, {k: c["pass@1"] for k, c in curves.items()},
                     os.path.join(workdir, "accuracy_updates.png"),
                     title="Filtering and curricula: quick held-out pass@1 (all levels)",
                     xlabel="RL update", ylabel="pass@1")  # fmt: skip
    _plot_lines({k: (np.mean(c["tokens"], axis=0), c["pass@1"]) for k, c in curves.items()},
                os.path.join(workdir, "accuracy_tokens.png"),
                title="Filtering and curricula: pass@1 against generated tokens",
                xlabel="completion tokens generated per learner", ylabel="pass@1")  # fmt: skip
    _plot_lines({k: (c["updates"] * per_step[k], c["pass@1"]) for k, c in curves.items()},
                os.path.join(workdir, "accuracy_wall.png"),
                title="Filtering and curricula: pass@1 against wall clock (per learner)",
                xlabel="seconds (measured per learner-step × updates; load-dependent)",
                ylabel="pass@1")  # fmt: skip
    levels = sorted(k for k in next(iter(arms.values()))["curves"] if k.startswith(repro.LEVEL))
    for key in levels:
        level = key.removeprefix(repro.LEVEL)
        stats.plot_bands(x, {k: a["curves"][key][:, ends] for k, a in arms.items()},
                         os.path.join(workdir, f"accuracy_level{level}.png"),
                         title=f"Filtering and curricula: quick held-out pass@1, level {level}",
                         xlabel="RL update", ylabel=f"pass@1 (level {level})")  # fmt: skip
    stats.plot_bands(result["updates"],
                     {k: a["curves"]["groups/zero_var_frac"] for k, a in arms.items()},
                     os.path.join(workdir, "zero_var.png"),
                     title="Share of zero-variance groups in the trained batch", xlabel="RL update",
                     ylabel="share of groups")  # fmt: skip
    share = {f"{k}: level {lv}": a["curves"][f"{repro.CURRICULUM}level{lv}"]
             for k, a in arms.items() if k in ("SEC", "UCB") for lv in (1, 2, 3)}  # fmt: skip
    stats.plot_bands(result["updates"], share, os.path.join(workdir, "levels.png"),
                     title="Curricula: share of each step's groups drawn at each level",
                     xlabel="RL update", ylabel="share of groups")  # fmt: skip


def run(args) -> dict:
    pops = populations(args.quick)
    result = repro.train(args, pops, repro.testbed_config(__file__, args), chunk_steps=CHUNK,
                         final_samples=16, final_problems=300)  # fmt: skip
    per_step = seconds_per_step(args.workdir, pops)
    curves = eval_curves(result, 1 if args.quick else CHUNK)
    return {**result, "per_step": per_step, "curves": curves}


def report(args, result: dict, record: dict) -> study.Report:
    arms, curves, per_step = result["arms"], result["curves"], result["per_step"]
    columns = {"pass@1": repro.at("pass@1"), **repro.level_columns(arms)}
    columns["zero-var share"] = repro.late_of("groups/zero_var_frac", 1.0)
    columns["kept share"] = repro.late_of("groups/kept_frac", 1.0)
    columns["tokens / step"] = repro.late_of("tokens/generated", 1.0)
    for lv in (1, 2, 3):
        columns[f"drawn level {lv}"] = repro.late_of(f"{repro.CURRICULUM}level{lv}", 1.0)
    rows = repro.summaries(arms, columns)
    decided = decide(arms, curves, per_step)
    base = next(iter(arms.values()))["base"]
    by_level = ", ".join(f"level {k} {v:.3f}" for k, v in base["pass@1_by_level"].items())
    context = [
        f"Base: pass@1 {base['pass@1']:.3f} ({by_level}; {base['num_problems']} held-out "
        "problems). Shares and tokens per step are means over all updates; the zero-variance "
        "share is over the trained batch (for the filtering arms: the filler groups when too "
        "few drawn groups passed the filter). A ratio's interval excluding 1 decides a claim "
        "on cost.",
    ]
    after = [
        "Cost to reach plain GRPO's seed-mean quick pass@1 at its last evaluation (the target, "
        "fixed by that rule before the run), relative to "
        "uniform's own cost to reach it (< 1×: sooner; never: not within the run). Wall clock "
        f"uses each population's measured RL seconds per learner-step: {per_step}.",
        "",
        *study.md_table(
            ("arm: cost", "ratio [95% CI]", "target"),
            ((n, _ratio(r), f"{r['target']:.3f}") for n, r in decided["reach"].items()),
        ),
        "",
    ]
    return repro.report(
        args, result, record, decided, rows,
        title="Difficulty filtering and curricula (#182, #175, #177)",
        claim="Balanced online difficulty filtering reaches plain GRPO's final reward sooner; "
        "bandit curricula over difficulty levels (SEC, DUMP's UCB) generalize better to the "
        "hard levels.",
        headline=f"level {HARDEST}", metric=f"held-out level-{HARDEST} pass@1", context=context,
        after_table=after,
        extra={
            "reach": decided["reach"], "seconds_per_learner_step": per_step,
            "curves": {k: {"updates": c["updates"].tolist(),
                           "pass@1_mean": np.nanmean(c["pass@1"], axis=0).tolist(),
                           "tokens_mean": np.mean(c["tokens"], axis=0).tolist()}
                       for k, c in curves.items()},
            "base": {k: v for k, v in base.items() if k != "pass_at_k"},
        },
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/curricula", run=run, report=report, plot=plot,
    seeds=4, steps=100, quick=repro.QUICK, low=repro.LOW, flags=repro.flags,
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
