"""Tool use on calculator arithmetic: does a tiny agent with a calculator tool beat the same model
trained without it? (TRL / verl / tunix agent loops; OTC and ZeroSearch study such agents.)

Both arms start from one SFT base (`configs/agent.py:calculator`: half its traces demonstrate
the tool — "347*29+51;" → "=10114" → "10114" — half are bare answers) and train with the `grpo`
preset for the same updates on the same problems (products of 2-3 digit numbers, plus a sum at
level 2). The tool arm acts in episodes of up to 3 turns (`rljax.lm.agentic`: the calculator's
answers are prefilled into the KV cache and never trained); the no-tool arm answers in one
completion, where a tool call is just text; a third arm, the strongest no-tool baseline, trains
a base that never saw a tool call (bare answers only) the same way. Held-out pass@1 over seeds,
the differences with their 95% intervals, the tool calls per episode, and the oracle (the
demonstrations stepped through the environment) as the ceiling.

The default takes about 20 min on the idle 2-core CPU (SFT base cached after the first run).
Plots: curves.png (quick held-out pass@1 over training), tool_calls.png (calls per episode).
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax.lm.agentic import calculator  # noqa: E402
from rljax.lm.model import tokenizer  # noqa: E402
from rljax.lm.tasks import TASKS, device_reward  # noqa: E402
from rljax.train import study, verdicts  # noqa: E402
from rljax.train import study_lm as repro  # noqa: E402

TOOL = repro.Population("tool", {"grpo + calculator": {"preset": "grpo"}})
NO_TOOL = repro.Population(
    "notool", {"grpo, no tool": {"preset": "grpo"}}, run={"env": {"name": ""}}
)
# The strongest no-tool baseline: a base that never saw a tool call (bare answers only).
BARE = repro.Population(
    "notool_bare", {"grpo, no tool, bare base": {"preset": "grpo"}},
    sft={"tool_frac": 0.0}, run={"env": {"name": ""}},
)  # fmt: skip


def oracle_accuracy(problems, env) -> float:
    """The demonstrations stepped through `env` on device: the share of episodes whose answer
    is right and whose observations are the demonstrations' (1.0 when the tool is exact)."""
    table = jax.tree.map(jnp.asarray, device_reward.make_table(TASKS["calculator"], problems))
    A, ok = env.spec.action_tokens, []
    for i, p in enumerate(problems):
        state = env.reset(jax.random.key(0), jax.tree.map(lambda x, i=i: x[i], table))
        turns = TASKS["calculator"].demonstrate(p)
        right = True
        for t, (action, observation) in enumerate(turns):
            ids = tokenizer.encode(action) + ([tokenizer.EOS] if t == len(turns) - 1 else [])
            tokens = np.zeros(A, np.int32)
            tokens[: len(ids)] = ids
            obs, state, reward, done = env.step(state, jnp.asarray(tokens), jnp.asarray(tokens > 0))
            seen = np.asarray(obs.tokens)[np.asarray(obs.mask) > 0].tolist()
            right &= bool(done) == (t == len(turns) - 1)
            right &= t == len(turns) - 1 or seen == tokenizer.encode(observation)
        ok.append(right and float(reward) == 1.0)
    return float(np.mean(ok))


def decide(arms: dict) -> dict:
    p1 = {k: repro.final(a, "pass@1") for k, a in arms.items()}
    tool, *plain = p1
    versus = {f"{tool} − {k}": repro.effect(p1[tool], p1[k]) for k in plain}
    gain = repro.effect(repro.gains(arms[tool]), [0.0] * len(p1[tool]))
    differences = "; ".join(
        f"− {k.split(' − ')[1]}: {study.diff_text(c['diff'], c['diff_ci'], 3)}"
        for k, c in versus.items()
    )
    claims = {
        "the agent with the tool beats the same model trained without it": (
            verdicts.from_signs([c["sign"] for c in versus.values()]),
            f"pass@1 differences {differences}",
        ),
        "RL improves the tool agent over its SFT base": (
            verdicts.from_signs([gain["sign"]]),
            f"gain {study.diff_text(gain['diff'], gain['diff_ci'], 3)}",
        ),
    }
    return {"claims": claims, "comparisons": {**versus, "RL gain": gain}}


def run(args) -> dict:
    base = study.config(__file__, "agent", "calculator,tiny" if args.quick else "calculator")
    result = repro.train(args, [TOOL, NO_TOOL, BARE], base, chunk_steps=10, final_samples=4,
                         final_problems=200)  # fmt: skip
    env = calculator.CalculatorEnv.make(max_turns=3, action_tokens=14, observation_tokens=8)
    test = [TASKS["calculator"].generate(np.random.default_rng(s), 1 + s % 2) for s in range(64)]
    return {**result, "oracle": oracle_accuracy(test, env)}


def _tool_calls(arm: dict) -> list[float]:
    curve = arm["curves"].get("tool/calls")
    return [] if curve is None else list(np.nanmean(curve[:, -max(1, curve.shape[1] // 5) :], 1))


def report(args, result: dict, record: dict) -> study.Report:
    arms = result["arms"]
    rows = repro.summaries(arms, repro.pass_columns(4))
    calls = {k: _tool_calls(a) for k, a in arms.items()}
    bases = {a["population"]: a["base"]["pass@1"] for a in arms.values()}
    context = [
        f"SFT bases, held-out pass@1: in the environment {bases['tool']:.3f}, single-turn "
        f"{bases['notool']:.3f}, the bare-answer base {bases['notool_bare']:.3f}. Oracle (the "
        f"demonstrations through the environment): {result['oracle']:.3f}.",
        "Tool calls per episode over the last fifth of training (mean over seeds): "
        + ", ".join(f"{k} {np.mean(v):.2f}" for k, v in calls.items() if v)
        + ".",
    ]
    return repro.report(
        args, result, record, decide(arms), rows,
        title="Tool use: calculator arithmetic with and without the tool",
        claim="An agent that can call a calculator beats the same model trained without it.",
        headline="pass@1", metric="held-out pass@1", context=context,
        extra={"oracle": result["oracle"], "tool_calls": calls, "bases": bases},
    )  # fmt: skip


def plot(args, result: dict, _) -> None:
    arms, updates = result["arms"], np.asarray(result["updates"])
    at = repro.chunk_ends(updates, 1 if args.quick else 10)
    repro.plot_curve(
        arms,
        updates,
        "pass@1/mean",
        os.path.join(args.workdir, "curves.png"),
        title="Calculator agents: quick held-out pass@1",
        ylabel="pass@1",
        at=at,
    )
    tool = {k: a for k, a in arms.items() if "tool/calls" in a["curves"]}
    repro.plot_curve(tool, updates, "tool/calls", os.path.join(args.workdir, "tool_calls.png"),
                     title="Tool calls per episode", ylabel="calls")  # fmt: skip


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/agent_calculator", run=run, report=report,
    plot=plot, seeds=4, steps=100, quick=repro.QUICK, low=repro.LOW, flags=repro.flags,
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
