"""Multi-step integer arithmetic in the spirit of RandomCalculation (#61), with worked traces.

Level n has n operations on single-digit operands with +, - and * and the usual precedence. The
reference completion is a step-by-step trace that reduces one operation per step (products first,
then left to right) and ends with the value: "3+4*2=" -> "3+8=11". The verifier reads only the
final answer, the text after the last '=', and parses it with `parse_int`; the steps are free.
"""

from __future__ import annotations

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_expression, parse_int

NUM_LEVELS = 3
_OPS = "+-*"


def _trace(values: list[int], ops: list[str]) -> str:
    """Reduces `values`/`ops` one operation at a time; returns the steps joined by '='."""
    steps = []
    while ops:
        i = ops.index("*") if "*" in ops else 0
        a, b = values[i], values[i + 1]
        result = a * b if ops[i] == "*" else a + b if ops[i] == "+" else a - b
        values = [*values[:i], result, *values[i + 2 :]]
        ops = [*ops[:i], *ops[i + 1 :]]
        steps.append(
            str(values[0]) + "".join(f"{o}{v}" for o, v in zip(ops, values[1:], strict=True))
        )
    return "=".join(steps)


def generate(rng: np.random.Generator, level: int) -> Problem:
    """A random expression with `level` operations on digits 0-9, and its worked trace."""
    digits = [int(d) for d in rng.integers(0, 10, size=level + 1)]
    ops = [str(o) for o in rng.choice(list(_OPS), size=level)]
    expression = str(digits[0]) + "".join(f"{o}{d}" for o, d in zip(ops, digits[1:], strict=True))
    return Problem(prompt=expression + "=", answer=_trace(digits, ops), level=level)


def final_answer(text: str) -> str:
    """The text after the last '=' (the whole text if there is none)."""
    return text.rsplit("=", 1)[-1]


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff the final answer is exactly the integer literal of the expression's value."""
    value = parse_int(final_answer(text))
    target = parse_expression(problem.prompt[:-1])
    correct = value is not None and target is not None and value == target.value
    return Verdict(correct=correct, well_formed=value is not None)


TASK = Task(
    name="arithmetic",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=2 * NUM_LEVELS + 2,
    max_answer_chars=18,
)
