"""The LM studies' populations: arms trained as populations on the RLVR testbed.

A study (``experiments/*.py``, ``rljax.train.study``) names its arms as explicit design points of
one learner (`rljax.train.lm_experiment`'s ``design``: fields of `rljax.agents.grpo.presets`),
groups them into populations (one per SFT base, since a population shares its base, and one per
static shape: learners that sample dynamically oversample
every member of their population, so they train apart), trains each population in one compiled
program through `rljax.train.lm_experiment.train`, and takes per learner the held-out evaluation
and the training curves from its outcome in memory. Only a population trained earlier (reused
when finished, or resumed after a stop) is read from its record on disk (results.json,
metrics.jsonl), the one place its earlier updates still exist.

The testbed is `configs/grpo.py:arithmetic,fast` (``--quick``: ``arithmetic,tiny``;
``testbed_config``). Populations live in sub-directories of the study's work directory. The
shared flags: ``Study(seeds=..., steps=..., quick=QUICK, low=LOW, flags=flags)``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time

import numpy as np

from rljax import stats
from rljax.agents.grpo.groups import PROBLEM_KEY
from rljax.io import files
from rljax.train import arm_store, lm_experiment, study, verdicts

QUICK = {"seeds": 3, "steps": 2}  # --quick: the tiny testbed, 3 seeds, 2 updates
LOW = {"seeds": 3, "steps": 1}
LEVEL = "eval/pass@1/level"  # + k: the quick pass@1 of level k (NaN between evaluations)
# Training metrics read back per learner (`rljax.agents.grpo` metric keys).
CURVE_KEYS = (
    "entropy", "response/length", "groups/zero_var_frac", "groups/zero_adv_frac", "correct/mean",
    "pass@1/mean", "groups/kept_frac", "tokens/generated",
)  # fmt: skip
CURRICULUM = "curriculum/"  # + level<k> / value<k>: a learner's drawn-level shares and values
# per-level / per-problem curves and an environment's episode statistics, read where logged
PREFIXES = (LEVEL, CURRICULUM, PROBLEM_KEY, "episode/", "tool/")


@dataclasses.dataclass(frozen=True)
class Population:
    """Arms that train together: one SFT base, one static shape."""

    name: str  # sub-directory of the work directory
    arms: dict[str, dict]  # arm label -> design point (every point names the same fields)
    sft: dict = dataclasses.field(default_factory=dict)  # overrides of the testbed's SFT config
    # overrides of config fields (min_level…; a dict updates a block: {"env": {"name": ""}})
    run: dict = dataclasses.field(default_factory=dict)


def flags(parser) -> None:
    """The LM studies' own shared flag (``--seeds``, ``--steps``, ``--quick`` are ``Study``'s)."""
    parser.add_argument("--no_progress", action="store_true")


def testbed_config(script: str, args):
    """The testbed's ConfigDict: `configs/grpo.py:arithmetic,fast` (``--quick``: ``,tiny``)."""
    return study.config(script, "grpo", "arithmetic,tiny" if args.quick else "arithmetic,fast")


