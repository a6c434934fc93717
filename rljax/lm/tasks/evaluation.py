"""pass@k with the unbiased estimator, bootstrap intervals, distinct answers, accuracy by level.

pass@k = E_problems[1 - C(n - c, k) / C(n, k)] for n samples of which c are correct (Chen et al.
2021, "Evaluating Large Language Models Trained on Code"), the protocol of #48 (Yue et al.).
"""

from __future__ import annotations

import numpy as np


def pass_at_k(num_samples: int, num_correct: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass@k per problem: 1 - C(n-c, k)/C(n, k), computed as a stable product.

    Args:
      num_samples: n, samples drawn per problem.
      num_correct: c per problem, `[N]` ints in [0, n].
      k: 1 <= k <= n.

    Returns:
      `[N]` floats in [0, 1].
    """
    num_correct = np.asarray(num_correct)
    if not 1 <= k <= num_samples:
        raise ValueError(f"k={k} must be in [1, num_samples={num_samples}]")
    if np.any(num_correct < 0) or np.any(num_correct > num_samples):
        raise ValueError(f"num_correct must be in [0, {num_samples}], got {num_correct}")
    out = np.ones(num_correct.shape, np.float64)
    for index, c in np.ndenumerate(num_correct):
        if num_samples - c >= k:
            # C(n-c, k)/C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
            out[index] = 1.0 - np.prod(1.0 - k / np.arange(num_samples - c + 1, num_samples + 1))
    return out


def pass_at_k_curve(
    num_samples: int, num_correct: np.ndarray, *, num_bootstrap: int = 1000, seed: int = 0
) -> dict[str, np.ndarray]:
    """pass@k for k = 1..n with 95% percentile-bootstrap intervals over problems.

    Returns:
      {"k": [n], "pass": [n], "low": [n], "high": [n]}.
    """
    num_correct = np.asarray(num_correct)
    ks = np.arange(1, num_samples + 1)
    per_problem = np.stack([pass_at_k(num_samples, num_correct, int(k)) for k in ks])  # [n, N]
    rng = np.random.default_rng(seed)
    index = rng.integers(0, num_correct.shape[0], size=(num_bootstrap, num_correct.shape[0]))
    boot = per_problem[:, index].mean(axis=-1)  # [n, num_bootstrap]
    return {
        "k": ks,
        "pass": per_problem.mean(axis=-1),
        "low": np.percentile(boot, 2.5, axis=-1),
        "high": np.percentile(boot, 97.5, axis=-1),
    }


def summarize(
    correct: np.ndarray, answers: list[list[str]], levels: np.ndarray, *, seed: int = 0
) -> dict:
    """All evaluation metrics from an `[N, n]` 0/1 correctness table.

    Args:
      correct: `[N, n]` whether sample j of problem i is correct.
      answers: N lists of n decoded answers (for counting distinct correct ones).
      levels: `[N]` difficulty level of each problem.
      seed: bootstrap seed.

    Returns:
      A dict with the pass@k curve, mean distinct correct answers per problem, and pass@1 per level.
    """
    correct = np.asarray(correct, bool)
    num_problems, num_samples = correct.shape
    num_correct = correct.sum(axis=1)
    curve = pass_at_k_curve(num_samples, num_correct, seed=seed)
    distinct = [
        len({a for a, ok in zip(row, row_ok, strict=True) if ok})
        for row, row_ok in zip(answers, correct, strict=True)
    ]
    levels = np.asarray(levels)
    by_level = {int(level): float(correct[levels == level].mean()) for level in np.unique(levels)}
    return {
        "num_problems": num_problems,
        "num_samples": num_samples,
        "pass_at_k": {key: value.tolist() for key, value in curve.items()},
        "pass@1": float(curve["pass"][0]),
        f"pass@{num_samples}": float(curve["pass"][-1]),
        "distinct_correct_per_problem": float(np.mean(distinct)),
        "pass@1_by_level": by_level,
    }
