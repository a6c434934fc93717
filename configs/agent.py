"""Multi-turn agents with tools: the LM pipeline on episodes of a text environment.

    python experiments/train_lm.py --config=configs/agent.py:calculator          # with the tool
    python experiments/train_lm.py --config=configs/agent.py:calculator,notool   # the baseline
    python experiments/train_lm.py --config=configs/agent.py:calculator,tiny     # CI size
    python experiments/train_lm.py --config=configs/agent.py:guess               # 20 questions

The argument is `<env>[,notool][,tiny]`, env in {calculator, guess}. One SFT base for both arms:
half of its traces are the task's tool-using demonstrations (`sft.tool_frac`, observations not
trained), half the bare answers. With the tool every sample is an episode of up to
`env.max_turns` turns (`rljax.lm.agentic`); `notool` trains the same base on single-turn
completions of the same problems (a tool call there is just text). Every other field is
configs/grpo.py's (presets, sweeps, seeds, resume).
"""

import importlib.util
import os

# configs/ is a folder of files, not a package: grpo.py is read from beside this file.
_spec = importlib.util.spec_from_file_location(
    "rljax_config_grpo", os.path.join(os.path.dirname(os.path.abspath(__file__)), "grpo.py")
)
grpo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grpo)

# env -> the task it runs on and its limits: (max_turns, action_tokens, observation_tokens)
ENVS = {
    "calculator": ("calculator", (3, 14, 8)),  # "999*999+999;" and EOS; "=998999"
    "guess": ("guess", (8, 4, 1)),  # up to 7 probes "32;" and the answer; "h" / "l" / "y"
}


def get_config(arg: str = "calculator"):
    name, *flags = arg.split(",")
    if name not in ENVS:
        raise ValueError(f"env {name!r} is unknown; valid: {', '.join(ENVS)}")
    unknown = sorted(set(flags) - {"notool", "tiny"})
    if unknown:
        raise ValueError(f"config flag {unknown[0]!r} is unknown; valid: notool, tiny")
    tiny = "tiny" in flags
    task, (turns, action, observation) = ENVS[name]
    c = grpo.get_config(task + (",tiny" if tiny else ",fast"))
    c.max_level = 0  # both levels
    c.sft.tool_frac = 0.5  # half the traces demonstrate the tool
    c.sft.noise = 0.0  # the products are hard enough: no corrupted traces
    c.sft.steps = 20 if tiny else 1500
    c.env.name = "" if "notool" in flags else name
    c.env.max_turns, c.env.action_tokens, c.env.observation_tokens = turns, action, observation
    c.run.steps = 4 if tiny else 100
    c.run.chunk_steps = 2 if tiny else 25
    return c
