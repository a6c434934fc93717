"""Hyperparameter landscape and tuning-seed overfitting (#80, ablation 14) with PPO.

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

Plots: landscape_<env>.png. The default took 16 min on one core of the 2-core CPU; Pendulum (100k
steps, 4 epochs x 8 minibatches: see STATIC) is a separate command (its time: docs/value_based.md).
"""

import sys

from rljax import xla_flags

# One XLA thread: on the loaded 2-core machine a PPO program with XLA's default pool hung after
# compiling (experiments/ablate_effective_horizon.py); small programs gain little from the pool.
# (Only when this process starts JAX: a test that imports the script keeps its own settings.)
xla_flags.set_flags(cpu_threads=None if "jax" in sys.modules else 1)

import os  # noqa: E402

import numpy as np  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents import learner, ppo  # noqa: E402
from rljax.train import arm_store, study, study_stats, verdicts  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

# name -> (low, high, transform): value = transform(log-uniform draw in [low, high])
SPACE = {
    "lr": (1e-4, 1e-2, lambda u: u), "clip_eps": (0.05, 0.5, lambda u: u),
    "ent_coef": (1e-4, 0.1, lambda u: u), "vf_coef": (0.1, 2.0, lambda u: u),
    "gamma": (1e-3, 0.1, lambda u: 1.0 - u), "gae_lambda": (0.01, 0.3, lambda u: 1.0 - u),
}  # fmt: skip
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
    """ρ(a, b) and its 95% interval from 1,000 resamples of the pairs."""
    rng = np.random.default_rng(seed)
    draws = [study_stats.spearman(a[i], b[i])
             for i in (rng.integers(0, len(a), len(a)) for _ in range(1000))]  # fmt: skip
    return {"rho": study_stats.spearman(a, b), "ci": study_stats.interval(draws, alpha=0.025)}


def run_env(name, n_configs, seeds, test_seeds, steps, seed, log) -> dict:
    c = study.config(__file__, "ppo", name)
    cfg = learner.config_from_dict(ppo.Config, "ppo", {**c.ppo.to_dict(), **STATIC.get(name, {})})
    base = {k: float(v) for k, v in c.hparams.items()}
    pool = sample_configs(n_configs, base, seed)
    grid = [{**base, "lr": lr, "gamma": g} for lr in GRID["lr"] for g in GRID["gamma"]]
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
    test = _population.train_population(ppo, cfg, name, [points[i] for i in retest], test_seeds,
                                        steps, seed + 10_000)  # fmt: skip
    log(f"{name}: re-test {len(retest)} configs × {test_seeds} fresh seeds: "
        f"{test['seconds']:.0f} s")  # fmt: skip
    tf = _population.episode_mean(test["ret"], test["cnt"], slice(int(0.9 * test["updates"]), None))
    tf = np.nan_to_num(tf, nan=np.nanmin(tf)).reshape(len(retest), test_seeds)
    test_of = {i: tf[j] for j, i in enumerate(retest)}
    split = max(1, seeds * 2 // 5)
    return {
        "points": points, "final": final, "score": score, "n_pool": n_pool, "picks": picks,
        "top": top, "test": test_of,
        "seed_split_rho": spearman_ci(final[:n_pool, :split].mean(1),
                                      final[:n_pool, split:].mean(1)),
        "importance": importance(pool, score[:n_pool]), "seconds": res["seconds"] + test["seconds"],
        "budget_units": {"grid": len(grid), "random search": len(rs_idx),
                         "successive halving": sh_budget(sh_n)},
    }  # fmt: skip


def claims_for(name, r) -> dict:
    """Each claim's status ('holds' / 'tie' / 'fails') from a 95% interval."""
    out = {}
    best = r["top"][0]
    cmp = stats.compare(r["final"][best], r["test"][best])
    word = lambda ci: verdicts.WORDS[verdicts.vs_zero(ci)]  # noqa: E731
    out[f"{name}: the top tuning-seed config scores lower on fresh seeds (overfitting)"] = (
        word(cmp["diff_ci"]), cmp["diff"], cmp["diff_ci"],
    )  # fmt: skip
    rho = r["seed_split_rho"]
    out[f"{name}: config ranks differ across tuning-seed sets (Spearman ρ < 0.9)"] = (
        "holds" if rho["ci"][1] < 0.9 else "fails" if rho["ci"][0] >= 0.9 else "tie", rho["rho"],
        rho["ci"],
    )  # fmt: skip
    g = r["test"][r["picks"]["grid"]]
    for m in ("random search", "successive halving"):
        c = stats.compare(r["test"][r["picks"][m]], g)
        out[f"{name}: {m} ≥ grid at equal budget (fresh seeds)"] = (
            word(c["diff_ci"]), c["diff"], c["diff_ci"],
        )  # fmt: skip
    matter = [k for k, v in r["importance"].items() if v["ci"][0] > 0.05]
    out[f"{name}: most hyperparameters matter (≥ 4 of 6 explain > 5% of score variance)"] = (
        "holds" if len(matter) >= 4 else "fails" if len(matter) <= 1 else "tie", float(len(matter)),
        [0.0, 6.0],
    )  # fmt: skip
    return out  # fmt: skip


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
            + ", ".join(f"{k} {v['explained']:.2f} [{v['ci'][0]:.2f}, {v['ci'][1]:.2f}]"
                        for k, v in r["importance"].items()),
            "* picks: " + ", ".join(
                f"{m} → config {i} ("
                + ", ".join(f"{k}={r['points'][i][k]:.3g}" for k in SPACE) + ")"
                for m, i in r["picks"].items()),
            "",
        ]  # fmt: skip
    notes += study.checked_claims(claims, 2)
    notes += ["", f"Wall time {meta['seconds']:.0f} s ({meta['load']}); steps {meta['steps']}."]
    return study.Report(
        title="Hyperparameter landscape and tuning-seed overfitting (#80, ablation 14)",
        claim="the landscape depends strongly on the tuning seeds (a config tuned on them "
        "overfits), most hyperparameters matter, and HPO beats grid search at equal budget",
        claims=claims, reason=study.tally(claims), arms=arms, notes=notes, digits=1,
        metric="return (training episodes, last 10%)",
        extra={
            "claims": {k: {"status": s, "estimate": e, "ci": ci}
                       for k, (s, e, ci) in claims.items()},
            "envs": {
                n: {"picks": r["picks"], "top": r["top"], "seed_split_rho": r["seed_split_rho"],
                    "importance": r["importance"], "budget_units": r["budget_units"],
                    "configs": r["points"], "tuning_scores": r["score"].tolist(),
                    "seconds": r["seconds"]}
                for n, r in results.items()
            },
            **meta,
        },
    )  # fmt: skip


