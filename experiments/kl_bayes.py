"""KL-regularized RL is Bayesian inference, shown exactly on a tabular sequence model.

Every sequence of length L over a vocabulary of V tokens is enumerated (V^L of them), so the
target ``π*(x) = π0(x) exp(r(x)/β) / Z`` and every policy's ``KL(π‖π*)``, entropy and expected
reward are computed exactly; only the training gradients are sampled. Korbak, Perez & Buckley
2022, "RL with KL penalties is better viewed as Bayesian inference": maximizing
``E_π[r] - β KL(π‖π0)`` equals minimizing ``β KL(π‖π*)``; without the KL term the optimum is a
point mass on the best sequence.

Runs (all start at π = π0, REINFORCE with a leave-one-out baseline over the batch):
  no_kl               E[r] only: collapses onto argmax r.
  k1_in_loss          + β k1 in the loss: zero expected KL gradient, so it collapses too.
  k1_in_reward        r - β k1 as the reward (KL-in-reward): unbiased ∇ of the KL objective;
                      at π = π* the penalized reward β log Z is constant, so the gradient noise
                      vanishes there too.
  k2_in_loss          + β k2 of the sequence log-ratio in the loss: exact reverse-KL gradient.
  k3_in_reward+loss   r - β k3 in the reward and + β k3 in the loss: ∇E_π[k3] = ∇KL exactly.
  k3_in_loss_token    GRPO's per-token k3 in the loss: follows the forward KL's gradient, so it
                      converges to a different policy.
  forward_kl_dm       distribution matching, min KL(π*‖π) with importance weights π*/π (DPG).

Run: ``python experiments/kl_bayes.py [--outdir runs/kl_bayes]``; about 10-30 s on 2 CPU cores.
Writes results.md, results.json and kl_bayes.png to ``--outdir``.
"""

import os

from rljax import xla_flags

xla_flags.set_flags()

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rljax import returns  # noqa: E402
from rljax.losses import kl, policy_gradient, reduce  # noqa: E402

METHODS = (
    "no_kl",
    "k1_in_loss",
    "k1_in_reward",
    "k2_in_loss",
    "k3_in_reward+loss",
    "k3_in_loss_token",
    "forward_kl_dm",
)


def make_problem(vocab: int, length: int, seed: int, prior_scale: float):
    """All sequences, their prefix indices, a random autoregressive prior and a reward."""
    seqs = np.array(list(itertools.product(range(vocab), repeat=length)), np.int32)  # [S, L]
    prefixes = {(): 0}
    for t in range(1, length):
        for p in itertools.product(range(vocab), repeat=t):
            prefixes[p] = len(prefixes)
    prefix_idx = np.array([[prefixes[tuple(s[:t])] for t in range(length)] for s in seqs])
    rng = np.random.default_rng(seed)
    prior_logits = rng.normal(size=(len(prefixes), vocab)) * prior_scale
    target = np.arange(length) % vocab  # the unique best sequence 0, 1, 2, 0, ...
    reward = (seqs == target).mean(axis=1)  # fraction of positions matching, in [0, 1]
    return (
        jnp.asarray(seqs),
        jnp.asarray(prefix_idx),
        jnp.asarray(prior_logits, jnp.float32),
        jnp.asarray(reward, jnp.float32),
    )


def token_logps(logits, seqs, prefix_idx):
    """log π(x_t | x_<t) for every sequence: ``[S, L]``."""
    log_probs = jax.nn.log_softmax(logits, axis=-1)[prefix_idx]  # [S, L, V]
    return jnp.take_along_axis(log_probs, seqs[..., None], axis=-1)[..., 0]


def exact_metrics(logits, prior_logits, seqs, prefix_idx, reward, beta):
    seq_lp = token_logps(logits, seqs, prefix_idx).sum(-1)
    prior_lp = token_logps(prior_logits, seqs, prefix_idx).sum(-1)
    target_lp = jax.nn.log_softmax(prior_lp + reward / beta)
    p = jnp.exp(seq_lp)
    return {
        "kl_to_target": jnp.sum(p * (seq_lp - target_lp)),
        "entropy": -jnp.sum(p * seq_lp),
        "reward": jnp.sum(p * reward),
        "kl_to_prior": jnp.sum(p * (seq_lp - prior_lp)),
    }


