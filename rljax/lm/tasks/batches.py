"""Problems -> fixed-shape token batches (the `[B, P]` prompt / `[B, A]` completion layout).

Every batch is made by `rljax.lm.model.tokenizer.encode_prompts` / `encode_completions`, for the
toy tasks and math alike; what a toy task adds is its lengths (`prompt_length`,
`completion_length`, bounds from its character counts) and its prompts' template (`PLAIN`: BOS and
the problem's text). Math's lengths and template come from its run config.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, Task


class SeqBatch(NamedTuple):
    """Prompts `[B, P]` (left-padded) and completions `[B, A]` (right-padded), with 0/1 masks;
    `loss_mask [B, A]` the completion tokens a loss trains (None: all real ones; demonstrations
    of tool use leave the tools' answers out)."""

    prompt_tokens: np.ndarray
    prompt_mask: np.ndarray
    completion_tokens: np.ndarray
    completion_mask: np.ndarray
    loss_mask: np.ndarray | None = None


def prompt_length(task: Task) -> int:
    """P: the longest prompt plus BOS (a bound for byte-level BPE too: a merge only shortens)."""
    return task.max_prompt_chars + 1


def completion_length(task: Task) -> int:
    """A: the longest reference answer plus EOS, plus 2 tokens of slack for wrong answers."""
    return task.max_answer_chars + 3


def encode_prompts(
    task: Task, problems: list[Problem], tok=tokenizer.CHAR
) -> tuple[np.ndarray, np.ndarray]:
    """A toy task's prompt tokens and mask `[N, P]`: `tokenizer.encode_prompts` of the prompts
    at `prompt_length(task)` (`tok`: `tokenizer.CHAR` or an `HFTokenizer`)."""
    return tokenizer.encode_prompts([p.prompt for p in problems], prompt_length(task), tok)


def encode_problems(task: Task, problems: list[Problem], tok=tokenizer.CHAR) -> SeqBatch:
    """A toy task's prompts with their reference answers as completions: the SFT batch."""
    prompt_tokens, prompt_mask = encode_prompts(task, problems, tok)
    answers = [p.answer for p in problems]
    completion_tokens, completion_mask = tokenizer.encode_completions(
        answers, completion_length(task), tok
    )
    return SeqBatch(prompt_tokens, prompt_mask, completion_tokens, completion_mask)


def encode_demonstrations(
    task: Task, problems: list[Problem], demo: np.ndarray, tok=tokenizer.CHAR
) -> SeqBatch:
    """`encode_problems` where `demo[i]` is set: problem i's completion is its multi-turn
    demonstration (`task.demonstrate`), actions and observations one after another (the text a
    multi-turn episode reads once its unused slots are skipped), with `loss_mask` 0 on the
    observations; elsewhere the reference answer, all trained."""
    prompt_tokens, prompt_mask = encode_prompts(task, problems, tok)
    length = completion_length(task)
    tokens = np.full((len(problems), length), tok.pad_id, np.int32)
    mask = np.zeros_like(tokens)
    loss_mask = np.zeros_like(tokens)
    for i, p in enumerate(problems):
        turns = task.demonstrate(p) if demo[i] else [(p.answer, "")]  # the answer: one turn
        pieces = [(tok.encode(a), tok.encode(o)) for a, o in turns]
        pieces[-1] = (pieces[-1][0] + [tok.eos_id], pieces[-1][1])
        ids = [x for a, o in pieces for x in a + o]
        trained = [t for a, o in pieces for t in [1] * len(a) + [0] * len(o)]
        if len(ids) > length:
            raise ValueError(
                f"task {task.name!r}: the completion of {p.prompt!r} has {len(ids)} tokens; "
                f"allowed: at most {length} (max_answer_chars + 3)"
            )
        tokens[i, : len(ids)], mask[i, : len(ids)], loss_mask[i, : len(ids)] = ids, 1, trained
    return SeqBatch(prompt_tokens, prompt_mask, tokens, mask, loss_mask)


def spread(problems: list, count: int) -> list:
    """`count` problems evenly spaced over a level-sorted list, so every level is represented."""
    picks = np.linspace(0, len(problems) - 1, min(count, len(problems)))
    return [problems[int(round(i))] for i in picks]
