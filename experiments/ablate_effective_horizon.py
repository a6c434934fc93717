"""Effective horizon / SQIRL (#42): SQIRL vs PPO vs DQN across six environments, plus rljax.dp.

Laidlaw, Zhu, Russell & Dragan 2024 ("The Effective Horizon Explains Deep RL Performance in
Stochastic Environments") claim that SQIRL (explore uniformly at random, regress Q^{π_rand},
apply k fitted-Q steps, act greedily) has a sample complexity that correlates strongly with PPO's
and DQN's across environments, and that the effective horizon predicts where deep RL succeeds.
The paper used sticky-action BRIDGE environments (Atari, Procgen, MiniGrid); gymnax classic
control and bsuite gridworlds are our extension.

What runs, per environment (CartPole-v1, Acrobot-v1, MountainCar-v0, Catch-bsuite, DeepSea-bsuite
of sizes 6 and 10), each method's seeds in one vmapped program:

* SQIRL as the paper defines it: uniformly random roll-outs (``prefix_until = 0``: no greedy
  roll-in), k ∈ {0, 1, 2, 3, 5} fitted-Q steps. One program trains levels Q_0..Q_5 (each level
  regresses ``r + γ max Q_{j-1}`` of its own network on the same random data, so level j of a
  k = 5 agent is a k = j agent; Adam is per parameter and there is no clipping, so the levels'
  updates do not interact) and every k is evaluated greedily on its level.
* PPO and DQN with the configs of configs/ppo.py and configs/dqn.py (CartPole's for the bsuite
  environments; DQN's ε reaches its floor by half the budget).
* All three evaluated the same way: after each tenth of the budget, the greedy policy (argmax of
  Q_k, of Q, or of PPO's logits) runs one episode in each of 16 fresh environments, separate from
  training; its mean return is the evaluation.
* Samples-to-threshold per seed: env steps at the first evaluation at or above the environment's
  threshold (∞ if none; resolution a tenth of the budget). Per method and environment: the median
  over seeds with a 95% bootstrap interval and the fraction of seeds that reach it. SQIRL's k is
  chosen per environment as the k with the lowest median (optimistic: chosen on the same seeds).
* The exact effective horizon of tabular versions of the environments with ``rljax.dp.horizon``
  (``min_qvi_steps``: the least k such that greedy on Q^k is optimal at every state and step;
  ``effective_horizon``: a GORP-style ``min_k k + log_A m_k``). Catch and DeepSea are tabulated
  exactly; the classic-control ones are coarse stochastic aggregations
  (``rljax.dp.gymnax_tabular``), properties of the discretized MDPs only.
* Spearman ρ across the six environments between methods' median samples-to-threshold (∞ ties
  last) and with the effective horizon; 95% interval by resampling seeds within each environment
  and method (stratified bootstrap). With six environments ρ takes few values: read the interval.

Plots: curves_<env>.png (greedy return vs env steps, mean and 95% interval over seeds) into
--workdir; ``--resume`` reuses finished environments from workdir/arms/
(``rljax.train.arm_store.cached``: only those made with the same settings). The default took 20.5
min on the shared 2-core CPU (details and results in docs/value_based.md).
"""

import sys

from rljax import xla_flags

# One XLA thread: on the loaded 2-core machine a PPO program with XLA's default pool hung after
# compiling (0% CPU for minutes); one small program per process gains little from the pool.
# (Only when this process starts JAX: a test that imports the script keeps its own settings.)
xla_flags.set_flags(cpu_threads=None if "jax" in sys.modules else 1)

import functools  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, envs, stats  # noqa: E402
from rljax.agents import dqn, learner, ppo, sqirl  # noqa: E402
from rljax.dp import gymnax_tabular  # noqa: E402
from rljax.dp import horizon as dp_horizon  # noqa: E402
from rljax.train import arm_store, study, study_stats  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

