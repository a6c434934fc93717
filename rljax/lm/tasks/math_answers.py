"""Final answers of math solutions: `\\boxed{...}`, GSM8K's `#### n`, or the last number.

Extraction is plain string scanning (no regex backtracking over nested groups, no `eval`), linear
in the text's length, so a megabyte of output costs milliseconds. It decides what is compared;
`rljax.lm.tasks.math_checker` decides whether two extracted answers are equal (with math-verify).

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
_BOX_COMMANDS = ("\\boxed", "\\fbox")
_NUMBER = re.compile(
    r"-?\\[dt]?frac(?:\{-?\d+\}\{\d+\}|\d\d)"  # \frac{1}{2}, \dfrac12
    r"|-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|-?\.\d+"
)
# "18 dollars", "5 cm.", "$12 per hour": a number with only words around it (units, not maths).
_NUMBER_WITH_WORDS = re.compile(
    r"^(?:[A-Za-z][A-Za-z ]*[:=]?\s*)?\\?\$?\s*"
    r"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(?:[A-Za-z][A-Za-z ./]*)?\.?$"
)


def _balanced(text: str, open_at: int) -> str | None:
    """The content of the brace group opening at `text[open_at] == '{'`, or None if unclosed."""
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
    return None


def _boxed(text: str) -> str | None:
    start = max(text.rfind(command) for command in _BOX_COMMANDS)
    while start >= 0:
        command = next(c for c in _BOX_COMMANDS if text.startswith(c, start))
        i = start + len(command)
        if i < len(text) and text[i] == "{":
            content = _balanced(text, i)
            if content is not None:
                return content
        elif i < len(text) and text[i] == " ":  # "\boxed 5": the next whitespace-free token
            token = text[i + 1 :].split(maxsplit=1)
            if token:
                return token[0].rstrip("$.")
        start = max(text.rfind(c, 0, start) for c in _BOX_COMMANDS)
    return None


def _hash(text: str) -> str | None:
    at = text.rfind("####")
    if at < 0:
        return None
    line = text[at + 4 :].split("\n", 1)[0].strip()
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


def check_modes(modes) -> tuple[str, ...]:
    """Validates an extraction order; raises ValueError naming the bad mode and the valid ones."""
    modes = tuple(modes)
    if not modes:
        raise ValueError(f"answer modes are empty; choose from {', '.join(MODES)}")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"answer mode {mode!r} is unknown; valid: {', '.join(MODES)}")
    return modes


def extract(text: str, modes=MODES) -> str | None:
    """The final answer of `text` by the first of `modes` that finds one, cleaned; None if none
    does, the text has a NUL byte, or the answer is longer than `MAX_ANSWER_CHARS`."""
    if not isinstance(text, str) or "\x00" in text:
        return None
    for mode in check_modes(modes):
        found = _EXTRACTORS[mode](text)
        if found is not None:
            answer = clean(found)
            if not answer or len(answer) > MAX_ANSWER_CHARS:
                return None
            return answer
    return None
