"""The two from-scratch tasks: string-function composition (#81) and Countdown with written
search (#207). Hand-computed values, verifier agreement with the generators, and the search
invariants (every DFS trace is a legal search ending at a solution)."""

import numpy as np
import pytest

from rljax.lm.tasks import compose
from rljax.lm.tasks import countdown_search as cs


def test_compose_applies_right_to_left():
    assert compose.apply("D", "abcd") == "bcde"
    assert compose.apply("B", "bcde") == "cdeb"
    assert compose.apply("BD", "abcd") == "cdeb"  # B(D(abcd))
    assert compose.apply("DB", "abcd") == "cdeb"  # D(B(abcd)) = D(bcda)
    assert compose.apply("A", "abcd") == "dcba"
    assert compose.apply("FGH", "dcba") == "abcd"  # sort(swap12(swap34(dcba)))
    assert compose.apply("E", "ahbg") == "hgaf"  # a wraps to h
    assert compose.apply("D", "hhab") == "aabc"


def test_compose_trace_and_verifier():
    p = compose.make("ABD", "abcd")
    assert p.prompt == "ABD:abcd=" and p.level == 3 and p.info == "source"
    assert p.answer == "AB:bcde=A:cdeb=bedc"
    assert compose.verify(p, p.answer).correct
    assert compose.verify(p, "bedc").correct  # only the final answer is read
    assert not compose.verify(p, "AB:bcde=A:cdeb=bedd").correct
    assert not compose.verify(p, "bed").well_formed
    assert compose.make("FG", "abcd").info == "target"
    assert compose.make("AF", "abcd").info == "mixed"


def test_compose_generator_levels_and_pools():
    rng = np.random.default_rng(0)
    for level in range(1, compose.NUM_LEVELS + 1):
        for _ in range(50):
            p = compose.generate(rng, level)
            names, word = compose.parse(p.prompt)
            assert len(names) == level and len(word) == compose.WORD_LEN
            if level > 1:
                assert set(names) <= set(compose.SOURCE)  # targets are never composed
            assert compose.final_answer(p.answer) == compose.apply(names, word)
            assert compose.verify(p, p.answer).correct
            assert len(p.prompt) <= compose.TASK.max_prompt_chars
            assert len(p.answer) <= compose.TASK.max_answer_chars


def test_countdown_replay_by_hand():
    info = "3,5,7,9>17"
    p = cs.Problem(prompt=info + "=", answer="", level=1, info=info)
    assert cs.verify(p, "9-7=2,5*3=15,15+2=17").correct
    # a search: two dead ends, backtrack twice, then the solution
    assert cs.verify(p, "9+7=16,16*5=80;16+5=21;;9-7=2,5*3=15,15+2=17").correct
    assert not cs.verify(p, "9-7=2,5*3=15").correct  # numbers left over
    assert not cs.verify(p, "9-7=2,5*3=15,15+2=17;").correct  # ends undone
    assert not cs.verify(p, "9-7=2,9*3=27").well_formed  # 9 already used
    assert not cs.verify(p, "9-7=3").well_formed  # wrong arithmetic
    assert not cs.verify(p, ";9-7=2").well_formed  # nothing to undo
    assert not cs.verify(p, "7-9=2").well_formed  # written larger-first
    assert not cs.verify(p, "9-7=2,,5*3=15").well_formed


@pytest.mark.parametrize("dead_ends", [0, 1, 3])
def test_dfs_traces_are_legal_searches_ending_at_a_solution(dead_ends):
    rng = np.random.default_rng(dead_ends)
    lengths, backtracks = [], []
    for _ in range(60):
        p = cs.generate(rng)
        shown, target = p.info.split(">")
        numbers = tuple(int(n) for n in shown.split(","))
        text = cs.bounded_trace(numbers, int(target), rng, max_dead_ends=dead_ends)
        assert cs.replay(p.info, text) == (True, True), text
        assert len(text) <= cs.MAX_TRACE_CHARS
        # the steps kept after every undo form the solution: exactly NUM_NUMBERS - 1 of them
        kept = []
        for token in text.replace(";", ",;,").split(","):
            if token == ";":
                kept.pop()
            elif token:
                kept.append(token)
        assert len(kept) == cs.NUM_NUMBERS - 1
        lengths.append(len(text))
        backtracks.append(cs.num_backtracks(text))
    if dead_ends == 0:
        assert max(backtracks) == 0  # the direct solution never backtracks
    else:
        assert np.mean(backtracks) > 1.0


def test_generated_problems_are_solvable_with_two_digit_targets():
    rng = np.random.default_rng(1)
    for _ in range(30):
        p = cs.generate(rng)
        shown, target = p.info.split(">")
        numbers = tuple(sorted(int(n) for n in shown.split(",")))
        assert 10 <= int(target) <= cs.MAX_VALUE
        assert cs.solvable(numbers, int(target))
        assert cs.verify(p, p.answer).correct


@pytest.mark.parametrize("num_numbers", [2, 3])
def test_fewer_numbers_and_shorter_traces(num_numbers):
    rng = np.random.default_rng(num_numbers)
    prompts = set()
    for _ in range(40):
        p = cs.generate(rng, num_numbers=num_numbers)
        shown, target = p.info.split(">")
        numbers = tuple(int(n) for n in shown.split(","))
        assert len(numbers) == num_numbers and 10 <= int(target) <= cs.MAX_VALUE
        assert cs.verify(p, p.answer).correct
        text = cs.bounded_trace(numbers, int(target), rng, max_dead_ends=3, max_chars=24)
        assert len(text) <= 24 and cs.replay(p.info, text) == (True, True)
        prompts.add(p.prompt)
    assert len(prompts) <= cs.num_problems(num_numbers)
    with pytest.raises(ValueError, match="num_numbers=5 is invalid; allowed: 2..4"):
        cs.generate(rng, num_numbers=5)
    with pytest.raises(ValueError, match="max_chars=65 is invalid; allowed: 1..64"):
        cs.bounded_trace(numbers, int(target), rng, max_dead_ends=0, max_chars=65)


def test_num_problems_counts_every_prompt_generate_can_draw():
    assert cs.num_problems(2) == 57  # e.g. 9*9=81, 9+1=10: each two-digit value two of 1..9 reach
    rng = np.random.default_rng(0)
    seen = {cs.generate(rng, num_numbers=2).prompt for _ in range(3000)}
    assert len(seen) == cs.num_problems(2)  # the draw reaches all of them, and no more
