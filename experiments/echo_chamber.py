"""Echo chamber (#50 in PAPERS.md): RL post-training amplifies one format of the pretraining mix.

The paper trains models from scratch on mixtures of math corpora written in different styles
(TinyGSM code, OpenMathInstruct prose, FineMath equations), then runs PPO / GRPO / expert
iteration with a binary reward: the completions converge on one format of the mix, which one
depends on the model's size, and training on easy problems also helps on harder ones.

Scaled down: the three formats of `rljax.lm.tasks.formats` (the same arithmetic problems, 1-3
operations, worked as an equation chain "math", variable assignments "code" or prose "words"),
mixed in equal thirds by a quota. Two model sizes of the character-level transformer: "small"
(1 layer, d 32, MLP 128) and "large" (2 layers, d 64, MLP 256: the testbed's). Each seed SFT-trains
its own base on the mix (levels 1-3, half the traces with one corrupted character, as the
testbed's sloppy base), then GRPO (`lite_ppo`: group-mean / batch-std advantages, token mean, no
KL, 2 epochs x 2 minibatches) on the easy levels 1-2 only, 16 prompts x 8 samples per update.
Every `PROBE` updates one sample per held-out prompt (100 per level) is classified by format
(`formats.classify`) and verified; at the end 8 samples per prompt give pass@1 per level and the
final format shares. Level 3 never appears in RL: its gain is the easy-to-hard transfer.

Claims, each decided from the numbers with 95% bootstrap intervals over seeds (`verdicts`):
  1. collapse: at each size the leading format's share of completions (levels 1-2) rises from
     the base's, and ends at >= COLLAPSE (its interval's lower end);
  2. scale decides the winner: the leading formats of the two sizes differ, each ahead of the
     other at its own size (the interval of their share difference excludes 0);
  3. the collapse goes with the gain: pass@1 on levels 1-2 rises, and over the probes of one
     learner the winner's share correlates positively with pass@1;
  4. easy-to-hard: level-3 pass@1 rises though RL never saw level 3.

Default: 2 sizes x 3 seeds x 100 updates; results.md records the wall time of each run. Plots:
shares_small.png, shares_large.png, pass_at_1.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents import grpo, learner, sft  # noqa: E402
from rljax.agents.grpo import groups, presets  # noqa: E402
from rljax.lm.model import tokenizer  # noqa: E402
from rljax.lm.model.decoder import TransformerConfig, num_params  # noqa: E402
from rljax.lm.tasks import device_reward, formats, train_test_split  # noqa: E402
from rljax.lm.tasks.batches import completion_length, encode_prompts, prompt_length  # noqa: E402
from rljax.train import lm_base, study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

SIZES = {
    "small": {"d_model": 32, "n_layers": 1, "n_heads": 4, "d_ff": 128},
    "large": {"d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 256},
}
SHARES = {"math": 1 / 3, "code": 1 / 3, "words": 1 / 3}  # the pretraining mix
EASY = (1, 2)  # RL trains on these levels; the format shares are measured on them
HARD = 3  # evaluated only
COLLAPSE = 0.8  # the leading format's final share that counts as a collapse
PROBE = 10  # updates between probes
DATA_SEED = 20261127  # the problem split and the format quota (fixed: every seed shares the data)
PRESET = "lite_ppo"


def data(quick: bool):
    """(SFT problems with mixed formats, RL problems of the easy levels, held-out problems)."""
    train, test = train_test_split(formats.TASK, num_train_per_level=300 if quick else 2000,
                                   num_test_per_level=16 if quick else 100,
                                   seed=DATA_SEED)  # fmt: skip
    mixed = formats.mixture(train, SHARES, seed=DATA_SEED)
    return mixed, [p for p in train if p.level in EASY], sorted(test, key=lambda p: p.level)


def table(problems) -> device_reward.ProblemTable:
    """A host-scored problem table: rows index `problems` (the host verifier reads them)."""
    prompt_tokens, prompt_mask = encode_prompts(formats.TASK, problems)
    n, length = len(problems), completion_length(formats.TASK)
    return device_reward.ProblemTable(
        prompt_tokens=jnp.asarray(prompt_tokens), prompt_mask=jnp.asarray(prompt_mask),
        target_int=jnp.zeros(n, jnp.int32), target_tokens=jnp.zeros((n, length), jnp.int32),
        target_len=jnp.zeros(n, jnp.int32), index=jnp.arange(n, dtype=jnp.int32),
        level=jnp.asarray([p.level for p in problems], jnp.int32),
    )  # fmt: skip


def bases(args, size: str, mixed) -> tuple[TransformerConfig, list]:
    """One SFT base per seed (seed `args.seed + s`: its own init, batch order and noise)."""
    task = formats.TASK
    model = TransformerConfig(**SIZES[size], max_len=prompt_length(task) + completion_length(task))
    steps = 40 if args.quick else args.sft_steps
    cache = os.path.join(args.workdir, "lm_base") if args.quick else args.base_cache_dir
    params, t0 = [], time.perf_counter()
    for s in range(1 if args.quick else args.seeds):  # --quick: one base shared by the seeds
        cfg = sft.SFTConfig(steps=steps, batch_size=64, learning_rate=3e-3,
                            warmup_steps=5 if args.quick else 20, weight_decay=0.01, noise=0.5,
                            seed=args.seed + s)  # fmt: skip
        p, _ = lm_base.train_or_load(model, cfg, task, mixed, cache, progress=False)
        params.append(p)
        print(f"[{size}] base {s}: {time.perf_counter() - t0:.0f} s", flush=True)
    return model, params * (args.seeds // len(params))


def agent_config(args, model, train) -> grpo.Config:
    scorer = device_reward.host_scorer(formats.TASK, train, 0.0)
    return grpo.Config(
        model=model, reward_kind="host", completion_length=completion_length(formats.TASK),
        prompts_per_step=8 if args.quick else 16, group_size=4 if args.quick else 8,
        max_epochs=2, max_minibatches=2, host_scorer=scorer, eval_seed=args.seed,
    )  # fmt: skip


def sampler(config):
    """`(params [S, ...], tokens [R, P], mask [R, P], key) -> completions [S, R, A]`, jitted."""
    act = lambda p, t, m, k: groups.act(config, p, t, m, k).tokens  # noqa: E731
    return jax.jit(jax.vmap(act, in_axes=(0, None, None, None)))


def probe(sample, params, test, rows, samples: int, key) -> dict:
    """Samples `samples` completions per held-out prompt for every learner (params `[S, ...]`);
    returns per learner the format shares on the easy levels and pass@1 per level."""
    tokens, mask = (jnp.repeat(jnp.asarray(x), samples, axis=0) for x in rows)
    out = np.asarray(sample(params, tokens, mask, key))
    problems = [p for p in test for _ in range(samples)]
    levels = np.asarray([p.level for p in problems])
    easy = np.isin(levels, EASY)
    result = {"shares": [], "pass@1": {lv: [] for lv in (*EASY, HARD)}, "easy": []}
    for rows_s in out:
        fmts, correct = [], []
        for row, problem in zip(rows_s, problems, strict=True):
            text, done = tokenizer.decode(row)
            fmts.append(formats.classify(text))
            correct.append(done and formats.verify(problem, text).correct)
        fmts, correct = np.asarray(fmts), np.asarray(correct, float)
        result["shares"].append([float(np.mean(fmts[easy] == f)) for f in formats.FORMATS])
        result["easy"].append(float(np.mean(correct[easy])))
        for lv in result["pass@1"]:
            result["pass@1"][lv].append(float(np.mean(correct[levels == lv])))
    return result


def train_size(args, size: str, mixed, train, test) -> dict:
    """SFT bases and GRPO learners of one size; the probes over updates and the final eval."""
    t0 = time.perf_counter()
    model, base_params = bases(args, size, mixed)
    sft_s = time.perf_counter() - t0
    config = agent_config(args, model, train)
    grpo.validate(config)
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *base_params)
    task_data = grpo.TaskData(stacked, table(train), table(test[:1]))
    hp = grpo.make_hparams(presets.hparam_values(presets.resolve(PRESET)))
    keys = jnp.stack([learner.learner_key(args.seed, s) for s in range(args.seeds)])
    data_axes = grpo.TaskData(0, None, None)
    init = jax.vmap(lambda d, k: grpo.init(config, d, k, hp), in_axes=(data_axes, 0))
    state = init(task_data, keys)
    chunk = min(PROBE, args.steps)

    def run_chunk(d, s):
        return learner.train_chunk(grpo.update, config, d, s, chunk)

    step = jax.jit(jax.vmap(run_chunk, in_axes=(data_axes, 0)), donate_argnums=1)
    rows = encode_prompts(formats.TASK, test)
    sample = sampler(config)
    root = learner.eval_key(args.seed)
    probes = [probe(sample, state.params, test, rows, 1, jax.random.fold_in(root, 0))]
    updates = [0]
    t1 = time.perf_counter()
    for done in range(chunk, args.steps + 1, chunk):
        state, _ = step(task_data, state)
        probes.append(probe(sample, state.params, test, rows, 1, jax.random.fold_in(root, done)))
        updates.append(done)
        print(f"[{size}] update {done}: shares {np.mean(probes[-1]['shares'], 0).round(2)} "
              f"pass@1 easy {np.mean(probes[-1]['easy']):.3f}", flush=True)  # fmt: skip
    rl_s = time.perf_counter() - t1
    n = 1 if args.quick else 8  # --quick: the probes' shapes, so nothing compiles again
    final_key = jax.random.fold_in(root, 10**6)
    base_eval = probe(sample, stacked, test, rows, n, final_key)
    final_eval = probe(sample, state.params, test, rows, n, final_key)
    return {
        "updates": np.asarray(updates),
        "shares": np.asarray([p["shares"] for p in probes]).transpose(1, 0, 2),  # [S, C, F]
        "easy": np.asarray([p["easy"] for p in probes]).T,  # [S, C]
        "base": base_eval, "final": final_eval, "params": num_params(base_params[0]),
        "seconds": {"sft": round(sft_s, 1), "rl": round(rl_s, 1)},
    }  # fmt: skip


def _paired(values) -> dict:
    return stats.summarize([float(v) for v in values])


def _sign_of(summary: dict) -> str:
    return verdicts.sign(summary["mean_ci"])


def decide(runs: dict) -> tuple[dict, dict]:
    """The four claims' statuses and the figures they rest on."""
    figures, claims = {}, {}
    winners, collapse, gain, transfer = {}, [], [], []
    for size, r in runs.items():
        final = np.asarray(r["final"]["shares"])  # [S, F]
        base = np.asarray(r["base"]["shares"])
        w = int(np.argmax(final.mean(0)))
        winners[size] = w
        name = formats.FORMATS[w]
        rise = _paired(final[:, w] - base[:, w])
        share = _paired(final[:, w])
        figures[f"{size}: {name} share rise"] = rise
        figures[f"{size}: {name} final share"] = share
        amplified = verdicts.SIGNS[_sign_of(rise)]
        if amplified == verdicts.REPRODUCED and share["mean_ci"][0] < COLLAPSE:
            amplified = verdicts.PARTLY
        collapse.append(amplified)
        easy_gain = _paired(np.asarray(r["final"]["easy"]) - np.asarray(r["base"]["easy"]))
        corr = _paired([_corr(r["shares"][s, :, w], r["easy"][s]) for s in range(len(final))])
        figures[f"{size}: pass@1 gain (levels 1-2)"] = easy_gain
        figures[f"{size}: corr(winner share, pass@1)"] = corr
        signs = {_sign_of(easy_gain), _sign_of(corr)}
        gain.append(
            verdicts.REPRODUCED if signs == {"+"} else verdicts.CONTRADICTED
            if signs == {"-"} else verdicts.PARTLY if "+" in signs else verdicts.UNDECIDED
        )  # fmt: skip
        hard = _paired(np.subtract(r["final"]["pass@1"][HARD], r["base"]["pass@1"][HARD]))
        figures[f"{size}: pass@1 gain (level {HARD})"] = hard
        transfer.append(verdicts.SIGNS[_sign_of(hard)])
    claims["RL amplifies one format until it dominates (share >= 0.8)"] = (
        verdicts.over_arms(collapse),
        ", ".join(
            f"{s}: {formats.FORMATS[winners[s]]} {_fmt(figures[f'{s}: {formats.FORMATS[winners[s]]} final share'])}"  # noqa: E501
            f" (rise {_fmt(figures[f'{s}: {formats.FORMATS[winners[s]]} share rise'])})"
            for s in runs
        ),
    )
    claims["the winning format depends on the model size"] = _scale_claim(runs, winners, figures)
    claims["the collapse goes with the gain (levels 1-2)"] = (
        verdicts.over_arms(gain),
        ", ".join(
            f"{s}: gain {_fmt(figures[f'{s}: pass@1 gain (levels 1-2)'])}, correlation "
            f"{_fmt(figures[f'{s}: corr(winner share, pass@1)'])}"
            for s in runs
        ),
    )
    claims[f"easy-to-hard: RL on levels 1-2 raises level-{HARD} pass@1"] = (
        verdicts.over_arms(transfer),
        ", ".join(f"{s}: {_fmt(figures[f'{s}: pass@1 gain (level {HARD})'])}" for s in runs),
    )
    named = {s: formats.FORMATS[w] for s, w in winners.items()}
    return claims, {"figures": figures, "winners": named}


