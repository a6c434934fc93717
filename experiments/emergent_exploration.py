"""Emergent exploration (#214): reward-only meta-RL on bandit lifetimes, with ablations.

Rentschler & Roberts 2025 ("Exploitation Is All You Need... for Exploration", #214): an agent
trained only to maximise reward, with no exploration bonus, explores when (1) the environment
has recurring structure, (2) the agent has memory and (3) credit is assigned over a long
horizon. Without structure or without memory the exploration vanishes; without long-horizon
credit it does not always vanish ("pseudo-Thompson sampling").

Setup (``rljax.envs.meta_bandit``): an episode is a lifetime of H = 20 pulls of K = 5 Bernoulli
arms whose means are drawn uniformly per lifetime; the agent observes its last arm, its last
reward and the time. Four arms, each PPO trained on the lifetime's reward alone (the entropy
term of PPO is the only nudge, the same in every arm):

* ``full``: recurrent PPO (``rljax.agents.ppo_rnn``, a GRU over the lifetime), means fixed per
  lifetime (``MetaBandit-K5-v0``), γ = 1;
* ``no credit``: the same with γ = 0 (each pull credited with its own reward only);
* ``no structure``: recurrent PPO, γ = 1, trained where the means are redrawn after every pull
  (``MetaBandit-K5-Redraw-v0``: nothing carries over from one pull to the next);
* ``no memory``: feed-forward PPO (``rljax.agents.ppo``), no state carried between steps (it
  sees the last pull only), means fixed, γ = 1.

``full`` and ``no credit`` are one grid (γ is an array leaf) of one compiled program; each arm
trains ``--seeds`` seeds together (``rljax.train.study_population``). Every trained policy is
then run, sampling its actions as in training, on the same ``--eval-tasks`` new lifetimes with
fixed means, beside Thompson sampling (Beta(1, 1), exact posterior sampling under this prior),
UCB1, greedy with memory (the Beta(1, 1) posterior-mean argmax: the myopic Bayes policy) and
uniform arms (``rljax.bandits``), each with the seed's own randomness.

Metric: per lifetime, the pseudo-regret ``Σ_t max μ − μ_a_t`` (lower is better), mean over the
tasks, one value per seed; exploration measures: distinct arms tried in the lifetime and the
share of the last 5 pulls on the best arm (chance 1/K).

Claims: ``CLAIMS``, each made of the regret differences listed in ``claims`` (95%
stratified-bootstrap intervals over seeds, ``rljax.stats``): a part "beats" by
``verdicts.vs_zero``, "matches" by ``verdicts.matches_or_beats`` with a margin of 20% of
Thompson's mean regret, and a claim's parts combine by ``verdicts.over_arms``.

Plots: regret.png (cumulative regret over pulls, mean and 95% interval over seeds). Measured time
and results: docs/emergent_exploration.md.
"""

import sys

from rljax import xla_flags

# --quick is compile-bound (a few updates): XLA's lower optimization level compiles it faster.
xla_flags.set_flags(fast_compile="--quick" in sys.argv)

import functools  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import bandits, envs, stats  # noqa: E402
from rljax.agents import ppo, ppo_rnn  # noqa: E402
from rljax.envs import meta_bandit  # noqa: E402
from rljax.nets import actor_out  # noqa: E402
from rljax.nets import recurrent as rnn  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_population as _population  # noqa: E402

STRUCTURED, REDRAW = "MetaBandit-K5-v0", "MetaBandit-K5-Redraw-v0"
AGENTS = ("full", "no credit", "no structure", "no memory")
BASELINES = ("thompson", "ucb1", "greedy", "uniform")
# Programs: (agent module, training env, {arm: γ}); arms of one program train as one grid.
PROGRAMS = (
    (ppo_rnn, STRUCTURED, {"full": 1.0, "no credit": 0.0}),
    (ppo_rnn, REDRAW, {"no structure": 1.0}), (ppo, STRUCTURED, {"no memory": 1.0}),
)  # fmt: skip
MARGIN_SHARE = 0.2  # "matches": regret at most 20% of Thompson's mean regret above the other
LAST = 5  # pulls at the end of the lifetime for the best-arm share
HPARAMS = dict(lr=3e-3, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, gamma=1.0, gae_lambda=0.95)
DEFAULTS = {"seeds": 3, "steps": 768_000, "eval_tasks": 1000}
QUICK = {"seeds": 3, "steps": 6_400, "eval_tasks": 64}
CLAIMS = {
    "exploration_emerges": (
        "with structure, memory and long-horizon credit the reward-only agent explores: regret "
        f"below uniform's and within {MARGIN_SHARE:.0%} of Thompson sampling's (or below)"
    ),
    "structure_and_memory_needed": (
        "without recurring structure, or without memory, the regret is higher than with both"
    ),
    "credit_not_always_needed": (
        "without long-horizon credit (γ = 0) the agent still explores: regret below uniform's "
        f"and within {MARGIN_SHARE:.0%} of Thompson's regret of the full agent's"
    ),
}


