"""Exact audit of rljax's policy-gradient surrogates against ∇(E_π[r] − β·KL(π‖π_ref)).

A tiny autoregressive softmax policy (3 content tokens + EOS, at most 5 tokens, so lengths 1–5
occur; 364 sequences, a tabular logit per prefix: 121 × 4 parameters) is small enough that every
expectation over sequences is a finite sum. The intended objective is

    J(θ) = E_π[r] − β·KL(π‖π_ref),   KL over whole sequences,

with a binary reward (at least two 0-tokens in the answer). Its gradient ∇J is computed exactly
by enumeration. Every surrogate is the loss rljax's GRPO learner trains on: the functions of
``rljax.agents.grpo.objective`` (``kl_reward_penalty``, ``advantages`` with the codes ``dr_grpo``,
``grpo``, ``rloo``; ``policy_loss`` with ``reinforce``; ``regularizers``, ``sample_divergence``;
the aggregations ``token_mean``, ``seq_mean_token_mean``, ``seq_mean_token_sum_norm``,
``seq_mean_token_sum``; the divergences ``k1/k2/k3`` in the reward or the loss, ``forward_kl``
and ``js`` on the reference's samples), composed as ``rljax.agents.grpo`` composes them, on
groups of G ∈ {2, 4, 8, 16} sequences sampled from π (on-policy: π_old = π); its expected
ascent direction ``−E[∇L]`` is compared with ∇J.

How each expectation is computed (the ``method`` column):

* **exact**: by enumeration. The group enters only through the other G − 1 samples' rewards and
  lengths, so ``E[A_1 · w_1 | x_1]`` is summed over the exact joint law of (number correct, total
  length) of the others (a convolution over G − 1 draws); the advantages of each reward
  configuration come from rljax's advantage functions. Covers every arm whose advantage depends
  on the binary rewards only, and KL-in-reward with a mean or leave-one-out baseline under a
  sequence-level aggregation.
* **mc**: KL-in-reward with group-std normalization, or with token-mean aggregation, couples the
  group through continuous penalized rewards; there the expected gradient is a Monte Carlo
  average of rljax's end-to-end batch gradient over ``--mc_groups`` groups, and its standard
  error is reported (``se_rel`` = ‖SE‖/‖∇J‖).

The same Monte Carlo on the exact arms checks that rljax's code has the expectation the
enumeration says (the ``check`` block of results.json: the largest |z| per coordinate).

Per arm: cosine and relative error ‖g − ∇J‖/‖∇J‖ against ∇J, and "which objective it ascends": the
least-squares fit ``g ≈ a ∇E[r] − b_rev ∇KL(π‖π_ref) − b_fwd ∇KL(π_ref‖π) + c ∇E[|x|]`` reported as
effective coefficients b/a and the unexplained residual. The variance of the single-batch gradient,
tr Cov(ĝ) / ‖E ĝ‖² (noise-to-signal), per group size, is measured by sampling. Over 10 seeds (each a
fresh random reference and policy; seeds ``--seed`` .. ``--seed`` + 9, so a second seed set is one
flag), with 95% bootstrap intervals (rljax.stats). Plots: audit.png (cosine heat map, variance) and
audit_variance.png (rljax.stats bands).
"""

from rljax import xla_flags

xla_flags.set_flags()

import functools  # noqa: E402
import itertools  # noqa: E402
import os  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents.grpo import objective, presets  # noqa: E402
from rljax.train import study, study_checks, verdicts  # noqa: E402

N_CONTENT = 3  # content tokens 0..2; token 3 is EOS
EOS = N_CONTENT
VOCAB = N_CONTENT + 1
KL_PLACES = ("none", "k1_reward", "k2_reward", "k3_reward", "k1_loss", "k2_loss", "k3_loss",
             "fwd_kl", "js")  # fmt: skip
AGGS = ("token_mean", "seq_mean_token_mean", "dr_const", "seq_sum")
NORMS = ("mean", "std", "rloo")  # Dr.GRPO (std off), GRPO (std on, ddof=1), leave-one-out
# The arms' names here -> the names of rljax.agents.grpo.presets that the trainer's objective
# selects by.
DIVERGENCE_OF = {"none": "none", "fwd_kl": "forward_kl", "js": "js"}  # else k1/k2/k3
AGGREGATION_OF = {"token_mean": "token_mean", "seq_mean_token_mean": "seq_mean_token_mean",
                  "dr_const": "seq_mean_token_sum_norm",
                  "seq_sum": "seq_mean_token_sum"}  # fmt: skip
ADVANTAGE_OF = {"mean": "dr_grpo", "std": "grpo", "rloo": "rloo"}
BASIS = ("reward", "kl_rev", "kl_fwd", "length")


