"""f(g(x)) from f(x) and g(x): string functions with meaningless names, composed (#81).

Eight atomic functions on 4-letter words over the letters a-h carry meaningless one-letter names
A-H; all keep the length (the shifts wrap around within a-h). Level n composes n of them,
applied right to left: "BD:abcd=" asks for B(D("abcd")). The reference completion reduces the
composition one function per step, the way an arithmetic trace reduces one operation: each step
drops the rightmost name and applies it,

    "ABD:abcd="  ->  "AB:bcde=A:cdeb=bedc"

so every step is a level-1 problem on the previous step's output, and the final answer is the
text after the last '='. The verifier reads only that final answer.

The atoms are split in two pools: compositions of the source atoms (A-E) are what training sees
above level 1; compositions of the target atoms (F-H) are a held-out task whose atoms are learned
alone (level 1) and never composed in training. `Problem.info` names the pool.
"""

from __future__ import annotations

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict

NUM_LEVELS = 5
WORD_LEN = 4
SOURCE, TARGET = "ABCDE", "FGH"  # atoms composed in training / only in the held-out task
ALPHABET = "abcdefgh"  # words are drawn from these letters


def _shift(s: str, k: int) -> str:
    return "".join(ALPHABET[(ALPHABET.index(c) + k) % len(ALPHABET)] for c in s)


ATOMS = {
    "A": lambda s: s[::-1],  # reverse
    "B": lambda s: s[1:] + s[:1],  # rotate left
    "C": lambda s: s[-1:] + s[:-1],  # rotate right
    "D": lambda s: _shift(s, 1),  # caesar +1 (h -> a)
    "E": lambda s: _shift(s, -1),  # caesar -1 (a -> h)
    "F": lambda s: "".join(sorted(s)),  # sort
    "G": lambda s: s[1] + s[0] + s[2:],  # swap the first two
    "H": lambda s: s[:-2] + s[-1] + s[-2],  # swap the last two
}


def apply(names: str, word: str) -> str:
    """f_1(f_2(...f_n(word))) for `names` = f_1...f_n (the rightmost applies first)."""
    for name in reversed(names):
        word = ATOMS[name](word)
    return word


def trace(names: str, word: str) -> str:
    """The step-by-step reduction of `names:word` (module docstring); its last segment is the
    answer."""
    steps = []
    while names:
        word, names = ATOMS[names[-1]](word), names[:-1]
        steps.append(f"{names}:{word}" if names else word)
    return "=".join(steps)


def make(names: str, word: str) -> Problem:
    """The problem `names:word=` with its trace; `info` is "source" or "target" (or "mixed")."""
    pool = (
        "source"
        if set(names) <= set(SOURCE)
        else "target"
        if set(names) <= set(TARGET)
        else "mixed"
    )
    return Problem(
        prompt=f"{names}:{word}=", answer=trace(names, word), level=len(names), info=pool
    )


def generate_from(rng: np.random.Generator, level: int, atoms: str) -> Problem:
    """A random composition of `level` atoms drawn from `atoms`, on a random word over a-h."""
    names = "".join(str(a) for a in rng.choice(list(atoms), size=level))
    word = "".join(str(c) for c in rng.choice(list(ALPHABET), size=WORD_LEN))
    return make(names, word)


def generate(rng: np.random.Generator, level: int) -> Problem:
    """Level 1 over every atom; higher levels over the source atoms (the training pool)."""
    return generate_from(rng, level, SOURCE + TARGET if level == 1 else SOURCE)


def final_answer(text: str) -> str:
    """The text after the last '=' (the whole text if there is none)."""
    return text.rsplit("=", 1)[-1]


def parse(prompt: str) -> tuple[str, str]:
    """(names, word) of a prompt "names:word="."""
    names, word = prompt[:-1].split(":")
    return names, word


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff the final answer equals the composition's value; well formed iff it is a
    4-letter word over a-h."""
    answer = final_answer(text)
    well_formed = len(answer) == WORD_LEN and all(c in ALPHABET for c in answer)
    names, word = parse(problem.prompt)
    return Verdict(correct=well_formed and answer == apply(names, word), well_formed=well_formed)


TASK = Task(
    name="compose",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=NUM_LEVELS + WORD_LEN + 2,
    # level n: steps of n-1, n-2, ..., 1 names plus ":word=", then the word
    max_answer_chars=sum(k + WORD_LEN + 2 for k in range(1, NUM_LEVELS)) + WORD_LEN,
)
