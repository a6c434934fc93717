"""Stop Regressing (#118): MSE vs Huber vs two-hot vs HL-Gauss vs C51 value losses in DQN.

    PYTHONPATH=. nice -n 10 python experiments/ablate_stop_regressing.py            # default
    PYTHONPATH=. python experiments/ablate_stop_regressing.py --quick              # < 1 min idle
    PYTHONPATH=. python experiments/ablate_stop_regressing.py --studies=losses,acrobot
    PYTHONPATH=. python experiments/ablate_stop_regressing.py --studies=width      # opt-in
    PYTHONPATH=. python experiments/ablate_stop_regressing.py --studies=minatar    # opt-in

Farebrother et al. 2024 ("Stop Regressing: Training Value Functions via Classification") claim
that training the value function by cross-entropy on a categorical distribution over a fixed
support (two-hot, and best HL-Gauss with σ ≈ 0.75 bin widths) matches or beats MSE regression,
and that the gain grows with target noise and network size.

Arms (DQN of configs/dqn.py, 51 bins on [v_min, v_max]): MSE, Huber, two-hot CE, HL-Gauss with
σ/bin ∈ {0.25, 0.75, 2} (one program: σ is a vmapped hyperparameter), C51. Every arm's seeds
(and reward-noise levels, and σ) train together as one vmapped program (``rljax.train``).

Studies (``--studies``, comma-separated):

* ``losses`` (default): CartPole-v1 with reward noise std ∈ {0, 1} (Gaussian noise added to the
  sampled rewards in the TD targets: the "noisy targets" probe); 7 arms × 8 seeds × 100k env
  steps per agent.
* ``acrobot``: the same 7 arms on Acrobot-v1 without noise.
* ``width``: CartPole-v1, MSE vs HL-Gauss σ/bin = 0.75, 2-layer MLP widths {64, 256, 1024}.
* ``minatar``: Breakout-MinAtar and SpaceInvaders-MinAtar, MSE vs HL-Gauss 0.75 vs C51.

Metrics per agent: the final return (mean of the ε-greedy training episodes, ε at its 0.05
floor, that end in the last 10% of updates) and the AUC (mean of the episode-mean return over 20
equal windows of training). Per arm: mean and IQM over seeds with 95% stratified-bootstrap
intervals (``rljax.stats``); each arm against MSE: the difference of means with a 95% bootstrap
interval and P(arm > MSE). The verdict is computed from those intervals (see ``verdict``).

Writes results.md, results.json and one curves_<env>_noise<n>.png per panel into --workdir.

Measured time (2026-11-23, commit 046ccee, `nice -n 10`, the 2-core CPU shared with other jobs,
load average 9-12): the default's five CartPole programs took 1210 s (20.2 min) wall clock;
``--studies=losses,acrobot`` took 33.9 min (995 s of CPU time: the process got about half a
core). Most of it is XLA compilation (~1-2 min per program on the loaded machine, ~5 s idle) and
the HL-Gauss program's 48 agents. ``--quick``: ~25 s of CPU time (65 s wall at load 8).
Design: docs/value_based.md; claims, figures and verdicts: docs/reproductions.md.
"""

from rljax import xla_flags

xla_flags.set_flags()

import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import numpy as np  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents import dqn, learner  # noqa: E402
from rljax.train import arm_store, study, verdicts  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

