"""Countdown with written search: depth-first traces with backtracking or direct solutions
(To Backtrack or Not to Backtrack, #207; How Much Backtracking is Enough?, #69).

Prompt "3,5,7,9>24=" asks for steps that combine all the given numbers, two at a time, into the
target. A step "a op b=c" replaces a and b by c (op in + - * /; every value stays in 1..99,
subtraction and division are written larger-first and division is exact). A completion is a
sequence of steps separated by ',', where ';' undoes the last step (a backtrack):

    direct:     "9-7=2,5*3=15,15+2=17"
    with search "9+7=16,16*5=80;16+5=21;;9-7=2,5*3=15,15+2=17"

The verifier replays the completion on a stack of states: every step must use numbers present in
the current state with correct arithmetic and every ';' must undo a step; the answer is correct
iff the final state is the single number equal to the target. `dfs_trace` writes such
completions from a depth-first search whose child order is random, cut to at most a given number
of dead ends (after which it abandons subtrees without a solution and follows one that has one).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

import numpy as np

from rljax.lm.tasks.base import Problem, Task, Verdict

NUM_NUMBERS = 4
MAX_NUMBER = 9  # given numbers are 1..MAX_NUMBER
MAX_VALUE = 99  # every intermediate value stays in 1..MAX_VALUE
NUM_LEVELS = 1
MAX_TRACE_CHARS = 64  # the longest trace `bounded_trace` writes (longer ones are drawn again)
_STEP = re.compile(r"(\d+)([-+*/])(\d+)=(\d+)")


def combine(a: int, b: int, op: str) -> int | None:
    """The value of `a op b` under the task's rules (a >= b), or None where not allowed."""
    if op == "+":
        c = a + b
    elif op == "*":
        c = a * b
    elif op == "-":
        c = a - b
    else:
        c = a // b if b > 1 and a % b == 0 else 0
    return c if 1 <= c <= MAX_VALUE else None