def agent_config(module, num_updates: int):
    """The static config of an arm: 64 lifetimes of 20 pulls per update (one lifetime per
    environment column, so the recurrent core runs over whole lifetimes)."""
    common = dict(num_envs=64, num_steps=meta_bandit.HORIZON, num_epochs=4, num_minibatches=4,
                  num_updates=num_updates)  # fmt: skip
    if module is ppo_rnn:
        return ppo_rnn.Config(**common, embed_size=32, core_size=32, hidden=(32,))
    return ppo.Config(**common, hidden=(64, 64))


@functools.partial(jax.jit, static_argnums=(0, 1))
def run_agents(module, config, states, means: jax.Array, keys: jax.Array):
    """Each learner (``states [A]``) lives the lifetimes ``means [E, K]``, sampling its actions.

    Returns:
      (actions ``[A, E, H]``, pseudo-regret ``[A, E, H]``).
    """
    env = envs.make(STRUCTURED)
    num_tasks, horizon = means.shape[0], meta_bandit.HORIZON
    env_state = envs.reset(env, jax.random.PRNGKey(0), num_tasks)
    start = env_state.env_state.replace(means=means)  # the given tasks
    env_state = env_state._replace(env_state=start)

    def one(state, key):
        def body(carry, k):
            env_s, h, first = carry
            act_key, env_key = jax.random.split(k)
            if module is ppo_rnn:
                a, h = ppo_rnn.act(config, env, state, ppo_rnn.Input(env_s.obs, h, first), act_key)
            else:
                a = ppo.act(config, env, state, env_s.obs, act_key)
            mu = env_s.env_state.means
            regret = mu.max(-1) - jnp.take_along_axis(mu, a[:, None], 1)[:, 0]
            env_s, res = envs.step(env, env_key, env_s, a)
            return (env_s, h, res.done), (a, regret)

        h0 = rnn.initial_state(ppo_rnn.network(config, env), num_tasks) if module is ppo_rnn else 0
        first = jnp.ones((num_tasks,), bool)
        _, (a, r) = jax.lax.scan(body, (env_state, h0, first), jax.random.split(key, horizon))
        return a.T, r.T

    return jax.vmap(one)(states, keys)


def run_baselines(means: jax.Array, keys: jax.Array) -> dict:
    """Actions and pseudo-regret ``[S, E, H]`` of the reference policies (``rljax.bandits``)."""
    out = {}
    for name in BASELINES:
        pol = functools.partial(getattr(bandits, name), num_arms=means.shape[1])
        run = jax.vmap(lambda k, p=pol: bandits.run_online(p, means, k, meta_bandit.HORIZON))
        a, _, r = jax.jit(run)(keys)
        out[name] = (np.asarray(a), np.asarray(r))
    return out


def exploration(actions: np.ndarray, means: np.ndarray) -> dict:
    """Per seed ``[S]``: distinct arms tried per lifetime and best-arm share of the last pulls."""
    k = means.shape[1]
    tried = (actions[..., None] == np.arange(k)).any(-2).sum(-1).mean(-1)
    best = (actions[..., -LAST:] == means.argmax(-1)[None, :, None]).mean((-1, -2))
    return {"arms_tried": tried, "best_arm_last": best}


def history_sensitivity(module, config, state, env) -> float:
    """Largest change of the policy's logits at one observation across 64 random histories
    that lead to it: 0 for a policy without memory, > 0 for one that uses its history."""
    k, h = env.num_actions, meta_bandit.HORIZON
    key = jax.random.PRNGKey(7)
    arms = jax.random.randint(key, (h - 1, 64), 0, k)
    rewards = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.5, (h - 1, 64)).astype(float)
    times = (jnp.arange(1, h) / h)[:, None, None] * jnp.ones((1, 64, 1))
    obs = jnp.concatenate([jax.nn.one_hot(arms, k), rewards[..., None], times], -1)
    obs = jnp.concatenate([jnp.zeros((1, 64, k + 2)), obs], 0)
    obs = obs.at[-1].set(obs[-1, 0])  # the same last observation after every history
    if module is ppo_rnn:
        net = ppo_rnn.network(config, env)
        first = jnp.zeros((h, 64), bool).at[0].set(True)
        _, hs = rnn.unroll(net, state.params, rnn.initial_state(net, 64), obs, first)
        logits = net.apply(state.params, hs[-1], method=net.heads)[0]
    else:
        logits = actor_out(state.params, obs[-1], ppo.network(config, env))[0]
    return float(jnp.abs(logits - logits[:1]).max())