SIGMAS = (0.25, 0.75, 2.0)
PAPER_SIGMA = 0.75
# arm -> (dqn.Config overrides, hparam overrides: one grid point each)
ARMS = {
    "mse": ({"head": "mse"}, [{}]),
    "huber": ({"head": "huber"}, [{}]),
    "two_hot": ({"head": "two_hot"}, [{}]),
    "hl_gauss": ({"head": "hl_gauss"}, [{"hl_sigma": s} for s in SIGMAS]),
    "hl_gauss_075": ({"head": "hl_gauss"}, [{"hl_sigma": PAPER_SIGMA}]),
    "c51": ({"head": "c51"}, [{}]),
}
ALL_LOSSES = ("mse", "huber", "two_hot", "hl_gauss", "c51")
# study -> list of panels: (env, arms, reward-noise levels, MLP width or None for the config's)
STUDIES = {
    "losses": [("CartPole-v1", ALL_LOSSES, (0.0, 1.0), None)],
    "acrobot": [("Acrobot-v1", ALL_LOSSES, (0.0,), None)],
    "width": [("CartPole-v1", ("mse", "hl_gauss_075"), (0.0,), w) for w in (64, 256, 1024)],
    "minatar": [
        (g, ("mse", "hl_gauss_075", "c51"), (0.0,), None)
        for g in ("Breakout-MinAtar", "SpaceInvaders-MinAtar")
    ],
}
STEPS = {"CartPole-v1": 100_000, "Acrobot-v1": 100_000}
# The opt-in studies' budgets: the largest that keeps each under 20 minutes on the idle 2-core
# CPU with 8 seeds (probed at 2 seeds x 20k steps: width 1024 costs ~12 s per 10k steps per
# 2 seeds, a MinAtar program ~2.3 s).
WIDTH_STEPS = 75_000
MINATAR_STEPS = 150_000
QUICK_PANELS = [
    ("CartPole-v1", ("mse", "hl_gauss"), (0.0, 1.0), None)
]  # --quick: 2 seeds, 6k steps


def arm_name(arm: str, point: dict) -> str:
    """Display name of one grid point of ``arm``."""
    if arm.startswith("hl_gauss"):
        return f"hl_gauss σ/bin={point['hl_sigma']:g}"
    return arm


