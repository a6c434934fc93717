"""TD vs supervised stitching (#24): success on (start, goal) pairs no trajectory connects.

Ghugare, Geist, Berseth & Eysenbach 2024 ("Closing the Gap between TD Learning and Supervised
Learning -- A Generalisation Point of View", #24) call trajectory stitching a combinatorial
generalisation: reaching a goal from a start that never shared a trajectory with it. They find
that supervised (outcome-conditioned BC) methods lack it and TD methods have it, and that
temporal data augmentation (relabelling goals through waypoint states shared with other
trajectories) gives goal-conditioned BC the missing property.

Setup (``rljax.goal_data``): a corridor of ``--rooms`` rooms of ``--room-size``² cells with
one door per wall; per seed, ``--per-region`` trajectories of an ε-noisy (ε = 0.2)
shortest-path walker inside each pair of adjacent rooms, so a start in room i and a goal in
room j, |i − j| >= 2, never lie on one trajectory (checked: ``unseen_co_occurring`` must be 0).
Four arms, each ``--samples`` relabelled (s, a, s', g) samples, trained by
``rljax.agents.offline`` (MLP on one-hot(s) ++ one-hot(g)):

* ``gcbc``: BC with hindsight goals (a later state of the same trajectory);
* ``gcbc+aug``: BC with temporal augmentation (half of the goals relabelled through a waypoint:
  a later state w of the same trajectory, another trajectory through w, a state after w on it);
* ``gc-q``: offline DQN, reward 1 and termination at s' = g, goals half hindsight and half any
  state of the data (the usual goal-conditioned Q-learning relabelling);
* ``gc-q tabular``: Q-iteration on the ``gc-q`` samples themselves (``goal_data.tabular_q``,
  a table, no function approximation; a (s, a, g) without a sample stays 0): the TD fixed point
  of the same data, to separate what TD can stitch from what the MLP learner reaches.

Metric: the share of all unseen (start, goal) pairs the greedy policy reaches within
``--horizon`` steps on the true dynamics, per seed (and, as a check of the learners, the share
of 512 in-distribution pairs: a start and a later state of one trajectory).

Claims (``claims``): TD stitches better than BC (gc-q − gcbc and gc-q tabular − gcbc,
intervals > 0, combined by ``verdicts.over_arms``); augmentation helps BC (gcbc+aug − gcbc >
0); augmentation closes the gap (gcbc+aug matches or beats each TD arm within ``MARGIN`` = 0.1
success, ``over_arms``). Each comparison's status by ``verdicts.vs_zero`` or
``verdicts.matches_or_beats``.

Plots: success_unseen.png (success on unseen pairs over updates, mean and 95% interval over seeds)
and success_by_distance.png. The default takes about 11 min on the shared 2-core CPU. Results and
their reading: docs/stitching_and_in_context_rl.md.
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, goal_data, stats  # noqa: E402
from rljax.agents import offline  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402

ARMS = {  # name -> (offline algo, relabelling scheme)
    "gcbc": ("bc", "future"),
    "gcbc+aug": ("bc", "waypoint"),
    "gc-q": ("dqn", "future_random"),
    "gc-q tabular": ("table", "future_random"),
}
EPS = 0.2  # noise of the data-collecting walker
P_AUG = 0.5  # share of relabelled goals (waypoint for gcbc+aug, random state for gc-q)
MARGIN = 0.1  # "matches": within 0.1 success
TABLE_ITERATIONS = 200  # Q-iteration sweeps of the tabular arm (values converge well before)
HPARAMS = {"lr": 1e-3, "gamma": 0.95, "cql_alpha": 0.0, "bcq_threshold": 0.3, "crr_beta": 1.0}
DEFAULTS = {"seeds": 5, "updates": 10_000, "samples": 32_000, "per_region": 150, "evals": 5}
QUICK = {"seeds": 3, "updates": 200, "samples": 2_000, "per_region": 40, "evals": 1}
CLAIMS = {
    "td_stitches": (
        "goal-conditioned Q-learning (MLP and tabular) reaches more unseen pairs than "
        "goal-conditioned BC"
    ),
    "augmentation_helps": "temporal augmentation raises goal-conditioned BC's unseen-pair success",
    "augmentation_closes_gap": (
        f"BC with temporal augmentation matches or beats Q-learning, MLP and tabular (margin "
        f"{MARGIN} success)"
    ),
}


def build(env: goal_data.Rooms, args) -> dict:
    """Per seed: trajectories, the four arms' samples, unseen and seen evaluation pairs."""
    unseen = goal_data.unseen_pairs(env)
    out = {"samples": {a: [] for a in ARMS}, "seen": [], "co_occurring": 0, "traj_len": []}
    for i in range(args.seeds):
        rng = np.random.default_rng(args.seed + i)
        trajs = goal_data.collect(env, rng, args.per_region, eps=EPS, max_len=4 * env.num_states)
        out["co_occurring"] += int(goal_data.co_occurring(trajs, unseen).sum())
        out["traj_len"] += [len(t) - 1 for t in trajs]
        out["seen"].append(goal_data.seen_pairs(trajs, rng, 512))
        for name, (_, scheme) in ARMS.items():
            out["samples"][name].append(
                goal_data.relabel(trajs, rng, args.samples, scheme, p_aug=P_AUG)
            )
    out["unseen"] = unseen
    return out


