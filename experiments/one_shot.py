"""1-shot RLVR and entropy-only training (#124 in PAPERS.md) on the RLVR testbed: one training
example, two, or the full set; the entropy bonus; entropy alone with no reward.

The testbed (`configs/grpo.py:arithmetic,fast`: levels 1-2, 2 layers, d 64, 1,200 SFT steps on
sloppy traces), `lite_ppo`'s values (no KL, token mean, 2 epochs × 2 minibatches, lr 3e-4,
AdamW weight decay 1e-4).

Examples are chosen the paper's way. A selection run (its own population, `select/`: `--seeds`
learners × `--select_steps` 50 updates on the first `--select_pool` 128 training problems, ~19
visits per problem) logs each problem's training accuracy at every update that draws it
(``log_problems``: one visit; `rljax.agents.grpo.groups.problem_accuracy`); the problems are ranked
by
the variance of their accuracy over all visits of all its learners (`rljax.lm.tasks.selection
.by_variance`: at least 2 visits, ties to the lower index), and the top `--examples` 2 are π1,
π2 (results.md and results.json name them with their variance, visits and mean accuracy). The
k-shot runs draw every prompt of every step from their examples (``train_examples``), the way
1-shot RLVR repeats its one example across the batch. Arms:

  1 example (π1): entropy bonus {0, 0.001, 0.01}; entropy only (no reward, 0.01);
  1 example (π2); 2 examples (π1, π2); the full set (2,200 problems).

Claims: "one example approaches the full set" and "test accuracy keeps rising after training
accuracy saturates" are judged per selected example and combined by `verdicts.over_arms` (the one
rule: holds when it holds for every example, partly when for some, fails when for none and some
fails); "entropy alone helps" on π1; the overall verdict by `verdicts.overall`. Metrics per arm over
seeds: held-out pass@1 (200 problems × 16 samples) and its gain over the base; training accuracy
under the verifier (on the k examples); post-saturation generalization: the quick held-out pass@1
gain from the first evaluation after training accuracy (mean over 10 updates) reaches 0.9 to the end
of training, over the learners that saturate.

The default took 45 min on the shared 2-core CPU (SFT base cached; the selection run 7 min). Plots:
test_accuracy.png and train_accuracy.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import argparse  # noqa: E402
import os  # noqa: E402

import numpy as np  # noqa: E402

from rljax import cli, stats  # noqa: E402
from rljax.agents.grpo.groups import PROBLEM_KEY  # noqa: E402
from rljax.lm.tasks import selection  # noqa: E402
from rljax.train import lm_experiment, study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

SMALL, LARGE = 0.001, 0.01  # entropy-bonus coefficients
# No "without weight decay" arm: at lr 3e-4 the decay 1e-4 shrinks a weight by lr·wd = 3e-8 per
# step (~1e-5 over a run), so such an arm equals the plain one to every printed digit; it tested
# nothing and is not run.
PLAIN = {"entropy_coef": 0.0, "weight_decay": 1e-4, "reward": "verifier"}
SATURATED = 0.9  # training accuracy that counts as saturated
WINDOW = 10  # updates averaged for the saturation test
MIN_VISITS = 2  # a problem needs this many visits in the selection run to be ranked
SELECTION = "selection run"  # the arm label of the selection population
FULL, TWO = "full set", "2 examples (π1, π2)"


def one(k: int) -> str:
    """The label of the plain 1-shot arm on the k-th selected example (1-based)."""
    return f"1 example (π{k})"


def entropy_arms() -> dict[str, dict]:
    """The entropy arms, on π1: a small and a large bonus, and the large one with no reward."""
    return {
        f"{one(1)}, entropy {SMALL}": {**PLAIN, "entropy_coef": SMALL},
        f"{one(1)}, entropy {LARGE}": {**PLAIN, "entropy_coef": LARGE},
        f"{one(1)}, entropy only (no reward)": {**PLAIN, "entropy_coef": LARGE, "reward": "none"},
    }


def populations(picks: list[int]) -> list[repro.Population]:
    """The study's populations given the selected examples (indices into the training split)."""
    pops = [
        repro.Population(
            f"one_pi{k + 1}", {one(k + 1): PLAIN, **(entropy_arms() if k == 0 else {})},
            run={"train_examples": (i,)},
        )
        for k, i in enumerate(picks)
    ]  # fmt: skip
    pops.append(repro.Population("two", {TWO: PLAIN}, run={"train_examples": tuple(picks[:2])}))
    pops.append(repro.Population("full", {FULL: PLAIN}))
    return pops