def plot(args, results: dict, _) -> None:
    for name, r in results.items():
        n, path = r["n_pool"], os.path.join(args.workdir, f"landscape_{name}.png")
        size = (3.0 * (len(SPACE) + 1), 3.0)
        with study.figure(path, ncols=len(SPACE) + 1, figsize=size, dpi=100) as (_, axes):
            for ax, key in zip(axes[:-1], SPACE, strict=True):
                ax.scatter([p[key] for p in r["points"][:n]], r["score"][:n], s=8, alpha=0.7)
                if key in ("lr", "ent_coef", "clip_eps", "vf_coef"):
                    ax.set_xscale("log")
                ax.set_xlabel(key)
                ax.set_title(f"{r['importance'][key]['explained']:.2f} explained", fontsize=8)
            axes[0].set_ylabel(f"{name} tuning score")
            split = max(1, r["final"].shape[1] * 2 // 5)
            axes[-1].scatter(r["final"][:n, :split].mean(1), r["final"][:n, split:].mean(1), s=8)
            axes[-1].set(xlabel="score, tuning seeds A", ylabel="score, tuning seeds B")
            axes[-1].set_title(f"ρ = {r['seed_split_rho']['rho']:.2f}", fontsize=8)


def check(args) -> None:
    for e in args.envs.split(","):
        cli.check_choice("--envs", e, STEPS)


def _steps(args) -> dict:
    return {e: args.steps or STEPS[e] for e in args.envs.split(",")}


def run(args) -> dict:
    log = lambda s: print(s, flush=True)  # noqa: E731
    n, seeds, test_seeds, steps = args.configs, args.seeds, args.test_seeds, _steps(args)
    out = {}
    for e in args.envs.split(","):  # each environment is kept as it finishes; --resume reuses it
        settings = {"n": n, "seeds": seeds, "test_seeds": test_seeds, "steps": steps[e],
                    "seed": args.seed}  # fmt: skip
        out[e] = arm_store.cached(
            args.workdir, f"env_{e}", settings,
            lambda e=e: run_env(e, n, seeds, test_seeds, steps[e], args.seed, log),
            resume=args.resume, log=log,
        )  # fmt: skip
    return out


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/hparam_landscape", run=run, report=report,
    plot=plot, check=check, seeds=5, steps=0, resume=True,
    quick={"envs": "CartPole-v1", "configs": 24, "seeds": 3, "test_seeds": 3, "steps": 8_192},
    low={"configs": 8, "seeds": 2, "test_seeds": 2},
    options={"envs": DEFAULT_ENVS, "configs": 128, "test_seeds": 10},
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
