"""Emergent exploration (#214) in gridworlds: reward-only meta-RL over lifetimes of episodes.

The claim of ``experiments/emergent_exploration.py`` (#214: reward-only meta-RL explores given
recurring structure, memory and long-horizon credit), there on bandits, here on the paper's
other task family, gridworlds.

Setup (``rljax.envs.meta_grid``): a lifetime is E = 4 episodes of at most L = 8 moves in a 4 x 4
grid from the corner; a hidden goal cell (uniform over the 15 others) pays 1 and ends the
episode when stepped on. The agent observes its cell, the cell its last move reached, the last
reward and the time; never the goal. Four arms, each PPO trained on the reward alone (PPO's
entropy term is the only nudge, the same in every arm):

* ``full``: recurrent PPO (``rljax.agents.ppo_rnn``, a GRU over the lifetime), goal fixed for the
  lifetime (``MetaGrid-4x4-v0``), γ = 1;
* ``no credit``: the same with γ = 0.75: a reward k moves later counts 0.75^k (0.10 at k = 8,
  one episode's length), so credit reaches about one episode and hardly the next ones. γ = 0,
  the bandit study's choice, would leave a sparse-reward walk without any credit for the moves
  that lead to the goal, an ablation of navigation rather than of long-horizon credit;
* ``no structure``: recurrent PPO, γ = 1, trained where the goal is redrawn at every episode
  (``MetaGrid-4x4-Redraw-v0``: what an episode reveals says nothing about the next);
* ``no memory``: feed-forward PPO (``rljax.agents.ppo``), no carried state (it sees one move
  back), goal fixed, γ = 1.

``full`` and ``no credit`` are one grid (γ is an array leaf) of one compiled program; each arm
trains ``--seeds`` seeds together (``rljax.train.study_population``). Every trained policy then
lives the same ``--eval-tasks`` new fixed-goal lifetimes, sampling its actions as in training,
beside three references on the same lifetimes with each seed's own randomness: a random walk,
the exploring reference ``sweep`` (the boustrophedon through the cells not yet visited in the
lifetime until a reward shows the goal, then shortest paths to it:
``meta_grid.sweep_action``, "explore, then exploit") and the goal-knowing ``oracle`` (shortest
paths, told the goal).

Metric: return per episode index (the share of lifetimes whose k-th episode reaches the goal),
mean over the tasks, one value per seed; the lifetime return is their sum (at most E = 4). The
exploration gain is the mean return of episodes 2..E minus that of episode 1 (> 0: what the
first episodes found is used later).

Claims: ``CLAIMS``, each made of the differences listed in ``claims`` (``full``'s exploration
gain, and lifetime returns; 95% t intervals over seeds, ``rljax.stats``): a part "beats" by
``verdicts.vs_zero``, "the ablation loses" by ``verdicts.loses``, "matches" by
``verdicts.matches_or_beats`` with a margin of 10% of the sweep's lifetime return, and a claim's
parts combine by ``verdicts.over_arms``. "Beats a random walk" is a check (``CHECKS``), not a
claim: every trained arm, the ablations included, passes it.

Plots: return_per_episode.png (return per episode index, mean and 95% interval over seeds). Measured
time and results: docs/emergent_exploration.md ("Gridworlds").
"""

import sys

from rljax import xla_flags

# --quick is compile-bound (a few updates): XLA's lower optimization level compiles it faster.
xla_flags.set_flags(fast_compile="--quick" in sys.argv)

import functools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import envs, stats  # noqa: E402
from rljax.agents import ppo, ppo_rnn  # noqa: E402
from rljax.envs import meta_grid  # noqa: E402
from rljax.nets import recurrent as rnn  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