def select(args, base, chunk: int) -> dict:
    """Trains (or reuses) the selection run and ranks its pool by accuracy variance.

    Returns {"pool", "steps", "learners", "min_visits", "ranking": [{index, example, variance,
    visits, mean}] highest variance first, "picks": the top `args.examples` indices, "seconds",
    "cpu_seconds"}.
    """
    run_args = argparse.Namespace(**{**vars(args), "steps": args.select_steps})
    # the short RL run on the first `pool` training problems that logs each one's accuracy
    pool = {"train_problems": args.select_pool, "log_problems": args.select_pool}
    pop = repro.Population("select", {SELECTION: PLAIN}, run=pool)
    result = repro.train(run_args, [pop], base, chunk_steps=chunk, final_samples=2,
                         final_problems=32)  # fmt: skip
    curves = result["arms"][SELECTION]["curves"]
    # [learners, updates, pool]
    accuracy = np.stack([curves[f"{PROBLEM_KEY}{i}"] for i in range(args.select_pool)], axis=-1)
    order, variance, visits = selection.by_variance(accuracy, MIN_VISITS)
    if len(order) < args.examples:
        raise RuntimeError(f"the selection run ranked {len(order)} problems (visited >= "
                           f"{MIN_VISITS} times), fewer than --examples={args.examples}: raise "
                           "--select_steps or lower --select_pool")  # fmt: skip
    with np.errstate(all="ignore"):
        mean = np.nanmean(accuracy.reshape(-1, args.select_pool), axis=0)
    run = repro.testbed(args, pop, base, chunk_steps=chunk, final_samples=2, final_problems=32)
    train = lm_experiment.problems(run)[1]
    ranking = [
        {
            "index": int(i),
            "example": f"{train[i].prompt}{train[i].answer} (level {train[i].level})",
            "variance": float(variance[i]), "visits": int(visits[i]), "mean": float(mean[i]),
        }
        for i in order
    ]  # fmt: skip
    return {
        "pool": args.select_pool, "steps": args.select_steps, "learners": args.seeds,
        "min_visits": MIN_VISITS, "ranked": len(order), "unranked": args.select_pool - len(order),
        "ranking": ranking, "picks": [int(i) for i in order[: args.examples]],
        "seconds": result["seconds"]["select"], "cpu_seconds": result["cpu_seconds"]["select"],
    }  # fmt: skip


def post_saturation(arm: dict, updates: np.ndarray, ends: np.ndarray) -> list[float]:
    """Per learner that saturates: quick test pass@1 at the end minus at saturation."""
    out = []
    for train, test in zip(
        arm["curves"]["correct/mean"], arm["curves"]["pass@1/mean"], strict=True
    ):
        smooth = np.convolve(train, np.ones(WINDOW) / WINDOW, mode="valid")
        hit = np.flatnonzero(smooth >= SATURATED)
        if not len(hit):
            continue
        at = updates[hit[0] + WINDOW - 1]  # the update where the window ends
        after = [i for i in ends if updates[i] >= at]
        if len(after) >= 2:
            out.append(float(test[after[-1]] - test[after[0]]))
    return out