def children(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """Every (step text, next state) from a state (a sorted tuple), distinct steps only."""
    out, seen = [], set()
    for i in range(len(state)):
        for j in range(i + 1, len(state)):
            a, b = max(state[i], state[j]), min(state[i], state[j])
            rest = state[:i] + state[i + 1 : j] + state[j + 1 :]
            for op in "+-*/":
                c = combine(a, b, op)
                text = f"{a}{op}{b}={c}"
                if c is not None and text not in seen:
                    seen.add(text)
                    out.append((text, tuple(sorted((*rest, c)))))
    return out


def solvable(state: tuple[int, ...], target: int, memo: dict | None = None) -> bool:
    """Whether some sequence of steps from `state` ends in the single number `target`."""
    memo = {} if memo is None else memo
    if len(state) == 1:
        return state[0] == target
    if state not in memo:
        memo[state] = any(solvable(s, target, memo) for _, s in children(state))
    return memo[state]


def num_problems(num_numbers: int) -> int:
    """How many distinct prompts `generate` can draw with `num_numbers` numbers (every multiset
    of numbers 1..MAX_NUMBER with each two-digit value it can reach)."""
    memo: dict = {}

    def finals(state: tuple[int, ...]) -> set[int]:
        if len(state) == 1:
            return {state[0]}
        if state not in memo:
            memo[state] = set().union(*(finals(s) for _, s in children(state)))
        return memo[state]

    shown = itertools.combinations_with_replacement(range(1, MAX_NUMBER + 1), num_numbers)
    return sum(sum(v >= 10 for v in finals(s)) for s in shown)


def generate(
    rng: np.random.Generator, level: int = 1, *, num_numbers: int = NUM_NUMBERS
) -> Problem:
    """`num_numbers` numbers (2..NUM_NUMBERS) and a target reached by combining all of them at
    random."""
    if not 2 <= num_numbers <= NUM_NUMBERS:
        raise ValueError(f"num_numbers={num_numbers} is invalid; allowed: 2..{NUM_NUMBERS}")
    while True:
        numbers = tuple(sorted(int(n) for n in rng.integers(1, MAX_NUMBER + 1, num_numbers)))
        state = numbers
        while len(state) > 1:
            options = children(state)
            if not options:
                break
            state = options[int(rng.integers(len(options)))][1]
        if len(state) == 1 and state[0] >= 10:  # two-digit targets: no trivial ones
            info = ",".join(map(str, numbers)) + f">{state[0]}"
            answer = dfs_trace(numbers, state[0], rng, max_dead_ends=0)
            return Problem(prompt=info + "=", answer=answer, level=level, info=info)


def dfs_trace(
    numbers: tuple[int, ...], target: int, rng: np.random.Generator, *, max_dead_ends: int
) -> str:
    """A depth-first search for `target` with random child order, written as a completion.

    The search explores in random order until it has met `max_dead_ends` dead ends (leaves that
    miss the target); from then on it backs out of subtrees with no solution and enters one that
    has one, so it always ends at a solution. `max_dead_ends=0` writes the direct solution.
    """
    memo: dict = {}
    tokens: list[str] = []
    dead = [0]

    def search(state: tuple[int, ...]) -> bool:
        if len(state) == 1:
            if state[0] == target:
                return True
            dead[0] += 1
            return False
        options = children(state)
        order = [options[i] for i in rng.permutation(len(options))]
        for text, child in order:
            if dead[0] >= max_dead_ends and not solvable(child, target, memo):
                continue  # out of budget: skip what cannot succeed
            tokens.append(text)
            if search(child):
                return True
            tokens.append(";")
            if dead[0] >= max_dead_ends and not solvable(state, target, memo):
                return False  # back out at once
        return False

    found = search(tuple(sorted(numbers)))
    assert found, f"{numbers}>{target} has no solution"
    return _join(tokens)


def bounded_trace(
    numbers: tuple[int, ...],
    target: int,
    rng: np.random.Generator,
    *,
    max_dead_ends: int,
    max_chars: int = MAX_TRACE_CHARS,
) -> str:
    """`dfs_trace` no longer than `max_chars` (at most `MAX_TRACE_CHARS`): a longer one is drawn
    again (5 tries), then with one dead end fewer, down to the direct solution."""
    if not 1 <= max_chars <= MAX_TRACE_CHARS:
        raise ValueError(f"max_chars={max_chars} is invalid; allowed: 1..{MAX_TRACE_CHARS}")
    for budget in range(max_dead_ends, -1, -1):
        for _ in range(5):
            text = dfs_trace(numbers, target, rng, max_dead_ends=budget)
            if len(text) <= max_chars:
                return text
    raise AssertionError(f"no trace of {numbers}>{target} fits {max_chars} characters")


def _join(tokens: list[str]) -> str:
    out = ""
    for t in tokens:
        out += t if (t == ";" or not out or out.endswith(";")) else "," + t
    return out


def num_backtracks(text: str) -> int:
    """The number of ';' (undone steps) in a completion."""
    return text.count(";")


def replay(info: str, text: str) -> tuple[bool, bool]:
    """(every step and undo is legal, the final state is exactly the target) for a completion."""
    shown, target = info.split(">")
    stack = [Counter(int(n) for n in shown.split(","))]
    pos, last = 0, ""
    while pos < len(text):
        if text[pos] == ";":
            if len(stack) == 1:
                return False, False
            stack.pop()
            pos, last = pos + 1, ";"
            continue
        if text[pos] == ",":
            if last != "step" or pos + 1 == len(text):
                return False, False
            pos += 1
        elif last == "step":  # two steps must be separated
            return False, False
        m = _STEP.match(text, pos)
        if m is None:
            return False, False
        a, op, b, c = int(m[1]), m[2], int(m[3]), int(m[4])
        state = stack[-1]
        need = Counter([a, b])
        if a < b or any(state[n] < k for n, k in need.items()) or combine(a, b, op) != c:
            return False, False
        stack.append(state - need + Counter([c]))
        pos, last = m.end(), "step"
    final = stack[-1]
    return True, last == "step" and sum(final.values()) == 1 and final[int(target)] == 1


def verify(problem: Problem, text: str) -> Verdict:
    """Correct iff the completion is a legal search whose final state is the target alone."""
    legal, solved = replay(problem.info, text)
    return Verdict(correct=legal and solved, well_formed=legal)


TASK = Task(
    name="countdown_search",
    generate=generate,
    verify=verify,
    num_levels=NUM_LEVELS,
    max_prompt_chars=2 * NUM_NUMBERS + 3,
    max_answer_chars=MAX_TRACE_CHARS,
)