def train_algo(env: goal_data.Rooms, built: dict, algo: str, names: list[str], args) -> dict:
    """The arms ``names`` (one offline ``algo``) × seeds in one jitted program.

    Returns ``{name: {"unseen": [S, evals, P], "seen": [S, evals]}}`` success per pair / share.
    """
    data = jax.tree.map(
        lambda *xs: jnp.stack(xs),
        *[
            jax.tree.map(lambda *ys: jnp.stack(ys), *[
                goal_data.to_dataset(s, env.num_states) for s in built["samples"][name]
            ])
            for name in names
        ],
    )  # fmt: skip  # leaves [arms, S, M, ...]
    chunk = args.updates // args.evals
    config = offline.Config(algo=algo, num_actions=4, batch_size=128, hidden=(128, 128),
                            target_update_every=50, num_updates=chunk * args.evals)  # fmt: skip
    offline.validate(config)
    offline.validate_hparams(HPARAMS)
    hp = offline.Hparams(**HPARAMS)
    keys = jax.random.split(jax.random.PRNGKey(args.seed), args.seeds)
    inner = lambda f, ax: jax.vmap(jax.vmap(f, ax), ax)  # noqa: E731  # over arms, then seeds
    init = jax.jit(inner(lambda d, k: offline.init(config, d, k, hp), (0, 0)))
    run = jax.jit(inner(lambda d, s: offline.train_chunk(config, d, s, chunk)[0], (0, 0)))
    nxt = jnp.asarray(env.next_state)
    unseen = jnp.asarray(built["unseen"])
    seen = jnp.asarray(np.stack(built["seen"]))  # [S, 512, 2]

    def _evaluate(state, seen_s):
        pol = lambda o: offline.act(config, None, state, o, None, greedy=True)  # noqa: E731
        return (
            goal_data.success(nxt, pol, unseen, args.horizon),
            goal_data.success(nxt, pol, seen_s, args.horizon).mean(),
        )

    evaluate = jax.jit(jax.vmap(jax.vmap(_evaluate, (0, 0)), (0, None)))
    keys = jnp.broadcast_to(keys, (len(names), *keys.shape))
    state = init(data, keys)
    ev = []
    for _ in range(args.evals):
        state = run(data, state)
        ev.append(jax.tree.map(np.asarray, evaluate(state, seen)))
    return {
        name: {
            "unseen": np.stack([e[0][i] for e in ev], 1),
            "seen": np.stack([e[1][i] for e in ev], 1),
        }
        for i, name in enumerate(names)
    }


def tabular(env: goal_data.Rooms, built: dict, args) -> dict:
    """The ``gc-q tabular`` arm: Q-iteration on each seed's ``gc-q`` samples (one evaluation)."""
    nxt = jnp.asarray(env.next_state)
    unseen, seen = [], []
    for i, samples in enumerate(built["samples"]["gc-q tabular"]):
        q = goal_data.tabular_q(samples, env.num_states, gamma=HPARAMS["gamma"],
                                iterations=TABLE_ITERATIONS)  # fmt: skip
        pol = goal_data.table_policy(jnp.asarray(q, jnp.float32))
        unseen.append(goal_data.success(nxt, pol, jnp.asarray(built["unseen"]), args.horizon))
        seen.append(goal_data.success(nxt, pol, jnp.asarray(built["seen"][i]), args.horizon))
    # the table is exact after its iterations: the same value at every evaluation point
    return {
        "unseen": np.repeat(np.stack(unseen)[:, None], args.evals, 1),
        "seen": np.repeat(np.mean(seen, 1)[:, None], args.evals, 1),
    }