def approaches_full(comparisons: dict, k: int) -> tuple[str, str]:
    """ "One example approaches the full set" for the k-th selected example: (status, why)."""
    gain, versus = comparisons[f"{one(k)} gain vs 0"], comparisons[f"{one(k)} vs {FULL} (gain)"]
    if gain["sign"] == "-":
        return "contradicted", f"π{k} lowers held-out pass@1 by {-gain['diff']:.3f} (it overfits)"
    if gain["sign"] != "+":
        return "not at this scale", f"π{k} gives no significant gain (as #61 predicts)"
    if versus["sign"] == "-":
        return "partly", f"π{k} gains, {-versus['diff']:.3f} less than the full set (#61)"
    return "reproduced", f"π{k}'s gain is not significantly below the full set's"


def after_saturation(post: list[float], k: int) -> tuple[str, str]:
    """ "Test accuracy keeps rising after saturation" for the 1-shot learners on π_k."""
    if len(post) < 3:
        return "not at this scale", (
            f"only {len(post)} learners on π{k} saturated (train accuracy ≥ {SATURATED})"
        )
    s = stats.summarize(post)
    lo, hi = s["mean_ci"]
    return (
        verdicts.vs_zero([lo, hi]),
        f"π{k}: test gain after saturation {stats.format_interval(s)} over {len(post)} learners",
    )


def decide(arms: dict, post: dict, num: int) -> dict:
    """Claims over the `num` selected examples (combined by `verdicts.over_arms`)."""
    gain = {k: repro.gains(a) for k, a in arms.items()}
    zero = [0.0] * len(gain[FULL])
    comparisons = {
        f"{one(k)} gain vs 0": repro.effect(gain[one(k)], zero) for k in range(1, num + 1)
    }
    comparisons[f"{FULL} gain vs 0"] = repro.effect(gain[FULL], zero)
    for k in range(1, num + 1):
        comparisons[f"{one(k)} vs {FULL} (gain)"] = repro.effect(gain[one(k)], gain[FULL])
    comparisons[f"{TWO} vs {FULL} (gain)"] = repro.effect(gain[TWO], gain[FULL])
    only = f"{one(1)}, entropy only (no reward)"
    comparisons["entropy only gain vs 0"] = repro.effect(gain[only], zero)
    comparisons[f"entropy {LARGE} vs 0 ({one(1)}, gain)"] = repro.effect(
        gain[f"{one(1)}, entropy {LARGE}"], gain[one(1)]
    )
    v2, why2 = {
        "+": ("reproduced", "entropy alone raises pass@1"),
        "0": ("not at this scale", "entropy alone leaves pass@1 where it was"),
        "-": ("contradicted", "entropy alone lowers pass@1"),
    }[comparisons["entropy only gain vs 0"]["sign"]]

    def per_example(found: list) -> tuple[str, str]:  # over the selected examples
        combined = verdicts.over_arms(found) if len(found) > 1 else found[0][0]
        return combined, "; ".join(f"{why} ({v})" for v, why in found)

    ks = range(1, num + 1)
    claims = {
        "one example approaches the full set": per_example(
            [approaches_full(comparisons, k) for k in ks]),
        "entropy alone (no reward) helps": (v2, why2),
        "test accuracy keeps rising after training accuracy saturates": per_example(
            [after_saturation(post[one(k)], k) for k in ks]),
    }  # fmt: skip
    return {"claims": claims, "comparisons": comparisons}


def plot(args, result: dict, _) -> None:
    updates, arms, workdir = result["updates"], result["arms"], args.workdir
    ends = repro.chunk_ends(updates, 1 if args.quick else 10)
    repro.plot_curve(arms, updates, "pass@1/mean", os.path.join(workdir, "test_accuracy.png"),
                     title="1-shot RLVR: quick held-out pass@1", ylabel="pass@1 (held-out)",
                     at=ends)  # fmt: skip
    repro.plot_curve(arms, updates, "correct/mean", os.path.join(workdir, "train_accuracy.png"),
                     title="1-shot RLVR: training accuracy (verifier) on the k examples",
                     ylabel="training accuracy")  # fmt: skip


