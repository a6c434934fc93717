"""Value regression as classification: two-hot and HL-Gauss targets with cross-entropy.

Farebrother et al. 2024, "Stop Regressing: Training Value Functions via Classification for
Scalable Deep RL" (arXiv 2403.03950). A value head outputs logits over a fixed ``support`` of N
bin centres; a scalar target ``x`` becomes a distribution over the bins (``two_hot`` or
``hl_gauss``), the loss is ``cross_entropy(logits, target_probs)`` and the value is read back as
``expectation(logits, support)``. ``support`` must be increasing; targets are clipped to it.
"""

import chex
import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from rljax import checks


def _check_support(support: jax.Array) -> None:
    chex.assert_rank(support, 1)
    if support.shape[0] < 2:
        raise ValueError(f"support must have at least 2 atoms, got shape {support.shape}")
    checks.check_increasing("support", support)


def two_hot(x: jax.Array, support: jax.Array) -> jax.Array:
    """Two-hot encoding: mass on the two atoms around ``x``, linear in the distance.

    For ``s_k <= x <= s_{k+1}``: ``p_k = (s_{k+1} - x)/(s_{k+1} - s_k)``, ``p_{k+1} = 1 - p_k``,
    so ``Σ_j p_j s_j = x`` exactly for ``x`` inside the support (values outside are clipped).
    Used by MuZero/DreamerV3 value heads and studied in "Stop Regressing" (Farebrother et al.
    2024).

    Args:
      x: scalar targets ``[...]``.
      support: increasing atom locations ``[N]``.

    Returns:
      Target probabilities ``[..., N]`` (no gradient).
    """
    _check_support(support)
    n = support.shape[0]
    x = jnp.clip(jax.lax.stop_gradient(x), support[0], support[-1])
    k = jnp.clip(jnp.searchsorted(support, x, side="right") - 1, 0, n - 2)
    lo, hi = support[k], support[k + 1]
    w_hi = (x - lo) / (hi - lo)
    return (
        jax.nn.one_hot(k, n, dtype=x.dtype) * (1.0 - w_hi)[..., None]
        + jax.nn.one_hot(k + 1, n, dtype=x.dtype) * w_hi[..., None]
    )


def hl_gauss(x: jax.Array, support: jax.Array, *, sigma: float | jax.Array) -> jax.Array:
    """HL-Gauss target: the mass of ``N(x, σ²)`` in each bin, renormalized to the support.

    Bin j spans ``[e_j, e_{j+1}]`` with edges halfway between atoms (the outer edges half a bin
    beyond the end atoms); ``p_j ∝ Φ((e_{j+1} - x)/σ) - Φ((e_j - x)/σ)``. Farebrother et al. 2024
    ("Stop Regressing"; Imani & White 2018, "Improving Regression Performance with
    Distributional Losses") recommend σ ≈ 0.75 bin widths. The read-back mean equals ``x`` up to
    the discretization when ``x`` is a few σ inside the support. Targets outside the support are
    first clipped to its end atoms (as ``two_hot`` does), so every row sums to 1: unclipped, a
    target a few σ beyond the support would get a row of (near) zeros and no gradient.

    Args:
      x: scalar targets ``[...]`` (clipped to ``[support[0], support[-1]]``).
      support: increasing bin centres ``[N]``.
      sigma: Gaussian standard deviation σ > 0, in value units.

    Returns:
      Target probabilities ``[..., N]`` (no gradient).
    """
    _check_support(support)
    checks.check_range("sigma", sigma, low=0.0, low_open=True)
    x = jnp.clip(jax.lax.stop_gradient(x), support[0], support[-1])
    mid = 0.5 * (support[1:] + support[:-1])
    first = support[0] - 0.5 * (support[1] - support[0])
    last = support[-1] + 0.5 * (support[-1] - support[-2])
    edges = jnp.concatenate([first[None], mid, last[None]])
    cdf = ndtr((edges - x[..., None]) / sigma)
    mass = cdf[..., 1:] - cdf[..., :-1]
    return mass / jnp.maximum(cdf[..., -1:] - cdf[..., :1], 1e-12)


def expectation(logits: jax.Array, support: jax.Array) -> jax.Array:
    """Value read back from a categorical head, ``Σ_j softmax(logits)_j s_j``.

    Args:
      logits: ``[..., N]``.
      support: atom locations ``[N]``.

    Returns:
      Expected values ``[...]``.
    """
    chex.assert_rank(support, 1)
    return jnp.sum(jax.nn.softmax(logits, axis=-1) * support, axis=-1)


def cross_entropy(logits: jax.Array, target_probs: jax.Array) -> jax.Array:
    """Cross-entropy ``-Σ_j p_j log softmax(logits)_j`` against (stopped) target probabilities.

    Args:
      logits: predicted logits ``[..., N]``.
      target_probs: target distribution ``[..., N]``, e.g. ``two_hot`` / ``hl_gauss`` /
        ``distributional.categorical_projection``.

    Returns:
      Loss per element ``[...]``.
    """
    chex.assert_equal_shape([logits, target_probs])
    target_probs = jax.lax.stop_gradient(target_probs)
    return -jnp.sum(target_probs * jax.nn.log_softmax(logits, axis=-1), axis=-1)
