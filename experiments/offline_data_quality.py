"""Offline data quality (#217, #203; ablation 13): which dataset lets which offline learner work.

Schweighofer et al. 2022 ("A Dataset Perspective on Offline RL", #217) measure a dataset by its
trajectory quality TQ (normalized mean episode return: exploitation) and its state-action
coverage SACo (normalized count of distinct state-action pairs: exploration), and find that
the unconstrained DQN family needs high SACo, policy-constraint methods do well with high TQ
and high SACo, and behavior cloning is competitive with the best offline RL when TQ is high.
Hong et al. 2023 (#203) resample transitions by their trajectory's return and find it helps
mixed datasets of mostly low-return and a few high-return trajectories.

Per environment (gymnax CartPole-v1, Acrobot-v1, MountainCar-v0):

1. An online DQN (configs/dqn.py, fitted to ``--online-steps`` env steps, 2 seeds, the buffer
   holding the whole run) gives the *replay* data and, on CartPole and Acrobot, the *expert*:
   the greedy policy of the seed with the better greedy return. On MountainCar a short online
   DQN does not reach the goal, so the expert is a scripted energy-pumping controller (push in
   the direction of the velocity), stated as such.
2. Five datasets of ``--size`` transitions cut from complete episodes: *random* (uniform
   actions), *expert* (greedy expert), *noisy* (expert with ε = 0.2 uniform actions), *replay*
   (a uniform subset of the online run's transitions) and *mixed* (80% random + 20% expert
   transitions, the mostly-low / few-high-return data of #203).
3. TQ = (mean episode return − R_random) / (R_expert − R_random), with R_random and R_expert
   the mean episode returns of the random and expert datasets; coverage = distinct (cell, a)
   pairs on a grid of ``--bins`` equal-width bins per state dimension between the pooled 1st
   and 99th percentiles (``rljax.offline_data``); SACo = that count over the count of all five
   datasets pooled.
4. Six learners (``rljax.agents.offline``: BC, offline DQN, QR-DQN, discrete CQL, discrete BCQ,
   CRR), each on each dataset with uniform and with return-weighted sampling (#203's RW,
   temperature ``--rw-temperature``); per environment and learner one jitted program trains
   the 10 (dataset, sampling) variants × ``--seeds`` seeds: the pipeline's population of
   ``--seeds`` learners (``rljax.train.population``: seed s starts from
   ``learner_key(--seed, s)``, the same in every variant, so variants are paired) vmapped over
   the variants' datasets.
5. Evaluation: the greedy policy's first episode in ``--eval-episodes`` fresh environments,
   normalized so that R_random = 0 and R_expert = 1, after each of ``--evals`` equal chunks of
   training (the last is the score); the evaluation after update u draws from
   ``fold_in(eval_key(--seed), u)``, a key no learner's training reaches.

Statistics (``rljax.stats``): mean and IQM with 95% stratified-bootstrap intervals over seeds;
Spearman ρ of normalized return against TQ and against SACo across the 15 (env, dataset)
cells, with a 95% interval from a bootstrap that resamples cells and seeds within cells. The
verdict is computed from four claims (see ``claims``).

Plots: quality_coverage.png (normalized return over (TQ, SACo) per learner) and
curves_<env>_mixed.png (uniform vs return-weighted on the mixed data). The default took 13 min 19 s
on the shared 2-core CPU; results.md records the time of its run. Design: docs/value_based.md;
claims, figures and verdicts: docs/reproductions.md.
"""

from rljax import xla_flags

xla_flags.set_flags()

import dataclasses  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, envs, offline_data, stats  # noqa: E402
from rljax.agents import dqn, learner, offline  # noqa: E402
from rljax.envs import rollouts  # noqa: E402
from rljax.train import population, study, study_stats  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402
from rljax.train.study_stats import spearman  # noqa: E402

