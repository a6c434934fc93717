"""In-context RL in the dark room (#227 DPT): held-out goals found and reused from context.

Lee et al. 2023 ("Supervised Pretraining Can Learn In-Context Reinforcement Learning", #227),
the dark room of their Section 5: a transformer pretrained only to predict the optimal action at
a query state from an in-context dataset of a task's transitions, deployed online on goals never
seen in pretraining with its own earlier episodes as the context, finds the goal and returns to
it: its return rises over a few episodes toward the optimal one.

Setup (``rljax.darkroom``, ``rljax.agents.dpt_darkroom``): a ``--side`` x ``--side`` grid,
every episode starting in the corner, ``--horizon`` steps (default side²), 5 actions (stay and
four moves), reward 1 for every step that ends on the invisible goal. Each seed splits the
side² cells at random into ``--heldout`` held-out goals and the pretraining goals. Pretraining:
``--updates`` Adam steps of 32 fresh tasks (goals from the pretraining goals only); each task's
in-context dataset is ``--context-episodes`` episodes of a random policy (actions from a
Dirichlet(1)-drawn distribution, drawn independently of the goal), a query cell uniform over the
grid, and the label the shortest-path action at the query (column first, then row), predicted
at every prefix (causal transformer, 2 blocks, width 32, 2 heads; one transformer per seed).
Online: ``--episodes`` episodes on ``--eval-tasks`` tasks whose goals are the seed's held-out
goals (evenly); the context of episode k is the agent's own last completed episodes (at most
``--context-episodes``), the query its current cell, the action sampled from the prediction.
References on the same tasks: the oracle (told the goal), uniform random actions, and a
goal-free sweep (stay once, then a boustrophedon until a reward shows the goal, then shortest
paths: with H >= side² it finds every goal in its first episode and is the oracle afterwards).
DPT is also run on tasks with pretraining goals (in-distribution reference).

Claims (``claims``), on held-out goals, per seed the mean over tasks: DPT's return rises from
the first to the last online episode (last − first > 0); DPT's last-episode return beats the
random policy's (DPT − uniform > 0). Statuses by ``verdicts.vs_zero`` on 95% stratified-bootstrap
intervals over seeds. DPT's last-episode return as a share of the oracle's and its gap to the
sweep are reported, not claimed.

Not covered here: the paper's 10 x 10 room and its horizon of 100 (CPU budget), its offline
(fixed-dataset) evaluation, the Dark Room key-door variant, and the comparison with Algorithm
Distillation.

Plots: returns.png (return per online episode, mean and 95% interval over seeds). The default takes
about 8 min on the shared 2-core CPU. Results and their reading:
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

from rljax import cli, darkroom, stats  # noqa: E402
from rljax.agents import dpt_darkroom  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

REFERENCES = ("oracle", "sweep", "uniform")
DEFAULTS = {"seeds": 3, "updates": 1200, "eval_tasks": 200, "evals": 4, "side": 5, "episodes": 4}
QUICK = {"seeds": 3, "updates": 20, "eval_tasks": 16, "evals": 1, "side": 4, "episodes": 3}
CLAIMS = {
    "dpt_improves_online": (
        "On held-out goals DPT's return rises from the first to the last online episode "
        "(last − first > 0)"
    ),
    "dpt_beats_random": (
        "On held-out goals DPT's last-episode return beats uniform random actions' (DPT − "
        "uniform > 0)"
    ),
}


def goal_splits(config, seeds, num_heldout: int):
    """Per seed (pretraining goals ``[S, G]``, held-out goals ``[S, h]``) from the seed's key."""
    keys = [jax.random.fold_in(jax.random.PRNGKey(int(s)), 2) for s in seeds]
    pairs = [darkroom.split_goals(k, config.side, num_heldout) for k in keys]
    return jnp.stack([p[0] for p in pairs]), jnp.stack([p[1] for p in pairs])


def tile_goals(goals, num_tasks: int):
    """``num_tasks`` task goals per seed cycling through ``goals [S, G]``: ``[S, num_tasks]``."""
    return goals[:, jnp.arange(num_tasks) % goals.shape[1]]


def evaluate(config, states, goals, train_goals, keys, episodes: int) -> tuple[dict, dict]:
    """Returns per episode ``[S, B, K]`` on held-out task goals ``goals [S, B]`` (DPT, one
    model per seed, and the references) and DPT's on pretraining task goals ``train_goals``
    (its in-distribution reference), in one compiled program."""
    side, h = config.side, config.horizon
    online = functools.partial(darkroom.run_online, side=side, horizon=h, episodes=episodes)
    pols = {
        "oracle": lambda goal: functools.partial(darkroom.oracle, goal=goal, side=side),
        "sweep": lambda goal: functools.partial(darkroom.sweep, side=side, horizon=h),
        "uniform": lambda goal: darkroom.uniform,
    }

    def one_seed(state, goal, train_goal, key):
        pol = lambda c, hist, t, k: dpt_darkroom.act(config, state, c, hist, t, k)  # noqa: E731
        both = online(pol, jnp.concatenate([goal, train_goal]), key)[1]
        out = {"dpt": both[: goal.shape[0]]}
        out.update({n: online(make(goal), goal, key)[1] for n, make in pols.items()})
        return out, both[goal.shape[0] :]

    out, train = jax.jit(jax.vmap(one_seed))(states, goals, train_goals, keys)
    return {k: np.asarray(v) for k, v in out.items()}, {"dpt": np.asarray(train)}


