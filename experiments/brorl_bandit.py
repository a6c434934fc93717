"""BroRL's mass balance on a one-step token bandit, extended to winner-take-all across problems.

Part 1 (BroRL, #238 in PAPERS.md). A softmax over V ∈ {50, 500, 5000} tokens, K = 5 of them
correct, total correct mass p0 = 0.3 spread unevenly (random logits, one common shift). One
policy-gradient step with N ∈ {4, …, 512} rollouts, built from rljax's functions
(``returns.grpo_advantages`` or ``returns.dr_grpo_advantages``, ``policy_gradient.reinforce``,
``reduce.masked_mean``), step size η = 1 in logit space. Measured per step: the change of the
correct mass and the probability that it falls; the share of correct tokens whose probability
falls, the same share among the sampled ones, and the share of all correct tokens that are
unsampled and fall (BroRL's vanishing term). The expectation over the N draws is a Monte Carlo
average over ``--draws`` independent steps; for V = 50 and N = 4 it is also computed exactly by
enumerating all C(53, 4) = 292,825 multisets of draws with their multinomial probabilities
(``exact_check`` in results.json). The "N = ∞" row is the exact expected step (REINFORCE with the
true baseline p: Δz_a = η π_a (r_a − p)).

Part 2 (winner-take-all, "The Reasoning Boundary Paradox", #234). P = 32 problems share one
linear-softmax policy ``π(·|x_p) = softmax(W x_p)`` (V = 200, d = 8 features < P, so problems
interfere); each has its own 3 correct tokens and starts with a different correct mass. GRPO with
N = 8 rollouts per problem, on-policy, 300 steps. Measured: the change of each problem's correct
mass against its starting rank (quartiles), and the share of problems whose correct mass falls.

Over 10 seeds (fresh logits, correct sets, features; seeds ``--seed`` .. ``--seed`` + 9, so a second
seed set is one flag), 95% bootstrap intervals (rljax.stats). The default takes about 2.5 min on the
shared 2-core CPU. Plots: brorl_mass.png and winner_take_all.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import itertools  # noqa: E402
import os  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

from rljax import cli, returns, stats  # noqa: E402
from rljax.losses import policy_gradient, reduce  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402

NUM_CORRECT = 5
START_MASS = 0.3
ADVANTAGES = {"grpo": returns.grpo_advantages, "reinforce": returns.dr_grpo_advantages}


# ------------------------------------------------------------------ part 1: one step, one problem
def make_bandit(seed: int, vocab: int, logit_std: float):
    """Random logits with K correct tokens whose total mass is START_MASS."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=vocab) * logit_std
    correct = np.zeros(vocab, bool)
    correct[rng.choice(vocab, NUM_CORRECT, replace=False)] = True
    # one common shift of the correct logits sets their total mass (keeps their spread)
    lse_c, lse_w = special.logsumexp(logits[correct]), special.logsumexp(logits[~correct])
    target = np.log(START_MASS / (1 - START_MASS))
    logits[correct] += target - (lse_c - lse_w)
    return jnp.asarray(logits, jnp.float32), jnp.asarray(correct)


def step_direction(logits, actions, reward, adv_name, mask=None):
    """−∇_z of rljax's REINFORCE loss on one group of N sampled tokens: the update direction.

    ``mask`` [N] (1 = real rollout) lets one compiled program serve every N up to its length.
    """
    mask = jnp.ones_like(reward) if mask is None else mask

    def loss(z):
        logp = jax.nn.log_softmax(z)[actions]  # [N]
        adv = ADVANTAGES[adv_name](reward[None], mask[None])[0]
        return reduce.masked_mean(policy_gradient.reinforce(logp, adv), mask)

    return -jax.grad(loss)(logits)


def step_metrics(logits, new_logits, correct, sampled):
    """Δ correct mass; shares of correct tokens whose probability falls (all/sampled/unsampled)."""
    p0, p1 = jax.nn.softmax(logits), jax.nn.softmax(new_logits)
    c = correct.astype(jnp.float32)
    fall = (p1 < p0) & correct
    s = sampled & correct
    u = (~sampled) & correct
    share = lambda m, n: jnp.where(jnp.sum(n) > 0, jnp.sum(m) / jnp.maximum(jnp.sum(n), 1), jnp.nan)  # noqa: E731
    return {
        "delta_mass": jnp.sum((p1 - p0) * c),
        "fall_share": jnp.sum(fall) / jnp.sum(c),
        "fall_share_sampled": share(fall & s, s),
        "fall_share_unsampled": share(fall & u, u),
        "unsampled_fall_share": jnp.sum(fall & u) / jnp.sum(c),  # of all correct tokens
        "mass_falls": (jnp.sum((p1 - p0) * c) < 0).astype(jnp.float32),
    }