ENVS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
DATASETS = ("random", "expert", "noisy", "replay", "mixed")
SAMPLINGS = ("uniform", "rw")
# The six learners of the study (rljax.agents.offline has more, e.g. IQN, added after it ran).
ALGOS = ("bc", "dqn", "qr_dqn", "cql", "bcq", "crr")
SCRIPTED_EXPERT = ("MountainCar-v0",)
NOISE_EPS = 0.2  # ε of the noisy expert
MIXED_EXPERT_SHARE = 0.2  # expert transitions in the mixed dataset
HPARAMS = {"lr": 1e-3, "gamma": 0.99, "cql_alpha": 1.0, "bcq_threshold": 0.3, "crr_beta": 1.0}
DEFAULTS = {"seeds": 5, "updates": 3000, "size": 20_000, "online_steps": 100_000, "evals": 4}
QUICK = {"seeds": 3, "updates": 100, "size": 2_000, "online_steps": 6_000, "evals": 1}
CLAIMS = {
    "dqn_family_needs_saco": "offline DQN and QR-DQN: normalized return rises with SACo (ρ > 0)",
    "constraint_high_tq_saco": (
        "BCQ and CRR: higher normalized return on cells with TQ and SACo both above their "
        "medians than on the other cells"
    ),
    "bc_competitive_high_tq": "BC is not below the best other learner on high-TQ cells (TQ ≥ 0.75)",
    "rw_helps_mixed": "return-weighted sampling raises normalized return on the mixed datasets",
}