def _scale_claim(runs: dict, winners: dict, figures: dict) -> tuple[str, str]:
    """Winners differ and each leads at its own size; the same winner leading at both sizes
    contradicts the claim; anything else is undecided."""
    (a, wa), (b, wb) = winners.items()
    lead = {}
    for size, w, other in ((a, wa, wb), (b, wb, wa)):
        final = np.asarray(runs[size]["final"]["shares"])
        if w == other:  # the same format leads: its margin over the runner-up
            other = int(np.argsort(final.mean(0))[-2])
        d = _paired(final[:, w] - final[:, other])
        figures[f"{size}: {formats.FORMATS[w]} − {formats.FORMATS[other]} share"] = d
        lead[size] = (_sign_of(d), formats.FORMATS[w], formats.FORMATS[other], d)
    why = "; ".join(f"{s}: {w} − {o} {_fmt(d)}" for s, (_, w, o, d) in lead.items())
    both = all(v[0] == "+" for v in lead.values())
    if wa != wb:
        status = verdicts.REPRODUCED if both else verdicts.UNDECIDED
    else:
        status = verdicts.CONTRADICTED if both else verdicts.UNDECIDED
    return status, why


def _corr(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def _fmt(s: dict) -> str:
    return study.diff_text(s["mean"], s["mean_ci"], 3)


def plot(args, out: dict, _) -> None:
    runs, workdir = out["runs"], args.workdir
    for size, r in runs.items():
        curves = {f: r["shares"][:, :, k] for k, f in enumerate(formats.FORMATS)}
        stats.plot_bands(
            r["updates"], curves, os.path.join(workdir, f"shares_{size}.png"),
            title=f"Echo chamber, {size} model ({r['params']:,} params): format shares",
            xlabel="GRPO update", ylabel="share of completions (levels 1-2)",
        )  # fmt: skip
    stats.plot_bands(next(iter(runs.values()))["updates"], {s: r["easy"] for s, r in runs.items()},
                     os.path.join(workdir, "pass_at_1.png"),
                     title="Echo chamber: probe pass@1 (levels 1-2)", xlabel="GRPO update",
                     ylabel="pass@1")  # fmt: skip


def check(args) -> None:
    if not args.quick and args.steps > PROBE and args.steps % PROBE:
        raise cli.ConfigError(f"--steps={args.steps} is invalid; allowed: <= {PROBE} or a "
                              "multiple of it")  # fmt: skip


def run(args) -> dict:
    cpu_start = time.process_time()
    mixed, train, test = data(args.quick)
    runs = {size: train_size(args, size, mixed, train, test) for size in SIZES}
    return {"mixed": mixed, "test": test, "runs": runs, "cpu_start": cpu_start}


def report(args, out: dict, record: dict) -> study.Report:
    mixed, test, runs = out["mixed"], out["test"], out["runs"]
    claims, decided = decide(runs)
    rows = {}
    for size, r in runs.items():
        row = {}
        for k, f in enumerate(formats.FORMATS):
            row[f"base {f}"] = _paired(np.asarray(r["base"]["shares"])[:, k])
            row[f"final {f}"] = _paired(np.asarray(r["final"]["shares"])[:, k])
        for lv in (*EASY, HARD):
            row[f"base L{lv}"] = _paired(r["base"]["pass@1"][lv])
            row[f"final L{lv}"] = _paired(r["final"]["pass@1"][lv])
        rows[size] = row
    seconds = round(record["seconds"], 1)
    cpu_seconds = round(time.process_time() - out["cpu_start"], 1)  # all threads: load-free
    sft_mix = {f: float(np.mean([p.info == f for p in mixed])) for f in formats.FORMATS}
    # the classifier that measures the shares, on the traces the bases were trained on
    sft_classified = float(np.mean([formats.classify(p.answer) == p.info for p in mixed]))
    notes = [
        "Per-claim verdicts (95% bootstrap intervals over seeds; a claim over both sizes holds "
        "when it holds at each, `verdicts.over_arms`):",
        "",
        *study.claim_lines(claims),
        "",
        f"SFT mix (share of traces per format): {sft_mix}. Models: "
        + ", ".join(f"{s} {r['params']:,} params" for s, r in runs.items())
        + f". {args.seeds} seeds x {args.steps} GRPO updates ({PRESET}) per size; probes every "
        f"{PROBE} updates (1 sample per held-out prompt), final 8 samples per prompt "
        f"({len(test)} prompts).",
        "",
        "Format shares (levels 1-2) and pass@1 per level, base and after RL:",
        "",
        *study.table(rows, list(next(iter(rows.values())))),
        "",
        *study.md_table(("figure", "mean [95% CI]"),
                        ((k, _fmt(v)) for k, v in decided["figures"].items())),
        "",
        f"Wall clock {seconds:.0f} s, CPU {cpu_seconds:.0f} s (all threads): "
        + ", ".join(f"{s} SFT {r['seconds']['sft']} s, RL {r['seconds']['rl']} s"
                    for s, r in runs.items()) + ".",
    ]  # fmt: skip
    curves = {
        s: {"updates": r["updates"].tolist(),
            "shares_mean": {f: r["shares"][:, :, k].mean(0).tolist()
                            for k, f in enumerate(formats.FORMATS)},
            "pass@1_mean": r["easy"].mean(0).tolist()}
        for s, r in runs.items()
    }  # fmt: skip
    return study.Report(
        title="Echo chamber (#50): RL amplifies one pretraining format",
        claim="RL post-training collapses onto one format of the pretraining mix, which one "
        "depends on model size, the collapse goes with the gain, and training on easy problems "
        "transfers to harder ones.",
        claims=claims, reason="; ".join(f"{v}: {why}" for v, why in claims.values()),
        arms={s: row[f"final {decided['winners'][s]}"] for s, row in rows.items()},
        metric="final share of the winning format (levels 1-2)", notes=notes,
        extra={
            "claims": claims, "figures": decided["figures"], "winners": decided["winners"],
            "table": rows, "curves": curves, "sft_mix": sft_mix, "sft_classified": sft_classified,
            "num_sft_traces": len(mixed), "seconds": seconds, "cpu_seconds": cpu_seconds,
            "seconds_by_size": {s: r["seconds"] for s, r in runs.items()}, "seeds": args.seeds,
            "steps": args.steps, "seed": args.seed,
            "params": {s: r["params"] for s, r in runs.items()},
        },
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/echo_chamber", run=run, report=report,
    plot=plot, flags=repro.flags, check=check, seeds=3, steps=60, quick=repro.QUICK,
    low={**repro.LOW, "sft_steps": 25},
    options={"sft_steps": (800, "SFT steps per base"), "base_cache_dir": "runs/lm_base"},
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