def make_one_step(vocab: int, max_rollouts: int, draws: int, adv_name: str, lr: float):
    """Jitted ``run(logits, correct, key, n)``: metrics averaged over ``draws`` steps with n
    rollouts each (n traced, at most ``max_rollouts``: one compile serves every n)."""

    @jax.jit
    def run(logits, correct, key, num_rollouts):
        cdf = jnp.cumsum(jax.nn.softmax(logits))
        mask = (jnp.arange(max_rollouts) < num_rollouts).astype(jnp.float32)

        def one(k):
            # inverse-CDF sampling: O(N log V) per step instead of the O(N V) Gumbel trick
            u = jax.random.uniform(k, (max_rollouts,)) * cdf[-1]
            actions = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), vocab - 1)
            reward = correct[actions].astype(jnp.float32)
            new = logits + lr * step_direction(logits, actions, reward, adv_name, mask)
            sampled = jnp.zeros(vocab, bool).at[actions].max(mask > 0)
            return step_metrics(logits, new, correct, sampled)

        out = jax.lax.map(one, jax.random.split(key, draws), batch_size=min(draws, 256))
        # nan-mean: shares among sampled / unsampled exist only when such tokens exist
        return {k: jnp.nanmean(v) for k, v in out.items()}

    return run


def infinite_step(logits, correct, lr):
    """N = ∞: the exact expected REINFORCE step with the true baseline, Δz_a = η π_a (r_a − p)."""
    probs = jax.nn.softmax(logits)
    r = correct.astype(jnp.float32)
    new = logits + lr * probs * (r - probs @ r)
    return step_metrics(logits, new, correct, jnp.ones_like(correct))


def exact_small(logits, correct, num_rollouts, adv_name, lr):
    """Exact expectation over all multisets of N draws (V = 50, N = 4: 292,825 of them)."""
    vocab = logits.shape[0]
    probs = np.asarray(jax.nn.softmax(logits), np.float64)
    multisets = np.array(list(itertools.combinations_with_replacement(range(vocab), num_rollouts)))
    counts = np.zeros((len(multisets), vocab))
    np.add.at(counts, (np.arange(len(multisets))[:, None], multisets), 1)
    log_coef = special.gammaln(num_rollouts + 1) - special.gammaln(counts + 1).sum(1)
    weight = np.exp(log_coef + counts @ np.log(probs))
    fn = jax.jit(jax.vmap(lambda a: step_metrics(
        logits, logits + lr * step_direction(logits, a, correct[a].astype(jnp.float32), adv_name),
        correct, jnp.zeros(vocab, bool).at[a].set(True),
    )))  # fmt: skip
    out = fn(jnp.asarray(multisets))
    res = {}
    for k, v in out.items():
        v = np.asarray(v, np.float64)
        ok = np.isfinite(v)
        res[k] = float(np.sum(weight[ok] * v[ok]) / np.sum(weight[ok]))
    res["total_probability"] = float(weight.sum())
    return res


# ------------------------------------------------------------------ part 2: shared policy
def make_multi(seed, num_problems, vocab, dim, num_correct):
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(num_problems, dim)) / np.sqrt(dim)
    w = rng.normal(size=(vocab, dim)) * 3.0
    correct = np.zeros((num_problems, vocab), bool)
    for p in range(num_problems):
        correct[p, rng.choice(vocab, num_correct, replace=False)] = True
    return jnp.asarray(w, jnp.float32), jnp.asarray(feats, jnp.float32), jnp.asarray(correct)


def correct_mass(w, feats, correct):
    return jnp.sum(jax.nn.softmax(feats @ w.T, axis=-1) * correct, axis=-1)  # [P]


