"""ROVER stage A: random-policy valuation vs softmax policy gradient on exact random trees.

He et al. 2025, "Random Policy Valuation is Enough for LLM Reasoning with Verifiable Rewards"
(ROVER, #20 in PAPERS.md), Thm 3.1: in a finite-horizon, deterministic, tree-structured MDP with
binary terminal rewards, acting greedily on the uniform random policy's Q^{π_u} is optimal; the
algorithm samples from softmax(Q^{π_u}/τ) to keep diversity. The claim reproduced here: policy
gradient collapses onto one correct leaf while ROVER spreads its mass over all correct leaves.
This is stage A only (exact, tabular); stage B (ROVER vs GRPO on the LM task: pass@1, pass@256,
diversity) is NOT in this script.

Trees. Full trees of branching b = ``--branching`` (4) and depth D = ``--depth`` (6): 4^6 = 4,096
leaves, ``--correct`` = 16 of them correct (reward 1, uniform positions), the rest 0; a fresh tree
per seed. Everything below is exact (`rljax.dp.trees`: backward DP level by level, checked against
the dense `rljax.dp` solvers in tests/dp/test_dp_trees.py and here on one small tree).

Arms, each scored by its exact leaf distribution p:
  uniform        the base policy π_u (the start of every PG run).
  ROVER greedy   argmax_a Q^{π_u}, ties uniform (τ → 0: the policy of Thm 3.1).
  ROVER τ        softmax(Q^{π_u}/τ) per node; τ on a grid (``--taus``). The headline τ is chosen
                 on separate tuning trees (seeds 10,000+): the grid τ with the most distinct
                 correct leaves within 256 samples among those whose mean success is ≥ 0.99
                 (PG's converged success), unless ``--tau`` fixes it.
  π ∝ Q^{π_u}    a reference, not the paper's policy: on these trees it is exactly uniform over
                 the correct leaves (the ratios telescope), the most diverse optimal policy.
  PG exact       tabular softmax policy (one logit vector per node, zeros = π_u) trained by the
                 exact expected GRPO step, G → ∞: θ += η ∇J / σ with J = Σ_ℓ p_ℓ r_ℓ and σ the
                 reward std under π (∇J by jax.grad through the exact leaf distribution). Dividing
                 by σ rescales time only, so this is the gradient flow of plain softmax PG.
  GRPO           the same table trained by sampled GRPO: G = ``--group`` paths per step,
                 ``returns.grpo_advantages``, ``policy_gradient.reinforce`` summed over the D
                 actions of a path (``reduce.seq_mean_token_sum``), SGD on the logits.
Metrics: success (pass@1) Σ_{correct} p_ℓ; the expected number of distinct correct leaves among
k i.i.d. samples Σ_{correct} 1 − (1 − p_ℓ)^k, k = 1 … ``--max_k`` (exact); the effective number
of correct leaves exp(H(p | correct)); pass@256 = 1 − (1 − success)^256.

Negative controls (the theorem's two assumptions broken, same trees):
  stochastic     every action reaches its child w.p. 1 − ``--slip`` and otherwise a child drawn
                 from a Dirichlet(1) distribution of its own (per node and action).
  non-binary     the correct leaves pay 1, every other leaf a partial credit ~ U(0, ``--partial``).
Per tree: V* (backward max), the value of greedy-on-Q^{π_u} and of ROVER τ, and PG exact trained
on the control; regret = V* − value and the share of trees where greedy is suboptimal.

Over ``--seeds`` = 20 trees (seeds ``--seed`` .. ``--seed`` + 19: a second set is one flag, e.g.
``--seed 20``), mean with 95% bootstrap intervals (rljax.stats). The default takes about 1.5 min on
the 2-core CPU (``--depth 7``, 16,384 leaves: 3.5 min). Plots: rover_distinct_vs_k.png,
rover_training.png and rover_tau_sweep.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import functools  # noqa: E402
import os  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, dp, returns, stats  # noqa: E402
from rljax.dp import trees  # noqa: E402
from rljax.losses import policy_gradient, reduce  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402

TUNE_SEED = 10_000  # tuning trees for the headline τ: disjoint from the evaluation seeds
TABLE_KS = (1, 4, 16, 64, 256)
ROBUST_EXACT_LRS = (1.0, 100.0)  # PG exact step sizes besides --exact_lr (not in --quick)
ROBUST_GRPO = ((0.3, 8), (3.0, 8), (1.0, 32))  # (lr, G) besides --lr, --group
MAX_LEAVES = 1 << 20  # exact enumeration of the leaves (and a logit table of the same order)


# ------------------------------------------------------------------ policies and metrics
def softmax_levels(logits):
    return tuple(jax.nn.softmax(t, axis=-1) for t in logits)


def leaf_metrics(leaf_probs, rewards, correct, ks):
    """Exact metrics of one leaf distribution. ``correct`` [L] is 1 on the reward-1 leaves."""
    p_correct = leaf_probs @ correct
    cond = leaf_probs * correct / jnp.maximum(p_correct, 1e-30)
    entropy = -jnp.sum(jnp.where(cond > 0, cond * jnp.log(jnp.where(cond > 0, cond, 1.0)), 0.0))
    return {
        "value": leaf_probs @ rewards,
        "success": p_correct,
        "effective_correct": jnp.exp(entropy),
        "top_share": jnp.max(cond),
        "distinct": trees.expected_distinct(leaf_probs, correct, ks),  # [K]
    }


def greedy_all_optimal(q_u, q_star):
    """True iff every action greedy on Q^{π_u} is optimal, at every node (reachable or not)."""
    ok = True
    for g, qs in zip(trees.greedy_policy(q_u), q_star, strict=True):
        best = qs >= jnp.max(qs, axis=-1, keepdims=True) - 1e-6
        ok = ok & jnp.all((g == 0) | best)
    return ok


# ------------------------------------------------------------------ policy gradient
def _zeros(branching, depth):
    return tuple(jnp.zeros((branching**d, branching)) for d in range(depth))


@functools.partial(jax.jit, static_argnames=("branching", "depth", "steps", "curve_k"))
def train_exact(rewards, transitions, correct, *, branching, depth, steps, lr, curve_k=256):
    """Exact expected GRPO (G → ∞) on one tree; returns final leaf probs and per-step curves
    (value, effective correct leaves, distinct correct leaves within ``curve_k`` samples)."""

    def objective(logits):
        p = trees.leaf_distribution(softmax_levels(logits), transitions)
        return p @ rewards, p

    def step(logits, _):
        (j, p), grad = jax.value_and_grad(objective, has_aux=True)(logits)
        sigma = jnp.sqrt(jnp.maximum(p @ (rewards * rewards) - j * j, 0.0))
        logits = jax.tree.map(lambda t, g: t + lr * g / (sigma + 1e-6), logits, grad)
        m = leaf_metrics(p, rewards, correct, jnp.array([curve_k]))
        return logits, (m["value"], m["effective_correct"], m["distinct"][0])

    logits, curves = jax.lax.scan(step, _zeros(branching, depth), None, length=steps)
    return trees.leaf_distribution(softmax_levels(logits), transitions), curves


@functools.partial(jax.jit, static_argnames=("branching", "depth", "steps", "group", "curve_k"))
def train_grpo(rewards, correct, key, *, branching, depth, steps, group, lr, curve_k=256):
    """Sampled GRPO on one deterministic tree: ``group`` root-to-leaf paths per step; returns
    final leaf probs and per-step curves as `train_exact`."""

    def step(logits, k):
        keys = jax.random.split(k, depth)
        node = jnp.zeros((group,), jnp.int32)
        nodes, actions = [], []
        for d in range(depth):
            a = jax.random.categorical(keys[d], logits[d][node])
            nodes.append(node)
            actions.append(a)
            node = node * branching + a
        reward = rewards[node]  # [G]
        adv = returns.grpo_advantages(reward[None])[0]  # [G]

        def loss(lg):
            logp = jnp.stack(
                [
                    jnp.take_along_axis(
                        jax.nn.log_softmax(lg[d][nodes[d]]), actions[d][:, None], axis=-1
                    )[:, 0]
                    for d in range(depth)
                ],
                axis=1,
            )  # [G, D]
            per_token = policy_gradient.reinforce(logp, jnp.broadcast_to(adv[:, None], logp.shape))
            return reduce.seq_mean_token_sum(per_token, jnp.ones_like(logp))

        logits = jax.tree.map(lambda t, g: t - lr * g, logits, jax.grad(loss)(logits))
        p = trees.leaf_distribution(softmax_levels(logits))
        m = leaf_metrics(p, rewards, correct, jnp.array([curve_k]))
        return logits, (m["value"], m["effective_correct"], m["distinct"][0])

    logits, curves = jax.lax.scan(step, _zeros(branching, depth), jax.random.split(key, steps))
    return trees.leaf_distribution(softmax_levels(logits)), curves


# ------------------------------------------------------------------ trees
def make_trees(seeds, args):
    """Binary, stochastic and non-binary versions of one tree per seed (stacked on axis 0)."""
    b, depth = args.branching, args.depth
    binary, partial, trans = [], [], []
    for s in seeds:
        r = trees.random_leaf_rewards(s, branching=b, depth=depth, num_correct=args.correct)
        binary.append(r)
        credit = np.random.default_rng([s, 1]).uniform(0.0, args.partial, r.shape)
        partial.append(np.where(r > 0, 1.0, credit).astype(np.float32))
        trans.append(
            trees.random_transitions(s + 1_000_003, branching=b, depth=depth, slip=args.slip)
        )
    stacked = tuple(jnp.stack([t[d] for t in trans]) for d in range(depth))
    return jnp.asarray(np.stack(binary)), jnp.asarray(np.stack(partial)), stacked


def rover_sweep(rewards, taus, ks, branching):
    """[S] trees × τ grid: metrics of softmax(Q^{π_u}/τ) on deterministic trees."""

    def one(r, tau):
        q = trees.uniform_q(r, branching)
        return leaf_metrics(trees.leaf_distribution(trees.softmax_policy(q, tau)), r, r, ks)

    return jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))(rewards, taus)


def pick_tau(args, taus, ks):
    """Headline τ from the tuning trees: the most distinct correct leaves at k = max_k among the
    grid τ whose mean success is ≥ 0.99."""
    tune, _, _ = make_trees(range(TUNE_SEED, TUNE_SEED + args.tune_seeds), args)
    sweep = rover_sweep(tune, taus, ks[-1:], args.branching)
    success = np.asarray(sweep["success"]).mean(0)
    distinct = np.asarray(sweep["distinct"][..., -1]).mean(0)
    ok = success >= 0.99
    if not ok.any():
        return float(taus[int(np.argmax(success))])
    return float(taus[int(np.argmax(np.where(ok, distinct, -1.0)))])


def dense_check(args):
    """Q^{π_u} and Q* of one small tree from `rljax.dp.trees` vs the dense `rljax.dp` solvers."""
    mdp = dp.tree_mdp(0, depth=3, branching=3, success_prob=0.3)
    b, depth = 3, 3
    # rewards of entering each leaf, read off the dense MDP (breadth-first numbering as trees.py)
    first_leaf = trees.num_nodes(b, depth - 1)
    parents = np.arange(trees.num_nodes(b, depth - 2), first_leaf)
    leaf_r = np.asarray(mdp.reward_values[parents][:, :, :, 0])  # [b^{D-1}, b, S']
    leaf_r = np.stack([leaf_r[i, a, first_leaf + i * b + a] for i in range(len(parents))
                       for a in range(b)])  # fmt: skip
    q_dense = np.asarray(dp.random_policy_q(mdp))
    q_star_dense = np.asarray(dp.value_iteration(mdp).q_values)
    err = 0.0
    for d, (qu, qs) in enumerate(
        zip(trees.uniform_q(leaf_r, b), trees.optimal_q(leaf_r, b), strict=True)
    ):
        off = trees.num_nodes(b, d - 1) if d else 0
        err = max(err, float(np.abs(q_dense[d, off : off + b**d] - qu).max()))
        err = max(err, float(np.abs(q_star_dense[d, off : off + b**d] - qs).max()))
    return {"tree": "rljax.dp.tree_mdp(0, depth=3, branching=3)", "max_abs_q_error": err}


# ------------------------------------------------------------------ the study
def check(args) -> None:
    # evaluation trees stay apart from the tuning trees (seeds TUNE_SEED and up)
    cli.check_int("--seed", args.seed, low=0, high=TUNE_SEED - args.seeds)
    leaves = args.branching**args.depth
    if leaves > MAX_LEAVES:
        raise cli.ConfigError(f"--branching={args.branching} --depth={args.depth} gives {leaves} "
                              f"leaves; allowed: at most {MAX_LEAVES} (every leaf is "
                              "enumerated)")  # fmt: skip
    cli.check_int("--correct", args.correct, low=1, high=leaves)
    cli.check_number("--lr", args.lr, low=0.0, low_open=True)
    cli.check_number("--exact_lr", args.exact_lr, low=0.0, low_open=True)
    cli.check_number("--slip", args.slip, low=0.0, high=1.0)
    cli.check_number("--partial", args.partial, low=0.0, high=1.0, high_open=True)
    try:
        taus = [float(t) for t in args.taus.split(",")]
    except ValueError:
        raise cli.ConfigError(f"--taus={args.taus!r} is invalid; allowed: numbers > 0") from None
    for t in taus:
        cli.check_number("--taus", t, low=0.0, low_open=True)
    if args.tau is not None:
        cli.check_number("--tau", args.tau, low=0.0, low_open=True)


def run(args) -> dict:
    taus = np.array(sorted(float(t) for t in args.taus.split(",")), np.float32)
    b, depth = args.branching, args.depth
    ks = jnp.arange(1, args.max_k + 1)
    tau = args.tau if args.tau is not None else pick_tau(args, taus, ks)
    binary, partial, transitions = make_trees(range(args.seed, args.seed + args.seeds), args)
    correct = binary

    # --- deterministic binary trees: every arm
    def static_arms(r):
        q_u = trees.uniform_q(r, b)
        q_star = trees.optimal_q(r, b)
        policies = {
            "uniform (base)": tuple(jnp.full_like(q, 1.0 / b) for q in q_u),
            "ROVER greedy (τ→0)": trees.greedy_policy(q_u),
            f"ROVER τ={tau:g}": trees.softmax_policy(q_u, tau),
            "π ∝ Q^{π_u} (reference)": trees.proportional_policy(q_u),
        }
        out = {k: leaf_metrics(trees.leaf_distribution(pi), r, r, ks) for k, pi in policies.items()}
        return out, jnp.max(q_star[0]), greedy_all_optimal(q_u, q_star)

    static, v_star, all_optimal = jax.jit(jax.vmap(static_arms))(binary)
    order = ("uniform (base)", "ROVER greedy (τ→0)", f"ROVER τ={tau:g}", "π ∝ Q^{π_u} (reference)")
    arms = {name: static[name] for name in order}  # vmap returns dicts sorted by key
    metrics_of = jax.jit(jax.vmap(lambda p, r: leaf_metrics(p, r, r, ks)))
    shape = dict(branching=b, depth=depth, steps=args.steps)
    p_exact, curve_exact = jax.vmap(
        lambda r: train_exact(r, None, r, **shape, lr=args.exact_lr, curve_k=args.max_k)
    )(binary)
    p_grpo, curve_grpo = jax.vmap(
        lambda r, k: train_grpo(r, r, k, **shape, group=args.group, lr=args.lr, curve_k=args.max_k)
    )(binary, jax.random.split(jax.random.key(2 * args.seed), args.seeds))  # 2 roots per set
    arms["PG exact (G=∞)"] = metrics_of(p_exact, binary)
    arms[f"GRPO (G={args.group})"] = metrics_of(p_grpo, binary)
    robust = {}  # PG's collapse across step sizes and group sizes
    for lr in ROBUST_EXACT_LRS if not args.quick else ():
        p, _ = jax.vmap(lambda r, lr=lr: train_exact(r, None, r, **shape, lr=lr))(binary)
        robust[f"PG exact η={lr:g}"] = metrics_of(p, binary)
    for lr, group in ROBUST_GRPO if not args.quick else ():
        p, _ = jax.vmap(
            lambda r, k, lr=lr, group=group: train_grpo(r, r, k, **shape, group=group, lr=lr)
        )(binary, jax.random.split(jax.random.key(2 * args.seed + 1), args.seeds))
        robust[f"GRPO G={group} lr={lr:g}"] = metrics_of(p, binary)
    sweep = rover_sweep(binary, jnp.asarray(taus), jnp.array([args.max_k]), b)
    theorem = {
        "greedy_regret": np.asarray(v_star - arms["ROVER greedy (τ→0)"]["value"]).tolist(),
        "greedy_all_optimal": np.asarray(all_optimal).tolist(),
    }

    # --- negative controls
    def control(r, corr, tr):
        q_u = trees.uniform_q(r, b, tr)
        v_star = jnp.max(trees.optimal_q(r, b, tr)[0])
        value = lambda pi: trees.leaf_distribution(pi, tr) @ r  # noqa: E731
        return {"V*": v_star, "greedy": value(trees.greedy_policy(q_u)),
                "rover": value(trees.softmax_policy(q_u, tau)), "uniform": jnp.mean(r)}  # fmt: skip

    controls = {}
    for name, rew, tr in (("stochastic", binary, transitions), ("non-binary", partial, None),
                          ("deterministic binary", binary, None)):  # fmt: skip
        out = jax.jit(jax.vmap(control))(rew, correct, tr)
        p_pg, _ = jax.vmap(lambda r, t, c: train_exact(r, t, c, **shape, lr=args.exact_lr))(
            rew, tr, correct
        )
        out["pg_exact"] = jnp.sum(p_pg * rew, axis=-1)
        controls[name] = {k: np.asarray(v, np.float64) for k, v in out.items()}
    return {"tau": tau, "taus": taus, "arms": arms, "robust": robust, "sweep": sweep,
            "theorem": theorem, "controls": controls,
            "curves": (curve_exact, curve_grpo)}  # fmt: skip


# ------------------------------------------------------------------ writing
def report(args, out: dict, record: dict) -> study.Report:
    tau, taus, arms, sweep, theorem = (out[k] for k in ("tau", "taus", "arms", "sweep", "theorem"))
    seconds = record["seconds"]
    summ = lambda v: stats.summarize(np.asarray(v, np.float64))  # noqa: E731
    m, kmax = args.correct, args.max_k
    table = {}
    for name, met in arms.items():
        row = {k: summ(met[k]) for k in ("success", "value", "effective_correct", "top_share")}
        for k in TABLE_KS:
            if k <= kmax:
                row[f"distinct@{k}"] = summ(met["distinct"][:, k - 1])
        row["pass@256"] = summ(1.0 - (1.0 - np.asarray(met["success"], np.float64)) ** 256)
        table[name] = row
    robust_t = {
        name: {"success": summ(met["success"]), "effective_correct": summ(met["effective_correct"]),
               f"distinct@{kmax}": summ(met["distinct"][:, -1])}
        for name, met in out["robust"].items()
    }  # fmt: skip
    sweep_t = {
        f"{t:g}": {"success": summ(sweep["success"][:, i]),
                   "effective_correct": summ(sweep["effective_correct"][:, i]),
                   f"distinct@{kmax}": summ(sweep["distinct"][:, i, -1])}
        for i, t in enumerate(taus)
    }  # fmt: skip
    ctrl = {}
    for name, c in out["controls"].items():
        ctrl[name] = {
            "V*": summ(c["V*"]), "greedy": summ(c["greedy"]),
            "greedy_regret": summ(c["V*"] - c["greedy"]),
            "greedy_suboptimal": summ((c["V*"] - c["greedy"] > 1e-5).astype(np.float64)),
            f"ROVER τ={tau:g}": summ(c["rover"]), "PG exact": summ(c["pg_exact"]),
            "uniform": summ(c["uniform"]),
        }  # fmt: skip
    rover_name, grpo_name = f"ROVER τ={tau:g}", f"GRPO (G={args.group})"
    pg_names = ("PG exact (G=∞)", grpo_name)
    dk = f"distinct@{kmax}"
    rover_vs = {
        pg: stats.compare(arms[rover_name]["distinct"][:, -1], arms[pg]["distinct"][:, -1])
        for pg in pg_names
    }
    regret = np.asarray(theorem["greedy_regret"])
    findings = {
        "theorem_holds_on_every_tree": bool(
            np.max(np.abs(regret)) < 1e-5 and all(theorem["greedy_all_optimal"])
        ),
        "pg_collapses": all(
            table[pg]["distinct@256" if kmax >= 256 else dk]["mean_ci"][1] <= m / 4
            for pg in pg_names
        ),
        "rover_spreads_over_correct_leaves": table[rover_name][dk]["mean_ci"][0] >= 0.75 * m
        and table[rover_name]["success"]["mean_ci"][0] >= 0.95
        and all(stats.excludes_zero(c["diff_ci"]) and c["diff"] > 0 for c in rover_vs.values()),
        "controls_break_the_guarantee": all(
            ctrl[c]["greedy_suboptimal"]["mean_ci"][0] > 0 for c in ("stochastic", "non-binary")
        ),
    }
    fi = stats.format_interval
    reason = (
        f"On {args.seeds} random trees (b={args.branching}, D={args.depth}, {m} correct of "
        f"{args.branching**args.depth} leaves), greedy on Q^{{π_u}} is optimal on every tree "
        f"(max regret {np.max(np.abs(regret)):.1e}). Expected distinct correct leaves within "
        f"{kmax} samples: ROVER τ={tau:g} {fi(table[rover_name][dk], digits=2)} (success "
        f"{fi(table[rover_name]['success'])}), PG exact {fi(table[pg_names[0]][dk], digits=2)}, "
        f"GRPO {fi(table[grpo_name][dk], digits=2)} (success "
        f"{fi(table[pg_names[0]]['success'])} and {fi(table[grpo_name]['success'])}); "
        f"effective correct leaves {fi(table[rover_name]['effective_correct'], digits=2)} vs "
        f"{fi(table[pg_names[0]]['effective_correct'], digits=2)} and "
        f"{fi(table[grpo_name]['effective_correct'], digits=2)}. The spread needs τ matched to "
        f"the scale of Q^{{π_u}}, which shrinks like b^-(levels below): greedy (τ→0) reaches "
        f"{fi(table['ROVER greedy (τ→0)'][dk], digits=2)} leaves, τ={taus[-1]:g} has success "
        f"{fi(sweep_t[f'{taus[-1]:g}']['success'])}. Negative controls: greedy on Q^{{π_u}} is "
        f"suboptimal on {fi(ctrl['stochastic']['greedy_suboptimal'])} of stochastic trees "
        f"(slip {args.slip}; regret {fi(ctrl['stochastic']['greedy_regret'])}) and "
        f"{fi(ctrl['non-binary']['greedy_suboptimal'])} of non-binary ones (regret "
        f"{fi(ctrl['non-binary']['greedy_regret'])}). Findings: {findings}."
    )
    claim = (
        "ROVER (#20): on deterministic trees with binary terminal rewards, greedy on the uniform "
        "policy's Q is optimal (Thm 3.1), and policy gradient collapses onto one leaf while "
        "ROVER's softmax(Q^{π_u}/τ) spreads mass over all correct leaves."
    )
    spread = [("effective correct leaves", "effective_correct", 2), (dk, dk, 2)]
    at_k = [(f"distinct@{k}", f"distinct@{k}", 2) for k in TABLE_KS if k <= kmax]
    lines = [
        "Stage A only (exact trees). Stage B, ROVER vs GRPO on the LM task (pass@1, pass@256, "
        "diversity), is not in this script.",
        "",
        f"## Deterministic binary trees (b={args.branching}, D={args.depth}, {m} correct leaves, "
        f"{args.seeds} trees; mean [95% CI])",
        "",
        *study.table(table, [("success (pass@1)", "success", 3), spread[0],
                             ("top leaf's share", "top_share", 3), *at_k]),
    ]  # fmt: skip
    lines += [
        "",
        f"Headline τ = {tau:g} ({'fixed by --tau' if args.tau is not None else 'chosen on '}"
        f"{'' if args.tau is not None else f'{args.tune_seeds} tuning trees'}). "
        f"ROVER τ={tau:g} minus PG, distinct@{kmax}: "
        + "; ".join(
            f"{pg}: {c['diff']:.2f} [{c['diff_ci'][0]:.2f}, {c['diff_ci'][1]:.2f}]"
            for pg, c in rover_vs.items()
        )
        + ".",
        "",
        "## PG's collapse at other step and group sizes (same trees, same number of steps)",
        "",
        *study.table(robust_t, ["success", *spread]),
        "",
        "## ROVER's temperature (same trees)",
        "",
        *study.table(sweep_t, ["success", *spread], first="τ"),
    ]
    lines += [
        "",
        "## Negative controls (value = expected reward; regret = V* − value)",
        "",
        *study.table(
            ctrl,
            [
                ("V*", "V*", 3), ("greedy on Q^{π_u}", "greedy", 3), ("regret", "greedy_regret", 3),
                ("share of trees greedy is suboptimal", "greedy_suboptimal", 3), rover_name,
                "PG exact", "uniform",
            ],
            first="tree",
        ),
        "",
        f"Stochastic: slip {args.slip} (Dirichlet(1) per node and action). Non-binary: other "
        f"leaves pay U(0, {args.partial}). PG exact is trained on each control for {args.steps} "
        "steps.",
        "",
        f"Dense cross-check: {dense_check(args)}.",
        f"Run time {seconds:.0f} s (+ writing).",
    ]  # fmt: skip
    return study.Report(
        title="ROVER stage A: random-policy valuation vs policy gradient on exact random trees",
        claim=claim, claims=verdicts.from_findings(findings), reason=reason,
        arms={name: row[dk] for name, row in table.items()},
        metric=f"expected distinct correct leaves within {kmax} samples", notes=lines,
        extra={"config": vars(args), "tau": tau, "table": table, "pg_robustness": robust_t,
               "tau_sweep": sweep_t, "controls": ctrl, "theorem": theorem,
               "rover_vs_pg": rover_vs, "findings": findings, "seconds": seconds},
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    tau, taus, arms, sweep = out["tau"], out["taus"], out["arms"], out["sweep"]
    curve_exact, curve_grpo = out["curves"]
    kmax = args.max_k
    ks = np.arange(1, kmax + 1)
    idx = np.unique(np.round(np.geomspace(1, kmax, 40)).astype(int)) - 1
    stats.plot_bands(np.log2(ks[idx]),
                     {name: np.asarray(met["distinct"])[:, idx] for name, met in arms.items()},
                     os.path.join(args.workdir, "rover_distinct_vs_k.png"),
                     title=f"distinct correct leaves within k samples ({args.correct} exist)",
                     xlabel="log2 k", ylabel="expected distinct correct leaves")  # fmt: skip
    steps = np.arange(1, args.steps + 1)
    every = np.unique(np.round(np.geomspace(1, args.steps, 60)).astype(int)) - 1
    rover = np.asarray(arms[f"ROVER τ={tau:g}"]["distinct"])[:, -1]
    training = {
        "PG exact (G=∞)": np.asarray(curve_exact[2])[:, every],
        f"GRPO (G={args.group})": np.asarray(curve_grpo[2])[:, every],
        f"ROVER τ={tau:g} (no training)": np.repeat(rover[:, None], len(every), axis=1),
    }
    stats.plot_bands(np.log10(steps[every]), training,
                     os.path.join(args.workdir, "rover_training.png"),
                     title=f"distinct correct leaves within {kmax} samples during PG training",
                     xlabel="log10 step", ylabel=f"expected distinct@{kmax}")  # fmt: skip
    spread = np.asarray(sweep["distinct"][..., -1]) / args.correct
    stats.plot_bands(np.log10(taus), {"success (pass@1)": np.asarray(sweep["success"]),
                                      f"distinct@{kmax} / {args.correct}": spread},
                     os.path.join(args.workdir, "rover_tau_sweep.png"),
                     title="ROVER softmax(Q/τ): success vs spread over correct leaves",
                     xlabel="log10 τ", ylabel="fraction")  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/rover_trees", run=run, report=report, plot=plot,
    check=check, seeds=20, steps=2000,
    quick={"seeds": 4, "tune_seeds": 2, "depth": 5, "steps": 400},
    low={"seeds": 3, "tune_seeds": 1, "branching": 2, "depth": 1, "steps": 1, "group": 2,
         "max_k": 1},
    options={
        "tune_seeds": (5, "trees for choosing τ"), "branching": 4, "depth": 6,
        "correct": (16, "correct leaves per tree"),
        "taus": (",".join(f"{t:.3g}" for t in np.logspace(-4, 0, 17)), "τ grid"),
        "group": (8, "GRPO group size G"), "lr": (1.0, "GRPO SGD step on the logits"),
        "exact_lr": (10.0, "η of the exact PG step"), "slip": (0.2, "stochastic control"),
        "partial": (0.5, "non-binary control"), "max_k": 256,
        "tau": (None, "headline τ (default: tuned)", float),
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