# ---------------------------------------------------------------------------- data
def _online_dqn(env_name: str, steps: int, seed: int) -> tuple:
    """Online DQN (2 seeds); returns (expert params or None, its config, replay Transition
    [T, B], per-seed greedy returns)."""
    c = study.config(__file__, "dqn", env_name)
    n = c.dqn.num_envs  # the buffer holds the whole run
    config, hp = _population.dqn_for_budget(c, steps, buffer_size=steps // n * n)
    res = _population.train_population(dqn, config, env_name, [hp], 2, steps, seed)
    env = envs.make(env_name)
    config = res["config"]

    def greedy(state):
        pol = lambda o: dqn.act(config, env, state, o, jax.random.PRNGKey(0), greedy=True)  # noqa: E731
        return _population.greedy_returns(env, pol, jax.random.PRNGKey(7), 16, env.max_steps)

    rets = np.asarray(jax.jit(jax.vmap(greedy))(res["state"]))
    best = int(np.argmax(rets))
    buf = jax.tree.map(lambda x: x[best], res["state"].buffer)
    size = int(buf.size)
    replay = jax.tree.map(lambda x: np.asarray(x[:size]), buf.data)
    state = jax.tree.map(lambda x: x[best], res["state"])._replace(buffer=None)
    return state, config, replay, rets


def _collect(env, policy, key: jax.Array, size: int, num_envs: int = 20):
    """Complete episodes of ``policy(obs, key) -> actions`` holding at least ``size`` steps."""
    steps = -(-size // num_envs) + env.max_steps
    fn = lambda o, k: (policy(o, k), jnp.zeros(o.shape[0]), jnp.zeros(o.shape[0]))  # noqa: E731

    @jax.jit
    def run(k):
        reset_key, run_key = jax.random.split(k)
        start = rollouts.rollout_init(env, reset_key, num_envs)
        return rollouts.rollout(env, lambda p, o, kk: fn(o, kk), None, run_key, start, steps)[1]

    return offline_data.episodes(run(key))


def _returns_in(eps: list[dict], size: int) -> list[float]:
    """Returns of the episodes that start within the first ``size`` transitions of ``eps``."""
    starts = np.cumsum([0] + [len(e["reward"]) for e in eps])[:-1]
    return [e["return"] for e, s in zip(eps, starts, strict=True) if s < size]


def build_datasets(env_name: str, size: int, online_steps: int, seed: int, log) -> dict:
    """The five datasets of one environment with their returns, TQ, coverage and SACo."""
    t0 = time.perf_counter()
    env = envs.make(env_name)
    dqn_state, dqn_config, replay, online_rets = _online_dqn(env_name, online_steps, seed)
    na = env.num_actions

    def uniform(o, k):
        return jax.random.randint(k, (o.shape[0],), 0, na)

    if env_name in SCRIPTED_EXPERT:  # MountainCar: push along the velocity (obs = [x, v])
        greedy = lambda o: jnp.where(o[:, 1] >= 0, 2, 0).astype(jnp.int32)  # noqa: E731
    else:
        greedy = lambda o: dqn.act(
            dqn_config, env, dqn_state, o, jax.random.PRNGKey(0), greedy=True
        )  # noqa: E731

    def noisy(o, k):
        explore_key, action_key = jax.random.split(k)
        explore = jax.random.uniform(explore_key, (o.shape[0],)) < NOISE_EPS
        return jnp.where(explore, uniform(o, action_key), greedy(o))

    keys = jax.random.split(jax.random.PRNGKey(seed + 11), 4)
    eps = {"random": _collect(env, uniform, keys[0], size),
           "expert": _collect(env, lambda o, k: greedy(o), keys[1], size),
           "noisy": _collect(env, noisy, keys[2], size)}  # fmt: skip
    n_exp = int(size * MIXED_EXPERT_SHARE)
    data = {k: offline_data.from_episodes(v, size) for k, v in eps.items()}
    replay_eps = offline_data.episodes(replay)
    if not replay_eps:
        raise ValueError(f"--online-steps={online_steps} leaves no complete {env_name} episode "
                         "in the online run; allowed: enough steps for 10 environments to finish "
                         "an episode")  # fmt: skip
    rng = np.random.default_rng(seed)
    pooled = offline_data.from_episodes(replay_eps, sum(len(e["reward"]) for e in replay_eps))
    pick = np.sort(rng.choice(pooled.reward.shape[0], size, replace=False))
    data["replay"] = jax.tree.map(lambda x: x[pick], pooled)._replace(
        cdf=jnp.asarray(np.arange(1, size + 1) / size, jnp.float32)
    )
    parts = [(eps["random"], size - n_exp), (eps["expert"], n_exp)]
    data["mixed"] = offline_data.concat([offline_data.from_episodes(e, n) for e, n in parts])
    returns = {k: _returns_in(v, size) for k, v in eps.items()}
    returns["replay"] = [e["return"] for e in replay_eps]  # the data is a uniform subset of it
    returns["mixed"] = _returns_in(eps["random"], size - n_exp) + _returns_in(eps["expert"], n_exp)
    r_random = float(np.mean([e["return"] for e in eps["random"]]))
    r_expert = float(np.mean([e["return"] for e in eps["expert"]]))
    out = {"env": env_name, "r_random": r_random, "r_expert": r_expert, "datasets": {}}
    out["episode_returns"] = returns
    out["online_greedy_returns"] = online_rets.tolist()
    out["expert"] = "scripted" if env_name in SCRIPTED_EXPERT else "online DQN (greedy)"
    return out | {"data": data, "seconds": time.perf_counter() - t0}


def measure(built: dict, bins: int) -> None:
    """Adds TQ, coverage and SACo of every dataset to ``built["datasets"]`` (in place)."""
    data = built["data"]
    edges = offline_data.grid_edges(np.concatenate([np.asarray(d.obs) for d in data.values()]),
                                    bins)  # fmt: skip
    cells = {k: offline_data.state_action_cells(d.obs, d.action, edges) for k, d in data.items()}
    union = len(set().union(*cells.values()))
    for k in data:
        g = built["episode_returns"][k]
        built["datasets"][k] = {
            "tq": offline_data.trajectory_quality(g, built["r_random"], built["r_expert"]),
            "cells": len(cells[k]), "saco": len(cells[k]) / union,
            "mean_episode_return": float(np.mean(g)), "episodes": len(g),
        }  # fmt: skip


# ---------------------------------------------------------------------------- training
def train_env(built: dict, algo: str, args, log) -> dict:
    """Every (dataset, sampling) × seed learner of ``algo`` on one environment, one program.

    Returns ``{"norm" [V, S, evals] normalized greedy returns, "seconds"}`` with V = datasets ×
    samplings (dataset-major).
    """
    env = envs.make(built["env"])
    variants = []
    for name in DATASETS:
        d = built["data"][name]
        variants.append(d)
        probs = offline_data.return_weights(d.episode_return, temperature=args.rw_temperature)
        variants.append(offline_data.with_probs(d, probs))
    data = jax.tree.map(lambda *xs: jnp.stack(xs), *variants)
    chunk = args.updates // args.evals
    config = offline.Config(algo=algo, num_actions=env.num_actions, num_updates=chunk * args.evals)
    offline.validate(config)
    offline.validate_hparams(HPARAMS)
    spec = population.Spec(offline, config, variants[0],
                           population.grid_hparams(offline, [HPARAMS]), chunk * args.evals, chunk,
                           num_seeds=args.seeds, seed=args.seed, env_as_argument=True)  # fmt: skip
    # One population per variant, all in one program: the pipeline's init and chunk, vmapped
    # over the variants' datasets (the learners' keys and hyperparameters are the spec's).
    init = jax.jit(jax.vmap(lambda d: population.init(dataclasses.replace(spec, env=d))))
    run = jax.jit(jax.vmap(lambda s, d: population.chunk_fn(spec, chunk)(s, d)[0]))

    def _greedy(state, key):
        pol = lambda o: offline.act(config, None, state, o, key, greedy=True)  # noqa: E731
        return _population.greedy_returns(env, pol, key, args.eval_episodes, env.max_steps)

    evaluate = jax.jit(jax.vmap(jax.vmap(_greedy, (0, None)), (0, None)))
    t0 = time.perf_counter()
    state = init(data)
    rets = []
    for c in range(args.evals):
        state = run(state, data)
        key = jax.random.fold_in(learner.eval_key(args.seed), (c + 1) * chunk)
        rets.append(np.asarray(evaluate(state, key)))
    raw = np.stack(rets, -1)  # [V, S, evals]
    norm = (raw - built["r_random"]) / (built["r_expert"] - built["r_random"])
    seconds = time.perf_counter() - t0
    log(f"{built['env']} {algo}: {seconds:.0f} s; final normalized mean per variant "
        f"{', '.join(f'{v:.2f}' for v in norm[..., -1].mean(1))}")  # fmt: skip
    return {"norm": norm, "seconds": seconds}


# ---------------------------------------------------------------------------- statistics
def rank_correlation(scores: np.ndarray, measure_: np.ndarray, seed: int = 0) -> dict:
    """ρ(cell-mean score, measure) over cells and its 95% bootstrap interval (cells resampled, and
    seeds within cells).

    Args:
      scores: ``[C, S]`` per cell (env × dataset) and seed.
      measure_: ``[C]`` (TQ or SACo).
    """
    rng = np.random.default_rng(seed)
    boots = []
    c, s = scores.shape
    for _ in range(stats.NUM_RESAMPLES):
        cells = rng.integers(0, c, c)
        seeds = rng.integers(0, s, (c, s))
        boots.append(spearman(scores[cells[:, None], seeds].mean(1), measure_[cells]))
    return {"rho": spearman(scores.mean(1), measure_), "ci": study_stats.interval(boots)}


def _status(ci, claim_is_not_worse: bool = False) -> str:
    """'holds' / 'tie' / 'fails' from a 95% interval of a difference (or ρ)."""
    lo, hi = ci
    if claim_is_not_worse:
        return "holds" if hi >= 0 else "fails"
    return "holds" if lo > 0 else "fails" if hi < 0 else "tie"


def claims(final: dict, tq: np.ndarray, saco: np.ndarray, names: list[str] | None = None) -> dict:
    """The four claims, each ``{"status", "estimate", "ci", "detail"}``.

    ``final[(algo, sampling)]`` is ``[C, S]`` normalized returns over the 15 (env, dataset)
    cells (env-major, ``DATASETS`` order). Rules: (1) ρ(return, SACo) of DQN and QR-DQN, the
    weaker of the two decides; (2) BCQ and CRR pooled: mean on cells with TQ and SACo both
    above their medians minus mean on the rest; (3) on cells with TQ ≥ 0.75, BC − the best
    other learner's mean: holds unless the interval lies below 0; (4) RW − uniform on the
    mixed cells, all learners pooled, seeds paired.
    """
    names = names or [str(i) for i in range(len(tq))]
    out = {}
    rhos = {a: rank_correlation(final[(a, "uniform")], saco) for a in ("dqn", "qr_dqn")}
    weaker = min(rhos, key=lambda a: rhos[a]["ci"][0])
    out["dqn_family_needs_saco"] = {
        "status": _status(rhos[weaker]["ci"]), "estimate": rhos[weaker]["rho"],
        "ci": rhos[weaker]["ci"], "detail": {a: r for a, r in rhos.items()},
    }  # fmt: skip
    high = (tq > np.median(tq)) & (saco > np.median(saco))
    cons = np.concatenate([final[("bcq", "uniform")], final[("crr", "uniform")]], 1)
    if high.any() and (~high).any():
        diff = lambda a: a[high].mean() - a[~high].mean()  # noqa: E731
        ci = study_stats.cell_bootstrap(diff, [cons])
        out["constraint_high_tq_saco"] = {
            "status": _status(ci), "estimate": float(diff(cons)), "ci": ci,
            "detail": {"high_cells": [names[i] for i in np.flatnonzero(high)]},
        }  # fmt: skip
    top = tq >= 0.75
    if top.any():
        others = [a for a in ALGOS if a != "bc"]
        arrays = [final[("bc", "uniform")][top]] + [final[(a, "uniform")][top] for a in others]

        def gap(bc, *rest):
            return bc.mean() - max(r.mean() for r in rest)

        ci = study_stats.cell_bootstrap(gap, arrays)
        best = max(others, key=lambda a: final[(a, "uniform")][top].mean())
        out["bc_competitive_high_tq"] = {
            "status": _status(ci, claim_is_not_worse=True), "estimate": float(gap(*arrays)),
            "ci": ci, "detail": {"best_other": best, "cells": int(top.sum())},
        }  # fmt: skip
    mixed = np.array([d == "mixed" for _ in range(len(tq) // len(DATASETS)) for d in DATASETS])
    rw = np.concatenate([final[(a, "rw")][mixed] for a in ALGOS], 0)
    un = np.concatenate([final[(a, "uniform")][mixed] for a in ALGOS], 0)
    diff = lambda r, u: (r - u).mean()  # noqa: E731
    ci = study_stats.cell_bootstrap(diff, [rw, un], paired=True)
    per = {}
    for a in ALGOS:
        r, u = final[(a, "rw")][mixed], final[(a, "uniform")][mixed]
        ci_a = study_stats.cell_bootstrap(diff, [r, u], paired=True)
        per[a] = {"diff": float(diff(r, u)), "ci": ci_a}
    out["rw_helps_mixed"] = {
        "status": _status(ci), "estimate": float(diff(rw, un)), "ci": ci, "detail": per,
    }  # fmt: skip
    return out


def reason(cl: dict) -> str:
    """The verdict's reason: how many claims hold, and each one's estimate."""
    statuses = [c["status"] for c in cl.values()]
    parts = [
        f"{k}: {c['status']} ({study.diff_text(c['estimate'], c['ci'])})" for k, c in cl.items()
    ]
    return (
        f"{sum(s == 'holds' for s in statuses)} of {len(statuses)} claims hold; "
        + "; ".join(parts)
        + "."
    )


# ---------------------------------------------------------------------------- outputs
def _cells(built_all: dict) -> list[tuple[str, str]]:
    return [(e, d) for e in built_all for d in DATASETS]


def finals(built_all: dict, res: dict) -> dict:
    """``{(algo, sampling): [C, S]}`` final normalized returns over the (env, dataset) cells."""
    out = {}
    for algo in ALGOS:
        for j, sampling in enumerate(SAMPLINGS):
            rows = [res[(e, algo)]["norm"][i * len(SAMPLINGS) + j, :, -1]
                    for e in built_all for i in range(len(DATASETS))]  # fmt: skip
            out[(algo, sampling)] = np.stack(rows)
    return out


def plot_quality_coverage(path: str, cells, tq, saco, final: dict) -> None:
    """Per learner (uniform sampling): the cells at (TQ, SACo), coloured by normalized return."""
    markers = {e: m for e, m in zip(ENVS, "os^", strict=True)}
    subplots = dict(nrows=2, ncols=3, figsize=(11, 6.6), sharex=True, sharey=True)
    with study.figure(path, dpi=110, tight=False, **subplots) as (fig, axes):
        for ax, algo in zip(axes.ravel(), ALGOS, strict=True):
            score = final[(algo, "uniform")].mean(1)
            for env in dict.fromkeys(e for e, _ in cells):
                idx = [i for i, (e, _) in enumerate(cells) if e == env]
                sc = ax.scatter(tq[idx], saco[idx], c=np.clip(score[idx], -0.25, 1.25),
                                cmap="viridis", vmin=-0.25, vmax=1.25, marker=markers.get(env, "o"),
                                s=70, edgecolors="k", label=env)  # fmt: skip
            for i, (_, d) in enumerate(cells):
                ax.annotate(d[:3], (tq[i], saco[i]), fontsize=6, xytext=(3, 3),
                            textcoords="offset points")  # fmt: skip
            ax.set_title(algo)
            ax.grid(alpha=0.3)
        for ax in axes[1]:
            ax.set_xlabel("TQ (trajectory quality)")
        for ax in axes[:, 0]:
            ax.set_ylabel("SACo (coverage share)")
        axes[0, 0].legend(fontsize=7)
        fig.colorbar(sc, ax=axes, label="normalized return (mean over seeds, clipped)")
        fig.suptitle("Offline learners (uniform sampling): normalized return over (TQ, SACo)")


def _detail_text(key: str, detail: dict) -> str:
    """One readable line of a claim's details."""
    iv = lambda d, k: f"{d[k]:+.2f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}]"  # noqa: E731
    if key == "dqn_family_needs_saco":
        return "; ".join(f"{a} ρ = {iv(d, 'rho')}" for a, d in detail.items())
    if key == "constraint_high_tq_saco":
        return "cells above both medians: " + ", ".join(detail["high_cells"])
    if key == "bc_competitive_high_tq":
        return f"best other learner: {detail['best_other']}, over {detail['cells']} cells"
    return "RW − uniform per learner: " + "; ".join(
        f"{a} {iv(d, 'diff')}" for a, d in detail.items()
    )


def report(args, out: dict, record: dict) -> study.Report:
    built_all, res, meta = out["built"], out["res"], {"settings": out["settings"], **record}
    cells = _cells(built_all)
    tq = np.array([built_all[e]["datasets"][d]["tq"] for e, d in cells])
    saco = np.array([built_all[e]["datasets"][d]["saco"] for e, d in cells])
    final = finals(built_all, res)
    cl = claims(final, tq, saco, [f"{e} · {d}" for e, d in cells])
    arms = {f"{a} · {s}": stats.summarize(final[(a, s)].T)
            for a in ALGOS for s in SAMPLINGS}  # fmt: skip
    per_cell = {f"{e} · {d} · {a} · {s}": stats.summarize(final[(a, s)][i])
                for a in ALGOS for s in SAMPLINGS
                for i, (e, d) in enumerate(cells)}  # fmt: skip
    corr = {a: {"tq": rank_correlation(final[(a, "uniform")], tq),
                "saco": rank_correlation(final[(a, "uniform")], saco)}
            for a in ALGOS}  # fmt: skip
    x = np.arange(1, args.evals + 1) * (args.updates // args.evals)  # updates at each evaluation
    f2 = lambda s: stats.format_interval(s, "mean", 2)  # noqa: E731
    ci = lambda c: f"{c['rho']:+.2f} [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]"  # noqa: E731
    notes = [
        "Arms: each learner × sampling, scored over all 15 (env, dataset) cells (stratified "
        "bootstrap: seeds resampled within cells). Normalized return: 0 = random data's mean "
        "episode return, 1 = expert data's.",
        "",
        "**Datasets** (R_random / R_expert: mean episode return of the random / expert data).",
        "",
    ]
    ds = [(f"{e} · {d}", built_all[e]["datasets"][d]) for e, d in cells]
    notes += study.md_table(
        ("env · dataset", "mean episode return", "TQ", "(cell, a) pairs", "SACo"),
        ((n, f"{m['mean_episode_return']:.1f}", f"{m['tq']:.2f}", m["cells"], f"{m['saco']:.2f}")
         for n, m in ds))  # fmt: skip
    for s in SAMPLINGS:
        notes += ["", f"**Normalized return per cell, {s} sampling** (mean [95% CI] over seeds).",
                  ""]  # fmt: skip
        notes += study.md_table(("env · dataset", *ALGOS), (
            (f"{e} · {d}", *(f2(per_cell[f"{e} · {d} · {a} · {s}"]) for a in ALGOS))
            for e, d in cells))  # fmt: skip
    notes += [
        "",
        "**Spearman ρ of normalized return (uniform sampling) against TQ and SACo** over the "
        "15 cells, 95% interval from resampling cells and seeds within cells.",
        "",
        *study.md_table(("learner", "ρ(return, TQ)", "ρ(return, SACo)"),
                        ((a, ci(c["tq"]), ci(c["saco"])) for a, c in corr.items())),
    ]  # fmt: skip
    notes += ["", "**Claims checked** (status, estimate [95% CI]):", ""]
    notes += [
        f"* {CLAIMS[k]}: **{c['status']}**, {c['estimate']:+.2f} [{c['ci'][0]:+.2f}, "
        f"{c['ci'][1]:+.2f}]; {_detail_text(k, c['detail'])}"
        for k, c in cl.items()
    ]
    env_lines = [
        f"{e}: R_random {b['r_random']:.1f}, R_expert {b['r_expert']:.1f} ({b['expert']}; online "
        f"DQN greedy returns per seed {np.round(b['online_greedy_returns'], 1).tolist()})"
        for e, b in built_all.items()
    ]
    notes += ["", "Environments: " + "; ".join(env_lines) + ".",
              *study.record_lines(meta["settings"], record)]  # fmt: skip
    return study.Report(
        title="Offline data quality (#217, #203; ablation 13): TQ, SACo and offline learners",
        claim="the DQN family needs high SACo, policy-constraint methods do well with high TQ and "
        "SACo, BC is competitive at high TQ (#217); return-weighted sampling helps mixed datasets "
        "(#203)",
        claims=cl, reason=reason(cl), arms=arms, metric="normalized greedy return", notes=notes,
        digits=2, extra={
            "datasets": {
                e: {k: v for k, v in b.items() if k not in ("data", "episode_returns")}
                for e, b in built_all.items()
            },  # fmt: skip
            "per_cell": per_cell, "rank_correlations": corr,
            "claims": {k: {**c, "text": CLAIMS[k]} for k, c in cl.items()},
            "curves": {  # mean normalized return over seeds after each evaluation
                "updates": [int(v) for v in x],
                **{
                    f"{e} · {d} · {a} · {s}": res[(e, a)]["norm"][i * len(SAMPLINGS) + j]
                    .mean(0).tolist()
                    for e in built_all for a in ALGOS for i, d in enumerate(DATASETS)
                    for j, s in enumerate(SAMPLINGS)
                },
            },
            **meta,
        },
    )  # fmt: skip


def plot(args, out: dict, report: study.Report) -> None:
    built_all, res, cells = out["built"], out["res"], _cells(out["built"])
    tq = np.array([built_all[e]["datasets"][d]["tq"] for e, d in cells])
    saco = np.array([built_all[e]["datasets"][d]["saco"] for e, d in cells])
    path = os.path.join(args.workdir, "quality_coverage.png")
    plot_quality_coverage(path, cells, tq, saco, finals(built_all, res))
    x = np.arange(1, args.evals + 1) * (args.updates // args.evals)  # updates at each evaluation
    m = DATASETS.index("mixed")
    for e in built_all:
        # seed i of both samplings shares its key: the difference is paired
        curves = {a: res[(e, a)]["norm"][m * len(SAMPLINGS) + 1]
                  - res[(e, a)]["norm"][m * len(SAMPLINGS)] for a in ALGOS}  # fmt: skip
        stats.plot_bands(x, curves, os.path.join(args.workdir, f"curves_{e}_mixed.png"),
                         title=f"{e}, mixed data: return-weighted − uniform (mean, 95% CI)",
                         xlabel="gradient updates", ylabel="Δ normalized return")  # fmt: skip


def check(args) -> None:
    args.envs = args.envs or ("CartPole-v1" if args.quick else ",".join(ENVS))
    for e in args.envs.split(","):
        cli.check_choice("--envs", e, ENVS)
    cli.check_int("--updates", args.updates, low=args.evals)
    cli.check_number("--rw-temperature", args.rw_temperature, low=0.0, low_open=True)


def run(args) -> dict:
    log = lambda s: print(s, flush=True)  # noqa: E731
    built_all, res = {}, {}
    for env_name in args.envs.split(","):
        built = build_datasets(env_name, args.size, args.online_steps, args.seed, log)
        measure(built, args.bins)
        log(f"{env_name} data ({built['seconds']:.0f} s): R_random {built['r_random']:.1f}, "
            f"R_expert {built['r_expert']:.1f}; " + ", ".join(
                f"{k} TQ {v['tq']:.2f} SACo {v['saco']:.2f}"
                for k, v in built["datasets"].items()))  # fmt: skip
        built_all[env_name] = built
        for algo in ALGOS:
            res[(env_name, algo)] = train_env(built, algo, args, log)
    settings = {k: getattr(args, k) for k in ("envs", "seeds", "updates", "size", "online_steps",
                "evals", "eval_episodes", "bins", "rw_temperature", "seed")}  # fmt: skip
    settings.update(hparams=HPARAMS, noise_eps=NOISE_EPS, mixed_expert_share=MIXED_EXPERT_SHARE)
    return {"built": built_all, "res": res, "settings": settings}


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/offline_data_quality", run=run, report=report,
    plot=plot, check=check, seeds=0, defaults=DEFAULTS, quick=QUICK,
    low={"seeds": 3, "evals": 1, "size": 100, "online-steps": 2_000, "eval-episodes": 1,
         "bins": 2},
    options={
        "envs": ("", f"comma-separated of {', '.join(ENVS)} (default: all; --quick: CartPole-v1)"),
        "updates": (0, "gradient updates per learner"), "size": (0, "transitions per dataset"),
        "online-steps": (0, "env steps of the online DQN"),
        "evals": (0, "evaluations during training"), "eval-episodes": 16,
        "bins": (10, "grid bins per state dimension (SACo)"), "rw-temperature": 0.1,
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