def make_multi_train(num_rollouts, steps, lr):
    @jax.jit
    def train(w, feats, correct, key):
        def loss(w_, actions, reward):
            log_probs = jax.nn.log_softmax(feats @ w_.T, axis=-1)  # [P, V]
            logp = jnp.take_along_axis(log_probs, actions, axis=1)  # [P, N]
            adv = returns.grpo_advantages(reward)
            return reduce.masked_mean(policy_gradient.reinforce(logp, adv))

        def step(w_, k):
            logits = feats @ w_.T
            actions = jax.random.categorical(k, logits[:, None, :],
                                             shape=(logits.shape[0], num_rollouts))  # fmt: skip
            reward = jnp.take_along_axis(correct, actions, axis=1).astype(jnp.float32)
            w_ = w_ - lr * jax.grad(loss)(w_, actions, reward)
            return w_, correct_mass(w_, feats, correct)

        _, masses = jax.lax.scan(step, w, jax.random.split(key, steps))
        return masses  # [T, P]

    return train


# ------------------------------------------------------------------ the study
VOCABS, ROLLOUTS = (50, 500, 5000), (4, 8, 16, 32, 64, 128, 256, 512)
QUICK_SIZES = ((50, 500), (4, 64))  # --quick: vocabularies, rollouts
KEYS = ("delta_mass", "mass_falls", "fall_share", "fall_share_sampled", "fall_share_unsampled",
        "unsampled_fall_share")  # fmt: skip


def run(args) -> dict:
    vocabs, rollouts = QUICK_SIZES if args.quick else (VOCABS, ROLLOUTS)
    seeds = range(args.seed, args.seed + args.seeds)
    one = {}  # (adv, V, N) -> metric -> [seeds]
    for adv_name, vocab in itertools.product(ADVANTAGES, vocabs):
        step = make_one_step(vocab, max(rollouts), args.draws, adv_name, args.lr)
        for n, seed in itertools.product(rollouts, seeds):
            logits, correct = make_bandit(seed, vocab, args.logit_std)
            out = step(logits, correct, jax.random.key(seed), n)
            for k in KEYS:
                one.setdefault((adv_name, vocab, n), {}).setdefault(k, []).append(float(out[k]))
    infinite = {}
    for vocab in vocabs:
        for seed in seeds:
            logits, correct = make_bandit(seed, vocab, args.logit_std)
            out = infinite_step(logits, correct, args.lr)
            for k in ("delta_mass", "fall_share"):
                infinite.setdefault(vocab, {}).setdefault(k, []).append(float(out[k]))
    logits, correct = make_bandit(args.seed, 50, args.logit_std)
    exact = exact_small(logits, correct, 4, "reinforce", args.lr)
    mc = make_one_step(50, 4, args.draws * 20, "reinforce", args.lr)(
        logits, correct, jax.random.key(99), 4)  # fmt: skip
    exact_check = {"setting": f"V=50, N=4, seed {args.seed}, reinforce", "exact": exact,
                   "monte_carlo_draws": args.draws * 20,
                   "monte_carlo": {k: float(v) for k, v in mc.items()}}  # fmt: skip
    # part 2
    train = make_multi_train(8, args.multi_steps, 1.0)
    multi = {"start": [], "end": []}
    for seed in seeds:
        w, feats, corr = make_multi(seed, 32, 200, 8, 3)
        masses = train(w, feats, corr, jax.random.key(seed))
        multi["start"].append(np.asarray(correct_mass(w, feats, corr)).tolist())
        multi["end"].append(np.asarray(masses[-1]).tolist())
        multi.setdefault("curves", []).append(np.asarray(masses).tolist())
    return {"vocabs": vocabs, "rollouts": rollouts, "one": one, "infinite": infinite,
            "exact_check": exact_check, "multi": multi}  # fmt: skip


def quartile_stats(multi):
    """Per seed: mean Δ correct mass and share of falling problems per starting-mass quartile."""
    start, end = np.asarray(multi["start"]), np.asarray(multi["end"])
    out = {q: {"delta": [], "log_ratio": [], "fall": []} for q in range(4)}
    corr = []
    for s, e in zip(start, end, strict=True):
        rank = np.argsort(np.argsort(s))
        quart = rank * 4 // len(s)
        for q in range(4):
            out[q]["delta"].append(float(np.mean((e - s)[quart == q])))
            log_ratio = np.log(np.maximum(e, 1e-30)) - np.log(np.maximum(s, 1e-30))
            out[q]["log_ratio"].append(float(np.mean(log_ratio[quart == q])))
            out[q]["fall"].append(float(np.mean((e < s)[quart == q])))
        corr.append(float(np.corrcoef(s, e - s)[0, 1]))
    return out, corr


