"""In-context RL (#227 DPT): a transformer pretrained to predict the best arm, run online.

Lee et al. 2023 ("Supervised Pretraining Can Learn In-Context Reinforcement Learning", #227):
a transformer pretrained only to predict the optimal action from an in-context dataset of a
task (the Decision-Pretrained Transformer, DPT), deployed online on new tasks by sampling from
its prediction given its own history, explores and exploits like posterior sampling: on bandits
its online regret is close to Thompson sampling's.

Setup (``rljax.bandits``, ``rljax.agents.dpt``): Bernoulli bandits with ``--arms`` arms, means
uniform on [0, 1], ``--horizon`` pulls. Pretraining: ``--updates`` Adam steps of 32 fresh tasks
each; each task's in-context dataset holds ``--horizon`` pulls from a Dirichlet(1) action
distribution drawn independently of the task (so its actions say nothing about the best arm; the
test checks it), and the label is the best arm, predicted at every prefix (a causal transformer,
2 blocks, width 32, 2 heads). One transformer per seed. Evaluation: ``--eval-tasks`` new tasks;
DPT, Thompson sampling (Beta(1, 1): exact posterior sampling under this prior), UCB1 and
uniform arms, each with the seed's own randomness on the same tasks; pseudo-regret
``Σ_t μ* − μ_{a_t}``.

Claims (``claims``): DPT's online regret matches Thompson sampling's (Thompson − DPT regret, a
non-inferiority rule with margin ``MARGIN`` = 20% of Thompson's mean regret); DPT learns in
context (its per-pull regret over the first 10% of pulls minus that over the last 10% is > 0).
Statuses by ``rljax/train/verdicts.py`` (``matches_or_beats``, ``vs_zero``). UCB1 and uniform
are reported as references.

Not covered here: the paper's offline (fixed-dataset) setting and #214's meta-RL ablations
(structure, memory, credit assignment); its dark room is experiments/in_context_darkroom.py.

Plots: regret.png (cumulative regret over pulls, mean and 95% interval over seeds). The default
takes about 8 min on the shared 2-core CPU. Results and their reading:
docs/stitching_and_in_context_rl.md.
"""

from rljax import xla_flags

xla_flags.set_flags()

import functools  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import bandits, cli, stats  # noqa: E402
from rljax.agents import dpt  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

BASELINES = ("thompson", "ucb1", "uniform")
MARGIN_SHARE = 0.2  # DPT "matches" Thompson: regret at most 20% of Thompson's above it
EDGE = 0.1  # share of pulls at each end of the horizon for the in-context learning claim
DEFAULTS = {"seeds": 3, "updates": 1500, "eval_tasks": 400, "evals": 3}
QUICK = {"seeds": 3, "updates": 40, "eval_tasks": 64, "evals": 1}
CLAIMS = {
    "dpt_matches_thompson": (
        f"DPT's online regret matches Thompson sampling's (within {MARGIN_SHARE:.0%} of it)"
    ),
    "dpt_learns_in_context": (
        f"DPT's per-pull regret falls within an episode (first {EDGE:.0%} − last {EDGE:.0%} > 0)"
    ),
}


def _policies(config: dpt.Config) -> dict:
    k = config.num_arms
    return {
        "thompson": functools.partial(bandits.thompson, num_arms=k),
        "ucb1": functools.partial(bandits.ucb1, num_arms=k),
        "uniform": functools.partial(bandits.uniform, num_arms=k),
    }


def evaluate(config: dpt.Config, states, means, keys) -> dict:
    """Per-pull regret ``[S, E, T]`` of DPT (one model per seed) and the baselines."""
    horizon = config.horizon

    def dpt_run(state, key):
        pol = lambda a, r, t, k: dpt.act(config, None, state, (a, r, t), k)  # noqa: E731
        return bandits.run_online(pol, means, key, horizon)[2]

    out = {"dpt": np.asarray(jax.jit(jax.vmap(dpt_run))(states, keys))}
    for name, pol in _policies(config).items():
        run = jax.jit(jax.vmap(lambda k, pol=pol: bandits.run_online(pol, means, k, horizon)[2]))
        out[name] = np.asarray(run(keys))
    return out


def claims(regret: dict, horizon: int) -> dict:
    """Statuses of ``CLAIMS`` from per-pull regret ``[S, E, T]`` per arm."""
    total = {k: v.sum(-1).mean(-1) for k, v in regret.items()}  # [S]
    vs_ts = stats.compare(total["thompson"], total["dpt"])  # > 0: DPT has less regret
    margin = MARGIN_SHARE * float(total["thompson"].mean())
    edge = max(1, int(round(EDGE * horizon)))
    per_pull = regret["dpt"].mean(1)  # [S, T]
    fall = per_pull[:, :edge].mean(1) - per_pull[:, -edge:].mean(1)
    fall_s = stats.summarize(fall)
    matches = verdicts.matches_or_beats(vs_ts["diff_ci"], margin=margin)
    falls = verdicts.vs_zero(fall_s["mean_ci"])
    return {
        "dpt_matches_thompson": {**vs_ts, "margin": margin, "status": matches},
        "dpt_learns_in_context": {"diff": fall_s["mean"], "diff_ci": fall_s["mean_ci"],
                                  "edge_pulls": edge, "status": falls},
    }  # fmt: skip


def label_leak(config: dpt.Config, key: jax.Array, num: int = 4096) -> float:
    """Share of pretraining datasets whose most-pulled arm is the label (≈ 1/K: no leak)."""
    tokens, best, _ = bandits.pretraining_batch(key, num, config.num_arms, config.horizon,
                                                concentration=config.concentration)  # fmt: skip
    pulls = tokens[:, 1:, : config.num_arms].sum(1)
    return float(jnp.mean(jnp.argmax(pulls, -1) == best))


