"""To backtrack or not (#207 in PAPERS.md, with #69): Countdown models trained from scratch on
depth-first search traces with backtracking or on direct solutions, then GRPO; pass@k at equal
token budget, and the effect of the number of backtracks in the SFT traces.

Task (`rljax.lm.tasks.countdown_search`): three numbers 1-9 (`Budget.numbers`; the task takes
2-4) and a two-digit target; a completion is a sequence of steps "a op b=c" where ';' undoes the
last step, and it is correct iff it replays as a legal search ending in the target alone. Arms
differ only in their SFT traces for the same problems (`bounded_trace`, at most
`Budget.trace_chars` = 48 characters):

  direct      the solution steps only (no search);
  DFS <=1     a random-order depth-first search cut to at most 1 dead end, then to a solution;
  DFS <=3     the same with at most 3 dead ends (more backtracks, longer traces).

Each arm: one SFT base per seed (2 layers, d 64; 500 steps x 32 at peak learning rate 5e-3
with warm-up and cosine decay), then GRPO (`lite_ppo`) on the same training problems. Held-out
problems (never in training, checked): n samples each at T=1. pass@k is the unbiased estimator;
"pass at T tokens" gives each learner k = T / (its mean tokens per sample) samples (linear
between integer k), so arms are compared at equal generated tokens. Claims:

  1. (#207) direct + parallel sampling beats DFS-with-backtracking at an equal token budget
     (after SFT, T = 64 tokens; DFS <=3 against direct, unpaired over seeds);
  2. (#207) GRPO raises the backtracking model's pass@1 (DFS <=3, after - before, paired);
  3. (#207) GRPO raises the direct model's pass@1 but lowers its pass@16 (diversity): holds
     when both parts hold, partly when one does;
  4. (#69, our reading) more backtracks in the SFT traces give a higher pass@1 after GRPO
     (DFS <=3 against DFS <=1, unpaired).

Design. With four numbers (three steps to plan) these models solved at most 0.1% of held-out
problems per sample after SFT (their arithmetic was wrong, the traces right), so every claim was
"not at this scale". The default asks for less planning and trains longer: three numbers (two
steps; 1,360 distinct problems, 1,000 for training and 48 held out), 500 SFT steps at a peak rate
of 5e-3, traces bounded at 48 characters (some DFS <=3 traces are redrawn shorter) and the
claim-1 budget T = 64 tokens (about 4 direct samples or 1.7 DFS <=3 samples). Every size is a
`Budget` field, checked by `validate` (the error names the field, its value and the allowed
range).

Rule: `verdicts.vs_zero` on the 95% bootstrap interval of each difference. Plots: budget.png (pass
at T tokens) and pass_at_k.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import dataclasses  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax import machine, stats  # noqa: E402
from rljax.agents import sft  # noqa: E402
from rljax.lm.model.decoder import TransformerConfig  # noqa: E402
from rljax.lm.tasks import countdown_search as cs  # noqa: E402
from rljax.lm.tasks import device_reward  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_scratch as _scratch  # noqa: E402

TASK = cs.TASK
ARMS = {"direct": 0, "DFS <=1": 1, "DFS <=3": 3}  # arm -> max dead ends of its SFT traces


@dataclasses.dataclass(frozen=True)
class Budget:
    numbers: int  # given numbers per problem (2..cs.NUM_NUMBERS)
    trace_chars: int  # the longest SFT trace (1..cs.MAX_TRACE_CHARS); sampling allows 3 more
    d_model: int
    n_layers: int
    d_ff: int
    sft_steps: int
    sft_batch: int
    learning_rate: float  # SFT peak (warm-up, then cosine decay)
    train_problems: int
    test_problems: int
    samples: int  # n per held-out problem
    prompts: int  # B per GRPO update
    group: int  # G
    tokens: int  # the token budget of claim 1 (and the table)
    budgets: tuple[int, ...]  # the token budgets of the figure

    @property
    def prompt_len(self) -> int:
        return 2 * self.numbers + 4  # BOS, the numbers and commas, '>', two digits, '='

    @property
    def completion_len(self) -> int:
        return self.trace_chars + 3


DEFAULT = Budget(3, 48, 64, 2, 128, 500, 32, 5e-3, 1000, 48, 16, 8, 8, 64, (16, 32, 64, 128))
QUICK = Budget(3, 48, 32, 1, 64, 30, 8, 3e-3, 200, 8, 4, 2, 4, 8, (4, 8))


def validate(budget: Budget) -> None:
    """Raises ValueError naming the first bad field, its value and the allowed range."""
    space = cs.num_problems(budget.numbers) if 2 <= budget.numbers <= cs.NUM_NUMBERS else 0
    checks = (
        ("numbers", 2 <= budget.numbers <= cs.NUM_NUMBERS, f"2..{cs.NUM_NUMBERS}"),
        ("trace_chars", 16 <= budget.trace_chars <= cs.MAX_TRACE_CHARS,
         f"16..{cs.MAX_TRACE_CHARS}"),
        ("d_model", budget.d_model >= 4 and budget.d_model % 4 == 0, "a multiple of 4 (4 heads)"),
        ("n_layers", budget.n_layers >= 1, ">= 1"),
        ("d_ff", budget.d_ff >= 1, ">= 1"),
        ("sft_steps", budget.sft_steps >= 2, ">= 2"),
        ("sft_batch", budget.sft_batch >= 1, ">= 1"),
        ("learning_rate", 0 < budget.learning_rate <= 0.1, "(0, 0.1]"),
        ("test_problems", budget.test_problems >= 1, ">= 1"),
        ("train_problems", 1 <= budget.train_problems <= 0.8 * space - budget.test_problems,
         f"1..{int(0.8 * space) - budget.test_problems} (80% of the {space} distinct "
         f"{budget.numbers}-number problems, less the held-out ones)"),
        ("samples", budget.samples >= 2, ">= 2"),
        ("prompts", budget.prompts >= 1, ">= 1"),
        ("group", budget.group >= 2, ">= 2"),
        ("tokens", budget.tokens >= 1, ">= 1"),
        ("budgets", len(budget.budgets) >= 2 and min(budget.budgets) >= 1,
         "at least two budgets, each >= 1"),
    )  # fmt: skip
    for name, ok, allowed in checks:
        if not ok:
            value = getattr(budget, name)
            raise ValueError(f"Budget.{name}={value!r} is invalid; allowed: {allowed}")


def datasets(seed: int, budget: Budget) -> dict:
    """Held-out problems first; training problems never share a prompt with them; one SFT trace
    per problem and arm."""
    rng = np.random.default_rng(seed)
    n = budget.numbers
    test = _scratch.distinct(budget.test_problems, set(), cs.generate, rng, num_numbers=n)
    held = {p.prompt for p in test}
    train = _scratch.distinct(budget.train_problems, held, cs.generate, rng, num_numbers=n)
    traces = {}
    for arm, dead_ends in ARMS.items():
        traces[arm] = [
            cs.bounded_trace(
                *_numbers(p), rng, max_dead_ends=dead_ends, max_chars=budget.trace_chars
            )
            for p in train
        ]
    return {"test": test, "train": train, "traces": traces}


def _numbers(problem) -> tuple[tuple[int, ...], int]:
    shown, target = problem.info.split(">")
    return tuple(int(n) for n in shown.split(",")), int(target)


def pass_at_tokens(correct: np.ndarray, lengths: np.ndarray, budget: float) -> np.ndarray:
    """Per learner: pass@k with k = budget / mean tokens per sample, linear between integers.

    Args:
      correct: `[N, M, n]` verdicts; lengths: `[N, M, n]` tokens per sample.

    Returns:
      `[N]`; NaN where k would exceed n (the budget is beyond what was sampled).
    """
    n = correct.shape[-1]
    curve = _scratch.pass_curve(correct, range(1, n + 1))  # [N, n]
    out = []
    for row, mean_len in zip(curve, lengths.reshape(len(curve), -1).mean(1), strict=True):
        k = budget / mean_len
        if k > n:
            out.append(np.nan)
        elif k <= 1:
            out.append(float(row[0] * k))  # a fraction of one sample: its share of pass@1
        else:
            lo = int(np.floor(k))
            hi = min(lo + 1, n)
            out.append(float(row[lo - 1] + (k - lo) * (row[hi - 1] - row[lo - 1])))
    return np.asarray(out)


def evaluate(params, model_cfg, problems, key, budget: Budget) -> dict:
    samples = budget.samples
    correct, lengths, texts = _scratch.sample(
        params, model_cfg, TASK, problems, key, num_samples=samples,
        max_new_tokens=budget.completion_len, prompt_len=budget.prompt_len,
    )  # fmt: skip
    backtracks = np.asarray([[cs.num_backtracks(t) for row in learner for t in row]
                             for learner in texts], np.float64)  # fmt: skip
    return {
        "pass@1": _scratch.pass_curve(correct, [1])[:, 0],
        "pass@16": _scratch.pass_curve(correct, [min(16, samples)])[:, 0],
        "curve": _scratch.pass_curve(correct, range(1, samples + 1)),
        "tokens": lengths.reshape(len(correct), -1).mean(1),
        "backtracks": backtracks.mean(1),
        "budget": {
            t: pass_at_tokens(correct, lengths, t) for t in {*budget.budgets, budget.tokens}
        },
    }


def run(args) -> dict:
    budget = QUICK if args.quick else DEFAULT
    data = datasets(args.seed, budget)
    model_cfg = TransformerConfig(d_model=budget.d_model, n_layers=budget.n_layers, n_heads=4,
                                  d_ff=budget.d_ff,
                                  max_len=budget.prompt_len + budget.completion_len)  # fmt: skip
    encoded = {
        arm: _scratch.encode(data["train"], traces, budget.prompt_len, budget.completion_len)
        for arm, traces in data["traces"].items()
    }
    learners = [arm for arm in ARMS for _ in range(args.seeds)]  # arm-major
    sft_cfg = sft.SFTConfig(
        steps=budget.sft_steps, batch_size=budget.sft_batch, learning_rate=budget.learning_rate,
        warmup_steps=min(20, budget.sft_steps // 4), weight_decay=0.01, seed=args.seed,
    )  # fmt: skip
    t0 = time.perf_counter()
    bases, nll = _scratch.train_bases(sft_cfg, model_cfg, [encoded[a] for a in learners], args.seed)
    t_sft = time.perf_counter() - t0
    print(f"[backtracking] {len(learners)} SFT bases in {t_sft:.0f} s", flush=True)
    key = jax.random.fold_in(jax.random.PRNGKey(args.seed), 7)
    t1 = time.perf_counter()
    before = evaluate(bases, model_cfg, data["test"], key, budget)
    t_eval = time.perf_counter() - t1
    scorer = device_reward.host_scorer(TASK, data["train"], 0.0)
    config = _scratch.grpo_config(model_cfg, budget.completion_len, scorer, prompts=budget.prompts,
                                  group=budget.group)  # fmt: skip
    t2 = time.perf_counter()
    params, metrics = _scratch.grpo_train(config, bases,
                                          _scratch.table(data["train"], budget.prompt_len),
                                          _scratch.lite_ppo(), args.steps, args.seed)  # fmt: skip
    t_rl = time.perf_counter() - t2
    print(f"[backtracking] GRPO in {t_rl:.0f} s", flush=True)
    t3 = time.perf_counter()
    after = evaluate(params, model_cfg, data["test"], key, budget)
    t_eval += time.perf_counter() - t3
    trace_stats = {
        arm: {"chars": float(np.mean([len(t) for t in traces])),
              "backtracks": float(np.mean([cs.num_backtracks(t) for t in traces]))}
        for arm, traces in data["traces"].items()
    }  # fmt: skip
    return {
        "data": data, "learners": learners, "before": before, "after": after,
        "rl_accuracy": metrics["correct/mean"], "sft_nll": nll.tolist(), "traces": trace_stats,
        "seconds": {"sft": round(t_sft, 1), "rl": round(t_rl, 1), "eval": round(t_eval, 1)},
    }  # fmt: skip


def _arm(values: np.ndarray, learners: list[str], arm: str) -> np.ndarray:
    return np.asarray(values)[[i for i, a in enumerate(learners) if a == arm]]


def decide(out: dict, budget_tokens: int) -> tuple[dict, dict]:
    learners, before, after = out["learners"], out["before"], out["after"]

    def get(phase, key, arm, t=None):
        values = phase["budget"][t] if key == "budget" else phase[key]
        return _arm(values, learners, arm)

    def unpaired(a, b):
        c = stats.compare(a, b)
        return {"mean": c["diff"], "mean_ci": c["diff_ci"], "n": len(a)}

    t = budget_tokens
    comparisons = {
        f"direct - DFS <=3, pass at {t} tokens (SFT)": unpaired(
            get(before, "budget", "direct", t), get(before, "budget", "DFS <=3", t)),
        f"direct - DFS <=1, pass at {t} tokens (SFT)": unpaired(
            get(before, "budget", "direct", t), get(before, "budget", "DFS <=1", t)),
        f"direct - DFS <=3, pass at {t} tokens (GRPO)": unpaired(
            get(after, "budget", "direct", t), get(after, "budget", "DFS <=3", t)),
        **{f"{arm}: GRPO - SFT, {k}": _scratch.paired(get(after, k, arm), get(before, k, arm))
           for arm, k in (("DFS <=3", "pass@1"), ("DFS <=1", "pass@1"), ("direct", "pass@1"),
                          ("direct", "pass@16"))},
        "DFS <=3 - DFS <=1, pass@1 after GRPO": unpaired(
            get(after, "pass@1", "DFS <=3"), get(after, "pass@1", "DFS <=1")),
    }  # fmt: skip
    fmt = stats.format_interval
    c = comparisons
    k1 = f"direct - DFS <=3, pass at {budget_tokens} tokens (SFT)"
    claims = {
        "direct solutions beat backtracking search at equal token budget": (
            verdicts.vs_zero(c[k1]["mean_ci"]),
            f"{k1} = {fmt(c[k1])}",
        ),
        "GRPO helps the backtracking model": (
            verdicts.vs_zero(c["DFS <=3: GRPO - SFT, pass@1"]["mean_ci"]),
            f"DFS <=3: GRPO - SFT, pass@1 = {fmt(c['DFS <=3: GRPO - SFT, pass@1'])}",
        ),
    }
    gain = verdicts.vs_zero(c["direct: GRPO - SFT, pass@1"]["mean_ci"])
    loss = verdicts.vs_zero(c["direct: GRPO - SFT, pass@16"]["mean_ci"], higher_is_claimed=False)
    claims["GRPO raises the direct model's pass@1 but lowers its pass@16"] = (
        verdicts.overall([gain, loss]),  # both parts: reproduced; one: partly
        f"pass@1 {fmt(c['direct: GRPO - SFT, pass@1'])}, "
        f"pass@16 {fmt(c['direct: GRPO - SFT, pass@16'])}",
    )
    k4 = "DFS <=3 - DFS <=1, pass@1 after GRPO"
    claims["more backtracks in SFT traces give a higher pass@1 after GRPO"] = (
        verdicts.vs_zero(c[k4]["mean_ci"]),
        f"{k4} = {fmt(c[k4])}",
    )
    return comparisons, claims


def plot(args, out: dict, _) -> None:
    budget, workdir = QUICK if args.quick else DEFAULT, args.workdir
    samples, budgets = budget.samples, budget.budgets
    learners = out["learners"]
    curves = {}
    for phase, tag in (("before", "SFT"), ("after", "GRPO")):
        for arm in ARMS:
            curves[f"{arm} ({tag})"] = np.stack(
                [_arm(out[phase]["budget"][t], learners, arm) for t in budgets], 1)  # fmt: skip
    stats.plot_bands(np.log2(budgets), curves, os.path.join(workdir, "budget.png"),
                     title="Countdown: pass at an equal budget of generated tokens",
                     xlabel="log2 tokens per problem", ylabel="pass")  # fmt: skip
    ks = [k for k in (1, 2, 4, 8, 16) if k <= samples]
    pk = {}
    for phase, tag in (("before", "SFT"), ("after", "GRPO")):
        for arm in ARMS:
            pk[f"{arm} ({tag})"] = _arm(out[phase]["curve"], learners, arm)[:, np.asarray(ks) - 1]
    stats.plot_bands(
        np.log2(ks), pk, os.path.join(workdir, "pass_at_k.png"),
        title="Countdown: pass@k per sample", xlabel="log2 k", ylabel="pass@k",
    )  # fmt: skip


def report(args, out: dict, record: dict) -> study.Report:
    budget = QUICK if args.quick else DEFAULT
    budget_tokens = budget.tokens
    comparisons, claims = decide(out, budget_tokens)
    learners = out["learners"]
    columns = ("pass@1", "pass@16", "tokens", "backtracks", f"pass at {budget_tokens} tokens")
    table = {}
    for phase, tag in (("before", "SFT"), ("after", "GRPO")):
        for arm in ARMS:
            ph = out[phase]
            table[f"{arm} ({tag})"] = {
                col: stats.summarize(_arm(
                    ph["budget"][budget_tokens] if col.startswith("pass at") else ph[col],
                    learners, arm))
                for col in columns
            }  # fmt: skip
    seconds = round(record["seconds"], 1)
    lines = study.table(table, columns)
    notes = [
        "Per-claim verdicts (95% bootstrap intervals over seeds):",
        "",
        *study.claim_lines(claims),
        "",
        f"Held-out: {budget.test_problems} problems x {budget.samples} samples (T=1). tokens = "
        "mean generated tokens per sample (EOS included); backtracks = mean ';' per sample.",
        "",
        *lines,
        "",
        *study.md_table(
            ("comparison", "mean [95% CI]"),
            ((k, stats.format_interval(c)) for k, c in comparisons.items()),
        ),
        "",
        "SFT traces per arm (mean characters, mean backtracks): "
        + "; ".join(
            f"{a}: {s['chars']:.1f}, {s['backtracks']:.2f}" for a, s in out["traces"].items()
        )
        + ".",
        f"Setup: {args.seeds} seeds per arm from --seed={args.seed}; model {budget.n_layers} "
        f"layers, d {budget.d_model}; SFT {budget.sft_steps} steps x {budget.sft_batch} on "
        f"{budget.train_problems} problems (final NLL per learner "
        f"{[round(v, 3) for v in out['sft_nll']]}); GRPO {args.steps} updates x "
        f"{budget.prompts} prompts x G={budget.group}.",
        f"Machine: {machine.describe()}. Wall clock {seconds:.0f} s (under load; SFT "
        f"{out['seconds']['sft']} s, GRPO {out['seconds']['rl']} s, evaluation "
        f"{out['seconds']['eval']} s).",
    ]
    headline = f"pass at {budget_tokens} tokens"
    return study.Report(
        title="To backtrack or not: DFS traces vs direct solutions on Countdown (#207, #69)",
        claim="On Countdown, direct solutions sampled in parallel beat sequential search with "
        "backtracking at equal compute; GRPO helps the backtracking model; the direct model "
        "gains pass@1 under RL but loses diversity; (#69) the number of backtracks in SFT "
        "traces shapes the RL result.",
        claims=claims, reason="; ".join(f"{v}: {why}" for v, why in claims.values()),
        arms={r: v[headline] for r, v in table.items()}, metric=f"held-out {headline}",
        notes=notes, extra={"table": table, "claims": claims, "comparisons": comparisons,
                            "traces": out["traces"],
                            **_scratch.run_extra(args, budget, seconds, out["seconds"])},
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/backtracking", run=run, report=report, plot=plot,
    seeds=3, steps=24, quick=_scratch.QUICK, low=_scratch.LOW,
    check=lambda args: validate(QUICK if args.quick else DEFAULT),
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