def loss_fn(logits, key, method, prior_logits, seqs, prefix_idx, reward, beta, batch):
    """Sampled surrogate loss of one method; its gradient is the method's update direction."""
    lp_all = token_logps(logits, seqs, prefix_idx)
    ref_all = token_logps(prior_logits, seqs, prefix_idx)
    idx = jax.random.categorical(key, jax.lax.stop_gradient(lp_all.sum(-1)), shape=(batch,))
    lp_t, ref_t, r = lp_all[idx], ref_all[idx], reward[idx]  # [N, L], [N, L], [N]
    seq_lp, seq_ref = lp_t.sum(-1), ref_t.sum(-1)
    sg = jax.lax.stop_gradient

    def pg(rew):  # REINFORCE with the leave-one-out baseline over the batch
        return policy_gradient.reinforce(seq_lp, returns.rloo_advantages(rew[None])[0])

    if method == "no_kl":
        per_seq = pg(r)
    elif method == "k1_in_loss":
        per_seq = pg(r) + beta * kl.k1(seq_lp, seq_ref)
    elif method == "k1_in_reward":
        per_seq = pg(r - beta * sg(kl.k1(seq_lp, seq_ref)))
    elif method == "k2_in_loss":
        per_seq = pg(r) + beta * kl.k2(seq_lp, seq_ref)
    elif method == "k3_in_reward+loss":
        k3_seq = kl.k3(seq_lp, seq_ref)
        per_seq = pg(r - beta * sg(k3_seq)) + beta * k3_seq
    elif method == "k3_in_loss_token":
        per_seq = pg(r) + beta * jnp.sum(kl.k3(lp_t, ref_t), axis=-1)
    elif method == "forward_kl_dm":
        target_lp = jax.nn.log_softmax(ref_all.sum(-1) + reward / beta)[idx]
        weight = jnp.exp(target_lp - sg(seq_lp))  # π*(x)/π(x), exact here (Z is known)
        per_seq = policy_gradient.reinforce(seq_lp, weight)
    else:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return reduce.masked_mean(per_seq)