def claims(returns: dict) -> dict:
    """Statuses of ``CLAIMS`` from held-out returns per episode ``[S, B, K]`` per policy."""
    per_ep = {k: v.mean(1) for k, v in returns.items()}  # [S, K]
    rise = stats.summarize(per_ep["dpt"][:, -1] - per_ep["dpt"][:, 0])
    vs_rand = stats.summarize(per_ep["dpt"][:, -1] - per_ep["uniform"][:, -1])

    def part(s: dict) -> dict:  # a difference's summary, with its status
        ci = s["mean_ci"]
        return {"diff": s["mean"], "diff_ci": ci, "status": verdicts.vs_zero(ci)}

    return {"dpt_improves_online": part(rise), "dpt_beats_random": part(vs_rand)}


def invariants(config, train_goals, heldout, key, num: int = 1024) -> dict:
    """The study's checks on its own data: held-out goals never drawn in pretraining, context
    actions and cells independent of the goal, every label a shortest-path action."""
    seen_heldout, labels_ok = 0, 0
    for s in range(train_goals.shape[0]):
        k = jax.random.fold_in(key, s)
        tok, label, goal = darkroom.pretraining_batch(
            k, train_goals[s], num, config.side, config.horizon, config.context_episodes
        )
        seen_heldout += int(jnp.isin(goal, heldout[s]).sum())
        query = jnp.round(tok[:, 0, :2] * (config.side - 1)).astype(jnp.int32)
        cell = query[:, 0] * config.side + query[:, 1]
        d0 = darkroom.distance(cell, goal, config.side)
        d1 = darkroom.distance(darkroom.step(cell, label, config.side), goal, config.side)
        labels_ok += int(jnp.sum(d1 == jnp.maximum(d0 - 1, 0)))
    ctx = [darkroom.random_context(key, jnp.full((num,), g, jnp.int32), config.side,
                                   config.horizon, config.context_episodes)
           for g in (0, config.side**2 - 1)]  # fmt: skip
    goal_free = all(bool(jnp.array_equal(ctx[0][i], ctx[1][i])) for i in (0, 1, 3))
    return {
        "heldout_goals_in_pretraining": seen_heldout,
        "pretraining_tasks_checked": num * train_goals.shape[0],
        "labels_optimal_share": labels_ok / (num * train_goals.shape[0]),
        "context_independent_of_goal": goal_free,
    }


def report(args, out: dict, record: dict) -> study.Report:
    config, returns, train_returns, curve = (out[k] for k in ("config", "returns", "train",
                                                              "curve"))  # fmt: skip
    meta = {k: out[k] for k in ("settings", "heldout_goals", "invariants")} | record
    cl = claims(returns)
    per_ep = {k: v.mean(1) for k, v in returns.items()}  # [S, K]
    per_ep["dpt (pretraining goals)"] = train_returns["dpt"].mean(1)
    arms = {"dpt": per_ep["dpt"][:, -1], "dpt, episode 1": per_ep["dpt"][:, 0],
            **{n: per_ep[n][:, -1] for n in REFERENCES},
            "dpt (pretraining goals)": per_ep["dpt (pretraining goals)"][:, -1]}  # fmt: skip
    arms = {n: stats.summarize(v) for n, v in arms.items()}
    share = stats.summarize(per_ep["dpt"][:, -1] / per_ep["oracle"][:, -1])
    vs_sweep = stats.summarize(per_ep["dpt"][:, -1] - per_ep["sweep"][:, -1])
    iv = lambda c: study.diff_text(c["diff"], c["diff_ci"])  # noqa: E731
    reason = "; ".join(f"{k}: {c['status']} ({iv(c)})" for k, c in cl.items())
    k, h = args.episodes, config.horizon
    inv = meta["invariants"]
    episode_table = study.md_table(
        ("policy", *(f"episode {i + 1}" for i in range(k))),
        ((n, *(f"{v:.2f}" for v in per_ep[n].mean(0)))
         for n in ("dpt", *REFERENCES, "dpt (pretraining goals)")))  # fmt: skip
    notes = [
        f"Metric: return of online episode {k} (of {k}, {h} steps each) on goals held out from "
        f"pretraining, mean over {args.eval_tasks} tasks per seed (one pretrained transformer "
        f"per seed; the references with the seed's own randomness on the same tasks). Higher "
        f"is better; the oracle's is {h} − max(d − 1, 0) for a goal d steps from the start.",
        "",
        "**Return per online episode** (held-out goals; mean over seeds):",
        "",
        *episode_table,
        "",
        "**Claims** (95% bootstrap intervals over seeds):",
        "",
        *(f"* {CLAIMS[n]}: **{c['status']}**, {iv(c)}" for n, c in cl.items()),
        "",
        f"Against the oracle (not a claim): DPT's last-episode return is "
        f"{stats.format_interval(share, digits=2)} of the oracle's; DPT − sweep "
        f"{stats.format_interval(vs_sweep, digits=2)}.",
        f"Pretraining: action accuracy at the last prefix (chunk means over updates): "
        f"{', '.join(f'{v:.2f}' for v in curve)}. Invariants: held-out goals drawn in "
        f"{inv['heldout_goals_in_pretraining']} of {inv['pretraining_tasks_checked']} "
        f"pretraining tasks; labels that are shortest-path actions: "
        f"{inv['labels_optimal_share']:.3f}; context cells and actions equal for two goals "
        f"under one key: {inv['context_independent_of_goal']}.",
        "Verdict rule: `verdicts.overall` of the two claims (each `vs_zero`).",
        *study.record_lines(meta["settings"], record),
    ]
    return study.Report(
        title="In-context RL in the dark room (#227 DPT): held-out goals, online episodes",
        claim="a transformer pretrained to predict the optimal action from in-context data, "
        "deployed online on goals unseen in pretraining, finds the goal from its own "
        "episodes: its return rises over a few episodes",
        claims=cl, reason=reason, arms=arms, notes=notes, digits=2, metric=f"return of episode {k}",
        extra={
            "claims": {n: {**c, "text": CLAIMS[n]} for n, c in cl.items()},
            "share_of_oracle": share, "dpt_minus_sweep": vs_sweep,
            "curves": {n: v.mean(0).tolist() for n, v in per_ep.items()},
            "pretraining_accuracy_last": [float(v) for v in curve], **meta,
        },
    )  # fmt: skip