def report(args, out: dict, record: dict) -> study.Report:
    config, regret, train_curve = out["config"], out["regret"], out["curve"]
    meta = {"settings": out["settings"], "label_leak": out["label_leak"], **record}
    cl = claims(regret, config.horizon)
    names = ("dpt", *BASELINES)
    arms = {n: stats.summarize(regret[n].sum(-1).mean(-1)) for n in names}
    iv = lambda c: study.diff_text(c["diff"], c["diff_ci"])  # noqa: E731
    reason = "; ".join(f"{k}: {c['status']} ({iv(c)})" for k, c in cl.items())
    notes = [
        f"Metric: cumulative pseudo-regret Σ_t (μ* − μ_a_t) over {config.horizon} pulls, mean "
        f"over {args.eval_tasks} new tasks, per seed (one pretrained transformer per seed; the "
        f"baselines with the seed's own randomness on the same tasks). Lower is better.",
        "",
        "**Claims** (95% bootstrap intervals over seeds):",
        "",
        f"* {CLAIMS['dpt_matches_thompson']}: **{cl['dpt_matches_thompson']['status']}**, "
        f"Thompson − DPT regret {iv(cl['dpt_matches_thompson'])}, margin "
        f"{cl['dpt_matches_thompson']['margin']:.2f}",
        f"* {CLAIMS['dpt_learns_in_context']}: **{cl['dpt_learns_in_context']['status']}**, "
        f"{iv(cl['dpt_learns_in_context'])} per pull",
        "",
        f"Pretraining: best-arm accuracy of the last prefix (chunk means over updates): "
        f"{', '.join(f'{v:.2f}' for v in train_curve)}. Label leak check: the most-pulled arm "
        f"of a pretraining dataset is its label in {meta['label_leak']:.3f} of 4096 datasets "
        f"(chance {1 / config.num_arms:.3f}).",
        f"Verdict rule: `verdicts.overall` of the two claims (`matches_or_beats` with margin "
        f"{MARGIN_SHARE:.0%} of Thompson's mean regret; `vs_zero`).",
        *study.record_lines(meta["settings"], record),
    ]
    return study.Report(
        title="In-context RL (#227 DPT): pretrained best-arm predictor vs Thompson sampling",
        claim="a transformer pretrained to predict the optimal action from in-context data, "
        "deployed online, explores like posterior sampling: its bandit regret is close to "
        "Thompson sampling's",
        claims=cl, reason=reason, arms=arms, notes=notes, digits=2, metric="cumulative regret",
        extra={
            "claims": {k: {**c, "text": CLAIMS[k]} for k, c in cl.items()},
            "curves": {n: np.cumsum(regret[n].mean(1), -1).mean(0).tolist() for n in names},
            "pretraining_accuracy_last": [float(v) for v in train_curve], **meta,
        },
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    config, regret, names = out["config"], out["regret"], ("dpt", *BASELINES)
    x = np.arange(1, config.horizon + 1)
    stats.plot_bands(x, {n: np.cumsum(regret[n].mean(1), -1) for n in names},
                     os.path.join(args.workdir, "regret.png"),
                     title=f"Bernoulli bandits, K={config.num_arms}: cumulative regret "
                     "(mean, 95% CI)", xlabel="pull", ylabel="cumulative regret")  # fmt: skip


def check(args) -> None:
    cli.check_int("--updates", args.updates, low=args.evals)
    cli.check_int("--arms", args.arms, low=2, high=64)
    cli.check_int("--horizon", args.horizon, low=10, high=1000)


def run(args) -> dict:
    t0 = time.perf_counter()
    config = dpt.Config(num_arms=args.arms, horizon=args.horizon)
    dpt.validate(config)
    seeds = jnp.arange(args.seed, args.seed + args.seeds)
    keys = jax.vmap(jax.random.PRNGKey)(seeds)
    state = jax.jit(jax.vmap(lambda k: dpt.init(config, k)))(keys)
    chunk = args.updates // args.evals
    train = jax.jit(jax.vmap(lambda s: dpt.train_chunk(config, s, chunk)))
    state, curve = _population.pretrain(train, state, args.evals, "best-arm accuracy", t0)
    test_key = jax.random.fold_in(jax.random.PRNGKey(args.seed), 10**6)
    means = bandits.sample_means(test_key, args.eval_tasks, args.arms)
    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    regret = evaluate(config, state, means, eval_keys)
    _population.log_evaluated(
        t0, "cumulative regret", {k: v.sum(-1).mean() for k, v in regret.items()}
    )
    settings = {k: getattr(args, k) for k in ("seeds", "updates", "eval_tasks", "evals", "arms",
                "horizon", "seed")}  # fmt: skip
    settings["dpt"] = {k: v for k, v in vars(config).items()}
    leak = label_leak(config, jax.random.PRNGKey(args.seed + 7))
    return {"config": config, "regret": regret, "curve": curve, "settings": settings,
            "label_leak": leak}  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/in_context_rl", run=run, report=report,
    plot=plot, check=check, seeds=0, defaults=DEFAULTS, quick=QUICK,
    low={"seeds": 3, "evals": 1, "eval-tasks": 1},
    options={
        "updates": (0, "pretraining updates per model"),
        "eval-tasks": (0, "new tasks for the online test"),
        "evals": (0, "pretraining chunks (progress lines)"), "arms": 5, "horizon": 30,
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
