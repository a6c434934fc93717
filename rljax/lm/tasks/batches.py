"""Problems -> fixed-shape token batches (the `[B, P]` prompt / `[B, A]` completion layout)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, Task


class SeqBatch(NamedTuple):
    """Prompts `[B, P]` (left-padded) and completions `[B, A]` (right-padded), with 0/1 masks."""

    prompt_tokens: np.ndarray
    prompt_mask: np.ndarray
    completion_tokens: np.ndarray
    completion_mask: np.ndarray


def prompt_length(task: Task) -> int:
    """P: the longest prompt plus BOS (a bound for byte-level BPE too: a merge only shortens)."""
    return task.max_prompt_chars + 1


def completion_length(task: Task) -> int:
    """A: the longest reference answer plus EOS, plus 2 tokens of slack for wrong answers."""
    return task.max_answer_chars + 3


def encode_prompts(
    task: Task, problems: list[Problem], tok=tokenizer.CHAR
) -> tuple[np.ndarray, np.ndarray]:
    """Prompt tokens and mask `[N, P]` (`tok`: `tokenizer.CHAR` or an `HFTokenizer`)."""
    return tok.encode_prompts([p.prompt for p in problems], prompt_length(task))


def encode_problems(task: Task, problems: list[Problem], tok=tokenizer.CHAR) -> SeqBatch:
    """Prompts with their reference answers as completions: the SFT batch."""
    prompt_tokens, prompt_mask = encode_prompts(task, problems, tok)
    answers = [p.answer for p in problems]
    completion_tokens, completion_mask = tok.encode_completions(answers, completion_length(task))
    return SeqBatch(prompt_tokens, prompt_mask, completion_tokens, completion_mask)


def spread(problems: list, count: int) -> list:
    """`count` problems evenly spaced over a level-sorted list, so every level is represented."""
    picks = np.linspace(0, len(problems) - 1, min(count, len(problems)))
    return [problems[int(round(i))] for i in picks]
