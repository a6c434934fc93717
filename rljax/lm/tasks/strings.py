"""String function composition, f(g(x)) from atomic functions (From f(x) and g(x) to f(g(x)), #81).

Eight atomic functions on lowercase strings carry meaningless one-letter names A-H. Level n composes
n of them: "BD:abcd=" asks for B(D("abcd")), applied right to left. The answer is the output string.
"""

from __future__ import annotations

import string

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict

NUM_LEVELS = 3
MIN_LEN, MAX_LEN = 3, 5
_LOWER = string.ascii_lowercase


def _shift(s: str, k: int) -> str:
    return "".join(_LOWER[(_LOWER.index(c) + k) % 26] for c in s)


ATOMS = {
    "A": lambda s: s[::-1],  # reverse
    "B": lambda s: s[1:] + s[:1],  # rotate left
    "C": lambda s: s[-1:] + s[:-1],  # rotate right
    "D": lambda s: _shift(s, 1),  # caesar +1
    "E": lambda s: _shift(s, -1),  # caesar -1
    "F": lambda s: "".join(sorted(s)),  # sort
    "G": lambda s: s[1] + s[0] + s[2:],  # swap the first two
    "H": lambda s: s[0] + s,  # repeat the first letter
}


def apply(names: str, s: str) -> str:
    """Applies the composition `names` (rightmost first) to `s`."""
    for name in reversed(names):
        s = ATOMS[name](s)
    return s


def generate(rng: np.random.Generator, level: int) -> Problem:
    """A random composition of `level` atoms applied to a random lowercase word."""
    names = "".join(rng.choice(sorted(ATOMS), size=level))
    word = "".join(rng.choice(list(_LOWER), size=int(rng.integers(MIN_LEN, MAX_LEN + 1))))
    return Problem(prompt=f"{names}:{word}=", answer=apply(names, word), level=level)


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff `text` equals the output; well formed iff it is 1-16 lowercase letters."""
    well_formed = 0 < len(text) <= 16 and all(c in _LOWER for c in text)
    return Verdict(correct=well_formed and text == problem.answer, well_formed=well_formed)


TASK = Task(
    name="strings",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=NUM_LEVELS + MAX_LEN + 2,
    max_answer_chars=MAX_LEN + NUM_LEVELS,
)