STRUCTURED, REDRAW = "MetaGrid-4x4-v0", "MetaGrid-4x4-Redraw-v0"
SIDE, EPISODES, LENGTH, _ = meta_grid.NAMES[STRUCTURED]
LIFETIME = EPISODES * LENGTH  # the longest lifetime, in moves
AGENTS = ("full", "no credit", "no structure", "no memory")
BASELINES = ("sweep", "random walk", "oracle")
CREDIT_GAMMA = 0.75  # the no-credit arm's γ: 0.75^8 = 0.10 one episode's length ahead
# Programs: (agent module, training env, {arm: γ}); arms of one program train as one grid.
PROGRAMS = (
    (ppo_rnn, STRUCTURED, {"full": 1.0, "no credit": CREDIT_GAMMA}),
    (ppo_rnn, REDRAW, {"no structure": 1.0}), (ppo, STRUCTURED, {"no memory": 1.0}),
)  # fmt: skip
MARGIN_SHARE = 0.1  # "matches": lifetime return at most 10% of the sweep's below the other's
HPARAMS = dict(lr=3e-3, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, gamma=1.0, gae_lambda=0.95)
DEFAULTS = {"seeds": 3, "steps": 300_000, "eval_tasks": 1000}
QUICK = {"seeds": 3, "steps": 8_192, "eval_tasks": 64}
CLAIMS = {
    "exploration_emerges": (
        "with structure, memory and long-horizon credit the reward-only agent explores: its "
        "later episodes return more than its first"
    ),
    "structure_and_memory_needed": (
        "without recurring structure, or without memory, the lifetime return is lower than "
        "with both (each ablation loses)"
    ),
    "credit_not_always_needed": (
        f"with short-horizon credit (γ = {CREDIT_GAMMA}) the agent still explores: its later "
        f"episodes return more than its first, and its lifetime return is within "
        f"{MARGIN_SHARE:.0%} of the sweep's return of the full agent's"
    ),
}


def agent_config(module, num_updates: int):
    """The static config of an arm: 64 environments x 32 steps per update, the longest lifetime
    (the recurrent core carries over rollouts and is reset at every lifetime start)."""
    common = dict(num_envs=64, num_steps=LIFETIME, num_epochs=4, num_minibatches=4,
                  num_updates=num_updates)  # fmt: skip
    if module is ppo_rnn:
        return ppo_rnn.Config(**common, embed_size=64, core_size=64, hidden=(64,))
    return ppo.Config(**common, hidden=(64, 64))


def _lifetimes(env, goals: jax.Array, key: jax.Array, policy, carry0):
    """One lifetime per goal of ``goals [N]`` under ``policy(carry, state, key) -> (a [N],
    carry)``; the steps after a lifetime's end (gymnax starts the next) are masked out.

    Returns:
      (return per episode index ``[N, E]``, distinct cells visited in episode 1 ``[N]``, moves
      of the lifetime ``[N]``).
    """
    n = goals.shape[0]
    state = envs.reset(env, jax.random.PRNGKey(0), n)
    state = state._replace(env_state=state.env_state.replace(goal=goals))  # the given tasks

    def body(carry, k):
        s, pc, alive = carry
        act_key, env_key = jax.random.split(k)
        a, pc = policy(pc, s, act_key)
        episode, cell = s.env_state.episode, s.env_state.cell
        s, res = envs.step(env, env_key, s, a)
        return (s, pc, alive * (1.0 - res.done)), (res.reward * alive, episode, cell, alive)

    alive0 = jnp.ones((n,), jnp.float32)
    xs = jax.random.split(key, LIFETIME)
    _, (r, ep, cell, alive) = jax.lax.scan(body, (state, carry0, alive0), xs)
    per_episode = (r[..., None] * jax.nn.one_hot(ep, EPISODES)).sum(0)
    first = (alive * (ep == 0))[..., None] * jax.nn.one_hot(cell, SIDE * SIDE)
    return per_episode, first.max(0).sum(-1), alive.sum(0)


@functools.partial(jax.jit, static_argnums=(0, 1))
def run_agents(module, config, states, goals: jax.Array, keys: jax.Array):
    """Each learner (``states [A]``) lives the lifetimes of ``goals [N]``, sampling its actions.

    Returns:
      (return per episode ``[A, N, E]``, cells visited in episode 1 ``[A, N]``, moves
      ``[A, N]``).
    """
    env = envs.make(STRUCTURED)
    n = goals.shape[0]

    def one(state, key):
        if module is ppo_rnn:

            def policy(pc, s, k):
                h, first = pc
                a, h = ppo_rnn.act(config, env, state, ppo_rnn.Input(s.obs, h, first), k)
                return a, (h, s.env_state.episode < 0)  # the core resets at the start only

            h0 = rnn.initial_state(ppo_rnn.network(config, env), n)
            carry0 = (h0, jnp.ones((n,), bool))
        else:
            policy = lambda pc, s, k: (ppo.act(config, env, state, s.obs, k), pc)  # noqa: E731
            carry0 = jnp.zeros(())
        return _lifetimes(env, goals, key, policy, carry0)

    return jax.vmap(one)(states, keys)


def _random_walk(pc, s, k):
    return jax.random.randint(k, s.env_state.cell.shape, 0, meta_grid.NUM_ACTIONS), pc


def _oracle(pc, s, k):  # told the goal
    return meta_grid.shortest_path_action(s.env_state.cell, s.env_state.goal, SIDE), pc