# ------------------------------------------------------------------ the enumerable sequence space
def build_space(max_len: int):
    """All answers ``c EOS`` (|c| < max_len) and truncated ``c`` (|c| = max_len)."""
    seqs = [
        c + (EOS,) for k in range(max_len) for c in itertools.product(range(N_CONTENT), repeat=k)
    ]
    seqs += list(itertools.product(range(N_CONTENT), repeat=max_len))
    prefixes = {}
    for k in range(max_len):
        for c in itertools.product(range(N_CONTENT), repeat=k):
            prefixes[c] = len(prefixes)
    n = len(seqs)
    tokens = np.zeros((n, max_len), np.int32)
    mask = np.zeros((n, max_len), np.float32)
    prefix_idx = np.zeros((n, max_len), np.int32)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = s
        mask[i, : len(s)] = 1
        prefix_idx[i, : len(s)] = [prefixes[tuple(s[:t])] for t in range(len(s))]
    content = [s[:-1] if s[-1] == EOS else s for s in seqs]
    reward = np.array([float(c.count(0) >= 2) for c in content], np.float32)
    return {
        "tokens": jnp.asarray(tokens), "mask": jnp.asarray(mask),
        "prefix_idx": jnp.asarray(prefix_idx), "reward": jnp.asarray(reward),
        "length": jnp.asarray(mask.sum(1)), "num_prefixes": len(prefixes), "max_len": max_len,
    }  # fmt: skip


def token_logp(theta, space, idx=None):
    """log π(x_t | x_<t), 0 at padding: ``[S, L]`` for every sequence, or ``[G, L]`` for ``idx``."""
    prefix_idx, tokens, mask = space["prefix_idx"], space["tokens"], space["mask"]
    if idx is not None:
        prefix_idx, tokens, mask = prefix_idx[idx], tokens[idx], mask[idx]
    log_probs = jax.nn.log_softmax(theta, axis=-1)[prefix_idx]
    lp = jnp.take_along_axis(log_probs, tokens[..., None], axis=-1)[..., 0]
    return lp * mask


def objectives(theta, ref_theta, space):
    """The candidate objectives, exactly: E[r], KL(π‖ref), KL(ref‖π), E[|x|]."""
    lp = token_logp(theta, space).sum(1)
    lr = token_logp(ref_theta, space).sum(1)
    p, q = jnp.exp(lp), jnp.exp(lr)
    return {"reward": p @ space["reward"], "kl_rev": p @ (lp - lr), "kl_fwd": q @ (lr - lp),
            "length": p @ space["length"]}  # fmt: skip


def flat_grad(fn, theta):
    return jax.grad(fn)(theta).ravel()


# ------------------------------------------------------------------ rljax surrogates on one batch
def choice(arm) -> objective.Choice:
    """The trainer's `objective.Choice` of an arm: codes (traced int32 ``[4]``) of the divergence,
    its placement, the aggregation and the advantage; REINFORCE, β set by the caller."""
    zero = jnp.zeros((), jnp.float32)
    return objective.Choice(advantage=arm[3], aggregation=arm[2],
                            policy_loss=presets.POLICY_LOSSES.index("reinforce"), divergence=arm[0],
                            placement=arm[1], eps_low=zero, eps_high=zero, kl_coef=zero,
                            entropy_coef=zero, pacs_beta=zero, rover_rho=zero)  # fmt: skip


def advantages(seq_reward, arm):
    """The trainer's group advantage (`objective.advantages`) of one group ``[G]``."""
    ones = jnp.ones((1, seq_reward.shape[0]))
    return objective.advantages(choice(arm), seq_reward[None], ones, 1.0)[0]


def batch_loss(theta, idx, ref_idx, arm, ref_theta, space, beta):
    """The loss rljax's GRPO learner trains on for one group ``idx`` [G] sampled from π.

    ``rljax.agents.grpo.objective`` composed as ``rljax.agents.grpo`` composes it (``update``: the
    penalty in the reward, the advantages; ``loss_fn``: policy loss + β·KL term + β·sample
    divergence), with π_old = π (on-policy) and one micro-batch; ``arm`` from ``arm_ids``;
    ``ref_idx`` is a batch sampled from π_ref for the sample divergences (forward KL, JS).
    """
    c = choice(arm)._replace(kl_coef=beta)
    mask = space["mask"][idx]
    lp = token_logp(theta, space, idx)  # [G, L]
    old = jax.lax.stop_gradient(lp)
    ref = token_logp(ref_theta, space, idx)
    reward = space["reward"][idx]
    shaped = reward - objective.kl_reward_penalty(c, old, ref, mask)
    adv = advantages(shaped, arm)
    zeros, group = jnp.zeros_like(lp), idx.shape[0]
    rate = jnp.full((group,), jnp.mean(reward))
    mb = objective.MicroBatch(lp, zeros, zeros, zeros, old, ref, mask, adv, reward, rate, group)
    norms = objective.minibatch_norms(mask, ref_idx.shape[0])
    max_len = float(space["max_len"])
    policy, _ = objective.policy_loss(c, mb, norms, max_len)
    _, kl_term, _, _ = objective.regularizers(c, mb, norms, max_len)
    lp_y = token_logp(theta, space, ref_idx).sum(1)
    ref_y = token_logp(ref_theta, space, ref_idx).sum(1)
    return policy + beta * kl_term + beta * objective.sample_divergence(c, lp_y, ref_y, norms)


