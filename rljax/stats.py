"""Statistics for ablations: per-arm summaries over seeds with 95% intervals of stated coverage.

Every ablation script reports each arm (grid point) over its seeds the same way: the mean, the
interquartile mean (IQM, the mean of the middle 50% of runs; Agarwal et al. 2021, "Deep RL at the
Edge of the Statistical Precipice"), a 95% interval of each, and, between two arms, the mean
difference with its 95% interval and the probability of improvement P(X > Y) + ½ P(X = Y).

Scores are ``[S]`` (S seeds of one arm) or ``[S, T]`` (T tasks or environments, seeds independent
between tasks).

The intervals over seeds, the ones verdicts rest on, are closed-form t intervals, never a
percentile bootstrap: with 3 seeds a percentile bootstrap of the mean is the lowest-to-highest
seed range (the 2.5% quantile of the resampled means is the smallest seed whenever 1/27 > 2.5%),
which covers the true mean only 75% of the time for normal seed values. Here, in one place:

* ``mean_interval``: Student t on the mean, mean ± t_{S-1} s/√S (over tasks: each task's mean
  and variance, Welch–Satterthwaite degrees of freedom);
* ``diff_interval``: Welch's t interval of mean(x) − mean(y) (unpaired, unequal variances);
* ``iqm_interval``: the Tukey–McLaughlin (Yuen) t interval of the 25%-trimmed mean, centred on
  ``iqm`` (the winsorized standard deviation, h − 1 degrees of freedom for h kept runs; at S <= 3
  nothing is trimmed and it is the mean's t interval).

Their coverage at the seed counts the studies use (S = 3, 4, 5, 8) is ``COVERAGE``, checked by
simulation in tests/test_stats.py: 95% (± 1 point; the IQM's 93-95%) for normal seed values; for
skewed ones less (the mean's: 88% for exponential, 82% for lognormal seed values), since no
interval from 3 draws can know the tail it has not seen. With one seed there is no
interval: (−∞, +∞), which every verdict rule reads as undecided. All seeds equal give a
zero-width interval (the data show no spread; the rule cannot see what they do not show).

The bootstrap (``stratified_bootstrap``, ``probability_of_improvement_ci``) stays for statistics
without a t form and for plots; its percentile intervals undercover at few seeds (the module's
tests measure by how much) and no verdict should rest on one below ``MIN_BOOTSTRAP_SEEDS``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as scipy_stats

CONFIDENCE = 0.95  # every interval in rljax's results files
NUM_RESAMPLES = 2000  # bootstrap resamples
MIN_BOOTSTRAP_SEEDS = 10  # below this a percentile bootstrap of a mean covers < 90% (normal)
# Simulated coverage of the 95% t intervals at S = 3, 4, 5 and 8 seeds (20,000 seed sets each;
# tests/test_stats.py checks every entry): {interval: {seed distribution: (low, high)}}, the range
# the coverage falls in over those S. "exponential" is Exp(1), "lognormal" is exp(N(0, 1)); "diff"
# is S against S + 1 seeds of the same distribution (their skews cancel: above 95%), "iqm" covers
# the population IQM. Measured 2026-12-04: mean 0.949-0.950 / 0.881-0.894 / 0.821-0.837, diff
# 0.951-0.960 / 0.964-0.973 / 0.973-0.982, iqm 0.933-0.952 / 0.913-0.929 / 0.916-0.932.
COVERAGE = {
    "mean": {"normal": (0.94, 0.96), "exponential": (0.87, 0.91), "lognormal": (0.81, 0.85)},
    "diff": {"normal": (0.94, 0.97), "exponential": (0.955, 0.985), "lognormal": (0.96, 0.99)},
    "iqm": {"normal": (0.925, 0.96), "exponential": (0.905, 0.94), "lognormal": (0.905, 0.94)},
}


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
    defined for any n (n = 1, 2 give the mean; n = 3 weights the middle run 4 times the others)
    and equals `scipy.stats.trim_mean(x, 0.25)` when n is a multiple of 4.
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


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} is invalid; allowed: a number in (0, 1)")


_NO_INTERVAL = (-math.inf, math.inf)  # one seed: no spread seen, no interval


def _welch(centre, parts, dfs, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """t interval of ``centre`` [R] whose variance is the sum of ``parts`` [R, K], each part on
    ``dfs`` [K] degrees of freedom (Welch–Satterthwaite); a zero variance gives zero width."""
    var = np.sum(parts, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = var**2 / np.sum(parts**2 / dfs, axis=1)
        half = scipy_stats.t.ppf(0.5 + confidence / 2.0, df) * np.sqrt(var)
    half = np.where(var > 0, half, 0.0)
    return centre - half, centre + half


def _task_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variance parts of the mean of ``x`` [R, S, T] (one per task) and their degrees of freedom."""
    num_seeds, num_tasks = x.shape[1:]
    parts = np.var(x, axis=1, ddof=1) / (num_seeds * num_tasks**2)
    return parts, np.full(num_tasks, num_seeds - 1.0)