def _sweep(pc, s, k):
    """``meta_grid.sweep_action`` fed from what the agent observes: its cell, and the cell of a
    move that paid (the goal)."""
    visited, known, goal = pc
    es = s.env_state
    visited = visited | jax.nn.one_hot(es.cell, SIDE * SIDE, dtype=bool)
    paid = es.last_reward > 0
    known, goal = known | paid, jnp.where(paid, es.reached, goal)
    return meta_grid.sweep_action(es.cell, visited, known, goal, SIDE), (visited, known, goal)


@jax.jit
def run_baselines(goals: jax.Array, keys: jax.Array) -> dict:
    """Return per episode ``[S, N, E]``, cells visited in episode 1 ``[S, N]`` and moves
    ``[S, N]`` of the references on the lifetimes of ``goals [N]``, one key per seed."""
    env, n = envs.make(STRUCTURED), goals.shape[0]
    sweep0 = (jnp.zeros((n, SIDE * SIDE), bool), jnp.zeros((n,), bool), jnp.zeros((n,), jnp.int32))
    carries = {"sweep": sweep0, "random walk": jnp.zeros(()), "oracle": jnp.zeros(())}
    pols = {"sweep": _sweep, "random walk": _random_walk, "oracle": _oracle}
    return {
        name: jax.vmap(lambda k, p=pols[name], c=carries[name]: _lifetimes(env, goals, k, p, c))(
            keys
        )
        for name in BASELINES
    }


# Reported beside the verdict, never in it: every trained arm beats a random walk, the ablations
# with no structure or no memory included, so "beats a random walk" cannot fail here.
CHECKS = {
    "beats_random_walk": "every agent's lifetime return beats a random walk's (full − random "
    "walk, no credit − random walk; not a claim: the ablations pass it too)",
}


def claims(per_episode: dict) -> dict:
    """Statuses of ``CLAIMS`` from the per-seed return per episode ``[S, E]`` of every arm (a
    pure function of those numbers)."""
    life = {k: v.sum(-1) for k, v in per_episode.items()}
    margin = MARGIN_SHARE * float(life["sweep"].mean())
    cmp = lambda x, y: stats.compare(life[x], life[y])  # noqa: E731  # lifetime return x − y

    def gain_part(arm):
        s = stats.summarize(gains(per_episode[arm]))
        return _population.part({"diff": s["mean"], "diff_ci": s["mean_ci"]}, beats)

    beats = functools.partial(verdicts.vs_zero, higher_is_claimed=True)
    matches = functools.partial(verdicts.matches_or_beats, margin=margin)
    parts = {
        "exploration_emerges": {"full: later - first episode": gain_part("full")},
        "structure_and_memory_needed": {
            "full - no structure": _population.part(cmp("full", "no structure"), verdicts.loses),
            "full - no memory": _population.part(cmp("full", "no memory"), verdicts.loses),
        },
        "credit_not_always_needed": {
            "no credit: later - first episode": gain_part("no credit"),
            "no credit - full": _population.part(cmp("no credit", "full"), matches),
        },
    }
    return _population.claims_of_parts(parts, margin)


def checks(per_episode: dict) -> dict:
    """``CHECKS``: the comparisons with the random walk, as ``claims_of_parts`` has them."""
    life = {k: v.sum(-1) for k, v in per_episode.items()}
    beats = functools.partial(verdicts.vs_zero, higher_is_claimed=True)
    parts = {"beats_random_walk": {
        f"{a} - random walk": _population.part(stats.compare(life[a], life["random walk"]), beats)
        for a in AGENTS}}  # fmt: skip
    return _population.claims_of_parts(parts, 0.0)


def gains(per_episode: np.ndarray) -> np.ndarray:
    """Exploration gain per seed ``[S]``: mean return of episodes 2..E minus episode 1's."""
    return per_episode[:, 1:].mean(-1) - per_episode[:, 0]