K_LEVELS = (0, 1, 2, 3, 5)
NUM_EVALS = 10
EVAL_ENVS = 16
_LIN = np.linspace
# name -> gymnax id, kwargs, threshold, budget (env steps per agent), evaluation length, and the
# tabular version: (fields, grids, horizon, samples, jitter)
_PI = np.pi
ENVS = {
    "CartPole-v1": dict(
        id="CartPole-v1", kw={}, threshold=400.0, steps=150_000, eval_len=500,
        tab=(("x", "x_dot", "theta", "theta_dot"),
             (_LIN(-2.4, 2.4, 6), _LIN(-2, 2, 6), _LIN(-0.2, 0.2, 6), _LIN(-2.5, 2.5, 6)),
             100, 16, True),
    ),
    "Acrobot-v1": dict(
        id="Acrobot-v1", kw={}, threshold=-120.0, steps=150_000, eval_len=500,
        tab=(("joint_angle1", "joint_angle2", "velocity_1", "velocity_2"),
             (_LIN(-_PI, _PI, 7), _LIN(-_PI, _PI, 7), _LIN(-4 * _PI, 4 * _PI, 7),
              _LIN(-9 * _PI, 9 * _PI, 7)),
             100, 16, True),
    ),
    "MountainCar-v0": dict(
        id="MountainCar-v0", kw={}, threshold=-160.0, steps=150_000, eval_len=200,
        tab=(("position", "velocity"), (_LIN(-1.2, 0.6, 30), _LIN(-0.07, 0.07, 30)), 200, 16, True),
    ),
    "Catch-bsuite": dict(
        id="Catch-bsuite", kw={}, threshold=0.8, steps=30_000, eval_len=10,
        tab=(("ball_x", "ball_y", "paddle_x"), (range(5), range(10), range(5)), 10, 1, False),
    ),
    "DeepSea-bsuite-6": dict(
        id="DeepSea-bsuite", kw={"size": 6}, threshold=0.5, steps=30_000, eval_len=7,
        tab=(("row", "column"), (range(7), range(7)), 6, 1, False),
    ),
    "DeepSea-bsuite-10": dict(
        id="DeepSea-bsuite", kw={"size": 10}, threshold=0.5, steps=30_000, eval_len=11,
        tab=(("row", "column"), (range(11), range(11)), 10, 1, False),
    ),
}  # fmt: skip
METHODS = ("sqirl", "ppo", "dqn")


def agent_setup(method: str, name: str, steps: int):
    """(module, Config, hparams dict) of ``method`` on environment ``name`` for ``steps``."""
    classic = ENVS[name]["id"] in envs.SUPPORTED_ENVS
    base = name if classic else "CartPole-v1"
    if method == "sqirl":
        c = study.config(__file__, "sqirl", base if classic else "Acrobot-v1")
        values = {**c.sqirl.to_dict(), "k": max(K_LEVELS), "prefix_until": 0.0}
        if not classic:  # short episodes: smaller updates, support of ±1 rewards
            values.update(rollout_steps=8, v_min=-1.0, v_max=1.0)
        cfg = learner.config_from_dict(sqirl.Config, "sqirl", values)
        return sqirl, cfg, {k: float(v) for k, v in c.hparams.items()}
    if method == "ppo":
        c = study.config(__file__, "ppo", base)
        cfg = learner.config_from_dict(ppo.Config, "ppo", c.ppo.to_dict())
        return ppo, cfg, {k: float(v) for k, v in c.hparams.items()}
    return (dqn, *_population.dqn_for_budget(study.config(__file__, "dqn", base), steps))


def make_evaluator(method: str, cfg, env, length: int):
    """Jitted ``(states [A], key) -> greedy returns [A]`` (SQIRL: ``[A, len(K_LEVELS)]``)."""
    if method == "sqirl":
        net = sqirl.network(cfg, env)

        def level_policy(params, j, obs):
            p = jax.tree.map(lambda x: x[j], params)
            return jnp.argmax(cfg.head.q_values(net.apply(p, obs)), -1)

        def one(state, key):
            return jnp.stack([
                _population.greedy_returns(env, functools.partial(level_policy, state.params, j),
                                           key, EVAL_ENVS, length)
                for j in K_LEVELS
            ])  # fmt: skip
    elif method == "dqn":
        net = dqn.network(cfg, env)

        def one(state, key):
            def pol(obs):
                return jnp.argmax(cfg.head.q_values(net.apply(state.params, obs)), -1)

            return _population.greedy_returns(env, pol, key, EVAL_ENVS, length)
    else:
        net = ppo.network(cfg, env)

        def one(state, key):
            def pol(obs):
                if cfg.normalize_obs:
                    obs = envs.normalize(state.env.obs_norm, obs)
                return jnp.argmax(net.apply(state.params, obs)[0], -1)

            return _population.greedy_returns(env, pol, key, EVAL_ENVS, length)

    return jax.jit(jax.vmap(one, in_axes=(0, None)))