def train(method, problem, args):
    seqs, prefix_idx, prior_logits, reward = problem
    schedule = optax.cosine_decay_schedule(args.lr, args.steps, alpha=0.01)
    opt = optax.adam(schedule)
    metrics_fn = lambda th: exact_metrics(th, prior_logits, seqs, prefix_idx, reward, args.beta)

    def step(carry, key):
        logits, opt_state = carry
        grads = jax.grad(loss_fn)(
            logits, key, method, prior_logits, seqs, prefix_idx, reward, args.beta, args.batch
        )
        updates, opt_state = opt.update(grads, opt_state)
        logits = optax.apply_updates(logits, updates)
        return (logits, opt_state), metrics_fn(logits)

    @jax.jit
    def run(key):
        keys = jax.random.split(key, args.steps)
        (logits, _), history = jax.lax.scan(step, (prior_logits, opt.init(prior_logits)), keys)
        return logits, history

    _, history = run(jax.random.key(args.seed))
    return {k: np.asarray(v) for k, v in history.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outdir", default="runs/kl_bayes")
    parser.add_argument("--vocab", type=int, default=3)
    parser.add_argument("--length", type=int, default=4)
    parser.add_argument("--beta", type=float, default=0.25)
    parser.add_argument("--prior_scale", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        parser.error(f"--methods has unknown {bad or 'nothing'}; allowed: {','.join(METHODS)}")
    for name in ("vocab", "length", "steps", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if not args.beta > 0:
        parser.error(f"--beta must be > 0, got {args.beta}")
    os.makedirs(args.outdir, exist_ok=True)

    problem = make_problem(args.vocab, args.length, args.seed, args.prior_scale)
    seqs, prefix_idx, prior_logits, reward = problem
    prior_lp = token_logps(prior_logits, seqs, prefix_idx).sum(-1)
    target_lp = jax.nn.log_softmax(prior_lp + reward / args.beta)
    target_p = np.exp(np.asarray(target_lp))
    reference = {
        "prior": {
            k: float(v)
            for k, v in exact_metrics(
                prior_logits, prior_logits, seqs, prefix_idx, reward, args.beta
            ).items()
        },
        "target_entropy": float(-(target_p * np.asarray(target_lp)).sum()),
        "target_reward": float((target_p * np.asarray(reward)).sum()),
        "best_reward": float(np.asarray(reward).max()),
    }

    histories, results, times = {}, {}, {}
    for method in methods:
        start = time.perf_counter()
        hist = train(method, problem, args)
        times[method] = time.perf_counter() - start
        histories[method] = hist
        tail = slice(-max(1, args.steps // 20), None)  # last 5% of training
        results[method] = {
            "kl_to_target_final": float(hist["kl_to_target"][-1]),
            "kl_to_target_last5pct_mean": float(hist["kl_to_target"][tail].mean()),
            "entropy_final": float(hist["entropy"][-1]),
            "reward_final": float(hist["reward"][-1]),
            "kl_to_prior_final": float(hist["kl_to_prior"][-1]),
            "seconds": times[method],
        }

    write_outputs(args, reference, results, histories)


def write_outputs(args, reference, results, histories):
    config = vars(args)
    with open(os.path.join(args.outdir, "results.json"), "w") as f:
        curves = {
            m: {k: v[:: max(1, args.steps // 300)].tolist() for k, v in h.items()}
            for m, h in histories.items()
        }
        json.dump(
            {"config": config, "reference": reference, "results": results, "curves": curves},
            f,
            indent=1,
        )

    ref, prior = reference, reference["prior"]
    lines = [
        f"# KL-regularized RL as Bayesian inference (V={args.vocab}, L={args.length}, "
        f"{args.vocab**args.length} sequences, β={args.beta}, "
        f"{args.steps} steps × batch {args.batch})",
        "",
        f"Target π*: entropy {ref['target_entropy']:.3f} nats, E[r] {ref['target_reward']:.3f}. "
        f"Prior π0: entropy {prior['entropy']:.3f}, E[r] {prior['reward']:.3f}, "
        f"KL(π0‖π*) {prior['kl_to_target']:.3f}. Best reward {ref['best_reward']:.2f}.",
        "",
        "| method | KL(π‖π*) final | KL(π‖π*) mean last 5% | entropy | E_π[r] | KL(π‖π0) "
        "| seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, r in results.items():
        lines.append(
            f"| {m} | {r['kl_to_target_final']:.2e} | {r['kl_to_target_last5pct_mean']:.2e} | "
            f"{r['entropy_final']:.3f} | {r['reward_final']:.3f} | {r['kl_to_prior_final']:.3f} | "
            f"{r['seconds']:.1f} |"
        )
    with open(os.path.join(args.outdir, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for m, h in histories.items():
        axes[0].semilogy(np.maximum(h["kl_to_target"], 1e-6), label=m)
        axes[1].plot(h["entropy"], label=m)
        axes[2].plot(h["reward"], label=m)
    axes[0].axhline(0.01, color="k", ls=":", lw=1)
    axes[1].axhline(reference["target_entropy"], color="k", ls="--", lw=1, label="π*")
    axes[2].axhline(reference["target_reward"], color="k", ls="--", lw=1, label="π*")
    for ax, title in zip(axes, ["KL(π‖π*) [nats]", "entropy H(π) [nats]", "E_π[r]"], strict=True):
        ax.set_title(title)
        ax.set_xlabel("step")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.outdir, "kl_bayes.png"), dpi=120)


if __name__ == "__main__":
    main()