def invariants(trained: dict) -> dict:
    """What the ablations must be: the redraw env draws a new goal at every episode end and the
    fixed env never within a lifetime; the memory-off learner carries no state."""
    out = {}
    for name in (STRUCTURED, REDRAW):
        env = envs.make(name)

        def walk(s, key, env=env):  # random moves in 512 lifetimes; count goal changes
            a_key, e_key = jax.random.split(key)
            a = jax.random.randint(a_key, (512,), 0, meta_grid.NUM_ACTIONS)
            new, res = envs.step(env, e_key, s, a)
            ended = (new.env_state.episode != s.env_state.episode) & ~res.done
            changed = new.env_state.goal != s.env_state.goal
            return new, (ended.sum(), (ended & changed).sum(), (~ended & ~res.done & changed).sum())

        start = envs.reset(env, jax.random.PRNGKey(11), 512)
        keys = jax.random.split(jax.random.PRNGKey(12), 4 * LIFETIME)
        ended, changed, inside = jax.jit(lambda s, k: jax.lax.scan(walk, s, k)[1])(start, keys)
        out[f"share_of_episode_ends_with_new_goal/{name}"] = float(changed.sum() / ended.sum())
        out[f"goal_changes_within_an_episode/{name}"] = int(inside.sum())
    out["memory_off_state_fields"] = list(ppo.State._fields)
    out["memory_off_carries_state"] = "h" in ppo.State._fields
    out["training_last_tenth"] = {a: float(np.mean(c, 0)[-1]) for a, c in trained["curves"].items()}
    return out


def evaluate(trained: dict, args) -> tuple[dict, dict, dict, np.ndarray]:
    """Return per episode ``[S, N, E]``, first-episode cells and moves ``[S, N]`` of every arm
    on the same new lifetimes, and their goals ``[N]``."""
    root = jax.random.PRNGKey(args.seed)
    goal_key = jax.random.fold_in(root, 10**6)
    goals = jax.random.randint(goal_key, (args.eval_tasks,), 1, SIDE * SIDE).astype(jnp.int32)
    keys = _population.seed_keys(args.seed, args.seeds)
    ret, cells, moves = {}, {}, {}
    for arm, (module, config, states) in trained["states"].items():
        r, c, m = run_agents(module, config, states, goals, keys)
        ret[arm], cells[arm], moves[arm] = np.asarray(r), np.asarray(c), np.asarray(m)
    for name, (r, c, m) in run_baselines(goals, keys).items():
        ret[name], cells[name], moves[name] = np.asarray(r), np.asarray(c), np.asarray(m)
    return ret, cells, moves, np.asarray(goals)


def oracle_check(ret: dict, moves: dict, goals: np.ndarray) -> dict:
    """The oracle against the shortest-path value: lifetime return E where the goal's distance
    d from START is at most L (every goal of the 4 x 4 grid: d <= 6), in E · d moves."""
    dist = goals // SIDE + goals % SIDE
    value = EPISODES * (dist <= LENGTH)
    got = ret["oracle"].sum(-1)  # [S, N]
    extra_moves = np.abs(moves["oracle"] - EPISODES * dist[None])
    return {"oracle_lifetime_return": float(got.mean()),
            "shortest_path_value": float(value.mean()),
            "oracle_max_abs_error": float(np.abs(got - value[None]).max()),
            "oracle_moves_minus_shortest": float(extra_moves.max())}  # fmt: skip