def steps_to_threshold(evals: np.ndarray, steps_at: np.ndarray, threshold: float) -> np.ndarray:
    """Per agent (rows of ``evals [A, C]``): steps at the first evaluation ≥ threshold, else ∞."""
    hit = evals >= threshold
    first = np.argmax(hit, axis=1)
    return np.where(hit.any(1), steps_at[first].astype(np.float64), np.inf)


def median_ci(x: np.ndarray, seed: int = 0) -> list[float]:
    """95% percentile-bootstrap interval of the median of ``x`` (∞ allowed)."""
    rng = np.random.default_rng(seed)
    meds = np.median(x[rng.integers(0, len(x), (stats.NUM_RESAMPLES, len(x)))], axis=1)
    alpha = (1 - stats.CONFIDENCE) / 2
    return [float(v) for v in np.quantile(meds, [alpha, 1 - alpha], method="lower")]


def _rank_input(values: list[float]) -> np.ndarray:
    """∞ (never reached) ranks last, tied: replaced by a number above every finite one."""
    v = np.asarray(values, np.float64)
    finite = v[np.isfinite(v)]
    top = (finite.max() if finite.size else 0.0) * 2 + 1
    return np.where(np.isfinite(v), v, top)


def spearman(x, y) -> float:
    """Spearman ρ with ∞ tied last; NaN when either side is constant."""
    return study_stats.spearman(_rank_input(x), _rank_input(y))


