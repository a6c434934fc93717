"""Compute -> performance sigmoids (ScaleRL, #54 in PAPERS.md), fitted in pure numpy.

    R(C) = R0 + (A − R0) / (1 + (C_mid / C)^B)

A is the asymptote, B the efficiency exponent (how sharply R rises around C_mid), C_mid the
compute at which half of the gain A − R0 is reached, R0 the performance at C = 0 (given, as in
the paper: the starting policy's). `fit` is least squares over (A, B, C_mid) with R0 fixed:
for each (B, C_mid) the optimal A is closed-form (the model is linear in A − R0), so the search
runs over (B, log C_mid) only, on a grid refined by zooming around the best cell; A is clipped
to [R0, a_max]. `bootstrap` refits on curves whose seeds are resampled with replacement.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Fit(NamedTuple):
    a: float  # asymptote A
    b: float  # efficiency exponent B
    c_mid: float  # midpoint C_mid (the compute's units)
    r0: float  # the fixed R0
    rmse: float  # root-mean-square residual of the fit


def sigmoid(c, a: float, b: float, c_mid: float, r0: float) -> np.ndarray:
    """R(C) for compute `c` (> 0)."""
    c = np.asarray(c, float)
    return r0 + (a - r0) / (1.0 + (c_mid / c) ** b)


def _check(c: np.ndarray, r: np.ndarray) -> None:
    if c.ndim != 1 or c.shape != r.shape or c.size < 3:
        raise ValueError(
            f"compute shape {c.shape} and performance shape {r.shape} are invalid; allowed: "
            "two 1-D arrays of the same length >= 3"
        )
    if not (np.all(np.isfinite(c)) and np.all(c > 0)):
        raise ValueError("compute is invalid; allowed: finite values > 0")
    if not np.all(np.isfinite(r)):
        raise ValueError("performance is invalid; allowed: finite values")


def _best_a(s: np.ndarray, y: np.ndarray, r0: float, a_max: float) -> np.ndarray:
    """Least-squares A for sigmoid shapes `s [..., N]` and data `y [N]` (clipped to [r0, a_max])."""
    gain = np.sum(s * (y - r0), axis=-1) / np.maximum(np.sum(s * s, axis=-1), 1e-12)
    return np.clip(r0 + gain, r0, a_max)


def fit(
    c, r, *, r0: float, a_max: float = 1.0, b_range=(0.1, 10.0), grid: int = 80, rounds: int = 4
) -> Fit:
    """Least-squares (A, B, C_mid) of `R(C)` to points `(c, r)`, with `R0 = r0` fixed.

    Args:
      c: compute of each point (> 0), 1-D; r: performance there.
      r0: R(0); a_max: the largest allowed A (1 for a pass rate).
      b_range: the B searched; C_mid is searched over [min(c) / 100, max(c) * 100] (log scale).
      grid: grid points per axis and round; rounds: zoom rounds (each shrinks the box 4x).

    Raises:
      ValueError: shapes, values or ranges out of bounds (named).
    """
    c, r = np.asarray(c, float), np.asarray(r, float)
    _check(c, r)
    if not (np.isfinite(r0) and r0 < a_max):
        raise ValueError(f"r0={r0!r} is invalid; allowed: finite and < a_max={a_max!r}")
    if not 0 < b_range[0] < b_range[1] < np.inf:
        raise ValueError(f"b_range={b_range!r} is invalid; allowed: 0 < low < high < inf")
    lb = np.log(np.asarray(b_range, float))
    lc = np.log([c.min() / 100.0, c.max() * 100.0])
    box = np.asarray([lb, lc])  # [[log B lo, hi], [log C_mid lo, hi]]
    best = None
    for _ in range(rounds):
        log_b = np.linspace(*box[0], grid)
        log_c = np.linspace(*box[1], grid)
        bb, cc = np.meshgrid(np.exp(log_b), np.exp(log_c), indexing="ij")
        s = 1.0 / (1.0 + (cc[..., None] / c) ** bb[..., None])  # [grid, grid, N]
        a = _best_a(s, r, r0, a_max)
        sse = np.sum((r0 + (a[..., None] - r0) * s - r) ** 2, axis=-1)
        i, j = np.unravel_index(np.argmin(sse), sse.shape)
        best = (a[i, j], bb[i, j], cc[i, j], sse[i, j])
        centre = np.asarray([log_b[i], log_c[j]])
        half = (box[:, 1] - box[:, 0]) / 8.0
        box = np.stack([np.maximum(centre - half, [lb[0], lc[0]]),
                        np.minimum(centre + half, [lb[1], lc[1]])], axis=1)  # fmt: skip
    a, b, c_mid, sse = best
    return Fit(float(a), float(b), float(c_mid), float(r0), float(np.sqrt(sse / len(c))))


def bootstrap(
    c, curves, *, r0: float, num_resamples: int = 200, seed: int = 0, **fit_kwargs
) -> dict:
    """Fits the seed-mean curve and `num_resamples` curves of seeds resampled with replacement.

    Args:
      c: compute `[N]`; curves: performance `[S, N]` (one row per seed).

    Returns:
      {"fit": Fit of the mean curve, "samples": {"a"|"b"|"c_mid": [num_resamples]},
       "ci": {"a"|"b"|"c_mid": [lo, hi]} (95% percentile intervals)}.
    """
    curves = np.asarray(curves, float)
    if curves.ndim != 2 or curves.shape[0] < 2:
        raise ValueError(f"curves shape {curves.shape} is invalid; allowed: [seeds >= 2, points]")
    rng = np.random.default_rng(seed)
    main = fit(c, curves.mean(0), r0=r0, **fit_kwargs)
    samples = {"a": [], "b": [], "c_mid": []}
    for _ in range(num_resamples):
        rows = rng.integers(0, curves.shape[0], curves.shape[0])
        f = fit(c, curves[rows].mean(0), r0=r0, **fit_kwargs)
        for k in samples:
            samples[k].append(getattr(f, k))
    samples = {k: np.asarray(v) for k, v in samples.items()}
    ci = {
        k: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] for k, v in samples.items()
    }
    return {"fit": main, "samples": samples, "ci": ci}