def claims(regret: dict) -> dict:
    """Statuses of ``CLAIMS`` from the per-seed lifetime regret ``[S]`` of every arm."""
    margin = MARGIN_SHARE * float(regret["thompson"].mean())
    cmp = lambda x, y: stats.compare(regret[x], regret[y])  # noqa: E731  # regret x − y

    beats = functools.partial(verdicts.vs_zero, higher_is_claimed=True)
    matches = functools.partial(verdicts.matches_or_beats, margin=margin)
    parts = {
        "exploration_emerges": {
            "uniform - full": _population.part(cmp("uniform", "full"), beats),
            "thompson - full": _population.part(cmp("thompson", "full"), matches),
        },
        "structure_and_memory_needed": {
            "no structure - full": _population.part(cmp("no structure", "full"), beats),
            "no memory - full": _population.part(cmp("no memory", "full"), beats),
        },
        "credit_not_always_needed": {
            "uniform - no credit": _population.part(cmp("uniform", "no credit"), beats),
            "full - no credit": _population.part(cmp("full", "no credit"), matches),
        },
    }
    return _population.claims_of_parts(parts, margin)


def invariants(trained: dict) -> dict:
    """What the ablations must be: the redraw env's means change at every pull and the fixed
    env's never within a lifetime; the memory-off learner carries no state; the test tasks are
    the same for every arm."""
    out = {}
    for name in (STRUCTURED, REDRAW):
        env = envs.make(name)

        def pull(s, key, env=env):  # arm 0 in 256 lifetimes; 1 where every mean changed
            new, _ = envs.step(env, key, s, jnp.zeros(256, jnp.int32))
            return new, jnp.all(new.env_state.means != s.env_state.means, -1).mean()

        start = envs.reset(env, jax.random.PRNGKey(11), 256)
        keys = jax.random.split(jax.random.PRNGKey(12), meta_bandit.HORIZON - 1)
        changed = jax.jit(lambda s, k: jax.lax.scan(pull, s, k)[1])(start, keys)
        out[f"share_of_pulls_with_new_means/{name}"] = float(changed.mean())
    out["memory_off_state_fields"] = list(ppo.State._fields)
    out["memory_off_carries_state"] = "h" in ppo.State._fields
    out.update({f"history_sensitivity/{arm}": v for arm, v in trained["sensitivity"].items()})
    return out


def train_all(args) -> dict:
    """Trains every program; returns states, configs, training curves and, per arm, the history
    sensitivity of its first seed."""
    sensitivity = {}

    def record(arm, module, config, first, env_name):
        sensitivity[arm] = history_sensitivity(module, config, first, envs.make(env_name))

    out = _population.train_arms(PROGRAMS, agent_config, HPARAMS, args, on_arm=record)
    out["sensitivity"] = sensitivity
    return out


def evaluate(trained: dict, args) -> tuple[dict, dict, np.ndarray]:
    """Regret ``[S, E, H]`` and actions of every arm on the same new lifetimes."""
    root = jax.random.PRNGKey(args.seed)
    means = jax.random.uniform(jax.random.fold_in(root, 10**6), (args.eval_tasks, 5))
    keys = _population.seed_keys(args.seed, args.seeds)
    regret, actions = {}, {}
    for arm, (module, config, states) in trained["states"].items():
        a, r = run_agents(module, config, states, means, keys)
        actions[arm], regret[arm] = np.asarray(a), np.asarray(r)
    for name, (a, r) in run_baselines(means, keys).items():
        actions[name], regret[name] = a, r
    return regret, actions, np.asarray(means)