def correlations(hits: dict, horizons: dict, env_names: list[str], seed: int = 0) -> dict:
    """ρ between every pair of methods (and the effective horizon) with bootstrap intervals.

    ``hits[(env, method)]`` are per-seed samples-to-threshold. Each resample draws seeds with
    replacement within each (env, method) and recomputes the medians; NaN draws (a constant
    side) are dropped and counted.
    """
    rng = np.random.default_rng(seed)
    names = [m for m in ("sqirl", "ppo", "dqn") if all((e, m) in hits for e in env_names)]
    series = {
        m: lambda r, m=m: [
            np.median(hits[(e, m)][r.integers(0, len(hits[(e, m)]), len(hits[(e, m)]))])
            for e in env_names
        ]
        for m in names
    }
    point = {m: [float(np.median(hits[(e, m)])) for e in env_names] for m in names}
    for h in ("min_qvi_steps", "effective_horizon"):
        if all(e in horizons for e in env_names):
            series[h] = lambda r, h=h: [horizons[e][h] for e in env_names]
            point[h] = [horizons[e][h] for e in env_names]
    pairs = [("sqirl", "ppo"), ("sqirl", "dqn"), ("ppo", "dqn")]
    pairs += [(h, m) for h in ("min_qvi_steps", "effective_horizon") if h in point for m in names]
    out = {}
    for a, b in pairs:
        if a not in point or b not in point:
            continue
        draws = [spearman(series[a](rng), series[b](rng)) for _ in range(stats.NUM_RESAMPLES // 4)]
        out[f"{a} vs {b}"] = {
            "rho": spearman(point[a], point[b]), "ci": study_stats.interval(draws, empty=None),
            "undefined_draws": float(1 - np.isfinite(draws).sum() / len(draws)),
        }  # fmt: skip
    return out


def exact_horizons(env_names, log) -> dict:
    """``min_qvi_steps`` (up to 6; 7 = none) and ``effective_horizon`` of each tabular version."""
    out = {}
    for name in env_names:
        spec = ENVS[name]
        fields, grids, horizon, samples, jitter = spec["tab"]
        env = _population.make_env(spec["id"], **spec["kw"])
        t0 = time.perf_counter()
        mdp = gymnax_tabular.tabulate(env, fields, grids, horizon=horizon, samples=samples,
                                      jitter=jitter)  # fmt: skip
        k = int(dp_horizon.min_qvi_steps(mdp, 6))
        h = float(dp_horizon.effective_horizon(mdp, 6))
        out[name] = {"states": mdp.num_states, "horizon": horizon, "min_qvi_steps": k,
                     "effective_horizon": h if np.isfinite(h) else float("inf"),
                     "exact": not jitter}  # fmt: skip
        log(f"{name}: tabular {mdp.num_states} states, k_min={k}, H_eff={h:.2f} "
            f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip
    return out


def run_env(name, seeds, steps, seed, log) -> dict:
    """Trains the three methods on one environment; per method: evals and samples-to-threshold."""
    spec = ENVS[name]
    env = _population.make_env(spec["id"], **spec["kw"])
    out = {}
    for method in METHODS:
        module, cfg, hp = agent_setup(method, name, steps)
        evaluate = make_evaluator(method, cfg, env, spec["eval_len"])
        res = _population.train_with_evals(module, cfg, env, [hp], seeds, steps, seed, NUM_EVALS,
                                           evaluate)  # fmt: skip
        evals = res["evals"]  # [S, C] or [S, C, len(K)]
        arms = ({f"sqirl k={k}": evals[:, :, i] for i, k in enumerate(K_LEVELS)}
                if method == "sqirl" else {method: evals})  # fmt: skip
        for arm, ev in arms.items():
            hits = steps_to_threshold(ev, res["steps_at"], spec["threshold"])
            out[arm] = {"evals": ev, "steps_at": res["steps_at"], "hits": hits}
        finals = (f"{a} {np.round(out[a]['evals'][:, -1], 1).tolist()}" for a in arms)
        log(f"{name} {method}: {res['seconds']:.0f} s; final greedy " + "; ".join(finals))
    sq = [f"sqirl k={k}" for k in K_LEVELS]
    best = min(sq, key=lambda a: (np.median(out[a]["hits"]), -out[a]["evals"][:, -1].mean()))
    out["sqirl"] = {**out[best], "k": best}
    return out


def _fmt_steps(v) -> str:
    return "∞" if v is None or not np.isfinite(v) else f"{v / 1e3:.0f}k"


def report(args, out: dict, record: dict) -> study.Report:
    per_env, horizons, corr = out["per_env"], out["horizons"], out["corr"]
    meta = {"seeds": args.seeds, "budgets": out["budgets"], "resumed": args.resume, **record}
    env_names = list(per_env)
    arms, s2t = {}, {}
    for e, res in per_env.items():
        for arm, r in res.items():
            label = f"{e} · {arm}" + (f" ({r['k']})" if arm == "sqirl" else "")
            if arm != "sqirl":
                arms[label] = stats.summarize(r["evals"][:, -1])
            h = r["hits"]
            per_seed = [None if not np.isfinite(v) else float(v) for v in h]
            reached = float(np.isfinite(h).mean())
            s2t[label] = {"median": float(np.median(h)), "ci": median_ci(h), "reached": reached,
                          "per_seed": per_seed}  # fmt: skip
    rho = {k: v for k, v in corr.items() if k in ("sqirl vs ppo", "sqirl vs dqn")}
    lows = [v["ci"][0] for v in rho.values() if v["ci"][0] is not None]
    highs = [v["ci"][1] for v in rho.values() if v["ci"][1] is not None]
    # "Correlates strongly": both intervals above 0 and both point estimates at least 0.5.
    points = [v["rho"] for v in rho.values()]
    strong = [lo > 0 and p >= 0.5 for lo, p in zip(lows, points, strict=False)]
    # Per claim: strong → holds; positive but ρ < 0.5 → partly; interval below 0 → fails.
    statuses = [
        "reproduced" if s else "partly" if lo > 0 else "contradicted" if hi < 0 else "tie"
        for s, lo, hi in zip(strong, lows, highs, strict=False)
    ]
    if len(statuses) < 2:
        statuses.append("tie")  # a correlation without an interval decides nothing
    reason = "; ".join(
        f"ρ({k}) = {v['rho']:.2f} [{_n(v['ci'][0])}, {_n(v['ci'][1])}]" for k, v in rho.items()
    ) + (
        f" across {len(env_names)} environments (samples-to-threshold of greedy evaluation; "
        "reproduced needs both intervals above 0 and both ρ ≥ 0.5)."
    )
    notes = [
        "**Samples to threshold** (env steps per agent; median over seeds [95% bootstrap "
        "interval], fraction of seeds that reach it; ∞ = not within the budget):",
        "",
        *study.md_table(
            ("env · method", "threshold", "budget", "median", "95% CI", "reached", "per seed"),
            ((label, f"{ENVS[label.split(' · ')[0]]['threshold']:g}",
              _fmt_steps(meta["budgets"][label.split(" · ")[0]]), _fmt_steps(v["median"]),
              f"[{_fmt_steps(v['ci'][0])}, {_fmt_steps(v['ci'][1])}]", f"{v['reached']:.2f}",
              ", ".join(_fmt_steps(p) for p in v["per_seed"])) for label, v in s2t.items()),
        ),
        "",
        "**Spearman ρ across environments** (medians; 95% interval from resampling "
        "seeds within each environment and method; 'undef.' = share of resamples where "
        "one side is constant):",
        "",
        *study.md_table(("pair", "ρ", "95% CI", "undef."), (
            (k, _n(v["rho"]), f"[{_n(v['ci'][0])}, {_n(v['ci'][1])}]",
             f"{v['undefined_draws']:.2f}") for k, v in corr.items())),
    ]  # fmt: skip
    if horizons:
        notes += [
            "",
            "**Tabular versions** (rljax.dp; k_min = least k with greedy on Q^k optimal "
            "everywhere, 7 = none up to 6; H_eff = min_k k + log_A m_k):",
            "",
            *study.md_table(("env", "states", "horizon", "exact?", "k_min", "H_eff"), (
                (e, h["states"], h["horizon"], "exact" if h["exact"] else "aggregated",
                 h["min_qvi_steps"], f"{h['effective_horizon']:.2f}")
                for e, h in horizons.items())),
        ]  # fmt: skip
    resumed = " (this invocation; --resume read cached training runs)" if meta["resumed"] else ""
    notes += ["", f"Seeds {meta['seeds']}, budgets {meta['budgets']}, wall time "
              f"{meta['seconds']:.0f} s{resumed} ({meta['load']})."]  # fmt: skip
    return study.Report(
        title="Effective horizon / SQIRL (#42, ablation 12)",
        claim="SQIRL (random roll-outs + k fitted-Q steps, greedy) has a sample complexity that "
        "correlates strongly with PPO's and DQN's across environments",
        claims=statuses, reason=reason, arms=arms, notes=notes, digits=2,
        metric="final greedy return (16 evaluation episodes)",
        extra={"samples_to_threshold": s2t, "spearman": corr, "tabular": horizons, **meta},
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    for e, res in out["per_env"].items():
        # Evaluations come after each tenth of the budget (to within one update per method).
        x = np.arange(1, NUM_EVALS + 1) * out["budgets"][e] / NUM_EVALS
        curves = {a: r["evals"] for a, r in res.items() if a != "sqirl"}
        path = os.path.join(args.workdir, f"curves_{e.replace('/', '_')}.png")
        stats.plot_bands(x, curves, path, title=f"{e}: greedy return (threshold "
                         f"{ENVS[e]['threshold']:g})", xlabel="env steps per agent",
                         ylabel="greedy evaluation return")  # fmt: skip


def _n(v) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.2f}"


def check(args) -> None:
    for e in args.envs.split(","):
        cli.check_choice("--envs", e, ENVS)


def run(args) -> dict:
    log = lambda s: print(s, flush=True)  # noqa: E731
    env_names = args.envs.split(",")
    budgets = {e: args.steps or ENVS[e]["steps"] for e in env_names}
    horizons = {} if args.no_tabular else arm_store.cached(
        args.workdir, "tabular", {"envs": env_names}, lambda: exact_horizons(env_names, log),
        resume=args.resume, log=log,
    )  # fmt: skip
    per_env = {}
    for e in env_names:
        settings = {"seeds": args.seeds, "steps": budgets[e], "seed": args.seed}
        per_env[e] = arm_store.cached(
            args.workdir, f"train_{e}", settings,
            lambda e=e: run_env(e, args.seeds, budgets[e], args.seed, log),
            resume=args.resume, log=log,
        )  # fmt: skip
    hits = {(e, m): per_env[e][m]["hits"] for e in env_names for m in METHODS}
    corr = correlations(hits, horizons, env_names)
    return {"per_env": per_env, "horizons": horizons, "corr": corr, "budgets": budgets}


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/ablate_effective_horizon", run=run, report=report,
    plot=plot, check=check, seeds=5, steps=0, resume=True,
    quick={"envs": "Catch-bsuite,DeepSea-bsuite-6", "seeds": 2, "steps": 10_240},
    low={"seeds": 2, "steps": 0},
    # cheap environments first: a failure shows early; --resume reuses finished ones
    options={"envs": ",".join([*list(ENVS)[3:], *list(ENVS)[:3]])},
    flags=lambda p: p.add_argument("--no_tabular", action="store_true",
                                   help="skip the rljax.dp horizons"),
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
