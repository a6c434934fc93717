"""Hyperparameter landscape and tuning-seed overfitting (#80, ablation 14) with PPO.

    PYTHONPATH=. nice -n 10 python experiments/hparam_landscape.py                # default
    PYTHONPATH=. python experiments/hparam_landscape.py --quick                  # smoke test
    PYTHONPATH=. python experiments/hparam_landscape.py --envs=Pendulum-v1      # the third env

Eimer, Lindauer & Raileanu 2023 ("Hyperparameters in Reinforcement Learning and How To Tune
Them") claim: the landscape depends strongly on the tuning seeds, so a configuration chosen on
them overfits (separate tuning and test seeds); most hyperparameters matter; and HPO methods
beat grid search at equal (or much lower) budget.

Per environment, one vmapped program trains PPO (configs/ppo.py) with 128 random configurations
plus a 20-point grid, × 5 tuning seeds. The six vmappable hyperparameters are sampled
log-uniformly: lr ∈ [1e-4, 1e-2], clip_eps ∈ [0.05, 0.5], ent_coef ∈ [1e-4, 0.1],
vf_coef ∈ [0.1, 2], 1 − gamma ∈ [0.001, 0.1], 1 − gae_lambda ∈ [0.01, 0.3]; the grid is lr ∈
{1e-4, 3e-4, 1e-3, 3e-3, 1e-2} × gamma ∈ {0.9, 0.95, 0.99, 0.999} (the rest at the config's
values). Score of a run: the mean return of the training episodes ending in the last 10% of
updates (PPO's stochastic policy).

At equal budget (20 full runs × 5 tuning seeds each):

* grid search: the 20 grid points;
* random search: 20 random configurations (pool indices 64..83);
* successive halving (η = 2): 64 random configurations (pool indices 0..63) scored after 1/8 of
  the budget, the best 32 continued to 1/4, 16 to 1/2, 8 to the end (8 + 4 + 4 + 4 = 20 run
  units); simulated from the full runs' curves, which is exact because a run's prefix does not
  depend on its future (PPO's annealed learning rate is set by the full budget, as when SH
  pauses and resumes runs). A rung's score is the mean return of the episodes in its last 10%.

A second program re-tests on 10 fresh seeds: the top 5 configurations by tuning score and the
three methods' picks. Reported: rank correlation (Spearman) of the 128 random configurations'
scores on tuning seeds {0, 1} vs {2, 3, 4} (bootstrap over configurations); tuning vs test score
of the top configuration (overfitting = the drop); per-hyperparameter importance as the variance
of the score explained by that hyperparameter alone (8 quantile bins; bootstrap over
configurations); the methods' picks on the test seeds.

Writes results.md, results.json and landscape_<env>.png into --workdir.

Measured time of the default (2026-11-24, commit 0d9d45a, one XLA thread pinned to one core of
the 2-core AMD EPYC): 16 min 16 s wall clock (CartPole 205 s, Acrobot 685 s + re-tests).
Pendulum (100k steps, 4 epochs x 8 minibatches: see STATIC) is a separate command; its time is
in docs/value_based.md. ``--quick``: 33 s at load ~7 (2-core CPU, 2026-11-23).
"""

import sys

from rljax import xla_flags

# One XLA thread: on the loaded 2-core machine a PPO program with XLA's default pool hung after
# compiling (experiments/ablate_effective_horizon.py); small programs gain little from the pool.
# (Only when this process starts JAX: a test that imports the script keeps its own settings.)
xla_flags.set_flags(cpu_threads=None if "jax" in sys.modules else 1)

import os  # noqa: E402

import numpy as np  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents import learner, ppo  # noqa: E402
from rljax.train import arm_store, study  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

# name -> (low, high, transform): value = transform(log-uniform draw in [low, high])
SPACE = {
    "lr": (1e-4, 1e-2, lambda u: u),
    "clip_eps": (0.05, 0.5, lambda u: u),
    "ent_coef": (1e-4, 0.1, lambda u: u),
    "vf_coef": (0.1, 2.0, lambda u: u),
    "gamma": (1e-3, 0.1, lambda u: 1.0 - u),
    "gae_lambda": (0.01, 0.3, lambda u: 1.0 - u),
}
GRID = {"lr": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), "gamma": (0.9, 0.95, 0.99, 0.999)}
STEPS = {"CartPole-v1": 100_000, "Acrobot-v1": 100_000, "Pendulum-v1": 100_000}
DEFAULT_ENVS = "CartPole-v1,Acrobot-v1"
# The study's static PPO settings where they differ from configs/ppo.py: Pendulum's 10 epochs x 32
# minibatches per 2,048 steps (tuned for 2M steps) made the 148 x 5 program run past 45 minutes
# on one core at 200k steps; 4 x 8 does a tenth of the SGD steps.
STATIC = {"Pendulum-v1": {"num_epochs": 4, "num_minibatches": 8}}
SH_POOL, SH_RUNGS, RS_SLICE = 64, (8, 4, 2, 1), slice(64, 84)