def plot(args, out: dict, report: study.Report) -> None:
    config, k = out["config"], args.episodes
    per_ep = {n: out["returns"][n].mean(1) for n in out["returns"]}
    per_ep["dpt (pretraining goals)"] = out["train"]["dpt"].mean(1)
    stats.plot_bands(np.arange(1, k + 1), per_ep, os.path.join(args.workdir, "returns.png"),
                     title=f"Dark room {config.side}x{config.side}, held-out goals: return per "
                     "online episode (mean, 95% CI)", xlabel="online episode",
                     ylabel="return")  # fmt: skip


def check(args) -> None:
    cli.check_int("--side", args.side, low=2, high=12)
    if args.horizon == 0:
        args.horizon = args.side**2
    cli.check_int("--updates", args.updates, low=args.evals)
    cli.check_int("--horizon", args.horizon, low=2 * (args.side - 1), high=400)
    cli.check_int("--episodes", args.episodes, low=2, high=20)
    cli.check_int("--context-episodes", args.context_episodes, low=1, high=args.episodes)
    cli.check_int("--heldout", args.heldout, low=1, high=args.side**2 - 1)


def run(args) -> dict:
    t0 = time.perf_counter()
    config = dpt_darkroom.Config(side=args.side, horizon=args.horizon,
                                 context_episodes=args.context_episodes)  # fmt: skip
    dpt_darkroom.validate(config)
    seeds = np.arange(args.seed, args.seed + args.seeds)
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds))
    train_goals, heldout = goal_splits(config, seeds, args.heldout)
    state = jax.jit(jax.vmap(lambda k: dpt_darkroom.init(config, k)))(keys)
    chunk = args.updates // args.evals
    train = jax.jit(jax.vmap(lambda g, s: dpt_darkroom.train_chunk(config, g, s, chunk)))
    state, curve = _population.pretrain(train, state, args.evals, "action accuracy", t0,
                                        train_goals)  # fmt: skip
    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    returns, train_returns = evaluate(config, state, tile_goals(heldout, args.eval_tasks),
                                      tile_goals(train_goals, args.eval_tasks), eval_keys,
                                      args.episodes)  # fmt: skip
    last = {k: v[..., -1].mean() for k, v in returns.items()}
    _population.log_evaluated(t0, "last-episode return", last)
    settings = {k: getattr(args, k) for k in ("seeds", "updates", "eval_tasks", "evals", "side",
                "horizon", "episodes", "context_episodes", "heldout", "seed")}  # fmt: skip
    settings["dpt"] = dict(vars(config))
    return {
        "config": config, "returns": returns, "train": train_returns, "curve": curve,
        "settings": settings, "heldout_goals": np.asarray(heldout).tolist(),
        "invariants": invariants(config, train_goals, heldout, jax.random.PRNGKey(args.seed + 7)),
    }  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/in_context_darkroom", run=run, report=report,
    plot=plot, check=check, seeds=0, defaults=DEFAULTS, quick=QUICK,
    low={"seeds": 3, "evals": 1, "eval-tasks": 1},
    options={
        "updates": (0, "pretraining updates per model"),
        "eval-tasks": (0, "held-out tasks per seed"),
        "evals": (0, "pretraining chunks (progress lines)"),
        "side": (0, "the grid is side x side (0: 5)"),
        "horizon": (0, "steps per episode (0: side²)"),
        "episodes": (0, "online episodes per task (0: 4)"),
        "context-episodes": (2, "episodes per dataset"), "heldout": (5, "held-out goals per seed"),
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
