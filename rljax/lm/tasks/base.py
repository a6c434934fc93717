"""The task interface: a problem generator, a verifier and the reward built from its verdict.

A task is data, not a class hierarchy: a `Task` tuple of plain functions. Every verifier takes the
model's decoded answer text and returns a `Verdict`; it parses the text with a small grammar
(`grammar.py`), never evaluates it, and never raises: malformed output is simply wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class Problem(NamedTuple):
    """One problem. `info` carries task data the verifier needs beyond the reference answer."""

    prompt: str  # what the model is conditioned on, e.g. "3+4*2="
    answer: str  # one reference answer (there may be others, e.g. in Countdown)
    level: int  # difficulty level, 1 = easiest
    info: str = ""  # e.g. Countdown's "3,7,12>45"


class Verdict(NamedTuple):
    """A verifier's judgement of one answer."""

    correct: bool  # the answer solves the problem
    well_formed: bool  # the answer parses under the task's answer grammar


class Task(NamedTuple):
    """A verifiable task: how to make problems and how to check answers."""

    name: str
    generate: Callable[[np.random.Generator, int], Problem]  # (rng, level) -> Problem
    verify: Callable[[Problem, str], Verdict]  # (problem, answer text) -> Verdict
    num_levels: int  # levels are 1..num_levels
    max_prompt_chars: int  # upper bound on len(prompt) over all levels
    max_answer_chars: int  # upper bound on a reference answer's length (or demonstration's)
    # A multi-turn task's tool-using demonstration: problem -> [(action, observation), ...]
    # (rljax.lm.agentic); None for single-turn tasks.
    demonstrate: Callable[[Problem], list[tuple[str, str]]] | None = None


def safe_verify(task: Task, problem: Problem, text: str) -> Verdict:
    """Runs a verifier, mapping any non-string input or unexpected exception to a wrong answer."""
    if not isinstance(text, str):
        return Verdict(False, False)
    try:
        return task.verify(problem, text)
    except Exception:  # noqa: BLE001 - a verifier bug must cost reward, never crash training
        return Verdict(False, False)


def reward(verdict: Verdict, finished: bool, *, format_weight: float) -> float:
    """Scalar reward: 1[correct] + format_weight * 1[well formed]; 0 if the answer never ended.

    Args:
      verdict: the verifier's judgement.
      finished: whether the model emitted the end-of-answer token within its budget.
      format_weight: weight of the optional format reward (0 disables it).

    Returns:
      The reward, a Python float in [0, 1 + format_weight].
    """
    if not finished:
        return 0.0
    return float(verdict.correct) + format_weight * float(verdict.well_formed)


def make_split(task: Task, *, num_per_level: int, seed: int, exclude=frozenset()) -> list[Problem]:
    """Generates `num_per_level` distinct problems per level, skipping prompts in `exclude`.

    Deterministic in `seed`. Gives up on a level after 50x attempts (small levels have few
    distinct problems), so a split may hold fewer problems than asked for.
    """
    rng = np.random.default_rng(seed)
    problems: list[Problem] = []
    for level in range(1, task.num_levels + 1):
        seen: set[str] = set()
        for _ in range(50 * num_per_level):
            if len(seen) == num_per_level:
                break
            problem = task.generate(rng, level)
            if problem.prompt in seen or problem.prompt in exclude:
                continue
            seen.add(problem.prompt)
            problems.append(problem)
    return problems


def train_test_split(task: Task, *, num_train_per_level: int, num_test_per_level: int, seed: int):
    """Disjoint train/test problem lists: test first (fixed), train excludes every test prompt."""
    test = make_split(task, num_per_level=num_test_per_level, seed=seed + 1)
    exclude = frozenset(p.prompt for p in test)
    train = make_split(task, num_per_level=num_train_per_level, seed=seed, exclude=exclude)
    return train, test
