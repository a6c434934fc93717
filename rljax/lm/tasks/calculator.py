"""Calculator arithmetic: multi-digit expressions a tiny model cannot evaluate reliably in its
head, e.g. "347*29+51=" (level n: n operations on operands of 2-3 digits, a product first).

The reference answer is the value ("10114"); the verifier is arithmetic's (the integer after the
last '='). With the calculator tool (`rljax.lm.agentic.calculator`) the policy can instead call
it, and `demonstrate` writes the tool-using episode an SFT base learns the call syntax from:

    action 1  347*29+51;      a tool call: the expression and the call token ';'
    obs 1     =10114          the calculator's answer (context, never trained)
    action 2  10114           the answer (EOS appended by the encoder)
"""

from __future__ import annotations

import numpy as np

from rljax.lm.tasks import arithmetic
from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_expression

NUM_LEVELS = 2
CALL = ";"  # the tool-call stop token's character


def generate(rng: np.random.Generator, level: int) -> Problem:
    """`level` + 1 operands of 2-3 digits: a product, then `+` / `-` operations."""
    values = [int(rng.integers(10, 1000)) for _ in range(level + 1)]
    ops = ["*"] + [str(rng.choice(["+", "-"])) for _ in range(level - 1)]
    expression = str(values[0]) + "".join(f"{o}{v}" for o, v in zip(ops, values[1:], strict=True))
    return Problem(expression + "=", str(parse_expression(expression).value), level)


def verify(problem: Problem, text: str) -> Verdict:
    """The final answer (after the last '=') is the expression's value."""
    return arithmetic.verify(problem, text)


def demonstrate(problem: Problem) -> list[tuple[str, str]]:
    """The tool-using episode: [(action text, observation text), ...]; the last action is the
    answer (its EOS is the encoder's), the others end with the call token."""
    return [(problem.prompt[:-1] + CALL, "=" + problem.answer), (problem.answer, "")]


# the longest demonstration, flattened: "999*999+999;" "=998999" "998999" (and EOS: the slack)
_MAX_DEMO = 4 * (NUM_LEVELS + 1) + 2 * 7
TASK = Task(
    name="calculator",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=4 * (NUM_LEVELS + 1),
    max_answer_chars=_MAX_DEMO,
    demonstrate=demonstrate,
)
