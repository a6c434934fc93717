"""Multi-step integer arithmetic in the spirit of RandomCalculation (#61).

Level n has n operations on single-digit operands with +, - and * and the usual precedence:
"3+4*2=" -> "11". The answer is an integer literal; the verifier parses it with `parse_int`.
"""

from __future__ import annotations

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_expression, parse_int

NUM_LEVELS = 4
_OPS = "+-*"


def generate(rng: np.random.Generator, level: int) -> Problem:
    """A random expression with `level` operations on digits 0-9, and its value."""
    digits = rng.integers(0, 10, size=level + 1)
    ops = rng.choice(list(_OPS), size=level)
    expression = str(digits[0]) + "".join(f"{o}{d}" for o, d in zip(ops, digits[1:], strict=True))
    parsed = parse_expression(expression)
    assert parsed is not None, expression  # our own generator always yields valid expressions
    return Problem(prompt=expression + "=", answer=str(parsed.value), level=level)


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff `text` is exactly the integer literal of the expression's value."""
    value = parse_int(text)
    return Verdict(
        correct=value is not None and value == int(problem.answer), well_formed=value is not None
    )


TASK = Task(
    name="arithmetic",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=2 * NUM_LEVELS + 2,
    max_answer_chars=6,
)