def report(args, out: dict, record: dict) -> study.Report:
    regret, actions, means, trained = (out[k] for k in ("regret", "actions", "means", "trained"))
    meta = {"settings": out["settings"], **record}
    names = (*AGENTS, *BASELINES)
    total = {n: regret[n].sum(-1).mean(-1) for n in names}  # [S]
    cl = claims(total)
    arms = {n: stats.summarize(total[n]) for n in names}
    explore = {n: exploration(actions[n], means) for n in names}
    explore_s = {n: {k: stats.summarize(v) for k, v in e.items()}
                 for n, e in explore.items()}  # fmt: skip
    inv = invariants(trained)
    reason, bullets = _population.parts_text(cl, CLAIMS)
    explore_table = study.md_table(
        ("arm", "arms tried per lifetime", f"best-arm share of the last {LAST} pulls"),
        ((n, *(stats.format_interval(explore_s[n][k], "mean", 2)
               for k in ("arms_tried", "best_arm_last"))) for n in names))  # fmt: skip
    notes = [
        f"Metric: pseudo-regret Σ_t (max μ − μ_a_t) over a lifetime of {meta_bandit.HORIZON} "
        f"pulls of 5 arms, mean over {args.eval_tasks} new lifetimes (the same for every arm), "
        "one value per seed; the agents sample their actions as in training. Lower is better.",
        "",
        "**Claims** (95% bootstrap intervals over seeds of regret differences; > 0 favours the "
        "second arm):",
        "",
        *bullets,
        "",
        f"Margin for 'matches': {MARGIN_SHARE:.0%} of Thompson's mean regret = "
        f"{cl['exploration_emerges']['margin']:.2f}.",
        "",
        *explore_table,
        "",
        "Invariants: share of pulls after which every mean is new: "
        f"{inv[f'share_of_pulls_with_new_means/{STRUCTURED}']:.3f} ({STRUCTURED}), "
        f"{inv[f'share_of_pulls_with_new_means/{REDRAW}']:.3f} ({REDRAW}); the memory-off "
        f"learner's state carries a core: {inv['memory_off_carries_state']}; largest change "
        "of the logits at one observation over 64 histories leading to it: "
        + ", ".join(f"{a} {inv[f'history_sensitivity/{a}']:.3g}" for a in AGENTS)
        + ".",
        "Training (lifetime return, mean over seeds, last tenth of updates; optimum "
        f"{meta_bandit.HORIZON * 5 / 6:.2f} in expectation): "
        + ", ".join(f"{a} {np.mean(trained['curves'][a], 0)[-1]:.2f}" for a in AGENTS)
        + ".",
        "Verdict rule: `verdicts.overall` of the three claims, each `verdicts.over_arms` of "
        "its parts (`vs_zero`, `matches_or_beats`).",
        *study.record_lines(meta["settings"], record),
    ]
    return study.Report(
        title="Emergent exploration (#214): reward-only meta-RL on bandit lifetimes",
        claim="an agent trained only to maximise reward explores when the environment has "
        "recurring structure, the agent has memory and credit is assigned over a long "
        "horizon; removing structure or memory removes the exploration, removing "
        "long-horizon credit does not always",
        claims=cl, reason=reason, arms=arms, notes=notes, digits=2, metric="lifetime regret",
        extra={
            "claims": {k: {**c, "text": CLAIMS[k]} for k, c in cl.items()},
            "exploration": explore_s, "invariants": inv,
            "curves": {n: np.cumsum(regret[n].mean(1), -1).mean(0).tolist() for n in names},
            "training_curves": trained["curves"], "train_seconds": trained["seconds"], **meta,
        },
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    regret, x = out["regret"], np.arange(1, meta_bandit.HORIZON + 1)
    stats.plot_bands(x, {n: np.cumsum(regret[n].mean(1), -1) for n in (*AGENTS, *BASELINES)},
                     os.path.join(args.workdir, "regret.png"),
                     title="Bernoulli lifetimes (K=5, H=20): cumulative regret (mean, 95% CI)",
                     xlabel="pull", ylabel="cumulative regret")  # fmt: skip


def run(args) -> dict:
    t0 = time.perf_counter()
    trained = train_all(args)
    regret, actions, means = evaluate(trained, args)
    _population.log_evaluated(
        t0, "lifetime regret", {k: v.sum(-1).mean() for k, v in regret.items()}
    )
    settings = {k: getattr(args, k) for k in ("seeds", "steps", "eval_tasks", "seed")}
    settings.update(hparams=HPARAMS, arms=4, horizon=meta_bandit.HORIZON)
    return {"trained": trained, "regret": regret, "actions": actions, "means": means,
            "settings": settings}  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/emergent_exploration", run=run, report=report,
    plot=plot, **_population.meta_rl_spec(PROGRAMS, agent_config, DEFAULTS, QUICK),
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