def sample_configs(n: int, base: dict, seed: int) -> list[dict]:
    """``n`` random configurations (log-uniform per hyperparameter) over ``base``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        point = dict(base)
        for name, (lo, hi, f) in SPACE.items():
            point[name] = float(f(np.exp(rng.uniform(np.log(lo), np.log(hi)))))
        out.append(point)
    return out


def grid_configs(base: dict) -> list[dict]:
    return [{**base, "lr": lr, "gamma": g} for lr in GRID["lr"] for g in GRID["gamma"]]


def rung_scores(ret, cnt, fractions) -> np.ndarray:
    """``[A, len(fractions)]``: mean return of episodes in the last 10% of each prefix."""
    u = ret.shape[1]
    cols = []
    for f in fractions:
        end = max(1, int(round(f * u)))
        cols.append(_population.episode_mean(ret, cnt, slice(int(0.9 * end), end)))
    return np.stack(cols, 1)


def successive_halving(scores: np.ndarray) -> int:
    """Index (into ``scores [N, R]``) of SH's pick: keep the best half after each rung."""
    alive = np.arange(scores.shape[0])
    for r in range(scores.shape[1] - 1):
        order = np.argsort(-np.nan_to_num(scores[alive, r], nan=-np.inf))
        alive = alive[order[: max(1, len(alive) // 2)]]
    return int(alive[np.argmax(np.nan_to_num(scores[alive, -1], nan=-np.inf))])


def sh_budget(n: int) -> float:
    """Full-run units SH spends: Σ_r n_r (f_r − f_{r−1}), n_r = n / 2^r, f_r = 1 / SH_RUNGS[r]."""
    fr = [0.0] + [1.0 / r for r in SH_RUNGS]
    return float(sum(max(1, n // 2**r) * (fr[r + 1] - fr[r]) for r in range(len(SH_RUNGS))))


def importance(configs: list[dict], score: np.ndarray, bins: int = 8, seed: int = 0) -> dict:
    """Per hyperparameter: Var(E[score | bin]) / Var(score) with a bootstrap interval."""
    rng = np.random.default_rng(seed)

    def explained(x, y):
        edges = np.quantile(x, np.linspace(0, 1, bins + 1)[1:-1])
        b = np.digitize(x, edges)
        means = np.array([y[b == i].mean() if np.any(b == i) else 0.0 for i in range(bins)])
        counts = np.array([np.sum(b == i) for i in range(bins)])
        var = y.var()
        return float(np.sum(counts * (means - y.mean()) ** 2) / len(y) / var) if var > 0 else 0.0

    out = {}
    for name in SPACE:
        x = np.array([c[name] for c in configs])
        boots = []
        for _ in range(500):
            i = rng.integers(0, len(x), len(x))
            boots.append(explained(x[i], score[i]))
        lo, hi = np.quantile(boots, [0.025, 0.975])
        out[name] = {"explained": explained(x, score), "ci": [float(lo), float(hi)]}
    return out


def spearman_ci(a: np.ndarray, b: np.ndarray, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rho = float(scipy_stats.spearmanr(a, b).statistic)
    boots = []
    for _ in range(1000):
        i = rng.integers(0, len(a), len(a))
        boots.append(scipy_stats.spearmanr(a[i], b[i]).statistic)
    boots = np.asarray(boots)
    boots = boots[np.isfinite(boots)]
    return {"rho": rho, "ci": [float(v) for v in np.quantile(boots, [0.025, 0.975])]}


def run_env(name, n_configs, seeds, test_seeds, steps, seed, log) -> dict:
    c = study.config(__file__, "ppo", name)
    cfg = learner.config_from_dict(ppo.Config, "ppo", {**c.ppo.to_dict(), **STATIC.get(name, {})})
    base = {k: float(v) for k, v in c.hparams.items()}
    pool = sample_configs(n_configs, base, seed)
    grid = grid_configs(base)
    points = pool + grid
    res = _population.train_population(ppo, cfg, name, points, seeds, steps, seed)
    log(f"{name}: {len(points)} configs × {seeds} seeds × {steps} steps: {res['seconds']:.0f} s")
    final = _population.episode_mean(res["ret"], res["cnt"], slice(int(0.9 * res["updates"]), None))
    final = np.nan_to_num(final, nan=np.nanmin(final)).reshape(len(points), seeds)
    score = final.mean(1)
    n_pool = len(pool)
    sh_n = min(SH_POOL, n_pool)
    fr = [1.0 / r for r in SH_RUNGS]
    rungs = rung_scores(res["ret"], res["cnt"], fr).reshape(len(points), seeds, len(fr)).mean(1)
    rs_idx = list(range(n_pool))[RS_SLICE] or list(range(n_pool))
    picks = {
        "grid": n_pool + int(np.argmax(score[n_pool:])),
        "random search": rs_idx[int(np.argmax(score[rs_idx]))],
        "successive halving": successive_halving(rungs[:sh_n]),
    }
    top = [int(i) for i in np.argsort(-score[:n_pool])[:5]]
    retest = list(dict.fromkeys(top + list(picks.values())))
    test = _population.train_population(
        ppo, cfg, name, [points[i] for i in retest], test_seeds, steps, seed + 10_000
    )
    log(
        f"{name}: re-test {len(retest)} configs × {test_seeds} fresh seeds: {test['seconds']:.0f} s"
    )
    tf = _population.episode_mean(test["ret"], test["cnt"], slice(int(0.9 * test["updates"]), None))
    tf = np.nan_to_num(tf, nan=np.nanmin(tf)).reshape(len(retest), test_seeds)
    test_of = {i: tf[j] for j, i in enumerate(retest)}
    split = max(1, seeds * 2 // 5)
    return {
        "points": points,
        "final": final,
        "score": score,
        "n_pool": n_pool,
        "picks": picks,
        "top": top,
        "test": test_of,
        "seed_split_rho": spearman_ci(
            final[:n_pool, :split].mean(1), final[:n_pool, split:].mean(1)
        ),
        "importance": importance(pool, score[:n_pool]),
        "seconds": res["seconds"] + test["seconds"],
        "budget_units": {
            "grid": len(grid),
            "random search": len(rs_idx),
            "successive halving": sh_budget(sh_n),
        },
    }


def claims_for(name, r) -> dict:
    """Each claim's status ('holds' / 'tie' / 'fails') from a 95% interval."""
    out = {}
    best = r["top"][0]
    cmp = stats.compare(r["final"][best], r["test"][best])
    out[f"{name}: the top tuning-seed config scores lower on fresh seeds (overfitting)"] = (
        "holds" if cmp["diff_ci"][0] > 0 else "fails" if cmp["diff_ci"][1] < 0 else "tie",
        cmp["diff"],
        cmp["diff_ci"],
    )
    rho = r["seed_split_rho"]
    out[f"{name}: config ranks differ across tuning-seed sets (Spearman ρ < 0.9)"] = (
        "holds" if rho["ci"][1] < 0.9 else "fails" if rho["ci"][0] >= 0.9 else "tie",
        rho["rho"],
        rho["ci"],
    )
    g = r["test"][r["picks"]["grid"]]
    for m in ("random search", "successive halving"):
        c = stats.compare(r["test"][r["picks"][m]], g)
        out[f"{name}: {m} ≥ grid at equal budget (fresh seeds)"] = (
            "holds" if c["diff_ci"][0] > 0 else "fails" if c["diff_ci"][1] < 0 else "tie",
            c["diff"],
            c["diff_ci"],
        )
    imp = r["importance"]
    matter = [k for k, v in imp.items() if v["ci"][0] > 0.05]
    out[f"{name}: most hyperparameters matter (≥ 4 of 6 explain > 5% of score variance)"] = (
        "holds" if len(matter) >= 4 else "fails" if len(matter) <= 1 else "tie",
        float(len(matter)),
        [0.0, 6.0],
    )
    return out


def report(args, results: dict, record: dict) -> study.Report:
    meta = {"seeds": args.seeds, "test_seeds": args.test_seeds, "steps": _steps(args), **record}
    arms, claims, notes = {}, {}, []
    for name, r in results.items():
        labels = {}
        for m, i in r["picks"].items():
            labels.setdefault(i, []).append(m)
        for i in r["test"]:
            tags = list(labels.get(i, []))
            if i in r["top"]:
                tags.append(f"top-{r['top'].index(i) + 1}")
            tag = ", ".join(tags)
            arms[f"{name} · config {i} ({tag}) · tuning seeds"] = stats.summarize(r["final"][i])
            arms[f"{name} · config {i} ({tag}) · fresh seeds"] = stats.summarize(r["test"][i])
        claims.update(claims_for(name, r))
        notes += [
            f"**{name}** ({len(r['points'])} configs; {meta['seeds']} tuning seeds, "
            f"{meta['test_seeds']} fresh seeds; budget units {r['budget_units']}):",
            "",
            f"* Spearman ρ of config scores, tuning seeds split in two: "
            f"{r['seed_split_rho']['rho']:.2f} [{r['seed_split_rho']['ci'][0]:.2f}, "
            f"{r['seed_split_rho']['ci'][1]:.2f}]",
            "* importance (share of score variance explained, 95% CI): "
            + ", ".join(
                f"{k} {v['explained']:.2f} [{v['ci'][0]:.2f}, {v['ci'][1]:.2f}]"
                for k, v in r["importance"].items()
            ),
            "* picks: "
            + ", ".join(
                f"{m} → config {i} "
                + "("
                + ", ".join(f"{k}={r['points'][i][k]:.3g}" for k in SPACE)
                + ")"
                for m, i in r["picks"].items()
            ),
            "",
        ]
    notes += study.checked_claims(claims, 2)
    notes += ["", f"Wall time {meta['seconds']:.0f} s ({meta['load']}); steps {meta['steps']}."]
    return study.Report(
        title="Hyperparameter landscape and tuning-seed overfitting (#80, ablation 14)",
        claim=(
            "the landscape depends strongly on the tuning seeds (a config tuned on them "
            "overfits), most hyperparameters matter, and HPO beats grid search at equal "
            "budget"
        ),
        claims=claims,
        reason=study.tally(claims),
        arms=arms,
        metric="return (training episodes, last 10%)",
        extra={
            "claims": {
                k: {"status": s, "estimate": e, "ci": ci} for k, (s, e, ci) in claims.items()
            },
            "envs": {
                n: {
                    "picks": r["picks"],
                    "top": r["top"],
                    "seed_split_rho": r["seed_split_rho"],
                    "importance": r["importance"],
                    "budget_units": r["budget_units"],
                    "configs": r["points"],
                    "tuning_scores": r["score"].tolist(),
                    "seconds": r["seconds"],
                }
                for n, r in results.items()
            },
            **meta,
        },
        notes=notes,
        digits=1,
    )


def plot(args, results: dict, _) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, r in results.items():
        n = r["n_pool"]
        fig, axes = plt.subplots(1, len(SPACE) + 1, figsize=(3.0 * (len(SPACE) + 1), 3.0))
        for ax, key in zip(axes[:-1], SPACE, strict=True):
            x = [p[key] for p in r["points"][:n]]
            ax.scatter(x, r["score"][:n], s=8, alpha=0.7)
            if key in ("lr", "ent_coef", "clip_eps", "vf_coef"):
                ax.set_xscale("log")
            ax.set_xlabel(key)
            ax.set_title(f"{r['importance'][key]['explained']:.2f} explained", fontsize=8)
        axes[0].set_ylabel(f"{name} tuning score")
        split = max(1, r["final"].shape[1] * 2 // 5)
        axes[-1].scatter(r["final"][:n, :split].mean(1), r["final"][:n, split:].mean(1), s=8)
        axes[-1].set_xlabel("score, tuning seeds A")
        axes[-1].set_ylabel("score, tuning seeds B")
        axes[-1].set_title(f"ρ = {r['seed_split_rho']['rho']:.2f}", fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(args.workdir, f"landscape_{name}.png"), dpi=100)
        plt.close(fig)


def add_flags(p) -> None:
    p.add_argument("--envs", default=DEFAULT_ENVS)
    p.add_argument("--configs", type=int, default=128)
    p.add_argument("--test_seeds", type=int, default=10)


def check(args) -> None:
    for e in args.envs.split(","):
        cli.check_choice("--envs", e, STEPS)


def _steps(args) -> dict:
    return {e: args.steps or STEPS[e] for e in args.envs.split(",")}


def run(args) -> dict:
    log = lambda s: print(s, flush=True)  # noqa: E731
    n, seeds, test_seeds, steps = args.configs, args.seeds, args.test_seeds, _steps(args)
    return {  # each environment is kept as it finishes; --resume reuses it
        e: arm_store.cached(
            args.workdir,
            f"env_{e}",
            {
                "n": n,
                "seeds": seeds,
                "test_seeds": test_seeds,
                "steps": steps[e],
                "seed": args.seed,
            },
            lambda e=e: run_env(e, n, seeds, test_seeds, steps[e], args.seed, log),
            resume=args.resume,
            log=log,
        )  # fmt: skip
        for e in args.envs.split(",")
    }


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/hparam_landscape", run=run, report=report,
    plot=plot, flags=add_flags, check=check, seeds=5, steps=0, resume=True,
    quick={"envs": "CartPole-v1", "configs": 24, "seeds": 3, "test_seeds": 3, "steps": 8_192},
    low={"configs": 8, "seeds": 2, "test_seeds": 2},
)  # fmt: skip
main = STUDY.main

if __name__ == "__main__":
    STUDY.entry()