def _mean_interval_rows(x: np.ndarray, confidence: float = CONFIDENCE):
    """``mean_interval`` of every ``x[r]`` of ``x`` [R, S, T] (S >= 2) at once."""
    parts, dfs = _task_parts(x)
    return _welch(np.mean(x, axis=(1, 2)), parts, dfs, confidence)


def _diff_interval_rows(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE):
    """``diff_interval`` of every ``(a[r], b[r])``, ``a`` [R, S_a, T] and ``b`` [R, S_b, T]."""
    (pa, da), (pb, db) = _task_parts(a), _task_parts(b)
    centre = np.mean(a, axis=(1, 2)) - np.mean(b, axis=(1, 2))
    return _welch(centre, np.concatenate([pa, pb], 1), np.concatenate([da, db]), confidence)


def _iqm_interval_rows(x: np.ndarray, confidence: float = CONFIDENCE):
    """``iqm_interval`` of every row of ``x`` [R, n] (n >= 2) at once."""
    n = x.shape[1]
    g = n // 4
    h = n - 2 * g
    x = np.sort(x, axis=1)
    w = np.clip(x, x[:, g : g + 1], x[:, n - g - 1 : n - g])  # winsorized at g each side
    var = np.var(w, axis=1, ddof=1) * (n - 1) / (h * (h - 1))
    return _welch(_iqm_rows(x), var[:, None], np.array([h - 1.0]), confidence)


def mean_interval(scores, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Student-t interval of the mean over seeds: mean ± t_{S-1}(q) · s/√S.

    For ``[S, T]`` (seeds independent between tasks) the mean is the mean of the T task means,
    its variance Σ_t s_t² / (S T²) and its degrees of freedom Welch–Satterthwaite's. Coverage:
    ``COVERAGE["mean"]``.

    Args:
      scores: ``[S]`` or ``[S, T]``.
      confidence: interval mass in (0, 1).

    Returns:
      ``(low, high)``; ``(-inf, inf)`` with one seed; ``(m, m)`` when every seed is equal.
    """
    _check_confidence(confidence)
    x = _as_2d(scores)
    if x.shape[0] < 2:
        return _NO_INTERVAL
    lo, hi = _mean_interval_rows(x[None], confidence)
    return float(lo[0]), float(hi[0])


def diff_interval(x, y, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Welch's t interval of mean(x) − mean(y), the arms' seeds independent (unpaired).

    Each arm's mean and variance as ``mean_interval`` has them (``[S]`` or ``[S, T]``, the same
    T); degrees of freedom Welch–Satterthwaite's over both arms. Coverage: ``COVERAGE["diff"]``.

    Returns:
      ``(low, high)``; ``(-inf, inf)`` when an arm has one seed.
    """
    _check_confidence(confidence)
    a, b = _as_2d(x), _as_2d(y)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"x has {a.shape[1]} tasks and y {b.shape[1]}; they must match")
    if min(a.shape[0], b.shape[0]) < 2:
        return _NO_INTERVAL
    lo, hi = _diff_interval_rows(a[None], b[None], confidence)
    return float(lo[0]), float(hi[0])


