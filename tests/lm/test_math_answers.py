"""Answer extraction: the same answers as a brute-force reference on random texts, the numbers a
`####` reference may hold, and linear time on the worst texts found (each would take seconds to
hours with a backtracking pattern or a rescan per `\\boxed{`)."""

import random
import re
import time

import pytest

from rljax.lm.tasks import math_answers

# The brute-force reference: every `\boxed{` from the last one back, each group's braces counted
# from its own `{` (quadratic), and the cleaning patterns with backtracking quantifiers
# (super-linear). Right on short texts, which is all it is given here.
_REF_WORDS = re.compile(
    r"^(?:[A-Za-z][A-Za-z ]*[:=]?\s*)?\\?\$?\s*"
    r"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(?:[A-Za-z][A-Za-z ./]*)?\.?$"
)
_REF_NUMBER = re.compile(
    r"-?\\[dt]?frac(?:\{-?\d+\}\{\d+\}|\d\d)"
    r"|-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|-?\.\d+"
)


def _ref_group(text, at):
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[at + 1 : i]
    return None


def _ref_boxed(text):
    starts = [i for i in range(len(text)) if text.startswith(("\\boxed", "\\fbox"), i)]
    for start in reversed(starts):
        i = start + (6 if text.startswith("\\boxed", start) else 5)
        if text[i : i + 1] == "{":
            if (content := _ref_group(text, i)) is not None:
                return content
        elif text[i : i + 1] == " " and (token := text[i + 1 :].split(maxsplit=1)):
            return token[0].rstrip("$.")
    return None


def _ref_hash(text):
    at = text.rfind("####")
    return (text[at + 4 :].split("\n", 1)[0].strip() or None) if at >= 0 else None


def _ref_last_number(text):
    numbers = _REF_NUMBER.findall(text)
    return numbers[-1] if numbers else None


def _ref_clean(answer):
    answer = answer.strip().strip("$").strip()
    if answer.endswith(".") and not answer[:-1].rstrip().endswith("."):
        answer = answer[:-1].rstrip()
    words = _REF_WORDS.match(answer)
    return words.group(1) if words and not answer.startswith("\\") else answer


def _ref_extract(text, modes):
    if "\x00" in text:
        return None
    finders = {"boxed": _ref_boxed, "hash": _ref_hash, "last_number": _ref_last_number}
    for mode in modes:
        if (found := finders[mode](text)) is not None:
            answer = _ref_clean(found)
            return answer if answer and len(answer) <= math_answers.MAX_ANSWER_CHARS else None
    return None


PIECES = [
    "\\boxed", "\\fbox", "{", "}", " ", "  ", "\t", "\n", "\u00a0", "$", "\\$", ".", ",", ":",
    "=", "-", "/", "#### ", "####", "1", "23", ",000", "a", "cm", "x", "\\", "\\frac", "\\dfrac",
]  # fmt: skip
MODE_ORDERS = [math_answers.MODES, ("hash",), ("boxed",), ("last_number",), ("hash", "boxed")]


def test_extraction_equals_the_brute_force_reference_on_random_texts():
    rng = random.Random(52)
    texts = ["".join(rng.choices(PIECES, k=rng.randint(0, 14))) for _ in range(6000)]
    found = 0
    for text in texts:
        for modes in MODE_ORDERS:
            want = _ref_extract(text, modes)
            assert math_answers.extract(text, modes) == want, (text, modes)
            found += want is not None
        assert math_answers.clean(text) == _ref_clean(text), text
    assert found > 10_000  # the texts exercise every mode, not only "no answer"


@pytest.mark.parametrize(
    "text, found",
    [
        ("#### 72", ("hash", "72")),
        ("#### eighteen dollars", ("hash", "eighteen dollars")),
        ("#### $", ("hash", "")),
        ("\\boxed{" + "7" * 300 + "}", ("boxed", "7" * 300)),
        ("no answer here", None),
        ("#### 7\x00", None),
    ],
)
def test_find_names_the_mode_and_keeps_what_extract_refuses(text, found):
    assert math_answers.find(text, ("boxed", "hash")) == found
    expected = found[1] if found and 0 < len(found[1]) <= 256 else None
    assert math_answers.extract(text, ("boxed", "hash")) == expected


@pytest.mark.parametrize(
    "answer, number",
    [
        ("72", True), ("-3", True), ("1,000", True), ("0.5", True), (".5", True), ("1/2", True),
        ("\\frac{1}{2}", True), ("\\dfrac12", True), ("seventy-two", False), ("5%", False),
        ("2x+1", False), ("1,00", False), ("3 and 4", False), ("", False),
    ],
)  # fmt: skip
def test_is_number(answer, number):
    assert math_answers.is_number(answer) is number


# The worst texts found, ~0.5 MB each: a run of spaces between words (three space-eating
# quantifiers in the cleaning pattern: cubic), unclosed `\boxed{` (a brace count from each:
# quadratic), deep and unbalanced braces, digit and comma runs, `####` spam, \frac chains,
# `\boxed ` before whitespace. 810 characters of the first took 3.5 s before (2026-12-04).
N = 1 << 19
WORST = {
    "spaces in a boxed answer": "\\boxed{a" + " " * N + "!}",
    "spaces after ####": "#### a" + " " * N + "!",
    "words and spaces after ####": "#### " + "a " * (N // 2) + "5 x!",
    "spaces before a number": "#### x" + " " * N + "5",
    "unclosed boxed": "\\boxed{" * (N // 7),
    "unclosed boxed with text": "\\boxed{x " * (N // 9),
    "deep braces": "\\boxed{" + "{" * (N // 2) + "}" * (N // 2) + "}",
    "unbalanced braces": "}" * (N // 2) + "\\boxed{" + "{" * (N // 2),
    "boxed before spaces": "\\boxed " + " " * N,
    "digits": "1" * N,
    "comma groups": "1,000" * (N // 5),
    "commas": "1," * (N // 2),
    "hash spam": "####" * (N // 4),
    "hash lines": "#### \n" * (N // 6),
    "frac chain": "\\frac{1}{" * (N // 9),
    "dfrac digits": "\\dfrac{-" + "1" * N,
}


@pytest.mark.parametrize("name", list(WORST))
def test_extraction_of_the_worst_texts_is_linear(name):
    text = WORST[name]
    start = time.perf_counter()
    for modes in MODE_ORDERS:
        math_answers.extract(text, modes)
    elapsed = time.perf_counter() - start
    # Linear: 0.01-0.5 s per MB per mode here; a super-linear scan takes minutes to hours.
    assert elapsed < 4.0, f"{name}: {elapsed:.2f} s for {len(text):,} characters"