def arm_ids(place, agg, norm):
    """An arm's codes in the trainer's preset tables: divergence, placement, aggregation,
    advantage."""
    divergence = DIVERGENCE_OF.get(place, place[:2])
    placement = "reward" if place.endswith("_reward") else "loss"
    return jnp.array([
        presets.DIVERGENCES.index(divergence), presets.PLACEMENTS.index(placement),
        presets.AGGREGATIONS.index(AGGREGATION_OF[agg]),
        presets.ADVANTAGES.index(ADVANTAGE_OF[norm]),
    ], jnp.int32)  # fmt: skip


def make_mc(space, group: int, num_groups: int, chunk: int = 500):
    """Monte Carlo of the ascent direction −∇L: returns (mean [D], per-coordinate var [D])."""

    @jax.jit
    def mc(theta, ref_theta, arm, key, beta):
        p = jnp.exp(token_logp(theta, space).sum(1))
        q = jnp.exp(token_logp(ref_theta, space).sum(1))
        grad_one = jax.grad(batch_loss)

        def body(carry, k):
            k1_, k2_ = jax.random.split(k)
            idx = jax.random.choice(k1_, p.shape[0], (chunk, group), p=p)
            ref_idx = jax.random.choice(k2_, q.shape[0], (chunk, group), p=q)
            g = jax.vmap(lambda i, j: -grad_one(theta, i, j, arm, ref_theta, space, beta).ravel())(
                idx, ref_idx
            )
            return (carry[0] + g.sum(0), carry[1] + jnp.square(g).sum(0)), None

        d = theta.size
        keys = jax.random.split(key, num_groups // chunk)
        (s1, s2), _ = jax.lax.scan(body, (jnp.zeros(d), jnp.zeros(d)), keys)
        n = (num_groups // chunk) * chunk
        mean = s1 / n
        return mean, s2 / n - jnp.square(mean)

    return mc


# ------------------------------------------------------------------ exact expected gradients
def others_law(p_seq, space, group):
    """Joint law P[k, T] of (number correct, total length) of G − 1 iid draws from π."""
    max_len = space["max_len"]
    r = np.asarray(space["reward"]).astype(int)
    length = np.asarray(space["length"]).astype(int)
    cls = np.zeros((2, max_len + 1))
    np.add.at(cls, (r, length), p_seq)
    law = np.zeros((group, max_len * (group - 1) + 1))
    law[0, 0] = 1.0
    for _ in range(group - 1):
        new = np.zeros_like(law)
        for rr in (0, 1):
            for ll in range(1, max_len + 1):
                if cls[rr, ll] == 0:
                    continue
                new[rr:, ll:] += cls[rr, ll] * law[: group - rr, : law.shape[1] - ll]
        law = new
    return law  # [k, T]


@functools.cache
def adv_table(norm, group):
    """A_1 for r_1 ∈ {0, 1} and k correct among the others, from rljax's advantage functions."""
    rows = [[r1] + [1] * k + [0] * (group - 1 - k) for r1 in (0, 1) for k in range(group)]
    r = jnp.asarray(np.array(rows, np.float32))  # [2G, G]
    adv = jax.vmap(lambda x: advantages(x, arm_ids("none", "seq_sum", norm)))(r)[:, 0]
    return np.asarray(adv, np.float64).reshape(2, group)


def token_kl(name):
    """The trainer's per-token KL estimate ``objective.token_kl`` of divergence ``name``."""
    code = presets.DIVERGENCES.index(name)
    return lambda logp, ref_logp: objective.token_kl(code, logp, ref_logp)


ESTIMATORS = {name: token_kl(name) for name in ("k1", "k2", "k3")}


def exact_context(theta, ref_theta, space, groups, grads):
    """Per-problem quantities the exact expectations share."""
    lp_tok = token_logp(theta, space)
    ref_tok = token_logp(ref_theta, space)
    p_seq = np.exp(np.asarray(lp_tok.sum(1), np.float64))
    ctx = {
        "theta": theta, "grads": grads, "lp_tok": lp_tok, "ref_tok": ref_tok, "p_seq": p_seq,
        "q_seq": jnp.exp(ref_tok.sum(1)), "law": {g: others_law(p_seq, space, g) for g in groups},
    }  # fmt: skip
    for name, fn in ESTIMATORS.items():
        ctx[f"{name}_value"] = np.asarray(fn(lp_tok, ref_tok), np.float64)
        # d k(logp, ref)/d logp per token, by differentiating rljax's estimator
        ctx[f"{name}_prime"] = np.asarray(
            jax.grad(lambda x, fn=fn: jnp.sum(fn(x, ref_tok)))(lp_tok), np.float64
        )
    return ctx


def make_gradients(space):
    """Jitted exact gradients on this space: of Σ coef·log π (a PG direction) and of D_f."""

    @jax.jit
    def from_coef(theta, coef):
        return flat_grad(lambda th: jnp.sum(coef * token_logp(th, space)), theta)

    def divergence(place):
        c = choice(arm_ids(place, "seq_sum", "mean"))
        one = objective.Norms(*jnp.ones((3,)))  # one sample: D_f's per-sample estimate

        def per_sample(lp, ref):  # objective.sample_divergence of one reference sample
            return objective.sample_divergence(c, lp[None], ref[None], one)

        @jax.jit
        def grad(theta, ref_seq, q_seq):
            def reg(th):
                lp_y = token_logp(th, space).sum(1)
                return q_seq @ jax.vmap(per_sample)(lp_y, ref_seq)

            return flat_grad(reg, theta)

        return grad

    return {"coef": from_coef, "fwd_kl": divergence("fwd_kl"), "js": divergence("js")}


def exact_direction(ctx, space, beta, place, agg, norm, group):
    """Exact −E[∇L] for the arms where it is a finite sum; None where it is not."""
    in_reward = place.endswith("_reward")
    if in_reward and (norm == "std" or agg == "token_mean"):
        return None
    mask = np.asarray(space["mask"])
    p_seq = ctx["p_seq"]
    r = np.asarray(space["reward"], np.float64)
    length = np.asarray(space["length"], np.float64)
    max_len = space["max_len"]
    law = ctx["law"][group]
    t_idx = np.arange(law.shape[1])
    # aggregation weight on one token of sample 1, times G (the G symmetric samples)
    if agg == "token_mean":
        inv_tot = 1.0 / (length[:, None] + t_idx[None, :])  # [S, T]
        w_kl = group * (inv_tot @ law.sum(0))  # E[G/(|x_1| + T)]
    else:
        w_kl = {
            "seq_mean_token_mean": 1.0 / length, "dr_const": np.full_like(length, 1.0 / max_len),
            "seq_sum": np.ones_like(length),
        }[agg]  # fmt: skip
    if in_reward:  # mean / rloo baseline, sequence-level aggregation (checked above)
        pen = r - beta * (ctx[f"{place[:2]}_value"] * mask).sum(1)
        scale = (group - 1) / group if norm == "mean" else 1.0
        e_adv_w = scale * (pen - p_seq @ pen) * w_kl
    else:
        table = adv_table(norm, group)  # [2, G]
        if agg == "token_mean":
            e_adv_w = group * np.einsum("kt,sk,st->s", law, table[r.astype(int)], inv_tot)
        else:
            e_adv_w = (table[r.astype(int)] @ law.sum(1)) * w_kl
    coef = (p_seq * e_adv_w)[:, None] * mask  # PG part
    if place.endswith("_loss"):
        coef = coef - beta * (p_seq * w_kl)[:, None] * ctx[f"{place[:2]}_prime"] * mask
    grads = ctx["grads"]
    direction = grads["coef"](ctx["theta"], jnp.asarray(coef, jnp.float32))
    if place in ("fwd_kl", "js"):
        direction = direction - beta * grads[place](ctx["theta"], ctx["ref_tok"].sum(1),
                                                     ctx["q_seq"])  # fmt: skip
    return direction


# ------------------------------------------------------------------ analysis
def fit_objective(g, basis):
    """Least squares g ≈ Σ_j c_j ∇B_j; returns coefficients and the unexplained fraction."""
    mat = np.stack([basis[b] for b in BASIS], 1)
    coef, *_ = np.linalg.lstsq(mat, g, rcond=None)
    resid = np.linalg.norm(g - mat @ coef) / max(np.linalg.norm(g), 1e-30)
    return dict(zip(BASIS, coef.tolist(), strict=True)), float(resid)


def make_problem(seed, space, ref_scale, shift):
    rng = np.random.default_rng(seed)
    ref = rng.normal(size=(space["num_prefixes"], VOCAB)) * ref_scale
    theta = ref + rng.normal(size=ref.shape) * shift
    return jnp.asarray(theta, jnp.float32), jnp.asarray(ref, jnp.float32)


def run_seed(seed, space, args, mcs, grads):
    theta, ref = make_problem(seed, space, args.ref_scale, args.shift)
    obj = objectives(theta, ref, space)
    jac = jax.jacrev(lambda th: objectives(th, ref, space))(theta)
    basis = {b: np.asarray(jac[b].ravel(), np.float64) for b in BASIS}
    ctx = exact_context(theta, ref, space, args.groups, grads)
    target = basis["reward"] - args.beta * basis["kl_rev"]
    norm_t = np.linalg.norm(target)
    out, key = {}, jax.random.key(1000 + seed)
    for place, agg, norm, group in itertools.product(KL_PLACES, AGGS, NORMS, args.groups):
        name = f"{place}|{agg}|{norm}|G={group}"
        g = exact_direction(ctx, space, args.beta, place, agg, norm, group)
        entry = {"method": "exact"}
        if g is None:
            key, sub = jax.random.split(key)
            mean, var = mcs[group](theta, ref, arm_ids(place, agg, norm), sub, args.beta)
            g = mean
            n = (args.mc_groups // 500) * 500
            entry = {"method": "mc", "se_rel": float(np.sqrt(np.sum(var) / n) / norm_t)}
        g = np.asarray(g, np.float64)
        coef, resid = fit_objective(g, basis)
        entry.update(
            cosine=float(g @ target / (np.linalg.norm(g) * norm_t + 1e-30)),
            rel_error=float(np.linalg.norm(g - target) / norm_t),
            norm_ratio=float(np.linalg.norm(g) / norm_t),
            beta_rev=coef["kl_rev"] / coef["reward"] * -1 if coef["reward"] else float("nan"),
            beta_fwd=coef["kl_fwd"] / coef["reward"] * -1 if coef["reward"] else float("nan"),
            length_coef=coef["length"] / coef["reward"] if coef["reward"] else float("nan"),
            reward_coef=coef["reward"], residual=resid,
        )  # fmt: skip
        out[name] = entry
    problem = {k: float(v) for k, v in obj.items()}
    ratio = args.beta * np.linalg.norm(basis["kl_rev"]) / np.linalg.norm(basis["reward"])
    problem["grad_ratio_kl_to_reward"] = float(ratio)
    return out, problem, (theta, ref, ctx)


VARIANCE_ARMS = (  # single-batch gradient variance per group size, by sampling
    ("k1_reward", "seq_sum", "rloo"), ("k1_reward", "seq_sum", "std"),
    ("k3_loss", "seq_mean_token_mean", "std"), ("k3_loss", "dr_const", "mean"),
    ("k3_loss", "token_mean", "std"),
)  # fmt: skip
REPORTED_ARMS = (  # results.json's arms: relative error at the largest G
    ("k1_reward", "seq_sum", "rloo"), ("k3_loss", "seq_mean_token_mean", "std"),
    ("k1_reward", "seq_sum", "mean"), ("k2_loss", "seq_sum", "rloo"),
    ("k3_loss", "token_mean", "std"), ("k1_loss", "seq_sum", "rloo"),
)  # fmt: skip
CHECK_ARMS = (  # Monte Carlo of rljax's end-to-end loss against the exact enumeration
    ("k3_loss", "token_mean", "std"), ("k2_loss", "seq_mean_token_mean", "mean"),
    ("k1_reward", "seq_sum", "rloo"), ("none", "dr_const", "std"), ("js", "seq_sum", "mean"),
    ("fwd_kl", "token_mean", "rloo"),
)  # fmt: skip


def check(args) -> None:
    args.groups = (2, 8) if args.quick else (2, 4, 8, 16)
    if args.max_len > 6:
        raise cli.ConfigError(f"--max_len={args.max_len} is invalid; allowed: 2..6 (3^L sequences)")
    if not args.beta > 0:
        raise cli.ConfigError(f"--beta={args.beta} is invalid; allowed: > 0")


def run(args) -> dict:
    space = build_space(args.max_len)
    mcs = {g: make_mc(space, g, args.mc_groups) for g in args.groups}
    var_mcs = {g: make_mc(space, g, args.var_groups) for g in args.groups}
    grads = make_gradients(space)
    per_seed, problems, variance, checks = [], [], {}, []
    for seed in range(args.seed, args.seed + args.seeds):
        out, problem, (theta, ref, ctx) = run_seed(seed, space, args, mcs, grads)
        per_seed.append(out)
        problems.append(problem)
        for place, agg, norm in VARIANCE_ARMS:
            for group in args.groups:
                arm, key = arm_ids(place, agg, norm), jax.random.key(seed)
                mean, var = var_mcs[group](theta, ref, arm, key, args.beta)
                # noise-to-signal of one batch: tr Cov(ĝ) / ‖E ĝ‖² (scale-free across arms)
                noise = float(np.sum(var) / np.sum(np.square(mean)))
                variance.setdefault(f"{place}|{agg}|{norm}", {}).setdefault(group, []).append(noise)
        if seed == args.seed:
            for place, agg, norm in CHECK_ARMS:
                group = args.groups[-1]
                mean, var = mcs[group](theta, ref, arm_ids(place, agg, norm), jax.random.key(7),
                                       args.beta)  # fmt: skip
                n = (args.mc_groups // 500) * 500
                exact = exact_direction(ctx, space, args.beta, place, agg, norm, group)
                # ‖MC − exact‖ / sqrt(tr Cov / n): about 1 when rljax's loss has the enumerated
                # expectation, ≫ 1 when it does not
                ratio = np.linalg.norm(np.asarray(mean - exact)) / np.sqrt(np.sum(var) / n)
                checks.append({
                    "arm": f"{place}|{agg}|{norm}|G={group}", "error_over_se": float(ratio),
                    "se_rel": float(np.sqrt(np.sum(var) / n) / np.linalg.norm(exact)),
                })  # fmt: skip
    nft = study_checks.nft_identity(group=args.groups[-1])
    return {"space": space, "per_seed": per_seed, "problems": problems, "variance": variance,
            "checks": checks, "nft": nft}  # fmt: skip


def decide(table: dict, beta: float, g_max: int) -> tuple[dict, dict]:
    """(findings, identity checks) from the audit's table (a pure function of its numbers).

    The findings can fail on some outcome and make the verdict: per-token k3 in the loss has a
    forward-KL coefficient above 0.2β; length normalization's cosine interval lies below the
    sequence sum's. k1 in the reward with sequence sums and the RLOO baseline is the exact
    gradient of E[r] − β·KL(π‖π_ref) (an identity: its relative error is float rounding or Monte
    Carlo noise), so it is a check of the code, reported beside the verdict and never in it.
    """
    at = lambda place, agg, norm: table[f"{place}|{agg}|{norm}|G={g_max}"]  # noqa: E731
    k3 = at("k3_loss", "seq_sum", "rloo")
    normalized = at("none", "seq_mean_token_mean", "rloo")["cosine"]["mean_ci"]
    findings = {
        "k3_in_loss_has_forward_kl_part": bool(k3["beta_fwd"]["mean"] > 0.2 * beta),
        "length_normalization_tilts_direction": bool(
            normalized[1] < at("none", "seq_sum", "rloo")["cosine"]["mean_ci"][0]),
    }  # fmt: skip
    identities = {
        "k1_in_reward_unbiased": bool(
            at("k1_reward", "seq_sum", "rloo")["rel_error"]["mean"] < 1e-3
        )
    }
    return findings, identities


def report(args, out: dict, record: dict) -> study.Report:
    space, per_seed, problems, checks, nft = (out[k] for k in ("space", "per_seed", "problems",
                                                               "checks", "nft"))  # fmt: skip
    seconds = record["seconds"]
    names = list(per_seed[0])
    table = {}
    g_max = args.groups[-1]
    for name in names:
        # intervals for the headline group size; means elsewhere (bootstraps cost 0.1 s each)
        full = name.endswith(f"G={g_max}")
        values = {key: [s[name][key] for s in per_seed]
                  for key in ("cosine", "rel_error", "beta_rev", "beta_fwd", "length_coef",
                              "residual")}  # fmt: skip
        table[name] = {key: stats.summarize(v)
                       if full and key in ("cosine", "rel_error") else {"mean": float(np.mean(v))}
                       for key, v in values.items()}  # fmt: skip
        table[name]["method"] = per_seed[0][name]["method"]
        if table[name]["method"] == "mc":
            table[name]["se_rel_max"] = max(s[name]["se_rel"] for s in per_seed)
    at = lambda place, agg, norm: table[f"{place}|{agg}|{norm}|G={g_max}"]  # noqa: E731
    unbiased = [n.rsplit("|", 1)[0] for n in names
                if n.endswith(f"G={g_max}") and table[n]["rel_error"]["mean"] < 1e-3]  # fmt: skip
    n_arms = sum(n.endswith(f"G={g_max}") for n in names)
    grpo = at("k3_loss", "seq_mean_token_mean", "std")
    k3 = at("k3_loss", "seq_sum", "rloo")
    findings, identities = decide(table, args.beta, g_max)
    verdict_reason = (
        f"{len(unbiased)} of {n_arms} surrogates at G={g_max} ascend ∇J without bias (relative "
        f"error < 1e-3, mean of {args.seeds} seeds): {', '.join(unbiased) or 'none'}. Per-token k3 "
        f"in the loss ascends E[r] − {k3['beta_rev']['mean']:.3f}·KL(π‖π_ref) − "
        f"{k3['beta_fwd']['mean']:.3f}·KL(π_ref‖π) (β = {args.beta}). GRPO's default (k3 in "
        f"loss, seq-mean-token-mean, std) has cosine {stats.format_interval(grpo['cosine'])} and "
        "relative "
        f"error {stats.format_interval(grpo['rel_error'])}. Findings: {findings}; identity "
        f"checks (not in the verdict): {identities}."
    )
    claim = (
        "k1 in the reward gives the reverse-KL gradient, per-token k3 in the loss a forward-KL one "
        "(Schulman 2020; Tang & Munos 2025); per-response length normalization and group-std "
        "scaling bias the gradient (Dr.GRPO, Liu et al. 2025)."
    )
    extra = {
        "config": {k: v for k, v in vars(args).items()},
        "num_sequences": int(space["tokens"].shape[0]),
        "num_params": int(space["num_prefixes"] * VOCAB), "problems": problems, "table": table,
        "variance": {
            a: {str(g): stats.summarize(v) for g, v in d.items()}
            for a, d in out["variance"].items()
        },
        "check": checks, "findings": findings, "identity_checks": identities, "nft_identity": nft,
        "seconds": seconds,
    }  # fmt: skip
    lines = [
        f"Setup: {extra['num_sequences']} sequences (3 content tokens + EOS, lengths "
        f"1–{args.max_len}), "
        f"{extra['num_params']} tabular logits, β = {args.beta}, binary reward; "
        f"{args.seeds} seeds (random π_ref, π); E_π[r] = "
        f"{np.mean([p['reward'] for p in problems]):.3f}, KL(π‖π_ref) = "
        f"{np.mean([p['kl_rev'] for p in problems]):.3f} nats, β‖∇KL‖/‖∇E[r]‖ = "
        f"{np.mean([p['grad_ratio_kl_to_reward'] for p in problems]):.2f} (seed means). "
        f"Run time {seconds:.0f} s.",
        "",
        f"## Every surrogate at G = {g_max}: mean over seeds [95% CI]",
        "",
        "`method`: exact = enumeration; mc = Monte Carlo of rljax's end-to-end loss "
        f"({(args.mc_groups // 500) * 500} groups, worst ‖SE‖/‖∇J‖ shown). The fit "
        "g ≈ a∇E[r] − β_rev∇KL(π‖π_ref) − β_fwd∇KL(π_ref‖π) + c∇E[|x|] (all divided by a) "
        "says which objective the surrogate ascends; `resid` is the part no such objective "
        "explains.",
        "",
    ]

    def row(name):
        t = table[name]
        meth = t["method"] + (f" (SE {t['se_rel_max']:.3f})" if t["method"] == "mc" else "")
        means = (f"{t[k]['mean']:.3f}" for k in ("beta_rev", "beta_fwd", "length_coef", "residual"))
        return (*name.split("|")[:3], meth, stats.format_interval(t["cosine"], digits=4),
                stats.format_interval(t["rel_error"]), *means)  # fmt: skip

    lines += study.md_table(("KL", "aggregation", "adv", "method", "cosine", "rel. error", "β_rev",
                             "β_fwd", "c_len", "resid"),
                            (row(n) for n in names if n.endswith(f"G={g_max}")))  # fmt: skip
    lines += ["", "## Group size: relative error of selected surrogates (mean over seeds)", ""]
    sel = [("k1_reward", "seq_sum", n) for n in NORMS] + [
        ("none", "seq_sum", "std"), ("k3_loss", "seq_mean_token_mean", "std"),
        ("k3_loss", "token_mean", "std"), ("k1_reward", "token_mean", "rloo"),
        ("k2_loss", "seq_sum", "rloo"), ("k3_loss", "dr_const", "mean"),
    ]  # fmt: skip
    by_g = ("arm", *(f"G={g}" for g in args.groups))
    rel = lambda p, a, n, g: f"{table[f'{p}|{a}|{n}|G={g}']['rel_error']['mean']:.4f}"  # noqa: E731
    lines += study.md_table(by_g, ((f"{p}, {a}, {n}", *(rel(p, a, n, g) for g in args.groups))
                                   for p, a, n in sel))  # fmt: skip
    lines += ["", "## Noise-to-signal of one batch's gradient, tr Cov(ĝ) / ‖E ĝ‖² [95% CI]", ""]
    lines += study.md_table(by_g, (
        (arm.replace("|", ", "), *(stats.format_interval(d[str(g)], digits=2) for g in args.groups))
        for arm, d in extra["variance"].items()))  # fmt: skip
    lines += ["", f"## Check: Monte Carlo of rljax's batch loss vs the enumeration "
              f"(seed {args.seed})", ""]  # fmt: skip
    lines += ["‖MC − exact‖ / ‖SE‖ (about 1 when they agree; SE relative to ‖g‖ in brackets):", ""]
    lines += [f"- {c['arm']}: {c['error_over_se']:.2f} ({c['se_rel']:.4f})" for c in checks]
    g = args.groups[-1]
    lines += [
        "",
        f"## NFT ≡ GRPO on policy (64 groups of {g}, one batch)",
        "",
        f"- NFT × (1 − r_q) vs Dr.GRPO: max relative difference {nft['dr_grpo_max_rel_diff']:.1e}",
        f"- NFT × sqrt((1 − r_q)/r_q) vs GRPO, population std (ddof=0): "
        f"{nft['grpo_ddof0_max_rel_diff']:.1e}",
        f"- NFT × sqrt((1 − r_q)/r_q) × sqrt((G − 1)/G) vs GRPO, rljax's default ddof=1: "
        f"{nft['grpo_ddof1_max_rel_diff']:.1e}",
        f"- unweighted NFT vs GRPO (ddof=1): cosine {nft['unweighted_vs_grpo_cosine']:.4f}",
    ]
    arms = {", ".join(a): at(*a)["rel_error"] for a in REPORTED_ARMS}
    return study.Report(
        title="Exact estimator audit: which surrogate ascends E[r] − β·KL(π‖π_ref)?", claim=claim,
        claims=verdicts.from_findings(findings), reason=verdict_reason, arms=arms,
        metric=f"relative gradient error at G={g_max}", extra=extra, notes=lines, digits=4,
    )  # fmt: skip


def plot(args, _, report: study.Report) -> None:
    table, variance = report.extra["table"], report.extra["variance"]
    g_max = args.groups[-1]
    rows = [n for n in table if n.endswith(f"G={g_max}")]
    cos = np.array([table[n]["cosine"]["mean"] for n in rows]).reshape(len(KL_PLACES), -1)
    path = os.path.join(args.workdir, "audit.png")
    with study.figure(path, ncols=2, figsize=(14, 5), dpi=110) as (fig, axes):
        im = axes[0].imshow(cos, vmin=min(0.5, cos.min()), vmax=1, cmap="viridis")
        axes[0].set_yticks(range(len(KL_PLACES)), KL_PLACES)
        axes[0].set_xticks(range(len(AGGS) * len(NORMS)),
                           [f"{a}/{n}" for a in ("tok", "seq-tok", "dr", "sum") for n in NORMS],
                           rotation=70, fontsize=8)  # fmt: skip
        axes[0].set_title(f"cosine(E[-∇L], ∇J), G={g_max}, mean of {args.seeds} seeds")
        fig.colorbar(im, ax=axes[0])
        for arm, d in variance.items():
            m = [d[str(g)]["mean"] for g in args.groups]
            lo, hi = ([d[str(g)]["mean_ci"][i] for g in args.groups] for i in (0, 1))
            (line,) = axes[1].loglog(args.groups, m, marker="o", label=arm.replace("|", ", "))
            axes[1].fill_between(args.groups, lo, hi, color=line.get_color(), alpha=0.2)
        axes[1].set(xlabel="group size G", ylabel="tr Cov(ĝ) / ‖E ĝ‖²")
        axes[1].set_title("noise-to-signal of one group's gradient (95% CI over seeds)")
        axes[1].legend(fontsize=7)
    bands = {arm.replace("|", ", "): np.log10([d[str(g)]["values"] for g in args.groups]).T
             for arm, d in variance.items()}  # fmt: skip
    stats.plot_bands(np.log2(args.groups), bands, os.path.join(args.workdir, "audit_variance.png"),
                     title="noise-to-signal of one group's gradient (95% CI over seeds)",
                     xlabel="log2 group size G", ylabel="log10 tr Cov(ĝ) / ‖E ĝ‖²")  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/estimator_audit", run=run, report=report,
    plot=plot, check=check, seeds=10,
    quick={"seeds": 3, "mc_groups": 1000, "var_groups": 500},
    low={"seeds": 1, "max_len": 2, "mc_groups": 500, "var_groups": 500},
    options={
        "max_len": 5, "beta": 0.1, "ref_scale": 1.0, "shift": (0.7, "std of θ − θ_ref"),
        "mc_groups": 20000, "var_groups": 4000,
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
