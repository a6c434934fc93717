"""Verifiable tasks: generators, verifiers and their tensorflow-datasets builders."""

from rljax.lm.tasks import arithmetic, calculator, countdown, equation, guess, strings
from rljax.lm.tasks.base import (
    Problem,
    Task,
    Verdict,
    make_split,
    reward,
    safe_verify,
    train_test_split,
)

# The one place task names become tasks (used by configs and entry points).
TASKS = {
    "arithmetic": arithmetic.TASK,
    "countdown": countdown.TASK,
    "strings": strings.TASK,
    "equation": equation.TASK,
    "calculator": calculator.TASK,
    "guess": guess.TASK,
}

__all__ = [
    "TASKS",
    "Problem",
    "Task",
    "Verdict",
    "make_split",
    "reward",
    "safe_verify",
    "train_test_split",
]