def report(args, out: dict, record: dict) -> study.Report:
    vocabs, rollouts, one, multi = out["vocabs"], out["rollouts"], out["one"], out["multi"]
    exact_check, seconds = out["exact_check"], record["seconds"]
    summ = lambda v: stats.summarize(v)  # noqa: E731
    table = {f"{a}|V={v}|N={n}": {k: summ(x) for k, x in one[(a, v, n)].items()
                                  if np.all(np.isfinite(x))} for (a, v, n) in one}  # fmt: skip
    inf = {f"V={v}": {k: summ(x) for k, x in d.items()} for v, d in out["infinite"].items()}
    quart, corr = quartile_stats(multi)
    quart_s = {f"Q{q + 1}": {k: summ(v) for k, v in d.items()} for q, d in quart.items()}
    corr_s = summ(corr)
    v_big, n_small, n_big = vocabs[-1], rollouts[0], rollouts[-1]
    small = table[f"grpo|V={v_big}|N={n_small}"]
    big = table[f"grpo|V={v_big}|N={n_big}"]
    inf_big = inf[f"V={v_big}"]
    cells = [(a, v) for a in ADVANTAGES for v in vocabs]
    findings = {
        "mass_expands_reliably_at_large_N": all(
            table[f"{a}|V={v}|N={n_big}"]["mass_falls"]["mean"] <= 0.01 for a, v in cells
        ) and max(table[f"{a}|V={v}|N={n_small}"]["mass_falls"]["mean"] for a, v in cells) > 0.01,
        "correct_mass_grows_at_every_N": all(
            table[f"{a}|V={v}|N={n}"]["delta_mass"]["mean_ci"][0] > 0 for a, v in cells
            for n in rollouts
        ),
        "unsampled_losses_vanish_with_N": big["unsampled_fall_share"]["mean_ci"][1]
        < small["unsampled_fall_share"]["mean_ci"][0],
        "winner_take_all_across_problems": quart_s["Q4"]["log_ratio"]["mean_ci"][0]
        > quart_s["Q1"]["log_ratio"]["mean_ci"][1],
    }  # fmt: skip
    reason = (
        f"GRPO, V={v_big}: the correct mass gains {stats.format_interval(small['delta_mass'])} "
        f"at N={n_small} and {stats.format_interval(big['delta_mass'])} at N={n_big} (it fell "
        f"in {small['mass_falls']['mean']:.1%} and {big['mass_falls']['mean']:.1%} of steps); "
        f"correct tokens that are unsampled and lose probability: "
        f"{stats.format_interval(small['unsampled_fall_share'])} of them at N={n_small}, "
        f"{stats.format_interval(big['unsampled_fall_share'])} at N={n_big}. But the share of "
        f"correct tokens that lose probability does not vanish: "
        f"{stats.format_interval(big['fall_share'])} at N={n_big}, "
        f"{stats.format_interval(inf_big['fall_share'])} for the exact expected step (N = ∞): "
        "the softmax policy gradient moves correct mass onto the likeliest correct tokens "
        "(winner-take-all within a problem). Shared policy: the top quartile of problems by "
        "starting correct mass changes it by a factor exp("
        f"{stats.format_interval(quart_s['Q4']['log_ratio'], digits=2)}), the bottom quartile "
        f"exp({stats.format_interval(quart_s['Q1']['log_ratio'], digits=2)}). Findings: "
        f"{findings}."
    )
    claim = (
        "BroRL: with more rollouts N the correct mass expands reliably and the losses of "
        "unsampled correct tokens vanish; SELF: on-policy RLVR reinforces problems that are "
        "already likely (winner-take-all)."
    )
    lines = ["## Part 1: one step on the token bandit (mean over seeds [95% CI])", ""]
    fi = stats.format_interval
    rows = [(*(p[2:] if i else p for i, p in enumerate(name.split("|"))), fi(s["delta_mass"]),
             f"{s['mass_falls']['mean']:.3f}", fi(s["fall_share"]),
             fi(s["fall_share_sampled"]) if "fall_share_sampled" in s else "—",
             fi(s["unsampled_fall_share"])) for name, s in table.items()]  # fmt: skip
    rows += [("exact E[step]", v[2:], "∞", fi(s["delta_mass"]), "—", fi(s["fall_share"]), "—", 0)
             for v, s in inf.items()]  # fmt: skip
    lines += study.md_table(("adv", "V", "N", "Δ correct mass", "P(mass falls)",
                             "correct tokens falling", "… sampled ones", "unsampled and falling"),
                            rows)  # fmt: skip
    ex, mc = exact_check["exact"], exact_check["monte_carlo"]
    lines += [
        "",
        f"Exact enumeration check ({exact_check['setting']}; probabilities sum to "
        f"{ex['total_probability']:.6f}): Δ mass {ex['delta_mass']:.4f} exact vs "
        f"{mc['delta_mass']:.4f} Monte Carlo ({exact_check['monte_carlo_draws']} draws); "
        "falling share "
        f"{ex['fall_share']:.4f} vs {mc['fall_share']:.4f}.",
        "",
        "## Part 2: 32 problems sharing one linear-softmax policy (GRPO, N = 8)",
        "",
        *study.table(quart_s, [("Δ correct mass", "delta", 3),
                               ("mean log(end/start mass)", "log_ratio", 2),
                               ("share of problems whose correct mass fell", "fall", 3)],
                     first="starting-mass quartile"),
    ]  # fmt: skip
    lines += [
        "",
        "Correlation between starting mass and its change, per seed: "
        f"{stats.format_interval(corr_s)}.",
        f"Run time {seconds:.0f} s.",
    ]
    arms = {f"GRPO V={v_big} N={n}": table[f"grpo|V={v_big}|N={n}"]["delta_mass"] for n in rollouts}
    return study.Report(
        title="BroRL mass balance and winner-take-all on a token bandit", claim=claim,
        claims=verdicts.from_findings(findings), reason=reason, arms=arms, notes=lines,
        metric="Δ correct mass after one step",
        extra={"config": vars(args), "one_step": table, "infinite_n": inf,
               "exact_check": exact_check,
               "shared_policy": {"quartiles": quart_s, "correlation": corr_s, "raw": multi},
               "findings": findings, "seconds": seconds},
    )  # fmt: skip


