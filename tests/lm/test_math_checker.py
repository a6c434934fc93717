"""The math answer checker: accepted / rejected answers in both layouts, hostile strings within
the deadline, the cache, agreement with math-verify's own `verify`, and the callback under vmap."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from math_verify import parse, verify

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, device_reward, math_answers, math_task
from rljax.lm.tasks.math_checker import Checker
from rljax.lm.tasks.math_data import LAYOUTS, parse_row


def gsm8k(answer: str) -> str:
    return f"She had some and bought more.\n#### {answer}"


def math_solution(answer: str) -> str:
    return f"Working it out, the result is $\\boxed{{{answer}}}$."


# (layout, reference solution, completion, must be accepted)
CASES = [
    # GSM8K layout: "#### n" references, completions in every common form.
    ("gsm8k", gsm8k("72"), "#### 72", True),
    ("gsm8k", gsm8k("72"), "She sold 48 + 24 = 72 clips.\n#### 72", True),
    ("gsm8k", gsm8k("72"), "The answer is 72.", True),
    ("gsm8k", gsm8k("72"), "So the total is $\\boxed{72}$.", True),
    ("gsm8k", gsm8k("72"), "72 clips", True),
    ("gsm8k", gsm8k("72"), "#### 72 clips", True),
    ("gsm8k", gsm8k("72"), "72.0", True),
    ("gsm8k", gsm8k("72"), "72.00", True),
    ("gsm8k", gsm8k("72"), "\\boxed{72 \\text{ clips}}", True),
    ("gsm8k", gsm8k("72"), "#### 70", False),
    ("gsm8k", gsm8k("72"), "The answer is 27.", False),
    ("gsm8k", gsm8k("72"), "48 + 24 = 72, then 72 - 2 = 70", False),
    ("gsm8k", gsm8k("72"), "I cannot solve this.", False),
    ("gsm8k", gsm8k("72"), "\\boxed{7.2}", False),
    ("gsm8k", gsm8k("1000"), "1,000", True),
    ("gsm8k", gsm8k("1000"), "#### 1,000", True),
    ("gsm8k", gsm8k("1000"), "It costs $1,000.", True),
    ("gsm8k", gsm8k("1000"), "\\boxed{1000}", True),
    ("gsm8k", gsm8k("1000"), "1,001", False),
    ("gsm8k", gsm8k("1000"), "100", False),
    ("gsm8k", gsm8k("1,000"), "1000", True),
    ("gsm8k", gsm8k("1,000"), "\\boxed{1{,}000}", True),
    ("gsm8k", gsm8k("18"), "She pays 18 dollars.", True),
    ("gsm8k", gsm8k("18"), "\\$18", True),
    ("gsm8k", gsm8k("18"), "#### $18", True),
    ("gsm8k", gsm8k("18"), "The answer is \\boxed{18} dollars per week.", True),
    ("gsm8k", gsm8k("18"), "\\boxed{18 dollars}", True),
    ("gsm8k", gsm8k("18"), "$81", False),
    ("gsm8k", gsm8k("18"), "\\boxed{-18}", False),
    ("gsm8k", gsm8k("-3"), "The temperature fell to -3 degrees.", True),
    ("gsm8k", gsm8k("-3"), "#### -3", True),
    ("gsm8k", gsm8k("-3"), "#### 3", False),
    ("gsm8k", gsm8k("0.5"), "1/2", True),
    ("gsm8k", gsm8k("0.5"), "\\frac{1}{2}", True),
    ("gsm8k", gsm8k("0.5"), "#### .5", True),
    ("gsm8k", gsm8k("0.5"), "#### 0.25", False),
    ("gsm8k", gsm8k("5"), "There are 5 apples left.", True),
    ("gsm8k", gsm8k("5"), "There are 5 apples and 6 pears, 11 fruit.", False),
    ("gsm8k", gsm8k("5"), "\\boxed{5} (not 6)", True),
    ("gsm8k", gsm8k("5"), "x = 5", True),
    ("gsm8k", gsm8k("5"), "\\boxed{x = 5}", True),
    ("gsm8k", gsm8k("5"), "5%", True),  # math-verify's convention: 5% and 5 are one answer
    ("gsm8k", gsm8k("5"), "6%", False),
    # MATH layout: \boxed{} references.
    ("math", math_solution("\\frac{1}{2}"), "0.5", True),
    ("math", math_solution("\\frac{1}{2}"), "1/2", True),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\dfrac12}", True),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\dfrac{1}{2}}", True),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\tfrac{1}{2}}", True),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\frac12}", True),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{0.5}", True),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\frac{2}{4}}", True),
    (
        "math",
        math_solution("\\frac{1}{2}"),
        "Thus the probability is $\\boxed{\\frac{1}{2}}$.",
        True,
    ),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\frac{1}{3}}", False),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{2}", False),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{0.25}", False),
    ("math", math_solution("\\frac{1}{2}"), "\\boxed{\\frac{1}{2}x}", False),
    ("math", math_solution("0.5"), "\\boxed{\\frac{1}{2}}", True),
    ("math", math_solution("[1, 2)"), "\\boxed{[1,2)}", True),
    ("math", math_solution("[1, 2)"), "The solution set is $\\boxed{[1, 2)}$.", True),
    ("math", math_solution("[1, 2)"), "\\boxed{(1,2)}", False),
    ("math", math_solution("[1, 2)"), "\\boxed{[1,2]}", False),
    ("math", math_solution("(-\\infty, 3]"), "\\boxed{(-\\infty,3]}", True),
    ("math", math_solution("(-\\infty, 3]"), "\\boxed{(-\\infty,3)}", False),
    ("math", math_solution("\\{1, 2, 3\\}"), "\\boxed{\\{3, 2, 1\\}}", True),
    ("math", math_solution("\\{1, 2, 3\\}"), "\\boxed{\\{1,2,3\\}}", True),
    ("math", math_solution("\\{1, 2, 3\\}"), "\\boxed{\\{1, 2\\}}", False),
    ("math", math_solution("1, 2"), "\\boxed{2, 1}", True),
    ("math", math_solution("1, 2"), "\\boxed{1, 3}", False),
    ("math", math_solution("2\\sqrt{2}"), "\\boxed{\\sqrt{8}}", True),
    ("math", math_solution("2\\sqrt{2}"), "\\boxed{2\\sqrt{3}}", False),
    ("math", math_solution("(x+1)^2"), "\\boxed{x^2+2x+1}", True),
    ("math", math_solution("(x+1)^2"), "\\boxed{(x-1)^2}", False),
    ("math", math_solution("\\frac{\\pi}{2}"), "\\boxed{\\pi/2}", True),
    ("math", math_solution("\\frac{\\pi}{2}"), "\\boxed{\\pi}", False),
    ("math", math_solution("\\text{(B)}"), "\\boxed{B}", True),
    ("math", math_solution("\\text{(B)}"), "\\boxed{C}", False),
    ("math", math_solution("5"), "The side is $\\boxed{5 \\text{ cm}}$.", True),
    ("math", math_solution("5"), "\\boxed{5}\\text{ units}", True),
    ("math", math_solution("5"), "\\boxed{6}", False),
    ("math", math_solution("-\\frac{3}{4}"), "\\boxed{-0.75}", True),
    ("math", math_solution("-\\frac{3}{4}"), "\\boxed{\\frac{-3}{4}}", True),
    ("math", math_solution("-\\frac{3}{4}"), "\\boxed{\\frac{3}{4}}", False),
    ("math", math_solution("3"), "We try \\boxed{2} first, then find \\boxed{3}.", True),
    ("math", math_solution("3"), "\\boxed{3} is wrong; the answer is \\boxed{4}.", False),
    ("math", math_solution("10"), "\\boxed{10\\%}", True),
    ("math", math_solution("30^\\circ"), "\\boxed{30}", True),
    ("math", math_solution("30^\\circ"), "\\boxed{60^\\circ}", False),
]

HOSTILE = [
    "\\boxed{10^{10^{10^{10}}}}",
    "\\boxed{9^{9^{9^{9^{9}}}}}",
    "\\boxed{" + "(" * 3000 + "1" + ")" * 3000 + "}",
    "\\boxed{" + "\\frac{1}{" * 300 + "2" + "}" * 300 + "}",
    "\\boxed{" + "{" * 100_000,
    "1" * 1_000_000,
    "\\boxed{" + "7" * 1_000_000 + "}",
    "The answer is " + "x " * 500_000 + "8",
    "#### 7\x00",
    "\\boxed{7}\x00",
    "\x00" * 1000,
    "\\boxed{" + "x^" * 5000 + "2}",
    "\\boxed{\\sum_{k=1}^{10^{12}} k^{k}}",
]


@pytest.fixture(scope="module")
def checker():
    # A generous deadline: the acceptance cases must not depend on the machine's load.
    with Checker(timeout_s=20.0, num_workers=2) as c:
        yield c


def _reference(layout: str, solution: str) -> str:
    fields = LAYOUTS[layout]
    row = {fields.question: "q", fields.solution: solution}
    if fields.level:
        row.update({fields.level: "Level 2", fields.kind: "Algebra"})
    return parse_row("case", row, fields).answer


def test_there_are_over_80_cases_from_both_layouts_accepting_and_rejecting():
    assert len(CASES) >= 80
    for layout in LAYOUTS:
        for expected in (True, False):
            assert sum(c[0] == layout and c[3] == expected for c in CASES) >= 10


@pytest.mark.timeout(600)
def test_verdicts_of_every_case(checker):
    refs = [_reference(layout, solution) for layout, solution, _, _ in CASES]
    answers = [math_answers.extract(text) for _, _, text, _ in CASES]
    verdicts = checker.check(list(zip(refs, answers, strict=True)))
    wrong = [
        (case[2], ref, answer, got)
        for case, ref, answer, got in zip(CASES, refs, answers, verdicts, strict=True)
        if got != case[3]
    ]
    assert not wrong, wrong
    assert checker.stats["timeouts"] == 0


@pytest.mark.timeout(600)
def test_verdicts_equal_math_verify_where_both_see_the_same_boxed_answer(checker):
    """Where the reference and the completion each box one answer, math-verify's own
    `parse` + `verify` (with its SIGALRM timeouts, on this main thread) judges the same strings
    as the checker, and the verdicts must agree."""
    overlap = [c for c in CASES if c[0] == "math" and c[2].count("\\boxed") == 1]
    assert len(overlap) >= 30
    refs = [_reference(layout, solution) for layout, solution, _, _ in overlap]
    ours = checker.check(
        [(r, math_answers.extract(c[2])) for r, c in zip(refs, overlap, strict=True)]
    )
    theirs = [bool(verify(parse(c[1]), parse(c[2]))) for c in overlap]
    assert ours == theirs, [c[2] for c, a, b in zip(overlap, ours, theirs, strict=True) if a != b]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_answers_are_wrong_within_the_time_limit(text):
    limit = 1.0
    with Checker(timeout_s=limit, num_workers=1) as c:
        c.check([("7", "7")])  # the worker is up and warm before the clock starts
        start = time.monotonic()
        verdict = c.check([("7", math_answers.extract(text))])
        elapsed = time.monotonic() - start
    assert verdict == [False]
    # The deadline plus the cost of killing a worker (and extracting from 1 MB of text) on a
    # machine shared by several jobs.
    assert elapsed < limit + 4.0, elapsed


@pytest.fixture(scope="module")
def strict_checker():
    with Checker(timeout_s=1.0, num_workers=1) as c:
        yield c


# Whole completions at a completion's size (64 KB) that held extraction for seconds before
# (2026-12-04: 810 characters of the first took 3.5 s, 6,000 `\boxed{` 5 s), and the HOSTILE
# answers inside completion text.
HOSTILE_TEXTS = [
    "\\boxed{a" + " " * 65536 + "!}",
    "#### a" + " " * 65536 + "!",
    "\\boxed{" * 9000,
    "\\boxed{" + "{" * 30000 + "}" * 30000 + "}",
    "1" * 65536,
    "####" * 16000,
    "\\boxed{" + "\\frac{1}{" * 7000,
    *(f"Let us see. {text} So that is it." for text in HOSTILE),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=range(len(HOSTILE_TEXTS)))
def test_the_reward_of_a_hostile_completion_is_known_within_the_deadline(strict_checker, text):
    """`judge` (what the reward callback calls): extraction and check of one completion within
    the deadline plus the cost of replacing a worker."""
    c = strict_checker
    c.check([(text[:8] + "w", text[:8] + "w")])  # a live, warm worker before the clock starts
    start = time.monotonic()
    correct, answers = c.judge(["7"], [text])
    elapsed = time.monotonic() - start
    assert correct == [False]
    assert elapsed < c.timeout_s + 2.0, elapsed


@pytest.mark.timeout(300)
def test_the_deadline_covers_extraction():
    """A text whose extraction alone takes over a second (millions of braces: linear, but long)
    is cut off at the deadline: no answer, a timeout counted, the call back well before
    extraction could have finished, the replacement worker judges the next completion, and the
    text sampled again costs no second timeout."""
    limit, slack = 0.1, 0.6
    braces = 1 << 21
    while True:  # as many braces as this machine needs for one second of extraction
        text = "{" * braces + "\\boxed{7}"
        start = time.monotonic()
        assert math_answers.extract(text) == "7"
        extraction_s = time.monotonic() - start
        if extraction_s > limit + slack + 0.4 or braces >= 1 << 26:
            break
        braces *= 2
    assert extraction_s > limit + slack + 0.4, extraction_s  # the bound below could fail
    with Checker(timeout_s=limit, num_workers=1) as c:
        c.check([("1", "1")])
        start = time.monotonic()
        assert c.judge(["7"], [text]) == ([False], [None])
        elapsed = time.monotonic() - start
        assert c.stats["timeouts"] == 1
        assert c.judge(["7", "7"], ["#### 7", "#### 8"]) == ([True, False], ["7", "8"])
        start = time.monotonic()  # the same text again: its (missing) answer is remembered
        assert c.judge(["7"], [text]) == ([False], [None])
        assert time.monotonic() - start < 0.5 and c.stats["timeouts"] == 1
    assert elapsed < limit + slack, (elapsed, extraction_s)


def test_judge_extracts_each_text_once_and_checks_each_pair_once():
    with Checker(timeout_s=10.0, num_workers=1) as c:
        refs = ["2", "2", "2", "3"]
        texts = ["#### 2", "#### 2", "so \\boxed{2}", "no answer"]
        assert c.judge(refs, texts, ("boxed", "hash")) == (
            [True, True, True, False], ["2", "2", "2", None]
        )  # fmt: skip
        assert c.stats == {"checked": 1, "cache_hits": 0, "timeouts": 0}  # ("2", "2") once
        assert c.judge(refs[:2], texts[1:3])[0] == [True, True]
        assert c.stats == {"checked": 1, "cache_hits": 2, "timeouts": 0}
        with pytest.raises(ValueError, match="answer mode 'first' is unknown"):
            c.judge(refs, texts, ("first",))
        with pytest.raises(ValueError, match="4 references for 3 texts"):
            c.judge(refs, texts[:3])


def test_extraction_refuses_nul_bytes_and_huge_answers():
    assert math_answers.extract("#### 7\x00") is None
    assert math_answers.extract("\\boxed{" + "7" * 300 + "}") is None
    start = time.monotonic()
    assert math_answers.extract("a " * 500_000 + "#### 12") == "12"
    assert time.monotonic() - start < 2.0


def test_cache_answers_repeats_without_the_workers():
    with Checker(timeout_s=10.0, num_workers=1) as c:
        assert c.check([("2", "2"), ("2", "3"), ("2", "2")]) == [True, False, True]
        assert c.stats == {"checked": 2, "cache_hits": 0, "timeouts": 0}
        assert c.check([("2", "3"), ("2", "2"), (None, "2"), ("2", None)]) == [
            False, True, False, False
        ]  # fmt: skip
        assert c.stats == {"checked": 2, "cache_hits": 2, "timeouts": 0}


def test_a_timed_out_answer_is_cached_as_wrong_and_the_worker_replaced():
    with Checker(timeout_s=0.5, num_workers=1) as c:
        c.check([("1", "1")])
        bomb = "9^{9^{9^{9^{9}}}}"
        assert c.check([("2", bomb), ("2", "2")]) == [False, True]
        assert c.stats["timeouts"] == 1
        start = time.monotonic()
        assert c.check([("2", bomb)]) == [False]
        assert time.monotonic() - start < 0.1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(timeout_s=0), "timeout_s=0"),
        (dict(num_workers=0), "num_workers=0"),
        (dict(cache_size=-1), "cache_size=-1"),
    ],
)
def test_bad_checker_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Checker(**kwargs)


@pytest.mark.timeout(300)
def test_reward_callback_under_vmap_and_jit_keeps_the_time_limit():
    """The device-reward callback with a population axis: every completion judged, the hostile
    ones wrong, and the whole call within (hostile answers / workers) deadlines plus slack."""
    tok = tokenizer.ByteTokenizer()
    problems = [Problem("q0", "7", 1), Problem("q1", "\\frac{1}{2}", 1)]
    table = jax.tree.map(
        jnp.asarray,
        device_reward.make_table(None, problems, tok, template=math_task.PLAIN, prompt_length=16),
    )
    texts = [
        ["#### 7", "\\boxed{0.5}", "\\boxed{9^{9^{9^{9^{9}}}}}", "8"],
        ["seven: 7", "1/3", "\\boxed{10^{10^{10^{10}}}}", "\\boxed{\\dfrac12}"],
    ]
    rows = np.asarray([0, 1, 0, 1], np.int32)
    width = 32
    tokens = np.zeros((2, 4, width), np.int32)
    for v, row in enumerate(texts):
        for r, text in enumerate(row):
            ids = [*tok.encode(text), tok.eos_id]
            tokens[v, r, : len(ids)] = ids
    tokens[1, 3] = 5  # a completion without EOS stays unrewarded even if correct
    tokens[1, 3, : len(tok.encode("\\boxed{\\dfrac12}"))] = tok.encode("\\boxed{\\dfrac12}")
    limit = 1.0
    with Checker(timeout_s=limit, num_workers=2) as c:
        c.check([("1", "1"), ("2", "2")])
        host = math_task.math_scorer(c, problems, tok, format_weight=0.1)
        score = jax.jit(
            jax.vmap(
                lambda t: device_reward.score(
                    "host", t, table, jnp.asarray(rows), format_weight=0.1, host=host
                )
            )
        )
        start = time.monotonic()
        reward, correct = jax.device_get(score(tokens))
        elapsed = time.monotonic() - start
        assert c.stats["timeouts"] == 2
    np.testing.assert_array_equal(correct, [[1, 1, 0, 0], [1, 0, 0, 0]])
    np.testing.assert_allclose(reward, [[1.1, 1.1, 0.1, 0.1], [1.1, 0.1, 0.1, 0.0]], rtol=1e-6)
    assert elapsed < 2 * limit + 10.0, elapsed  # plus compiling the small program
