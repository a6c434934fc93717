"""One arithmetic task, three answer formats: the mixed pretraining data of the echo chamber (#50).

The problems are `arithmetic`'s ("3+4*2-1=", 1-3 operations on digits, the usual precedence) and
every format reduces them in the same order (products first, then left to right), one operation
per step; only the way a step is written differs:

  math   the equation chain of `arithmetic`:      3+8-1=11-1=10
  code   assignments to variables a, b, c:       a=4*2=8;b=3+a=11;c=b-1=10
  words  natural-language steps:                 4times2is8,3plus8is11,11minus1is10

(the code style stands for TinyGSM's programs, the words style for OpenMathInstruct's prose, the
chain for FineMath-like equations). A completion's format is read from its surface alone
(`classify`): letters with '=' is code, letters without '=' is words, digits without letters is
math. The verifier reads only the final answer, the integer after the last '=' or "is" (or the
whole text), so every format earns the same reward for the same value.
"""

from __future__ import annotations

import re

import numpy as np

from rljax.lm.tasks import arithmetic
from rljax.lm.tasks.base import Problem, Task, Verdict
from rljax.lm.tasks.grammar import parse_expression, parse_int

FORMATS = ("math", "code", "words")
OTHER = "other"  # a completion no format's surface describes (empty, or no digit at all)
NUM_LEVELS = arithmetic.NUM_LEVELS
_WORDS = {"+": "plus", "-": "minus", "*": "times"}
_VARIABLES = "abc"  # one per operation (NUM_LEVELS of them)
_ANSWER_RE = re.compile(r"(?:^|=|is)(-?[0-9]{1,9})$")
_LETTERS_RE = re.compile(r"[a-z]")


def _steps(prompt: str) -> list[tuple[str, str, str, int, str]]:
    """The reduction of `prompt` ("3+4*2=") one operation at a time.

    Returns:
      One (left, op, right, value, chain) per step: the operands as written in the code style
      (a literal, or the variable of an earlier step), the operator, the value, and the
      expression left after the step in the math style.
    """
    text = prompt[:-1]
    values = [int(d) for d in text[::2]]
    ops = list(text[1::2])
    names = [str(v) for v in values]  # how each operand is named in the code style
    out = []
    for step in range(len(ops)):
        i = ops.index("*") if "*" in ops else 0
        a, b = values[i], values[i + 1]
        value = a * b if ops[i] == "*" else a + b if ops[i] == "+" else a - b
        left, op, right = names[i], ops[i], names[i + 1]
        values = [*values[:i], value, *values[i + 2 :]]
        names = [*names[:i], _VARIABLES[step], *names[i + 2 :]]
        ops = [*ops[:i], *ops[i + 1 :]]
        chain = str(values[0]) + "".join(f"{o}{v}" for o, v in zip(ops, values[1:], strict=True))
        out.append((left, op, right, value, chain))
    return out


def trace(prompt: str, fmt: str) -> str:
    """The worked answer of `prompt` written in format `fmt` (one of `FORMATS`)."""
    steps = _steps(prompt)
    if fmt == "math":
        return "=".join(chain for *_, chain in steps)
    if fmt == "code":
        return ";".join(
            f"{_VARIABLES[k]}={left}{op}{right}={value}"
            for k, (left, op, right, value, _) in enumerate(steps)
        )
    if fmt == "words":
        # a variable of the code style is the earlier step's value in prose
        values = {_VARIABLES[k]: str(s[3]) for k, s in enumerate(steps)}
        return ",".join(
            f"{values.get(left, left)}{_WORDS[op]}{values.get(right, right)}is{value}"
            for left, op, right, value, _ in steps
        )
    raise ValueError(f"fmt={fmt!r} is unknown; allowed: {', '.join(FORMATS)}")


def classify(text: str) -> str:
    """The format of a completion from its surface: "code" (letters and '='), "words" (letters,
    no '='), "math" (digits, no letters) or "other" (no digit). A wrong or sloppy trace keeps the
    format it was written in."""
    if not any(c.isdigit() for c in text):
        return OTHER
    if _LETTERS_RE.search(text):
        return "code" if "=" in text else "words"
    return "math"


def final_answer(text: str) -> int | None:
    """The integer after the last '=' or "is" (or the whole text if it is one); None if none."""
    match = _ANSWER_RE.search(text)
    return parse_int(match.group(1)) if match else None


def generate(rng: np.random.Generator, level: int) -> Problem:
    """An `arithmetic` problem with its answer in the math format (`mixture` rewrites it)."""
    problem = arithmetic.generate(rng, level)
    return problem._replace(answer=trace(problem.prompt, "math"), info="math")


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff the final answer is the expression's value, whatever the format."""
    value = final_answer(text)
    target = parse_expression(problem.prompt[:-1])
    correct = value is not None and target is not None and value == target.value
    return Verdict(correct=correct, well_formed=value is not None)


def mixture(problems: list[Problem], shares: dict[str, float], seed: int) -> list[Problem]:
    """`problems` with each answer rewritten in a format drawn from `shares` (named in `info`).

    The formats are assigned by a shuffled quota, not by independent draws, so each format's
    share of the list is `shares[fmt]` up to rounding (largest remainders).

    Raises:
      ValueError: naming a format outside `FORMATS`, or shares that are negative or do not sum
        to 1.
    """
    check_shares(shares)
    n = len(problems)
    exact = {f: shares.get(f, 0.0) * n for f in FORMATS}
    counts = {f: int(np.floor(v)) for f, v in exact.items()}
    for f in sorted(FORMATS, key=lambda f: counts[f] - exact[f])[: n - sum(counts.values())]:
        counts[f] += 1
    labels = np.asarray([f for f in FORMATS for _ in range(counts[f])])
    np.random.default_rng(seed).shuffle(labels)
    return [
        p._replace(answer=trace(p.prompt, str(f)), info=str(f))
        for p, f in zip(problems, labels, strict=True)
    ]


def check_shares(shares: dict[str, float]) -> None:
    """Raises ValueError unless `shares` maps formats of `FORMATS` to values >= 0 summing to 1."""
    unknown = sorted(set(shares) - set(FORMATS))
    if unknown:
        raise ValueError(f"format {unknown[0]!r} is unknown; allowed: {', '.join(FORMATS)}")
    for f, v in shares.items():
        if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
            raise ValueError(f"share of {f}={v!r} is invalid; allowed: a number in [0, 1]")
    if abs(sum(shares.values()) - 1.0) > 1e-6:
        raise ValueError(f"shares={shares} sum to {sum(shares.values()):.4f}; allowed: sum 1")


def _max_answer_chars() -> int:
    """The longest trace of any format at any level: words at level 3, e.g. "0-9*9*9=" ->
    "9times9is81,81times9is729,0minus729is-729" (41 characters; found by enumerating every
    problem of levels 1-3, and checked on random problems in the tests)."""
    return 41


TASK = Task(
    name="formats",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=arithmetic.TASK.max_prompt_chars,
    max_answer_chars=_max_answer_chars(),
)
