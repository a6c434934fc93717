"""Training-problem curation: SELF's least-likely problems; 1-shot RLVR's high-variance examples.

RLVR's winner-take-all favours problems the base already finds likely, so a run may train only
on the fraction of problems whose reference solution the base finds least likely. 1-shot RLVR
(Wang et al. 2025) trains on one example, chosen by the historical variance of its training
accuracy over the visits of a short RL run on many problems (`by_variance`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.logprobs import completion_log_probs
from rljax.lm.tasks.batches import encode_problems


def reference_log_likelihood(
    params, model: TransformerConfig, task, problems: list, tok=tokenizer.CHAR
) -> np.ndarray:
    """log π(reference solution | prompt) of each problem: the sum of the completion's token
    log-probs under `params` (teacher forcing, in batches of 256). Shape `[N]`."""
    score = jax.jit(lambda p, b: jnp.sum(completion_log_probs(p, model, *b[:4])[0], axis=1))
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


def check(least_likely, train_problems, train_examples) -> None:
    """Checks a run's choice of RL training problems before anything is built: SELF's fraction
    (in [0, 1)), the first n problems (n >= 0), or explicit problems (distinct indices >= 0), at
    most one of them. Raises ValueError naming the field, its value and what is allowed."""
    if isinstance(least_likely, bool) or not 0.0 <= least_likely < 1.0:
        raise ValueError(
            f"least_likely={least_likely!r} is invalid; allowed: a fraction in [0, 1) "
            "(0 = every training problem)"
        )
    picks = dict(least_likely=least_likely, train_problems=train_problems)
    if sum(bool(v) for v in (*picks.values(), train_examples)) > 1:
        raise ValueError(
            f"least_likely={least_likely}, train_problems={train_problems}, train_examples="
            f"{tuple(train_examples)}: choose one way to select the training problems (leave the "
            "others 0 / empty)"
        )
    ok = isinstance(train_examples, tuple | list) and all(
        isinstance(i, int | np.integer) and not isinstance(i, bool) and i >= 0
        for i in train_examples
    )
    if not ok or len(set(train_examples)) != len(train_examples):
        raise ValueError(
            f"train_examples={train_examples!r} is invalid; allowed: distinct problem indices "
            ">= 0 (() = every problem)"
        )


def by_variance(accuracy: np.ndarray, min_visits: int = 2):
    """1-shot RLVR's ranking: problems by the variance of their training accuracy over visits.

    v_i = Var_t(acc_i,t) (population variance) over the updates t that drew problem i, pooled
    over learners; problems visited fewer than `min_visits` times are not ranked. Ties go to
    the lower index (a stable sort), so the ranking is a function of the records alone.

    Args:
      accuracy: `[..., U, N]` training accuracy of problem i at update t (NaN: not drawn), any
        leading axes (learners) pooled.
      min_visits: the fewest visits a ranked problem needs (>= 2).

    Returns:
      (order `[R]` problem indices, highest variance first; variance `[N]` (NaN if unranked);
      visits `[N]`).
    """
    if isinstance(min_visits, bool) or not isinstance(min_visits, int) or min_visits < 2:
        raise ValueError(f"min_visits={min_visits!r} is invalid; allowed: an integer >= 2")
    acc = np.asarray(accuracy, np.float64).reshape(-1, np.shape(accuracy)[-1])  # [records, N]
    seen = np.isfinite(acc)
    visits = seen.sum(0)
    mean = np.where(seen, acc, 0.0).sum(0) / np.maximum(visits, 1)
    var = np.where(seen, (acc - mean) ** 2, 0.0).sum(0) / np.maximum(visits, 1)
    var = np.where(visits >= min_visits, var, np.nan)
    ranked = np.flatnonzero(np.isfinite(var))
    order = ranked[np.argsort(-var[ranked], kind="stable")]
    return order, var, visits
