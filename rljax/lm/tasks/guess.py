"""Guess the number: an information-gathering game in the spirit of LMRL-Gym's twenty questions,
where acting well takes several turns.

Level n hides a number in 1..N (N = 16, 64): the prompt "guess64:" names the range, followed by
an episode tag of four random letters drawn apart from the secret ("guess64:qzmc"), so that every
problem has its own prompt (splits keep train and test prompts apart); the tag says nothing
about the secret. With the
oracle (`rljax.lm.agentic.guess`) the policy probes by writing a number and the call token ';'
and reads "h" (the secret is higher), "l" (lower) or "y" (that is it); it answers by ending a
turn with EOS. Without it, one answer is a blind guess (1/N). `demonstrate` writes binary search:

    probe  32;   obs l      probe  16;   obs h      ...      probe  21;   obs y      answer  21
"""

from __future__ import annotations

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_int

RANGES = (16, 64)  # level n: the secret is in 1..RANGES[n - 1]
NUM_LEVELS = len(RANGES)
CALL = ";"
HIGHER, LOWER, FOUND = "h", "l", "y"


def generate(rng: np.random.Generator, level: int) -> Problem:
    top = RANGES[level - 1]
    secret = int(rng.integers(1, top + 1))
    tag = "".join(chr(ord("a") + int(i)) for i in rng.integers(0, 26, size=4))
    return Problem(f"guess{top}:{tag}", str(secret), level)


def verify(problem: Problem, text: str) -> Verdict:
    """The answer is the secret number."""
    value = parse_int(text)
    return Verdict(correct=value is not None and str(value) == problem.answer,
                   well_formed=value is not None)  # fmt: skip


def _top(problem: Problem) -> int:
    return int(problem.prompt[len("guess") :].split(":")[0])


def demonstrate(problem: Problem) -> list[tuple[str, str]]:
    """Binary search over 1..N: probes with their answers, then the answer."""
    lo, hi, secret, turns = 1, _top(problem), int(problem.answer), []
    while True:
        mid = (lo + hi) // 2
        reply = FOUND if mid == secret else HIGHER if secret > mid else LOWER
        turns.append((f"{mid}{CALL}", reply))
        if reply == FOUND:
            return [*turns, (str(secret), "")]
        lo, hi = (mid + 1, hi) if reply == HIGHER else (lo, mid - 1)


# the longest demonstration: log2(64) + 1 probes of "32;" plus answers, flattened, plus the answer
_MAX_DEMO = 7 * 4 + 2
TASK = Task(
    name="guess",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=len("guess64:abcd"),
    max_answer_chars=_MAX_DEMO,
    demonstrate=demonstrate,
)
