"""Training-problem curation from the base model: SELF's least-likely problems.

RLVR's winner-take-all favours problems the base already finds likely, so a run may train only
on the fraction of problems whose reference solution the base finds least likely.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from rljax.lm import tokenizer
from rljax.lm.data import encode_problems
from rljax.lm.logprobs import completion_log_probs
from rljax.lm.model import TransformerConfig


def reference_log_likelihood(
    params, model: TransformerConfig, task, problems: list, tok=tokenizer.CHAR
) -> np.ndarray:
    """log π(reference solution | prompt) of each problem: the sum of the completion's token
    log-probs under `params` (teacher forcing, in batches of 256). Shape `[N]`."""
    score = jax.jit(lambda p, b: jnp.sum(completion_log_probs(p, model, *b)[0], axis=1))
    out = [
        np.asarray(score(params, encode_problems(task, problems[i : i + 256], tok)))
        for i in range(0, len(problems), 256)
    ]
    return np.concatenate(out)


def least_likely(
    params, model: TransformerConfig, task, problems: list, fraction: float, tok=tokenizer.CHAR
) -> list:
    """The ceil(fraction x N) problems whose reference solution `params` finds least likely, in
    their original order (SELF's curation: RLVR's winner-take-all favours already-likely
    problems, so train on the others)."""
    loglik = reference_log_likelihood(params, model, task, problems, tok)
    keep = np.sort(np.argsort(loglik, kind="stable")[: math.ceil(fraction * len(problems))])
    return [problems[i] for i in keep]