def plot(args, out: dict, _) -> None:
    one, rollouts = out["one"], out["rollouts"]
    for key, name, title, ylabel in (
        ("fall_share", "brorl_fall_share.png", "share of correct tokens whose probability falls",
         "share falling"),
        ("delta_mass", "brorl_mass.png", "change of the correct mass", "Δ correct mass"),
    ):  # fmt: skip
        curves = {f"{a} V={v}": np.array([one[(a, v, n)][key] for n in rollouts]).T
                  for a in ADVANTAGES for v in out["vocabs"]}  # fmt: skip
        path = os.path.join(args.workdir, name)
        stats.plot_bands(np.array(rollouts), curves, path, title=f"one step: {title}",
                         xlabel="rollouts N", ylabel=ylabel)  # fmt: skip
    multi = out["multi"]
    curves = np.asarray(multi["curves"])  # [S, T, P]
    start = np.asarray(multi["start"])  # [S, P]
    per_q = {}
    for q in range(4):
        rows = []
        for s in range(curves.shape[0]):
            quart = np.argsort(np.argsort(start[s])) * 4 // start.shape[1]
            rows.append(curves[s][:, quart == q].mean(1))
        per_q[f"starting-mass quartile Q{q + 1}"] = np.array(rows)
    stats.plot_bands(np.arange(1, curves.shape[1] + 1), per_q,
                     os.path.join(args.workdir, "winner_take_all.png"),
                     title="32 problems, one linear-softmax policy (GRPO, N=8)", xlabel="step",
                     ylabel="mean correct mass")  # fmt: skip


def check(args) -> None:
    cli.check_number("--lr", args.lr, low=0.0, low_open=True)


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/brorl_bandit", run=run, report=report, plot=plot,
    check=check, seeds=10, quick={"seeds": 3, "draws": 100, "multi_steps": 60},
    low={"seeds": 1, "draws": 10, "multi_steps": 1},
    options={
        "draws": (1000, "independent steps per setting"), "lr": (1.0, "step size in logit space"),
        "logit_std": 2.0, "multi_steps": 300,
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