def base_config(
    env_name: str, steps: int, width: int | None, overrides: dict | None = None
) -> tuple[dqn.Config, dict]:
    """configs/dqn.py for ``env_name`` (with ``overrides`` of its dqn block, e.g. the head),
    fitted to a run of ``steps`` env steps per agent.

    Short runs: ε reaches its floor by mid-run, the buffer holds at most half the run, and
    learning starts after at most a tenth of it.
    """
    c = study.config(__file__, "dqn", env_name)
    config = learner.config_from_dict(dqn.Config, "dqn", {**c.dqn.to_dict(), **(overrides or {})})
    hp = {k: float(v) for k, v in c.hparams.items()}
    hp["eps_decay_steps"] = min(hp["eps_decay_steps"], steps / 2)
    n = config.num_envs
    rows = max(config.n_step + 1, min(config.buffer_size, steps // 2) // n)
    starts = max(config.batch_size, min(config.learning_starts, steps // 10))
    target = max(n, min(config.target_update_every, steps // 20) // n * n)
    config = dataclasses.replace(
        config, buffer_size=rows * n, learning_starts=starts, target_update_every=target
    )
    if width is not None:
        config = dataclasses.replace(config, hidden=(width, width))
    return config, hp


def run_panel(env_name, arms, noises, width, seeds, steps, seed, log, store=None) -> dict:
    """Trains every arm of one panel; returns {name: {"final", "auc", "curve", "x", ...}}.

    With an ``arm_store.ArmStore``, each arm is saved as soon as it finishes and an arm stored
    with the same settings is loaded instead of trained.
    """
    out = {}
    for arm in arms:
        overrides, points = ARMS[arm]
        cfg, hp = base_config(env_name, steps, width, overrides)
        grid = [{**hp, **p, "reward_noise": n} for n in noises for p in points]
        name = f"{env_name}_w{cfg.hidden[0]}_{arm}_noise{'-'.join(f'{n:g}' for n in noises)}"
        settings = {"config": repr(cfg), "grid": grid, "seeds": seeds, "steps": steps,
                    "seed": seed}  # fmt: skip
        stored = store.load(name, settings) if store is not None else None
        if stored is None:
            res = _population.train_population(dqn, cfg, env_name, grid, seeds, steps, seed)
            stored = {
                "ret": res["ret"], "cnt": res["cnt"], "per_update": res["per_update"],
                "seconds": res["seconds"],
            }  # fmt: skip
            if store is not None:
                store.save(name, settings, stored)
        res = stored
        m = _population.final_and_auc(res["ret"], res["cnt"])
        curve, x = _population.binned_curve(res["ret"], res["cnt"], 20)
        for g, point in enumerate(grid):
            sl = slice(g * seeds, (g + 1) * seeds)
            key = (env_name, cfg.hidden[0], point["reward_noise"], arm_name(arm, point))
            out[key] = {
                "final": m["final"][sl],
                "auc": m["auc"][sl],
                "curve": curve[sl],
                "x": x * res["per_update"],
            }
        log(
            f"{env_name} width={cfg.hidden[0]} {arm} ×{len(grid)} points × {seeds} seeds: "
            f"{float(res['seconds']):.0f} s; final per agent {np.round(m['final'], 1).tolist()}"
        )
    return out


# "X matches or beats MSE" holds when X is not worse than MSE by more than this share of
# |MSE's mean final return| in the same panel (a tie within the margin is a match).
MATCH_MARGIN = 0.1
_WORDS = {"reproduced": "holds", "contradicted": "fails", "not at this scale": "tie"}


def _claim_status(diff_ci) -> str:
    """'holds' (interval above 0), 'fails' (below 0) or 'tie': for "X grows" claims."""
    return _WORDS[verdicts.vs_zero(diff_ci)]


def _match_status(diff_ci, mse_mean: float) -> str:
    """'holds' / 'fails' / 'tie' for "X matches or beats MSE" (``verdicts.matches_or_beats``
    with a margin of ``MATCH_MARGIN`` × |MSE's mean|)."""
    return _WORDS[verdicts.matches_or_beats(diff_ci, margin=MATCH_MARGIN * abs(mse_mean))]


def gap_growth(ce_hi, mse_hi, ce_lo, mse_lo, seed: int = 0) -> dict:
    """(CE − MSE) at the high setting minus (CE − MSE) at the low one, with a bootstrap interval.

    Each of the four arms' seeds is resampled independently.
    """
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a, np.float64) for a in (ce_hi, mse_hi, ce_lo, mse_lo)]

    def stat(xs):
        return (xs[0].mean() - xs[1].mean()) - (xs[2].mean() - xs[3].mean())

    boots = [
        stat([a[rng.integers(0, len(a), len(a))] for a in arrays])
        for _ in range(stats.NUM_RESAMPLES)
    ]
    alpha = (1 - stats.CONFIDENCE) / 2
    return {
        "growth": float(stat(arrays)),
        "growth_ci": [float(v) for v in np.quantile(boots, [alpha, 1 - alpha])],
    }


def verdict(results: dict, comparisons: dict) -> tuple[str, dict]:
    """Claim-by-claim reading of the runs: (reason, claims).

    Claims checked (each 'holds' / 'tie' / 'fails' from a 95% interval of a difference of mean
    final returns): (1) HL-Gauss at the paper's σ/bin = 0.75 matches or beats MSE, per
    environment without noise: holds when the interval's lower end is above −MATCH_MARGIN ×
    |MSE's mean| (a tie within that margin is a match), fails when its upper end is below it;
    (2) two-hot matches or beats MSE, likewise; (3) the HL-Gauss − MSE gap grows with reward
    noise (interval above 0); (4) it grows with width (64 → 1024). Verdict: the common rule of
    ``verdicts.overall``.
    """
    by = {k: v["final"] for k, v in results.items()}
    claims = {}
    for key, c in comparisons.items():
        env, width, noise, arm = key
        if noise == 0 and arm in (f"hl_gauss σ/bin={PAPER_SIGMA:g}", "two_hot"):
            mse_mean = float(np.mean(by[(env, width, noise, "mse")]))
            claims[f"{arm} matches or beats MSE on {env} (width {width})"] = (
                _match_status(c["final"]["diff_ci"], mse_mean),
                c["final"]["diff"],
                c["final"]["diff_ci"],
            )
    hl = f"hl_gauss σ/bin={PAPER_SIGMA:g}"
    envs_noise = {(k[0], k[1]) for k in by if k[2] > 0}
    for env, width in sorted(envs_noise):
        hi = max(k[2] for k in by if k[:2] == (env, width))
        if (env, width, 0.0, hl) in by and (env, width, hi, hl) in by:
            g = gap_growth(
                by[(env, width, hi, hl)],
                by[(env, width, hi, "mse")],
                by[(env, width, 0.0, hl)],
                by[(env, width, 0.0, "mse")],
            )
            claims[f"{hl} − MSE gap grows with reward noise 0 → {hi:g} on {env}"] = (
                _claim_status(g["growth_ci"]),
                g["growth"],
                g["growth_ci"],
            )
    widths = sorted({k[1] for k in by if k[2] == 0.0})
    for env in sorted({k[0] for k in by}):
        ws = [w for w in widths if (env, w, 0.0, hl) in by and (env, w, 0.0, "mse") in by]
        if len(ws) >= 2:
            lo, hi = ws[0], ws[-1]
            g = gap_growth(
                by[(env, hi, 0.0, hl)],
                by[(env, hi, 0.0, "mse")],
                by[(env, lo, 0.0, hl)],
                by[(env, lo, 0.0, "mse")],
            )
            claims[f"{hl} − MSE gap grows with width {lo} → {hi} on {env}"] = (
                _claim_status(g["growth_ci"]),
                g["growth"],
                g["growth_ci"],
            )
    if not claims:  # --arms left out every arm a claim needs
        return "no claim was checked: the arms it needs did not run.", {}
    rules = (
        f" (95% intervals of final-return differences; a 'matches or beats MSE' claim holds "
        f"above −{MATCH_MARGIN:g}×|MSE's mean|, a 'grows' claim above 0)"
    )
    return study.tally(claims, rules), claims


def analyse(results: dict) -> dict:
    """Per-arm summaries and each arm vs MSE in its own panel (same env, width, noise)."""
    summaries, comparisons = {}, {}
    for key, r in results.items():
        summaries[key] = {m: stats.summarize(r[m]) for m in ("final", "auc")}
        base = (*key[:3], "mse")
        if key[3] != "mse" and base in results:
            comparisons[key] = {m: stats.compare(r[m], results[base][m]) for m in ("final", "auc")}
    return {"summaries": summaries, "comparisons": comparisons}


def _label(key) -> str:
    env, width, noise, arm = key
    return f"{env} · width {width} · noise {noise:g} · {arm}"


def report(args, out: dict, record: dict) -> study.Report:
    results, meta = out["results"], {"settings": out["settings"], **record}
    a = analyse(results)
    reason, claims = verdict(results, a["comparisons"])
    fmt = lambda s, k="mean": stats.format_interval(s, k, 1)  # noqa: E731
    notes = [
        "**AUC and each arm against MSE** (same panel). Δ = arm − MSE, difference of means "
        "with a 95% bootstrap interval; P = P(arm > MSE) with its interval.",
        "",
        "| panel · arm | AUC mean [95% CI] | AUC IQM | Δ final vs MSE | P(final > MSE) | "
        "Δ AUC vs MSE |",
        "|---|---|---|---|---|---|",
    ]
    for key, s in a["summaries"].items():
        c = a["comparisons"].get(key)
        if c:
            f, u = c["final"], c["auc"]
            cmp = (
                f"{f['diff']:+.1f} [{f['diff_ci'][0]:+.1f}, {f['diff_ci'][1]:+.1f}] | "
                f"{f['prob_improvement']:.2f} [{f['prob_improvement_ci'][0]:.2f}, "
                f"{f['prob_improvement_ci'][1]:.2f}] | {u['diff']:+.1f} "
                f"[{u['diff_ci'][0]:+.1f}, {u['diff_ci'][1]:+.1f}]"
            )
        else:
            cmp = "— | — | —"
        notes.append(f"| {_label(key)} | {fmt(s['auc'])} | {fmt(s['auc'], 'iqm')} | {cmp} |")
    notes += ["", *study.checked_claims(claims, 1)]
    notes += [
        "",
        f"Settings: {json.dumps(meta['settings'])}.",
        f"Wall time: {meta['seconds']:.0f} s ({meta['load']}).",
    ]
    return study.Report(
        title="Stop Regressing (#118, ablation 2): value losses in DQN",
        claim=(
            "cross-entropy value losses (two-hot, HL-Gauss σ/bin ≈ 0.75) match or beat MSE "
            "regression, and the gain grows with target noise and network width"
        ),
        claims=claims,
        reason=reason,
        arms={_label(k): s["final"] for k, s in a["summaries"].items()},
        metric="final return (training episodes, last 10%)",
        extra={
            "auc": {_label(k): s["auc"] for k, s in a["summaries"].items()},
            "vs_mse": {_label(k): c for k, c in a["comparisons"].items()},
            "claims": {
                k: {"status": s, "estimate": e, "ci": ci} for k, (s, e, ci) in claims.items()
            },
            **meta,
        },
        notes=notes,
        digits=1,
    )


def plot(args, out: dict, _) -> None:
    panels = {}
    for key, r in out["results"].items():
        panels.setdefault(key[:3], {})[key[3]] = r
    for (env, width, noise), arms in panels.items():
        x = next(iter(arms.values()))["x"]
        stats.plot_bands(
            x,
            {name: r["curve"] for name, r in arms.items()},
            os.path.join(args.workdir, f"curves_{env}_w{width}_noise{noise:g}.png"),
            title=f"{env}, width {width}, reward noise {noise:g} (mean, 95% CI)",
            xlabel="env steps per agent",
            ylabel="training episode return",
        )


def add_flags(p) -> None:
    p.add_argument("--studies", default="losses", help=f"comma-separated of {', '.join(STUDIES)}")
    p.add_argument("--arms", default="", help=f"only these arms (comma-separated of {ALL_LOSSES})")


def check(args) -> None:
    for s in args.studies.split(","):
        cli.check_choice("--studies", s, STUDIES)
    for a in filter(None, args.arms.split(",")):
        cli.check_choice("--arms", a, ALL_LOSSES)


def run(args) -> dict:
    log = lambda s: print(s, flush=True)  # noqa: E731
    panels = (
        QUICK_PANELS if args.quick else [p for s in args.studies.split(",") for p in STUDIES[s]]
    )
    if args.arms:
        keep = args.arms.split(",")
        panels = [(e, tuple(a for a in arms if a in keep), n, w) for e, arms, n, w in panels]
    results, settings = {}, []
    store = arm_store.ArmStore(args.workdir, resume=args.resume, log=log)
    for env_name, arms, noises, width in panels:
        study_steps = WIDTH_STEPS if width is not None else STEPS.get(env_name, MINATAR_STEPS)
        steps = args.steps or study_steps
        settings.append(
            {
                "env": env_name,
                "arms": list(arms),
                "reward_noise": list(noises),
                "width": width,
                "seeds": args.seeds,
                "env_steps": steps,
            }
        )
        results.update(
            run_panel(env_name, arms, noises, width, args.seeds, steps, args.seed, log, store)
        )
    return {"results": results, "settings": settings}


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/ablate_stop_regressing", run=run, report=report,
    plot=plot, flags=add_flags, check=check, seeds=8, steps=0, resume=True,
    quick={"seeds": 2, "steps": 6_000}, low={"seeds": 2, "steps": 0},
)  # fmt: skip
main = STUDY.main

if __name__ == "__main__":
    STUDY.entry()
