"""Rewards computed on device from sampled tokens, so a whole RLVR step runs under one `jit`.

The host verifiers (`rljax.lm.tasks`) stay the reference; these functions re-implement their
verdicts on token arrays for the exact-match tasks and must agree with them on every completion
(tests/lm/test_lm_device_reward.py checks thousands of sampled and adversarial ones):

  arithmetic  the text after the last '=' parses as `-?[0-9]{1,9}` and equals the value;
  equation    the whole text parses as `-?[0-9]{1,9}` and equals the solution;
  strings     the whole text equals the answer (1-16 lowercase letters).

Tasks that need a parser (countdown) call their host verifier through `jax.pure_callback`, and
so does every task under another tokenizer (a BPE tokenizer.json, `reward_kind`): its completions
are decoded on the host by that tokenizer and judged by the same verifiers.

`make_table` is the one builder of problem tables, for the toy tasks (rows with the device
targets of their kind) and math (rows scored on the host only).

Text is what `tokenizer.decode` makes of a completion: the tokens before the first EOS with PAD
and BOS dropped. `visible_text` builds exactly that, left-aligned, on device.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, Task, batches, reward, safe_verify
from rljax.lm.tasks.grammar import parse_expression

_DIGIT0 = tokenizer.encode("0")[0]
_MINUS = tokenizer.encode("-")[0]
_EQUALS = tokenizer.encode("=")[0]
_MAX_DIGITS = 9  # parse_int accepts at most 9 digits, so every value fits in int32

# How each task's verdict is computed: the one place task names become reward kinds.
KINDS = {"arithmetic": "final_int", "equation": "int", "strings": "exact", "countdown": "host"}
KINDS["calculator"] = "final_int"  # rljax.lm.agentic.calculator: the answer after the last '='
KINDS["guess"] = "int"  # rljax.lm.agentic.guess: the answer is the secret


def reward_kind(task_name: str, tok=tokenizer.CHAR) -> str:
    """`KINDS[task_name]` under the character tokenizer; "host" under any other tokenizer (the
    device parsers read character ids)."""
    if task_name not in KINDS:
        raise ValueError(f"task {task_name!r} has no reward kind; known: {sorted(KINDS)}")
    return KINDS[task_name] if isinstance(tok, tokenizer.CharTokenizer) else "host"


class ProblemTable(NamedTuple):
    """A split as device arrays, one row per problem (`N` problems); rows made without a toy
    task (math's: scored on the host by `index`) have no device targets (zeros, `A = 1`)."""

    prompt_tokens: jax.Array  # [N, P] int32, left-padded
    prompt_mask: jax.Array  # [N, P] int32
    target_int: jax.Array  # [N] int32: the integer answer (final_int / int kinds)
    target_tokens: jax.Array  # [N, A] int32: the answer's tokens (exact kind), PAD after
    target_len: jax.Array  # [N] int32
    level: jax.Array  # [N] int32
    index: jax.Array  # [N] int32: position in the host problem list (host kind)


def _target_int(task: Task, problem: Problem) -> int:
    if KINDS[task.name] == "final_int":
        parsed = parse_expression(problem.prompt[:-1])
        return parsed.value if parsed is not None else 10**9 + 1  # unreachable: never correct
    if KINDS[task.name] == "int":
        return int(problem.answer)
    return 0


def make_table(
    task: Task | None,
    problems: list[Problem],
    tok=tokenizer.CHAR,
    *,
    template=tokenizer.PLAIN,
    prompt_length: int | None = None,
) -> ProblemTable:
    """Encodes `problems` into a `ProblemTable` (NumPy arrays; `jnp.asarray` to move).

    Args:
      task: a toy task, whose reward kind fills the device targets (the exact kind's targets are
        character ids: `reward_kind`); or None: rows scored on the host only, by their `index`
        into the problem list (math's, whose checker reads the answers there).
      problems: the rows, in order.
      tok: a `rljax.lm.model.tokenizer.Tokenizer`.
      template: renders each prompt (`tokenizer.PLAIN`: the toy tasks'; math's plain or chat).
      prompt_length: P (default: the toy task's `batches.prompt_length`; required without one).

    Returns:
      The table: prompts `tokenizer.encode_prompts(..., P, tok, template)`, levels, rows
      `0..N-1`, targets `[N]`, `[N, A]` (A = the task's completion length; 1 without a task).
    """
    if task is not None and task.name not in KINDS:
        raise ValueError(f"task {task.name!r} has no reward kind; known: {sorted(KINDS)}")
    if task is None and prompt_length is None:
        raise ValueError("a table without a task needs its prompt_length")
    if not problems:
        name = "" if task is None else f"task {task.name!r}: "
        raise ValueError(f"{name}an empty problem list cannot be a table")
    tokenizer.check_tokenizer(tok)
    length = batches.prompt_length(task) if prompt_length is None else prompt_length
    texts = [p.prompt for p in problems]
    prompt_tokens, prompt_mask = tokenizer.encode_prompts(texts, length, tok, template)
    n = len(problems)
    target_int = np.zeros(n, np.int32)
    answer_length = 1 if task is None else batches.completion_length(task)
    target_tokens = np.full((n, answer_length), tokenizer.PAD, np.int32)
    target_len = np.zeros(n, np.int32)
    if task is not None:
        target_int = np.asarray([_target_int(task, p) for p in problems], np.int32)
    if task is not None and reward_kind(task.name, tok) == "exact":
        for row, problem in enumerate(problems):
            ids = tokenizer.encode(problem.answer)
            target_tokens[row, : len(ids)] = ids
            target_len[row] = len(ids)
    return ProblemTable(
        prompt_tokens=prompt_tokens,
        prompt_mask=prompt_mask,
        target_int=target_int,
        target_tokens=target_tokens,
        target_len=target_len,
        level=np.asarray([p.level for p in problems], np.int32),
        index=np.arange(n, dtype=np.int32),
    )


def visible_text(tokens: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The decoded text of completions as tokens: before the first EOS, PAD/BOS dropped.

    Args:
      tokens: `[..., A]` int32 sampled completions.

    Returns:
      (text `[..., A]` left-aligned with PAD after, length `[...]`, finished `[...]` bool: an EOS
      was emitted).
    """
    length = tokens.shape[-1]
    is_eos = tokens == tokenizer.EOS
    finished = jnp.any(is_eos, axis=-1)
    first_eos = jnp.where(finished, jnp.argmax(is_eos, axis=-1), length)
    before = jnp.arange(length) < first_eos[..., None]
    visible = before & (tokens != tokenizer.PAD) & (tokens != tokenizer.BOS)
    slot = jnp.where(visible, jnp.cumsum(visible, axis=-1) - 1, length)  # length = dropped

    def compress(row_tokens, row_slot):
        return (
            jnp.full((length,), tokenizer.PAD, tokens.dtype)
            .at[row_slot]
            .set(row_tokens, mode="drop")
        )

    flat = jax.vmap(compress)(tokens.reshape(-1, length), slot.reshape(-1, length))
    return flat.reshape(tokens.shape), jnp.sum(visible, axis=-1), finished


def parse_int_span(text: jax.Array, start: jax.Array, stop: jax.Array):
    """`grammar.parse_int` of `text[start:stop]` on device: `-?[0-9]{1,9}`.

    Args:
      text: `[..., A]` visible text tokens.
      start, stop: `[...]` int32 span bounds.

    Returns:
      (value `[...]` int32, ok `[...]` bool); value is 0 where not ok.
    """
    idx = jnp.arange(text.shape[-1])
    at_start = jnp.take_along_axis(text, jnp.minimum(start, text.shape[-1] - 1)[..., None], -1)
    negative = (at_start[..., 0] == _MINUS) & (start < stop)
    first = start + negative.astype(start.dtype)
    in_digits = (idx >= first[..., None]) & (idx < stop[..., None])
    digit = text - _DIGIT0
    is_digit = (digit >= 0) & (digit <= 9)
    count = stop - first
    ok = (count >= 1) & (count <= _MAX_DIGITS) & jnp.all(is_digit | ~in_digits, axis=-1)
    power = jnp.clip(stop[..., None] - 1 - idx, 0, _MAX_DIGITS - 1)
    place = jnp.where(in_digits & ok[..., None], 10 ** power.astype(jnp.int32), 0)
    magnitude = jnp.sum(jnp.where(is_digit, digit, 0) * place, axis=-1)
    value = jnp.where(negative, -magnitude, magnitude)
    return jnp.where(ok, value, 0), ok


def verdicts(kind: str, tokens: jax.Array, table: ProblemTable, problem: jax.Array):
    """Device verdicts of completions `tokens [R, A]` for problem rows `problem [R]`.

    Returns:
      (correct `[R]` bool, well_formed `[R]` bool, finished `[R]` bool).
    """
    chex.assert_rank(tokens, 2)
    key, well_formed, finished = answers(kind, tokens)
    if kind in ("final_int", "int"):
        return well_formed & (key[:, 0] == table.target_int[problem]), well_formed, finished
    target = table.target_tokens[problem]
    same = jnp.all(key == target, axis=-1) & (
        jnp.sum(key != tokenizer.PAD, -1) == table.target_len[problem]
    )
    return well_formed & same, well_formed, finished


def answers(kind: str, tokens: jax.Array):
    """The parsed answers of completions `tokens [R, A]`, as keys that are equal exactly when the
    answers are (for majority votes).

    Returns:
      (key `[R, K]` int32: the value (`K = 1`) for the integer kinds, the text with PAD after
      for "exact"; well_formed `[R]` bool: the answer parses; finished `[R]` bool).
    """
    chex.assert_rank(tokens, 2)
    text, length, finished = visible_text(tokens)
    if kind in ("final_int", "int"):
        start = jnp.zeros_like(length)
        if kind == "final_int":
            idx = jnp.arange(text.shape[-1])
            is_eq = (text == _EQUALS) & (idx < length[:, None])
            last_eq = jnp.max(jnp.where(is_eq, idx, -1), axis=-1)
            start = last_eq + 1
        value, ok = parse_int_span(text, start, length)
        return value[:, None], ok, finished
    if kind == "exact":
        lowercase = (text >= tokenizer.encode("a")[0]) & (text <= tokenizer.encode("z")[0])
        real = jnp.arange(text.shape[-1]) < length[:, None]
        well_formed = (length > 0) & (length <= 16) & jnp.all(lowercase | ~real, axis=-1)
        return text, well_formed, finished
    raise ValueError(f"reward kind {kind!r} is not computed on device; kinds: {sorted(KINDS)}")


def host_scorer(task: Task, problems: list[Problem], format_weight: float, tok=tokenizer.CHAR):
    """A NumPy function `(tokens [..., A], problem [...]) -> (reward, correct)` using the host
    verifier on `tok.decode`'s text, for `jax.pure_callback` (any leading dimensions, so it
    works under `vmap`)."""

    def score(tokens, problem):
        tokens, problem = np.asarray(tokens), np.asarray(problem)
        flat_tokens = tokens.reshape(-1, tokens.shape[-1])
        flat_problem = np.broadcast_to(problem, tokens.shape[:-1]).reshape(-1)
        rewards, correct = [], []
        for row, index in zip(flat_tokens, flat_problem, strict=True):
            text, done = tok.decode(row)
            verdict = safe_verify(task, problems[int(index)], text)
            rewards.append(reward(verdict, done, format_weight=format_weight))
            correct.append(done and verdict.correct)
        shape = tokens.shape[:-1]
        return (
            np.asarray(rewards, np.float32).reshape(shape),
            np.asarray(correct, bool).reshape(shape),
        )

    return score


def score(
    kind: str,
    tokens: jax.Array,
    table: ProblemTable,
    problem: jax.Array,
    *,
    format_weight: float,
    host=None,
):
    """Rewards and correctness of completions `tokens [R, A]` of problem rows `problem [R]`.

    reward = 1[finished] · (1[correct] + format_weight · 1[well formed]), as `tasks.reward`.

    Args:
      kind: `KINDS[task.name]`.
      tokens: `[R, A]` sampled completions.
      table: the problem table the rows index.
      problem: `[R]` int32 rows of `table`.
      format_weight: weight of the format reward.
      host: for kind "host", the `host_scorer` of the task and the table's problem list.

    Returns:
      (reward `[R]` float32, correct `[R]` bool).
    """
    if kind == "host":
        if host is None:
            raise ValueError("reward kind 'host' needs the task's host_scorer")
        shapes = (
            jax.ShapeDtypeStruct(problem.shape, jnp.float32),
            jax.ShapeDtypeStruct(problem.shape, jnp.bool_),
        )
        return jax.pure_callback(
            host, shapes, tokens, table.index[problem], vmap_method="expand_dims"
        )
    correct, well_formed, finished = verdicts(kind, tokens, table, problem)
    value = correct.astype(jnp.float32) + format_weight * well_formed.astype(jnp.float32)
    return jnp.where(finished, value, 0.0), finished & correct
