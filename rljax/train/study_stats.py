"""Statistics the studies share beyond ``rljax.stats``: rank correlations (Spearman ρ, Kendall τ)
and bootstrap intervals of any statistic of ``[cells, seeds]`` arrays.

``rljax.stats`` bootstraps a mean or IQM over seeds within tasks; the studies that rank cells
(``offline_data_quality``, ``ablate_effective_horizon``, ``hparam_landscape``) also need a rank
correlation and the interval of a statistic of several arrays at once (a difference of cell
groups, a best-of-others gap, a paired difference). These are those, written once, at the
confidence level of every interval in rljax's results (``rljax.stats.CONFIDENCE``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as scipy_stats

from rljax import stats

ALPHA = (1 - stats.CONFIDENCE) / 2  # each tail of a percentile interval


def spearman(x, y) -> float:
    """Spearman ρ of two equal-length samples (average ranks for ties); NaN when either side is
    constant (ρ is undefined there)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(scipy_stats.spearmanr(x, y).statistic)


def kendall(x, y) -> float:
    """Kendall's τ-a of two equal-length score lists (a tied pair counts 0)."""
    x, y = np.asarray(x), np.asarray(y)
    i, j = np.triu_indices(len(x), 1)
    return float(np.mean(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])))


def interval(draws: Sequence[float], *, alpha: float = ALPHA, empty=float("nan")) -> list:
    """Percentile interval ``[low, high]`` of the finite ``draws`` of a bootstrap (NaN draws, e.g.
    ρ of a constant resample, are dropped); ``[empty, empty]`` when none is finite."""
    d = np.asarray(draws, np.float64)
    d = d[np.isfinite(d)]
    if not d.size:
        return [empty, empty]
    return [float(v) for v in np.quantile(d, [alpha, 1 - alpha])]


def cell_bootstrap(
    statistic: Callable[..., float],
    arrays: Sequence[np.ndarray],
    *,
    paired: bool = False,
    seed: int = 0,
    num_resamples: int = stats.NUM_RESAMPLES,
) -> list:
    """Percentile interval of ``statistic(*arrays)``, each array ``[C, S]`` (cells × seeds)
    resampled over seeds within each cell.

    Args:
      statistic: a function of the resampled arrays to a float.
      arrays: ``[C, S]`` arrays (their shapes may differ unless ``paired``).
      paired: one seed draw for every array (seed i of each array belongs together).
      seed: NumPy seed of the resampling.
      num_resamples: bootstrap resamples.
    """
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(num_resamples):
        draw, resampled = None, []
        for a in arrays:
            if draw is None or not paired:
                draw = rng.integers(0, a.shape[1], a.shape)
            resampled.append(np.take_along_axis(a, draw, 1))
        draws.append(statistic(*resampled))
    return [float(v) for v in np.quantile(draws, [ALPHA, 1 - ALPHA])]
