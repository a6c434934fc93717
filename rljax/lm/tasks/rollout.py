"""Host-side generation and scoring: sample G completions per problem, decode, verify, reward.

Sampling is the jitted KV-cache sampler; decoding and verification are plain Python on the host
(verifiers parse strings; nothing is evaluated). Used by RL (G per prompt) and evaluation (n per
problem) alike.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.sampling import sample
from rljax.lm.tasks import Problem, Task, reward, safe_verify
from rljax.lm.tasks.batches import completion_length, encode_prompts
from rljax.lm.tasks.evaluation import summarize

sample_jit = jax.jit(
    sample, static_argnums=(1,), static_argnames=("max_new_tokens", "temperature", "top_p")
)


class Scored(NamedTuple):
    """G samples for each of N problems, flattened problem-major to `N * G` rows."""

    prompt_tokens: np.ndarray  # [N*G, P]
    prompt_mask: np.ndarray  # [N*G, P]
    completion_tokens: np.ndarray  # [N*G, A]
    completion_mask: np.ndarray  # [N*G, A]
    rewards: np.ndarray  # [N*G] float32
    correct: np.ndarray  # [N*G] bool
    finished: np.ndarray  # [N*G] bool: EOS emitted within the budget
    texts: list[str]  # N*G decoded answers


def generate_and_score(
    params,
    model_cfg: TransformerConfig,
    task: Task,
    problems: list[Problem],
    key: jax.Array,
    *,
    group_size: int,
    temperature: float,
    top_p: float,
    format_weight: float = 0.0,
    tok=tokenizer.CHAR,
) -> Scored:
    """Samples `group_size` completions per problem and scores each with the task's verifier
    (`tok` encodes the prompts and decodes the completions)."""
    prompt_tokens, prompt_mask = encode_prompts(task, problems, tok)
    prompt_tokens = np.repeat(prompt_tokens, group_size, axis=0)
    prompt_mask = np.repeat(prompt_mask, group_size, axis=0)
    out = sample_jit(
        params,
        model_cfg,
        prompt_tokens,
        prompt_mask,
        key,
        max_new_tokens=completion_length(task),
        temperature=temperature,
        top_p=top_p,
    )
    tokens, mask = np.asarray(out.tokens), np.asarray(out.mask)
    texts, finished, correct, rewards = [], [], [], []
    for row, token_row in enumerate(tokens):
        text, done = tok.decode(token_row)
        verdict = safe_verify(task, problems[row // group_size], text)
        texts.append(text)
        finished.append(done)
        correct.append(done and verdict.correct)
        rewards.append(reward(verdict, done, format_weight=format_weight))
    return Scored(
        prompt_tokens,
        prompt_mask,
        tokens,
        mask,
        np.asarray(rewards, np.float32),
        np.asarray(correct, bool),
        np.asarray(finished, bool),
        texts,
    )


def evaluate(
    params,
    model_cfg,
    task,
    problems,
    key,
    *,
    num_samples,
    temperature,
    top_p,
    batch_problems: int = 128,
    tok=tokenizer.CHAR,
) -> dict:
    """pass@k (k = 1..num_samples), distinct correct answers and accuracy by level."""
    correct, answers = [], []
    for start in range(0, len(problems), batch_problems):
        chunk = problems[start : start + batch_problems]
        scored = generate_and_score(
            params,
            model_cfg,
            task,
            chunk,
            jax.random.fold_in(key, start),
            group_size=num_samples,
            temperature=temperature,
            top_p=top_p,
            tok=tok,
        )
        correct.append(scored.correct.reshape(len(chunk), num_samples))
        answers.extend(
            scored.texts[i * num_samples : (i + 1) * num_samples] for i in range(len(chunk))
        )
    levels = np.asarray([p.level for p in problems])
    return summarize(np.concatenate(correct), answers, levels)
