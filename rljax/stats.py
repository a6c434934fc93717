"""Statistics for ablations: per-arm summaries over seeds with bootstrap intervals.

Every ablation script reports each arm (grid point) over its seeds the same way: the mean, the
interquartile mean (IQM, the mean of the middle 50% of runs; Agarwal et al. 2021, "Deep RL at the
Edge of the Statistical Precipice"), 95% percentile-bootstrap intervals of both, and, between two
arms, the probability of improvement P(X > Y) + ½ P(X = Y) with its own interval.

Scores are ``[S]`` (S seeds of one arm) or ``[S, T]`` (T tasks or environments). The bootstrap is
stratified: seeds are resampled with replacement within each task, never across tasks, so every
resample keeps one run per (seed slot, task). All randomness comes from ``seed``; the same inputs
give the same intervals.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence

import numpy as np

CONFIDENCE = 0.95  # every interval in rljax's results files
NUM_RESAMPLES = 2000  # bootstrap resamples


def _as_2d(scores) -> np.ndarray:
    x = np.asarray(scores, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"scores must be [S] or [S, T] with S >= 1 seeds; got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores contain NaN or inf; drop or fill failed runs explicitly")
    return x


def iqm(scores) -> float:
    """Interquartile mean over all runs: the mean of the middle 50% (trimmed 25% each side).

    With n runs it weights each run by its overlap with the quantile range [n/4, 3n/4], so it is
    defined for any n (n = 1, 2, 3 give the mean) and equals `scipy.stats.trim_mean(x, 0.25)`
    when n is a multiple of 4.
    """
    x = np.sort(_as_2d(scores).ravel())
    weights = _iqm_weights(x.size)
    return float(np.sum(weights * x) / np.sum(weights))


def mean(scores) -> float:
    """Mean over all runs (seeds × tasks)."""
    return float(np.mean(_as_2d(scores)))


def _iqm_weights(n: int) -> np.ndarray:
    lo, hi = n / 4.0, 3.0 * n / 4.0
    edges = np.arange(n + 1, dtype=np.float64)
    return np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0.0, None)


def _iqm_rows(x: np.ndarray) -> np.ndarray:
    """`iqm` of every row of ``x`` [R, n] at once (the same arithmetic, row by row)."""
    weights = _iqm_weights(x.shape[1])
    return np.sum(weights * np.sort(x, axis=1), axis=1) / np.sum(weights)


# Statistics the bootstrap evaluates on all resamples at once instead of one Python call each;
# each row gives the same float as the statistic itself (tests/test_stats.py checks equality).
_BATCHED: dict[Callable, Callable[[np.ndarray], np.ndarray]] = {
    mean: lambda x: np.mean(x, axis=1),
    iqm: _iqm_rows,
}


def stratified_bootstrap(
    scores,
    statistic: Callable[[np.ndarray], float] = mean,
    *,
    confidence: float = CONFIDENCE,
    num_resamples: int = NUM_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of ``statistic`` over seeds, resampled within each task.

    Args:
      scores: ``[S]`` or ``[S, T]``.
      statistic: function of an ``[S, T]`` array to a float (e.g. ``mean``, ``iqm``).
      confidence: interval mass in (0, 1).
      num_resamples: bootstrap resamples (>= 100).
      seed: NumPy seed of the resampling.

    Returns:
      ``(low, high)``. With one seed the interval is the point itself.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    if num_resamples < 100:
        raise ValueError(f"num_resamples={num_resamples} must be >= 100")
    x = _as_2d(scores)
    num_seeds, num_tasks = x.shape
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, num_seeds, size=(num_resamples, num_seeds, num_tasks))
    cols = np.broadcast_to(np.arange(num_tasks), rows.shape)
    resamples = x[rows, cols]  # [num_resamples, S, T]
    batched = _BATCHED.get(statistic)
    if batched is not None:
        stats = batched(resamples.reshape(num_resamples, -1))
    else:
        stats = np.array([statistic(r) for r in resamples])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def probability_of_improvement(x, y) -> float:
    """P(X > Y) + ½ P(X = Y) for one run of arm x against one run of arm y, per task, averaged.

    The Mann-Whitney statistic normalized to [0, 1]: 0.5 means no difference.

    Args:
      x: ``[S_x]`` or ``[S_x, T]`` scores of arm x (higher is better).
      y: ``[S_y]`` or ``[S_y, T]`` scores of arm y, same T.
    """
    a, b = _as_2d(x), _as_2d(y)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"x has {a.shape[1]} tasks and y {b.shape[1]}; they must match")
    greater = (a[:, None, :] > b[None, :, :]).mean(axis=(0, 1))
    equal = (a[:, None, :] == b[None, :, :]).mean(axis=(0, 1))
    return float(np.mean(greater + 0.5 * equal))


def probability_of_improvement_ci(
    x, y, *, confidence: float = CONFIDENCE, num_resamples: int = NUM_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Bootstrap interval of ``probability_of_improvement(x, y)``: each arm resampled per task."""
    a, b = _as_2d(x), _as_2d(y)
    rng = np.random.default_rng(seed)
    stats = []
    cols_a = np.arange(a.shape[1])[None]
    cols_b = np.arange(b.shape[1])[None]
    for _ in range(num_resamples):
        ra = rng.integers(0, a.shape[0], size=a.shape)
        rb = rng.integers(0, b.shape[0], size=b.shape)
        stats.append(probability_of_improvement(a[ra, cols_a], b[rb, cols_b]))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def summarize(scores, *, seed: int = 0, num_resamples: int = NUM_RESAMPLES) -> dict:
    """Mean and IQM with 95% stratified-bootstrap intervals, and the raw per-seed values.

    ``num_resamples`` below the default trades interval precision for time (each resample is a
    Python call): scripts that summarize hundreds of arms in a ``--quick`` mode use a few hundred.

    Returns:
      ``{"n", "mean", "mean_ci", "iqm", "iqm_ci", "std", "values"}`` (JSON-ready).
    """
    x = _as_2d(scores)
    return {
        "n": int(x.shape[0]),
        "mean": mean(x),
        "mean_ci": list(stratified_bootstrap(x, mean, seed=seed, num_resamples=num_resamples)),
        "iqm": iqm(x),
        "iqm_ci": list(stratified_bootstrap(x, iqm, seed=seed, num_resamples=num_resamples)),
        "std": float(np.std(x, ddof=1)) if x.size > 1 else 0.0,
        "values": x.squeeze(1).tolist() if x.shape[1] == 1 else x.tolist(),
    }


