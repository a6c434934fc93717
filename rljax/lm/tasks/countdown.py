"""Countdown: combine the given numbers with + - * / to reach the target (Gandhi et al.; #207).

Prompt "3,7,12>45=" asks for an expression that uses each given number at most once and equals 45,
e.g. "12*3+7+2"-style answers are checked by parsing with the integer grammar (exact division only).
Level n uses n + 1 numbers. Generation builds the target from all numbers, so a solution exists.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_expression

NUM_LEVELS = 3
MAX_NUMBER = 12


def generate(rng: np.random.Generator, level: int) -> Problem:
    """Draws `level + 1` numbers and a left-to-right combination of them with a positive value."""
    while True:
        numbers = [int(n) for n in rng.integers(1, MAX_NUMBER + 1, size=level + 1)]
        expression = str(numbers[0])
        for n in numbers[1:]:
            op = str(rng.choice(["+", "-", "*"]))
            expression = (
                f"({expression}){op}{n}"
                if op == "*" and ("+" in expression or "-" in expression)
                else (f"{expression}{op}{n}")
            )
        parsed = parse_expression(expression)
        if parsed is not None and 0 < parsed.value < 1000:
            shown = ",".join(str(n) for n in sorted(numbers))
            info = f"{shown}>{parsed.value}"
            return Problem(prompt=info + "=", answer=expression, level=level, info=info)


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff `text` parses, uses given numbers at most once each, and hits the target."""
    parsed = parse_expression(text)
    if parsed is None:
        return Verdict(False, False)
    shown, target = problem.info.split(">")
    available = Counter(int(n) for n in shown.split(","))
    used = Counter(parsed.literals)
    uses_given = all(used[n] <= available[n] for n in used)
    return Verdict(correct=uses_given and parsed.value == int(target), well_formed=True)


TASK = Task(
    name="countdown",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=3 * (NUM_LEVELS + 1) + 5,
    max_answer_chars=4 * (NUM_LEVELS + 1) + 6,
)