def testbed(args, pop: Population, base, *, chunk_steps: int, final_samples: int,
            final_problems: int):  # fmt: skip
    """The run config of one population on the testbed ConfigDict ``base`` (validated, nothing
    built; ``base`` is not changed)."""
    config = copy.deepcopy(base)
    config.preset = "lite_ppo"  # every design point overrides what it changes from here
    config.num_seeds, config.seed, config.run.steps = args.seeds, args.seed, args.steps
    config.run.chunk_steps = min(chunk_steps, args.steps) if not args.quick else 1
    config.progress = not args.no_progress
    config.eval.num_samples = 4 if args.quick else final_samples
    config.eval.num_problems = 8 if args.quick else final_problems
    for key, value in pop.sft.items():  # --quick: a fiftieth of the SFT, past its warm-up
        quick_steps = max(value // 50, config.sft.warmup_steps + 2)
        config.sft[key] = quick_steps if args.quick and key == "steps" else value
    if args.quick:  # tests: keep the throw-away bases out of the shared cache
        config.base_cache_dir = os.path.join(args.workdir, "lm_base")
    for key, value in pop.run.items():
        if isinstance(value, dict):
            config[key].update(value)
        else:
            config[key] = value
    run = lm_experiment.from_config(config, workdir=os.path.join(args.workdir, pop.name))
    run = dataclasses.replace(run, design=tuple(tuple(p.items()) for p in pop.arms.values()))
    lm_experiment.validate(run)
    return run


def train(args, pops: list[Population], base, **testbed_kwargs) -> dict:
    """Trains every population on the testbed ``base``; returns per-arm learner results. A rerun
    reuses each population that finished with the same config and resumes one that was stopped
    (``arm_store``); any other old work directory is archived and trained afresh, as
    `rljax.train.loop` does. A population stopped by a signal stops the study
    (``arm_store.StudyInterrupted``).

    Returns:
      {"arms": {label: {"learners": [eval dict per seed], "curves": {key: [S, U]},
       "base": eval dict, "population": name}}, "updates": [U], "seconds": {name: s},
       "cpu_seconds": {name: s}, "examples": {population: its k examples, k-shot only}}.
    """
    runs = [testbed(args, pop, base, **testbed_kwargs) for pop in pops]  # all validated first
    arms, seconds, cpu, updates, examples = {}, {}, {}, None, {}
    for pop, run in zip(pops, runs, strict=True):
        t0, c0 = time.perf_counter(), time.process_time()
        config = lm_experiment.fingerprint_config(run)
        state = arm_store.lm_population(run, lm_experiment.RESUMABLE_FIELDS, config)  # done: reused
        if state == "done":
            print(f"[rljax] reusing the finished population {pop.name} in {run.workdir}")
        else:
            outcome = lm_experiment.train(dataclasses.replace(run, resume=state == "resume"))
            arm_store.stop_if_interrupted(pop.name, outcome.summary)  # never judge a partial one
        seconds[pop.name] = round(time.perf_counter() - t0, 1)
        cpu[pop.name] = round(time.process_time() - c0, 1)  # all threads: a load-free measure
        if state == "fresh":  # trained here from update 0: everything is in memory
            res = in_memory(outcome)
            updates, curves = curves_in_memory(outcome.metrics, len(pop.arms), args.seeds)
        else:  # its earlier updates (or all of them) ran in an earlier process
            res = files.read_json(os.path.join(run.workdir, "results.json"))
            updates, curves = read_curves(run.workdir, len(pop.arms), args.seeds)
        if run.train_problems or run.train_examples:  # name the k examples of a k-shot one
            train = lm_experiment.problems(run)[1]
            examples[pop.name] = [f"{p.prompt}{p.answer} (level {p.level})" for p in train]
        for g, label in enumerate(pop.arms):
            arms[label] = {
                "learners": res["learners"][g * args.seeds : (g + 1) * args.seeds],
                "curves": {k: v[g] for k, v in curves.items()},
                "base": res["base"],
                "population": pop.name,
                "hparams": res["arms"][list(res["arms"])[g]]["hparams"],
            }
    return {
        "arms": arms, "updates": updates, "seconds": seconds, "cpu_seconds": cpu,
        "examples": examples,
    }  # fmt: skip


def in_memory(outcome: lm_experiment.Outcome) -> dict:
    """The evaluations of a population's outcome in the shape its results.json holds
    (``{"learners", "base", "arms": {name: {"hparams"}}}``; levels named as text, "3")."""

    def record(evaluation: dict) -> dict:
        by_level = {str(k): v for k, v in evaluation["pass@1_by_level"].items()}
        return {**evaluation, "pass@1_by_level": by_level}

    return {
        "learners": [record(m) for m in outcome.learners],
        "base": record(outcome.base),
        "arms": {str(g): {"hparams": values} for g, values in enumerate(outcome.values)},
    }


def curves_in_memory(metrics: dict, num_points: int, num_seeds: int):
    """`read_curves` from a population's metrics in memory ({key: [G * S, U]}, updates 1..U).

    The loop's "pass@1/mean" of a learner is its latest quick pass@1 ("eval/pass@1", NaN between
    evaluations) carried forward, as in its metrics.jsonl rows.
    """
    score = metrics["eval/pass@1"]
    steps = np.arange(score.shape[1])
    latest = np.maximum.accumulate(np.where(np.isfinite(score), steps, -1), axis=1)
    carried = np.where(latest >= 0, np.take_along_axis(score, np.maximum(latest, 0), 1), np.nan)
    table = {**metrics, "pass@1/mean": carried}
    keys = CURVE_KEYS + tuple(sorted(k for k in metrics if k.startswith(PREFIXES)))
    shape = (num_points, num_seeds, score.shape[1])
    nan = np.full(shape, np.nan)
    curves = {k: np.asarray(table[k], np.float64).reshape(shape) if k in table else nan.copy()
              for k in keys}  # fmt: skip
    return steps + 1, _without_empty_updates(curves)


def _without_empty_updates(curves: dict) -> dict:
    # An update that kept no group (dynamic sampling found none with mixed rewards) trained on
    # nothing: its per-token metrics are zeros of an empty batch, not measurements.
    empty = curves["groups/kept_frac"] == 0
    for k in ("entropy", "groups/zero_adv_frac"):
        curves[k][empty] = np.nan
    return curves


def read_curves(workdir: str, num_points: int, num_seeds: int):
    """Per-learner training curves from metrics.jsonl: (updates [U], {key: [G, S, U]})."""
    updates, curves = read_metrics(workdir, num_points, num_seeds)
    return updates, _without_empty_updates(curves)


def read_metrics(workdir: str, num_points: int, num_seeds: int, keys=None):
    """Metrics of every learner from metrics.jsonl: (updates [U], {key: [G, S, U]}), NaN where
    a learner logged none; ``keys`` None: ``CURVE_KEYS`` and the per-level / per-problem keys."""
    rows = files.read_jsonl(os.path.join(workdir, "metrics.jsonl"))
    updates = sorted({r["update"] for r in rows})
    index = {u: i for i, u in enumerate(updates)}
    if keys is None:
        keys = CURVE_KEYS + tuple(sorted({k for r in rows for k in r if k.startswith(PREFIXES)}))
    curves = {k: np.full((num_points, num_seeds, len(updates)), np.nan) for k in keys}
    for r in rows:
        for k in keys:
            value = r.get(k)
            if value is not None:
                curves[k][r["grid"], r["seed"], index[r["update"]]] = value
    return np.asarray(updates), curves


def final(arm: dict, key: str) -> list[float]:
    """One held-out evaluation number per seed (e.g. "pass@1", "pass@16": any k <= n)."""
    return [float(pass_at(m, key)) for m in arm["learners"]]


def pass_at(evaluation: dict, key: str) -> float:
    """`evaluation[key]`, where "pass@k" for any k <= n comes from the unbiased pass@k curve."""
    if key in evaluation or not key.startswith("pass@"):
        return evaluation[key]
    curve = evaluation["pass_at_k"]
    return curve["pass"][curve["k"].index(int(key.removeprefix("pass@")))]


def at(key: str):
    """The table column ``final(arm, key)`` (one held-out number per seed)."""
    return lambda arm: final(arm, key)


def late_of(key: str, fraction: float = 0.2):
    """The table column ``late(arm, key, fraction)`` (a training metric per seed)."""
    return lambda arm: late(arm, key, fraction)


def late(arm: dict, key: str, fraction: float = 0.2) -> list[float]:
    """A training metric per seed, averaged over the last `fraction` of updates."""
    values = arm["curves"][key]
    width = max(1, int(round(values.shape[1] * fraction)))
    return [float(np.nanmean(v[-width:])) for v in values]


def summaries(arms: dict, metrics: dict) -> dict:
    """{arm: {metric name: summarize(per-seed values)}} for `metrics = {name: fn(arm) -> list}`.

    A seed whose value is undefined (NaN: e.g. the entropy of a learner that kept no group in
    the window) is left out of that cell; a cell with no defined value reads "n/a" (n = 0).
    """
    return {
        label: {name: _summary(fn(arm)) for name, fn in metrics.items()}
        for label, arm in arms.items()
    }


def _summary(values: list[float]) -> dict:
    kept = [v for v in values if np.isfinite(v)]
    if kept:
        return stats.summarize(kept)
    return {"n": 0, "mean": None, "mean_ci": [None, None], "iqm": None, "iqm_ci": [None, None],
            "std": None, "values": []}  # fmt: skip


def difference_line(name: str, c: dict, digits: int = 3) -> str:
    lo, hi = c["diff_ci"]
    return (
        f"| {name} | {c['diff']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}] | "
        f"{c['prob_improvement']:.2f} |"
    )


def effect(a: list, b: list) -> dict:
    """`stats.compare(a, b)` plus its sign: "+" / "-" when the 95% interval excludes 0, else "0"."""
    c = stats.compare(a, b)
    c["sign"] = verdicts.sign(c["diff_ci"])
    return c


def chunk_ends(updates: np.ndarray, chunk: int) -> np.ndarray:
    """Indices of the updates that end a chunk (where the quick evaluation ran)."""
    return np.flatnonzero(updates % chunk == 0) if chunk > 1 else np.arange(len(updates))


def timing_line(args, result: dict, seconds: float) -> str:
    """How long the run took: wall clock (load-dependent) and CPU time, per population."""
    cpu = sum(result["cpu_seconds"].values())
    return (
        f"{args.seeds} seeds per arm, {args.steps} RL updates per learner. Wall clock "
        f"{seconds:.0f} s, CPU {cpu:.0f} s (all threads). Per population, wall: "
        f"{result['seconds']}; CPU: {result['cpu_seconds']}."
    )


def report(
    args,
    result: dict,
    record: dict,
    decided: dict,
    rows: dict,
    *,
    title: str,
    claim: str,
    headline: str,
    metric: str,
    context: list[str],
    after_table: list[str] = (),
    extra: dict | None = None,
) -> study.Report:
    """The report of an LM study: the claims (``decided["claims"]``: ``{claim: (status, why)}``)
    with their reasons, the context lines (bases, design), the per-arm table, the comparisons
    and the timing (``record``: the study's run record)."""
    seconds = round(record["seconds"], 1)
    notes = [
        "Per-claim verdicts (95% t intervals over seeds; '+'/'-' when the interval of a "
        "difference excludes 0):",
        "",
        *study.claim_lines(decided["claims"]),
        "",
        *context,
        "",
        *study.table(rows, list(next(iter(rows.values())))),
        "",
        *after_table,
        "| comparison | difference [95% CI] | P(improvement) |",
        "|---|---|---|",
        *(difference_line(k, c) for k, c in decided["comparisons"].items()),
        "",
        timing_line(args, result, seconds),
    ]
    return study.Report(
        title=title,
        claim=claim,
        claims=decided["claims"],
        reason="; ".join(f"{v}: {why}" for v, why in decided["claims"].values()),
        arms={k: r[headline] for k, r in rows.items()},
        metric=metric,
        extra={
            "table": rows,
            "claims": decided["claims"],
            "comparisons": decided["comparisons"],
            "seconds": seconds,
            "population_seconds": result["seconds"],
            "population_cpu_seconds": result["cpu_seconds"],
            "seeds": args.seeds,
            "steps": args.steps,
            **(extra or {}),
        },
        notes=notes,
    )


def plot_pass_at_k(arms: dict, path: str, title: str) -> None:
    """pass@k over seeds (95% bands) at k = 1, 2, 4, …, n, with the base for reference."""
    first = next(iter(arms.values()))
    ks = np.asarray(first["learners"][0]["pass_at_k"]["k"])
    pick = np.flatnonzero(np.log2(ks) == np.round(np.log2(ks)))
    curves = {
        name: np.asarray([m["pass_at_k"]["pass"] for m in a["learners"]])[:, pick]
        for name, a in arms.items()
    }
    curves["base"] = np.tile(np.asarray(first["base"]["pass_at_k"]["pass"])[pick], (2, 1))
    stats.plot_bands(np.log2(ks[pick]), curves, path, title=title, xlabel="log2 k", ylabel="pass@k")


def gains(arm: dict) -> list[float]:
    """Held-out pass@1 minus the base's, per seed."""
    return [m["pass@1"] - arm["base"]["pass@1"] for m in arm["learners"]]


def pass_columns(n: int) -> dict:
    """Table columns of a pass@k study: pass@1, pass@16, pass@n, distinct correct, entropy."""
    columns = {
        f"pass@{k}": (lambda a, k=k: final(a, f"pass@{k}")) for k in sorted({1, min(16, n), n})
    }
    columns["distinct correct"] = lambda a: final(a, "distinct_correct_per_problem")
    columns["entropy"] = lambda a: late(a, "entropy")
    return columns


def level_columns(arms: dict) -> dict:
    """Table columns "level k": held-out pass@1 of level k per seed, for every evaluated level."""
    levels = sorted(next(iter(arms.values()))["base"]["pass@1_by_level"])
    return {
        f"level {lv}": (lambda a, lv=lv: [m["pass@1_by_level"][lv] for m in a["learners"]])
        for lv in levels
    }


def plot_curve(
    arms: dict, updates: np.ndarray, key: str, path: str, *, title: str, ylabel: str,
    at: np.ndarray | None = None,
) -> None:  # fmt: skip
    """One training curve (`key` of each arm's curves) against RL updates, with seed bands;
    `at` keeps only those update indices (e.g. `chunk_ends`, where quick evaluations ran)."""
    at = np.arange(len(updates)) if at is None else at
    curves = {name: a["curves"][key][:, at] for name, a in arms.items()}
    stats.plot_bands(updates[at], curves, path, title=title, xlabel="RL update", ylabel=ylabel)
