"""Linear equations with an integer solution: "3x+4=19" -> "5" (our fourth task).

Level 1: x+b=c. Level 2: ax+b=c. Level 3: ax+b=cx+d. The solution x is in [-9, 9]; the answer is
an integer literal, checked with `parse_int`.
"""

from __future__ import annotations

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_int

NUM_LEVELS = 3


def _term(coefficient: int) -> str:
    return "x" if coefficient == 1 else f"{coefficient}x"


def generate(rng: np.random.Generator, level: int) -> Problem:
    """Draws x in [-9, 9] and coefficients so that the equation has exactly that solution."""
    x = int(rng.integers(-9, 10))
    a = 1 if level == 1 else int(rng.integers(2, 10))
    b = int(rng.integers(0, 10))
    if level < 3:
        prompt = f"{_term(a)}+{b}={a * x + b}"
    else:
        c = int(rng.integers(1, a))  # c < a keeps the x coefficient on the left positive
        d = a * x + b - c * x
        prompt = f"{_term(a)}+{b}={_term(c)}{'+' if d >= 0 else '-'}{abs(d)}"
    return Problem(prompt=prompt + ";x=", answer=str(x), level=level)


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff `text` is exactly the integer literal of the solution."""
    value = parse_int(text)
    return Verdict(
        correct=value is not None and value == int(problem.answer), well_formed=value is not None
    )


TASK = Task(
    name="equation",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=18,
    max_answer_chars=2,
)