def claims(final: dict[str, np.ndarray]) -> dict:
    """Statuses of ``CLAIMS`` from the final unseen-pair success ``[S]`` per arm."""
    td_arms = ("gc-q", "gc-q tabular")
    td = {a: stats.compare(final[a], final["gcbc"]) for a in td_arms}
    aug = stats.compare(final["gcbc+aug"], final["gcbc"])
    gap = {a: stats.compare(final["gcbc+aug"], final[a]) for a in td_arms}
    for c in td.values():
        c["status"] = verdicts.vs_zero(c["diff_ci"])
    for c in gap.values():
        c["status"] = verdicts.matches_or_beats(c["diff_ci"], margin=MARGIN)
    return {
        "td_stitches": {
            "status": verdicts.over_arms(c["status"] for c in td.values()), "per_arm": td,
        },
        "augmentation_helps": {**aug, "status": verdicts.vs_zero(aug["diff_ci"])},
        "augmentation_closes_gap": {
            "status": verdicts.over_arms(c["status"] for c in gap.values()), "per_arm": gap,
        },
    }  # fmt: skip


def by_distance(env: goal_data.Rooms, unseen: np.ndarray, res: dict) -> dict:
    """Final unseen-pair success per room distance |i − j| (2, 3, ...) and arm: ``[S]``."""
    gap = np.abs(env.room[unseen[:, 0]] - env.room[unseen[:, 1]])
    return {
        int(k): {name: r["unseen"][:, -1][:, gap == k].mean(1) for name, r in res.items()}
        for k in np.unique(gap)
    }


def _claim_text(c: dict) -> str:
    if "per_arm" in c:
        return ", ".join(
            f"vs {a} {study.diff_text(d['diff'], d['diff_ci'])} {d['status']}"
            for a, d in c["per_arm"].items()
        )
    return study.diff_text(c["diff"], c["diff_ci"])