def report(args, out: dict, record: dict) -> study.Report:
    ret, cells, moves, goals, trained = (out[k] for k in ("ret", "cells", "moves", "goals",
                                                         "trained"))  # fmt: skip
    meta = {"settings": out["settings"], **record, "cpu_seconds": out["cpu_seconds"]}
    names = (*AGENTS, *BASELINES)
    per_episode = {n: ret[n].mean(1) for n in names}  # [S, E]
    cl = claims(per_episode)
    arms = {n: stats.summarize(per_episode[n].sum(-1)) for n in names}
    first = {n: stats.summarize(per_episode[n][:, 0]) for n in names}
    later = {n: stats.summarize(per_episode[n][:, 1:].mean(-1))
             for n in names}  # fmt: skip
    gain = {n: stats.summarize(gains(per_episode[n])) for n in names}
    explored = {n: stats.summarize(cells[n].mean(-1)) for n in names}
    inv = {**invariants(trained), **oracle_check(ret, moves, goals)}
    reason, bullets = _population.parts_text(cl, CLAIMS)
    _, check_bullets = _population.parts_text(checks(per_episode), CHECKS)
    fmt = lambda s: stats.format_interval(s, "mean", 2)  # noqa: E731
    explore_table = study.md_table(
        ("arm", "episode 1 return", "episodes 2-4 return (mean)", "gain (later − first)",
         "cells visited in episode 1"),
        ((n, *(fmt(t[n]) for t in (first, later, gain, explored))) for n in names))  # fmt: skip
    notes = [
        f"Metric: return per episode index (share of lifetimes whose k-th episode reaches the "
        f"goal) over lifetimes of {EPISODES} episodes of at most {LENGTH} moves in a "
        f"{SIDE} x {SIDE} grid, mean over {args.eval_tasks} new fixed-goal lifetimes (the same "
        "for every arm), one value per seed; the table's figure is the lifetime return (their "
        f"sum, at most {EPISODES}). The agents sample their actions as in training.",
        "",
        "**Claims** (95% bootstrap intervals over seeds; > 0 favours the first arm):",
        "",
        *bullets,
        "",
        "**Checks** (reported, not in the verdict):",
        "",
        *check_bullets,
        "",
        f"Margin for 'matches': {MARGIN_SHARE:.0%} of the sweep's lifetime return = "
        f"{cl['credit_not_always_needed']['margin']:.2f}.",
        "",
        *explore_table,
        "",
        "Invariants: share of episode ends after which the goal is new: "
        f"{inv[f'share_of_episode_ends_with_new_goal/{STRUCTURED}']:.3f} ({STRUCTURED}), "
        f"{inv[f'share_of_episode_ends_with_new_goal/{REDRAW}']:.3f} ({REDRAW}; 14/15 = 0.933 "
        "for independent draws); goal changes inside an episode: "
        f"{inv[f'goal_changes_within_an_episode/{STRUCTURED}']}, "
        f"{inv[f'goal_changes_within_an_episode/{REDRAW}']}; the memory-off learner's state "
        f"carries a core: {inv['memory_off_carries_state']}; oracle lifetime return "
        f"{inv['oracle_lifetime_return']:.3f} against the shortest-path value "
        f"{inv['shortest_path_value']:.3f} (largest difference {inv['oracle_max_abs_error']:g}).",
        "Training (lifetime return, mean over seeds, last tenth of updates): "
        + ", ".join(f"{a} {v:.2f}" for a, v in inv["training_last_tenth"].items())
        + ".",
        "Verdict rule: `verdicts.overall` of the three claims, each `verdicts.over_arms` of "
        "its parts (`vs_zero`, `loses`, `matches_or_beats`); the checks are not in it.",
        f"Settings: {json.dumps(meta['settings'])}.",
        f"Wall time: {meta['seconds']:.0f} s, CPU time {meta['cpu_seconds']:.0f} s "
        f"({meta['load']}); {meta['machine']}; command: `{meta['command']}`.",
    ]
    return study.Report(
        title="Emergent exploration (#214): reward-only meta-RL on gridworld lifetimes",
        claim="an agent trained only to maximise reward explores when the environment has "
        "recurring structure, the agent has memory and credit is assigned over a long "
        "horizon; removing structure or memory removes the exploration, removing "
        "long-horizon credit does not always",
        claims=cl, reason=reason, arms=arms, notes=notes, digits=2, metric="lifetime return",
        extra={
            "claims": {k: {**c, "text": CLAIMS[k]} for k, c in cl.items()}, "first_episode": first,
            "later_episodes": later, "gain": gain, "cells_visited_first_episode": explored,
            "invariants": inv, "per_episode": {n: per_episode[n].mean(0).tolist() for n in names},
            "training_curves": trained["curves"], "train_seconds": trained["seconds"], **meta,
        },
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    per_episode = {n: out["ret"][n].mean(1) for n in (*AGENTS, *BASELINES)}  # [S, E]
    stats.plot_bands(np.arange(1, EPISODES + 1), per_episode,
                     os.path.join(args.workdir, "return_per_episode.png"),
                     title=f"{SIDE}x{SIDE} grid, {EPISODES} episodes of <= {LENGTH} moves: "
                           "return per episode (mean, 95% CI)",
                     xlabel="episode of the lifetime", ylabel="return (goal reached)")  # fmt: skip


def run(args) -> dict:
    t0, cpu0 = time.perf_counter(), time.process_time()
    trained = _population.train_arms(PROGRAMS, agent_config, HPARAMS, args)
    ret, cells, moves, goals = evaluate(trained, args)
    _population.log_evaluated(t0, "lifetime return", {k: v.sum(-1).mean() for k, v in ret.items()})
    settings = {k: getattr(args, k) for k in ("seeds", "steps", "eval_tasks", "seed")}
    settings.update(hparams=HPARAMS, credit_gamma=CREDIT_GAMMA, arms=4, side=SIDE,
                    episodes=EPISODES, length=LENGTH)  # fmt: skip
    return {"trained": trained, "ret": ret, "cells": cells, "moves": moves, "goals": goals,
            "settings": settings, "cpu_seconds": time.process_time() - cpu0}  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/emergent_exploration_grid", run=run,
    report=report, plot=plot, **_population.meta_rl_spec(PROGRAMS, agent_config, DEFAULTS, QUICK),
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