def compare(x, y, *, seed: int = 0) -> dict:
    """Arm x against arm y: mean difference with a bootstrap interval and P(x > y) with its own.

    The difference interval resamples the seeds of each arm independently (unpaired).
    """
    a, b = _as_2d(x), _as_2d(y)
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(NUM_RESAMPLES):
        ra = rng.integers(0, a.shape[0], size=a.shape[0])
        rb = rng.integers(0, b.shape[0], size=b.shape[0])
        diffs.append(float(np.mean(a[ra]) - np.mean(b[rb])))
    alpha = (1.0 - CONFIDENCE) / 2.0
    return {
        "diff": mean(a) - mean(b),
        "diff_ci": [float(v) for v in np.quantile(diffs, [alpha, 1.0 - alpha])],
        "prob_improvement": probability_of_improvement(a, b),
        "prob_improvement_ci": list(probability_of_improvement_ci(a, b, seed=seed)),
    }


def excludes_zero(interval: Sequence[float]) -> bool:
    """True when a difference interval lies wholly above or wholly below 0."""
    low, high = interval
    return low > 0 or high < 0


def _fmt(value: float, digits: int) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def format_interval(summary: dict, key: str = "mean", digits: int = 3) -> str:
    """``"0.512 [0.480, 0.540]"`` from a ``summarize`` dict."""
    low, high = summary[f"{key}_ci"]
    return f"{_fmt(summary[key], digits)} [{_fmt(low, digits)}, {_fmt(high, digits)}]"


def write_results(
    workdir: str,
    *,
    title: str,
    claim: str,
    verdict: str,
    reason: str,
    arms: dict[str, dict],
    metric: str,
    extra: dict | None = None,
    notes: Sequence[str] = (),
    digits: int = 3,
) -> str:
    """Writes ``results.json`` and ``results.md`` for one reproduction; returns the markdown.

    Args:
      workdir: output directory (created).
      title: the reproduction's name (paper and ablation).
      claim: the paper's claim in one line.
      verdict: one of "reproduced", "partly", "not at this scale", "contradicted".
      reason: why, in a sentence, with the numbers that decide it.
      arms: arm name -> ``summarize`` dict of the headline metric.
      metric: what the headline metric is (e.g. "held-out pass@1").
      extra: more JSON-ready results (comparisons, timings, configs).
      notes: extra markdown lines after the table.
    """
    verdicts = ("reproduced", "partly", "not at this scale", "contradicted")
    if verdict not in verdicts:
        raise ValueError(f"verdict={verdict!r} is not one of {verdicts}")
    os.makedirs(workdir, exist_ok=True)
    payload = {
        "title": title,
        "claim": claim,
        "verdict": verdict,
        "reason": reason,
        "metric": metric,
        "confidence": CONFIDENCE,
        "arms": arms,
        **(extra or {}),
    }
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(payload, f, indent=1)
    lines = [
        f"# {title}",
        "",
        f"**Claim.** {claim}",
        "",
        f"**Verdict: {verdict}.** {reason}",
        "",
        f"| arm | seeds | {metric}: mean [95% CI] | IQM [95% CI] |",
        "|---|---|---|---|",
    ]
    for name, s in arms.items():
        lines.append(
            f"| {name} | {s['n']} | {format_interval(s, 'mean', digits)} | "
            f"{format_interval(s, 'iqm', digits)} |"
        )
    lines += ["", *notes]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(text)
    return text


def _band(column: np.ndarray, seed: int) -> tuple[float, float, float]:
    """(mean, low, high) over the finite values of one x of a band plot."""
    kept = column[np.isfinite(column)]
    if kept.size == 0:
        return np.nan, np.nan, np.nan
    if kept.size == 1:
        return kept[0], kept[0], kept[0]
    low, high = stratified_bootstrap(kept, seed=seed, num_resamples=500)
    return float(kept.mean()), low, high


def plot_bands(
    x,
    curves: dict[str, np.ndarray],
    path: str,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    seed: int = 0,
) -> None:
    """Mean over seeds with a 95% bootstrap band per arm; ``curves[arm]`` is ``[S, len(x)]``.

    NaN marks a seed with no value at that x (e.g. no measurement there): each point uses the
    seeds defined at it, and a point with none is left out of the line.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, values in curves.items():
        values = np.asarray(values, np.float64)
        if values.ndim != 2 or values.shape[1] != len(x):
            raise ValueError(f"curves[{name!r}] has shape {values.shape}; expected [S, {len(x)}]")
        centre, low, high = np.asarray([_band(column, seed) for column in values.T]).T
        (line,) = ax.plot(x, centre, label=f"{name} (n={values.shape[0]})")
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