def selection_lines(sel: dict) -> list[str]:
    """results.md: how the examples were chosen and the top of the ranking."""
    lines = [
        f"Example selection (1-shot RLVR's historical variance): {sel['learners']} learners × "
        f"{sel['steps']} updates on the first {sel['pool']} training problems; per problem the "
        f"training accuracy at every update that drew it (one visit), ranked by its variance over "
        f"visits (problems with < {sel['min_visits']} visits unranked: {sel['unranked']}; ties "
        f"to the lower index). Selection run {sel['seconds']:.0f} s wall, "
        f"{sel['cpu_seconds']:.0f} s CPU.",
        "",
    ]
    ranked = enumerate(sel["ranking"][: max(5, len(sel["picks"]))], 1)
    lines += study.md_table(
        ("rank", "problem (index)", "variance", "visits", "mean accuracy", "arm"),
        ((r, f"`{row['example']}` ({row['index']})", f"{row['variance']:.4f}", row["visits"],
          f"{row['mean']:.3f}", one(r) if r <= len(sel["picks"]) else "")
         for r, row in ranked))  # fmt: skip
    return [*lines, ""]


def check(args) -> None:
    if args.examples > args.select_pool:
        raise cli.ConfigError(f"--examples={args.examples} is invalid; allowed: at most "
                              f"--select_pool={args.select_pool}")  # fmt: skip
    chunk = 1 if args.quick else 10
    if args.select_steps % min(chunk, args.select_steps):
        raise cli.ConfigError(f"--select_steps={args.select_steps} is invalid; allowed: a "
                              f"multiple of {chunk}")  # fmt: skip


def run(args) -> dict:
    chunk, base = 1 if args.quick else 10, repro.testbed_config(__file__, args)
    sel = select(args, base, chunk)
    result = repro.train(args, populations(sel["picks"]), base, chunk_steps=chunk,
                         final_samples=16, final_problems=200)  # fmt: skip
    result["seconds"]["select"] = sel["seconds"]
    result["cpu_seconds"]["select"] = sel["cpu_seconds"]
    return {**result, "selection": sel}


def report(args, result: dict, record: dict) -> study.Report:
    arms, sel = result["arms"], result["selection"]
    ends = repro.chunk_ends(result["updates"], 1 if args.quick else 10)
    post = {k: post_saturation(a, result["updates"], ends) for k, a in arms.items()}
    columns = {
        "pass@1": repro.at("pass@1"), "gain": repro.gains,
        "train accuracy": repro.late_of("correct/mean"), "entropy": repro.late_of("entropy"),
    }  # fmt: skip
    rows = repro.summaries(arms, columns)
    base = next(iter(arms.values()))["base"]
    examples = result["examples"]
    context = [
        f"Base: pass@1 {base['pass@1']:.3f} ({base['num_problems']} held-out problems). "
        f"Training examples: {examples}. Train accuracy and entropy over the last 20% of updates.",
        "",
        *selection_lines(sel),
    ]
    after = [
        "Post-saturation test gain (per learner that saturates): "
        + "; ".join(f"{k}: {[round(v, 3) for v in vs]}" for k, vs in post.items()),
        "",
    ]
    return repro.report(
        args, result, record, decide(arms, post, args.examples), rows,
        title="1-shot RLVR and entropy-only training (#124)",
        claim="One training example approaches the full set; entropy alone helps; test "
        "accuracy keeps rising after training accuracy saturates.",
        headline="gain", metric="held-out pass@1 gain over the base", context=context,
        after_table=after,
        extra={
            "post_saturation": post, "examples": examples, "selection": sel,
            "base": {k: v for k, v in base.items() if k != "pass_at_k"},
        },
    )  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/one_shot", run=run, report=report, plot=plot,
    flags=repro.flags, check=check, seeds=3, steps=100,
    quick={**repro.QUICK, "select_pool": 8, "select_steps": 2},
    low={**repro.LOW, "select_pool": 2, "select_steps": 1, "examples": 2},
    options={
        "select_pool": (128, "selection run: rank the first n training problems (--quick: 8)"),
        "select_steps": (50, "selection run: RL updates per learner (--quick: 2)"),
        "examples": (2, "selected examples with their own 1-shot arm"),
    },
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
