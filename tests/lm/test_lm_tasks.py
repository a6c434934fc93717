"""Tasks and verifiers: reference answers pass, adversarial strings earn zero and never crash."""

import builtins

import numpy as np
import pytest

from rljax.lm.model import tokenizer
from rljax.lm.tasks import TASKS, Problem, reward, safe_verify, train_test_split
from rljax.lm.tasks.grammar import parse_expression, parse_int

ADVERSARIAL = [
    "",
    " ",
    "\x00",
    "1" * 10_000,
    "(" * 500 + "1" + ")" * 500,
    "__import__('os')",
    "eval('1+1')",
    "1e9",
    "0x10",
    "1_000",
    "١٢",
    "+-1",
    "--1",
    "1/0",
    "9999*9999*9999*9999",
    "1+",
    "()",
    ")(",
    "1 2",
    "NaN",
    "inf",
    "-",
    "2**1000",
    "lambda:1",
    "None",
    "\n12",
    "abc\x00",
    "ÄÖÜ",
    "99999999999999999999",
    "1;import os",
    "12\n",
]


@pytest.fixture
def no_eval(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("a verifier called eval/exec")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_reference_answers_are_correct_and_tokenizable(name):
    task = TASKS[name]
    rng = np.random.default_rng(0)
    for level in range(1, task.num_levels + 1):
        for _ in range(200):
            p = task.generate(rng, level)
            assert p.level == level
            assert len(p.prompt) <= task.max_prompt_chars
            assert len(p.answer) <= task.max_answer_chars
            assert safe_verify(task, p, p.answer) == (True, True)
            assert tokenizer.decode([*tokenizer.encode(p.answer), tokenizer.EOS]) == (
                p.answer,
                True,
            )


@pytest.mark.parametrize("name", sorted(TASKS))
def test_adversarial_strings_get_zero_reward(name, no_eval):
    task = TASKS[name]
    problem = task.generate(np.random.default_rng(1), task.num_levels)
    for text in ADVERSARIAL:
        verdict = safe_verify(task, problem, text)
        assert not verdict.correct, text
        assert reward(verdict, True, format_weight=0.0) == 0.0
    assert safe_verify(task, problem, None) == (False, False)  # non-string input
    # An unfinished answer earns nothing even if its text is right.
    assert reward(safe_verify(task, problem, problem.answer), False, format_weight=0.5) == 0.0
    assert reward(safe_verify(task, problem, problem.answer), True, format_weight=0.5) == 1.5


def test_grammar_by_hand(no_eval):
    assert parse_expression("3+4*2") == (11, (3, 4, 2))
    assert parse_expression("(3+4)*2").value == 14
    assert parse_expression("12/4-1").value == 2
    assert parse_expression("7/2") is None  # inexact division is malformed
    assert parse_expression("2*(3") is None
    assert parse_expression("(" * 9 + "1" + ")" * 9) is None  # too deep
    assert parse_expression("12345") is None  # literal too long
    assert parse_int("-14") == -14 and parse_int("1.0") is None and parse_int("") is None


def test_countdown_checks_number_usage():
    task = TASKS["countdown"]
    p = Problem(prompt="3,7,12>45=", answer="12*3+7+", level=2, info="3,7,12>45")
    assert safe_verify(task, p, "12*3+7").correct is False  # = 43
    assert safe_verify(task, p, "(12-7)*3*3").correct is False  # 3 used twice
    p = Problem(prompt="3,7,12>43=", answer="12*3+7", level=2, info="3,7,12>43")
    assert safe_verify(task, p, "3*12+7") == (True, True)
    assert safe_verify(task, p, "43") == (False, True)  # not a given number


def test_splits_are_disjoint_and_deterministic():
    task = TASKS["arithmetic"]
    train, test = train_test_split(task, num_train_per_level=50, num_test_per_level=20, seed=3)
    assert not {p.prompt for p in train} & {p.prompt for p in test}
    again, _ = train_test_split(task, num_train_per_level=50, num_test_per_level=20, seed=3)
    assert train == again
    assert {p.level for p in test} == set(range(1, task.num_levels + 1))


def test_tfds_builder_round_trip(tmp_path):
    from rljax.lm.tasks.builders import NUM_TEST_PER_LEVEL, load_problems

    test = load_problems("equation", "test", str(tmp_path))
    assert len(test) == NUM_TEST_PER_LEVEL * TASKS["equation"].num_levels
    assert all(safe_verify(TASKS["equation"], p, p.answer).correct for p in test)
    train = load_problems("equation", "train", str(tmp_path))
    assert not {p.prompt for p in train} & {p.prompt for p in test}
    with pytest.raises(ValueError, match="task='nope'"):
        load_problems("nope", "test", str(tmp_path))
