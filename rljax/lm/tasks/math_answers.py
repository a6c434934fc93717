"""Final answers of math solutions: `\\boxed{...}`, GSM8K's `#### n`, or the last number.

Extraction is linear in the text's length on every input, hostile ones included: no pattern can
backtrack (each quantifier that could is possessive, `*+` / `?+`), `\\boxed{` groups are matched
by one left-to-right pass over the braces, and no scan restarts from an earlier position. It
decides what is compared; `rljax.lm.tasks.math_checker` decides whether two extracted answers are
equal (with math-verify), with extraction inside the same per-completion deadline
(`Checker.judge`).

  boxed        the content of the last `\\boxed{...}` / `\\fbox{...}` (braces balanced), or the
               token after `\\boxed ` (`\\boxed 5`);
  hash         the rest of the line after the last `####` (GSM8K's reference layout);
  last_number  the last number in the text: `-3`, `1,000`, `0.5`, `.5`, `1/2`, `\\frac{1}{2}`.

Modes are tried in the order given and the first that finds something wins. An answer longer
than `MAX_ANSWER_CHARS`, or any text with a NUL byte, has no answer (so it is never correct).
"""

from __future__ import annotations

import re

MODES = ("boxed", "hash", "last_number")
MAX_ANSWER_CHARS = 256  # longer extracted answers are refused (no MATH reference comes close)
_BOX = re.compile(r"\\(?:boxed|fbox)")  # the commands `\boxed` and `\fbox` (never overlapping)
_BRACE = re.compile(r"[{}]")
_TOKEN = re.compile(r"\s*+(\S++)")  # the first whitespace-free token (as `str.split()` finds it)
_DIGITS = r"-?(?:\d{1,3}(?:,\d{3})++|\d++)"  # 1,000 or 1000
_NUMBER = re.compile(
    r"-?\\[dt]?frac(?:\{-?\d++\}\{\d++\}|\d\d)"  # \frac{1}{2}, \dfrac12
    rf"|{_DIGITS}(?:\.\d++)?+(?:/\d++)?+|-?\.\d++"
)
# "18 dollars", "5 cm.", "$12 per hour": a number with only words around it (units, not maths).
# Possessive runs: words, spaces and whitespace around the number are each taken whole, so a
# run of spaces is read once instead of being split between three quantifiers in every way.
_NUMBER_WITH_WORDS = re.compile(
    r"^(?:[A-Za-z][A-Za-z ]*+[:=]?+\s*+)?+\\?+\$?+\s*+"
    r"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*+(?:[A-Za-z][A-Za-z ./]*+)?+\.?$"
)


def _closing_braces(text: str) -> dict[int, int]:
    """`{open index: index of its matching '}'}` for every closed brace group of `text`, by one
    pass with a stack (an unmatched `}` is skipped, an unclosed `{` has no entry)."""
    stack: list[int] = []
    closing: dict[int, int] = {}
    for match in _BRACE.finditer(text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            closing[stack.pop()] = match.start()
    return closing


def _boxed(text: str) -> str | None:
    ends = [match.end() for match in _BOX.finditer(text)]
    if not ends:
        return None
    closing = _closing_braces(text) if "{" in text else {}
    for i in reversed(ends):  # the last command with content wins
        if i < len(text) and text[i] == "{":
            if i in closing:
                return text[i + 1 : closing[i]]
        elif i < len(text) and text[i] == " ":  # "\boxed 5": the next whitespace-free token
            token = _TOKEN.match(text, i + 1)
            if token:
                return token.group(1).rstrip("$.")
    return None


def _hash(text: str) -> str | None:
    at = text.rfind("####")
    if at < 0:
        return None
    end = text.find("\n", at + 4)
    line = text[at + 4 : end if end >= 0 else len(text)].strip()
    return line or None


def _last_number(text: str) -> str | None:
    last = None
    for match in _NUMBER.finditer(text):
        last = match.group(0)
    return last


_EXTRACTORS = {"boxed": _boxed, "hash": _hash, "last_number": _last_number}


def clean(answer: str) -> str:
    """Strips what never changes an answer's value: `$`, surrounding space, a final period, and
    words around a single number ("18 dollars" -> "18")."""
    answer = answer.strip().strip("$").strip()
    if answer.endswith(".") and not answer[:-1].rstrip().endswith("."):
        answer = answer[:-1].rstrip()
    words = _NUMBER_WITH_WORDS.match(answer)
    if words and not answer.startswith("\\"):
        return words.group(1)
    return answer


def is_number(answer: str) -> bool:
    """Whether a cleaned answer is one number as `last_number` reads them (`-3`, `1,000`,
    `0.5`, `.5`, `1/2`, `\\frac{1}{2}`, `\\dfrac12`)."""
    return _NUMBER.fullmatch(answer) is not None


def check_modes(modes) -> tuple[str, ...]:
    """Validates an extraction order; raises ValueError naming the bad mode and the valid ones."""
    modes = tuple(modes)
    if not modes:
        raise ValueError(f"answer modes are empty; choose from {', '.join(MODES)}")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"answer mode {mode!r} is unknown; valid: {', '.join(MODES)}")
    return modes


def find(text: str, modes=MODES) -> tuple[str, str] | None:
    """`(mode, answer)`: the first of `modes` that finds something in `text` and what it found,
    cleaned (possibly empty or longer than `MAX_ANSWER_CHARS`); None if no mode finds anything
    or the text is not a string or has a NUL byte."""
    if not isinstance(text, str) or "\x00" in text:
        return None
    for mode in check_modes(modes):
        found = _EXTRACTORS[mode](text)
        if found is not None:
            return mode, clean(found)
    return None


def extract(text: str, modes=MODES) -> str | None:
    """The final answer of `text` by the first of `modes` that finds one, cleaned; None if none
    does, the text has a NUL byte, or the answer is empty or longer than `MAX_ANSWER_CHARS`."""
    found = find(text, modes)
    if found is None or not found[1] or len(found[1]) > MAX_ANSWER_CHARS:
        return None
    return found[1]
