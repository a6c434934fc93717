"""rljax.lm.tasks.formats: three trace formats of one arithmetic problem, a surface classifier
and a final-answer verifier that treats them alike."""

import numpy as np
import pytest

from rljax.lm.tasks import arithmetic, formats, make_split
from rljax.lm.tasks.base import Problem, safe_verify


def _problem(prompt: str) -> Problem:
    return Problem(prompt=prompt, answer="", level=(len(prompt) - 1) // 2)


def test_hand_written_traces():
    p = "3+4*2-1="
    assert formats.trace(p, "math") == "3+8-1=11-1=10"
    assert formats.trace(p, "code") == "a=4*2=8;b=3+a=11;c=b-1=10"
    assert formats.trace(p, "words") == "4times2is8,3plus8is11,11minus1is10"
    assert formats.trace("3-8=", "words") == "3minus8is-5"
    assert formats.trace("3-8=", "math") == "-5"
    # a product of two earlier results names both variables
    assert formats.trace("2*3+4*5=", "code") == "a=2*3=6;b=4*5=20;c=a+b=26"


def test_math_format_is_the_arithmetic_task_trace():
    rng = np.random.default_rng(0)
    for level in (1, 2, 3):
        for _ in range(300):
            p = arithmetic.generate(rng, level)
            assert formats.trace(p.prompt, "math") == p.answer


def test_every_format_verifies_classifies_and_fits():
    rng = np.random.default_rng(1)
    longest = 0
    for level in (1, 2, 3):
        for _ in range(2000):
            p = formats.generate(rng, level)
            for fmt in formats.FORMATS:
                text = formats.trace(p.prompt, fmt)
                longest = max(longest, len(text))
                assert formats.classify(text) == fmt, (p.prompt, fmt, text)
                assert formats.verify(p, text) == (True, True), (p.prompt, fmt, text)
    assert longest <= formats.TASK.max_answer_chars
    worst = formats.trace("0-9*9*9=", "words")  # 9times9is81,81times9is729,0minus729is-729
    assert len(worst) == formats.TASK.max_answer_chars  # the bound is tight


def test_verifier_reads_only_the_final_answer():
    p = _problem("3+4*2=")
    assert formats.verify(p, "3+8=11").correct
    assert formats.verify(p, "a=4*2=9;b=3+a=11").correct  # a wrong step, the right end
    assert formats.verify(p, "11").correct
    assert not formats.verify(p, "3+8=12").correct
    assert not formats.verify(p, "4times2is8,3plus8is11,").well_formed
    assert not formats.verify(p, "").well_formed
    assert formats.verify(_problem("3-8="), "3minus8is-5").correct
    assert safe_verify(formats.TASK, p, None) == (False, False)


def test_classifier_keeps_a_corrupted_trace_in_its_format():
    from rljax.agents.sft import corrupt

    rng = np.random.default_rng(2)
    for _ in range(500):
        p = formats.generate(rng, int(rng.integers(1, 4)))
        for fmt in formats.FORMATS:
            text = corrupt(formats.trace(p.prompt, fmt), rng)
            if fmt == "math" and not any(c.isdigit() for c in text):
                continue  # pragma: no cover - a one-digit answer always keeps a digit
            assert formats.classify(text) == fmt, (fmt, text)
    assert formats.classify("") == formats.OTHER
    assert formats.classify("abc") == formats.OTHER


@pytest.mark.parametrize(
    "shares",
    [{"math": 1 / 3, "code": 1 / 3, "words": 1 / 3}, {"math": 0.5, "code": 0.3, "words": 0.2},
     {"code": 1.0}],
)  # fmt: skip
def test_mixture_has_the_configured_shares(shares):
    problems = make_split(formats.TASK, num_per_level=200, seed=3)
    mixed = formats.mixture(problems, shares, seed=4)
    assert [p.prompt for p in mixed] == [p.prompt for p in problems]
    n = len(mixed)
    for fmt in formats.FORMATS:
        count = sum(p.info == fmt for p in mixed)
        assert abs(count - shares.get(fmt, 0.0) * n) < 1.0, fmt
    for p in mixed:
        assert formats.classify(p.answer) == p.info
        assert p.answer == formats.trace(p.prompt, p.info)
    # formats are spread over levels, not assigned by position
    if len(shares) == 3:
        for level in (1, 2, 3):
            here = [p.info for p in mixed if p.level == level]
            assert len(set(here)) == 3


def test_bad_shares_are_named():
    with pytest.raises(ValueError, match="'latex' is unknown"):
        formats.mixture([], {"latex": 1.0}, seed=0)
    with pytest.raises(ValueError, match="sum to 0.9000"):
        formats.mixture([], {"math": 0.5, "code": 0.4}, seed=0)
    with pytest.raises(ValueError, match="share of math=1.5"):
        formats.mixture([], {"math": 1.5, "code": -0.5}, seed=0)
    with pytest.raises(ValueError, match="fmt='latex'"):
        formats.trace("1+2=", "latex")