def iqm_interval(scores, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Tukey–McLaughlin (Yuen) t interval of the interquartile mean, centred on ``iqm``.

    With n runs (seeds × tasks, pooled), g = ⌊n/4⌋ trimmed each side and h = n − 2g kept, the
    standard error is s_w √(n − 1) / √(h (h − 1)) (s_w: the standard deviation of the runs
    winsorized at g) on h − 1 degrees of freedom. At n <= 3 nothing is trimmed: the width is
    the mean's t interval's. Coverage (of the population IQM): ``COVERAGE["iqm"]``.

    Returns:
      ``(low, high)``; ``(-inf, inf)`` with one run.
    """
    _check_confidence(confidence)
    x = _as_2d(scores).ravel()
    if x.size < 2:
        return _NO_INTERVAL
    lo, hi = _iqm_interval_rows(x[None], confidence)
    return float(lo[0]), float(hi[0])


def stratified_bootstrap(
    scores,
    statistic: Callable[[np.ndarray], float] = mean,
    *,
    confidence: float = CONFIDENCE,
    num_resamples: int = NUM_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of ``statistic`` over seeds, resampled within each task.

    Not a verdict's interval below ``MIN_BOOTSTRAP_SEEDS`` seeds (at 3 it is the seeds' range):
    for a mean or an IQM use ``mean_interval`` / ``iqm_interval``.

    Args:
      scores: ``[S]`` or ``[S, T]``.
      statistic: function of an ``[S, T]`` array to a float (e.g. ``mean``, ``iqm``).
      confidence: interval mass in (0, 1).
      num_resamples: bootstrap resamples (>= 100).
      seed: NumPy seed of the resampling.

    Returns:
      ``(low, high)``. With one seed the interval is the point itself (no interval at all).
    """
    _check_confidence(confidence)
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


def summarize(scores) -> dict:
    """Mean and IQM with their 95% t intervals (``mean_interval``, ``iqm_interval``), the
    standard deviation and the raw per-seed values.

    Returns:
      ``{"n", "mean", "mean_ci", "iqm", "iqm_ci", "std", "values"}`` (JSON-ready; an interval
      of one seed is ``[-inf, inf]``).
    """
    x = _as_2d(scores)
    return {
        "n": int(x.shape[0]),
        "mean": mean(x),
        "mean_ci": list(mean_interval(x)),
        "iqm": iqm(x),
        "iqm_ci": list(iqm_interval(x)),
        "std": float(np.std(x, ddof=1)) if x.size > 1 else 0.0,
        "values": x.squeeze(1).tolist() if x.shape[1] == 1 else x.tolist(),
    }


def compare(x, y, *, seed: int = 0) -> dict:
    """Arm x against arm y: the mean difference with its Welch t interval (``diff_interval``)
    and P(x > y) with a bootstrap interval (``seed``: its resampling; not a verdict's interval
    below ``MIN_BOOTSTRAP_SEEDS`` seeds)."""
    a, b = _as_2d(x), _as_2d(y)
    return {
        "diff": mean(a) - mean(b),
        "diff_ci": list(diff_interval(a, b)),
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


def _band(column: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high) over the finite values of one x of a band plot (``mean_interval``)."""
    kept = column[np.isfinite(column)]
    if kept.size == 0:
        return np.nan, np.nan, np.nan
    if kept.size == 1:
        return kept[0], kept[0], kept[0]
    low, high = mean_interval(kept)
    return float(kept.mean()), low, high


def plot_bands(
    x,
    curves: dict[str, np.ndarray],
    path: str,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
) -> None:
    """Mean over seeds with a 95% t band (``mean_interval``) per arm; ``curves[arm]`` is
    ``[S, len(x)]``.

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
        centre, low, high = np.asarray([_band(column) for column in values.T]).T
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