def report(args, out: dict, record: dict) -> study.Report:
    env, built, res = out["env"], out["built"], out["res"]
    meta = {"settings": out["settings"], **record}
    final = {name: r["unseen"][:, -1].mean(1) for name, r in res.items()}
    cl = claims(final)
    arms = {name: stats.summarize(v) for name, v in final.items()}
    seen = {name: stats.summarize(r["seen"][:, -1])
            for name, r in res.items()}  # fmt: skip
    dist = by_distance(env, built["unseen"], res)
    dist_sum = {k: {n: stats.summarize(v) for n, v in d.items()}
                for k, d in dist.items()}  # fmt: skip
    f2 = lambda s: stats.format_interval(s, "mean", 2)  # noqa: E731
    reason = "; ".join(f"{k}: {c['status']} ({_claim_text(c)})" for k, c in cl.items())
    success_table = study.md_table(
        ("arm", "in-distribution pairs: success [95% CI]",
         *(f"unseen, rooms {k} apart" for k in dist_sum)),
        ((n, f2(seen[n]), *(f2(d[n]) for d in dist_sum.values())) for n in ARMS))  # fmt: skip
    notes = [
        f"Metric: share of the {len(built['unseen'])} unseen (start, goal) pairs (rooms ≥ 2 "
        f"apart) reached within {args.horizon} steps by the greedy policy, per seed (one "
        f"dataset and one learner per seed). Test pairs that co-occur in a training trajectory, "
        f"summed over seeds: **{built['co_occurring']}** (must be 0).",
        "",
        *success_table,
    ]
    notes += ["", "**Claims** (difference of unseen-pair success, 95% bootstrap interval):", ""]
    notes += [f"* {CLAIMS[k]}: **{c['status']}**, {_claim_text(c)}" for k, c in cl.items()]
    notes += [
        "",
        f"Verdict rule: `verdicts.overall` of the three claims; a TD claim holds for both TD "
        f"arms (`over_arms`) by `vs_zero` (first claim) or `matches_or_beats` with margin "
        f"{MARGIN} (third); the second by `vs_zero`.",
        f"Data: {env.num_rooms} rooms of {args.room_size}x{args.room_size} cells, "
        f"{env.num_states} states; {args.per_region} trajectories per two-room region, mean "
        f"length {np.mean(built['traj_len']):.1f} steps; {args.samples} relabelled samples per "
        f"arm and seed.",
        *study.record_lines(meta["settings"], record),
    ]
    return study.Report(
        title="TD vs supervised stitching (#24): success on never-co-occurring (start, goal) pairs",
        claim="goal-conditioned TD learning stitches trajectories (reaches goals never seen with "
        "the start) while goal-conditioned BC does not; temporal augmentation (goals "
        "relabelled through waypoints of other trajectories) gives BC that ability",
        claims=cl, reason=reason, arms=arms, notes=notes, digits=2, metric="unseen-pair success",
        extra={
            "claims": {k: {**c, "text": CLAIMS[k]} for k, c in cl.items()}, "seen_pairs": seen,
            "by_room_distance": {str(k): v for k, v in dist_sum.items()},
            "unseen_co_occurring": built["co_occurring"], "num_unseen_pairs": len(built["unseen"]),
            "curves": {name: r["unseen"].mean(2).mean(0).tolist() for name, r in res.items()},
            **meta,
        },
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    x = np.arange(1, args.evals + 1) * (args.updates // args.evals)
    stats.plot_bands(x, {n: r["unseen"].mean(2) for n, r in out["res"].items()},
                     os.path.join(args.workdir, "success_unseen.png"),
                     title="Unseen (start, goal) pairs: success (mean, 95% CI over seeds)",
                     xlabel="gradient updates", ylabel="success rate")  # fmt: skip
    dist = by_distance(out["env"], out["built"]["unseen"], out["res"])
    _plot_distance(dist, os.path.join(args.workdir, "success_by_distance.png"))


def _plot_distance(dist: dict, path: str) -> None:
    width = 0.8 / len(ARMS)
    with study.figure(path, figsize=(6.4, 3.8)) as (_, ax):
        for j, name in enumerate(ARMS):
            for i, d in enumerate(dist.values()):
                v = np.asarray(d[name])
                lo, hi = stats.mean_interval(v)
                ax.bar(i + j * width, v.mean(), width, color=f"C{j}",
                       label=name if i == 0 else None, yerr=[[v.mean() - lo], [hi - v.mean()]],
                       capsize=3)  # fmt: skip
        ax.set_xticks(np.arange(len(dist)) + 0.4 - width / 2, [f"rooms {k} apart" for k in dist])
        ax.set(ylabel="success on unseen pairs",
               title="Final success by distance (mean, 95% CI over seeds)")  # fmt: skip
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y")


def check(args) -> None:
    cli.check_int("--updates", args.updates, low=args.evals)
    cli.check_int("--rooms", args.rooms, low=3, high=8)
    cli.check_int("--room-size", args.room_size, low=2, high=8)


def run(args) -> dict:
    t0 = time.perf_counter()
    env = goal_data.rooms(args.rooms, args.room_size)
    built = build(env, args)
    if built["co_occurring"]:
        raise RuntimeError(f"{built['co_occurring']} unseen pairs co-occur in a trajectory")
    print(f"data: {time.perf_counter() - t0:.0f} s", flush=True)
    res = {}
    for algo in ("bc", "dqn"):
        names = [n for n, (a, _) in ARMS.items() if a == algo]
        t1 = time.perf_counter()
        res.update(train_algo(env, built, algo, names, args))
        print(f"{algo}: {time.perf_counter() - t1:.0f} s; final unseen success "
              + ", ".join(f"{n} {res[n]['unseen'][:, -1].mean():.2f}" for n in names),
              flush=True)  # fmt: skip
    res["gc-q tabular"] = tabular(env, built, args)
    settings = {k: getattr(args, k) for k in ("seeds", "updates", "samples", "per_region",
                "evals", "rooms", "room_size", "horizon", "seed")}  # fmt: skip
    settings.update(hparams=HPARAMS, eps=EPS, p_aug=P_AUG, batch_size=128, hidden=[128, 128])
    return {"env": env, "built": built, "res": {n: res[n] for n in ARMS}, "settings": settings}


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/stitching", run=run, report=report, plot=plot,
    check=check, seeds=0, defaults=DEFAULTS, quick=QUICK,
    low={"seeds": 3, "evals": 1, "samples": 256, "per-region": 1, "horizon": 1},
    options={
        "updates": (0, "gradient updates per learner"),
        "samples": (0, "relabelled samples per arm and seed"),
        "per-region": (0, "trajectories per two-room region"),
        "evals": (0, "evaluations during training"), "rooms": 4, "room-size": 3,
        "horizon": (60, "evaluation steps per pair"),
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
