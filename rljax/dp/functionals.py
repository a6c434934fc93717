"""Statistical functionals K of a return distribution, and distances between distributions.

A distribution is given either as atoms with probabilities (`atoms` [N] or [..., N], `probs`
[..., N]; atoms need not be sorted) or as samples ([..., n], equal weights). Functionals return
one value per distribution ([...]); nothing here averages over a batch.

CVaR follows the lower-tail convention (the mean of the worst α fraction of outcomes):
  CVaR_α(G) = (1/α) ∫_0^α F_G^{-1}(u) du = max_b { b - E[(b - G)^+] / α }
(Rockafellar & Uryasev, 2000). The second form is what stock augmentation optimizes.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from rljax import checks


def mean(atoms: jax.Array, probs: jax.Array) -> jax.Array:
    """E[G] = Σ_i p_i z_i. Args: atoms [N] or [..., N], probs [..., N]. Returns [...]."""
    return jnp.sum(probs * atoms, axis=-1)


def expected_utility(utility: jax.Array, probs: jax.Array) -> jax.Array:
    """E[f(G)] = Σ_i p_i f(z_i), with utility [N] = f evaluated on the atoms. Returns [...]."""
    return jnp.sum(probs * utility, axis=-1)


def cvar(atoms: jax.Array, probs: jax.Array, alpha: float | jax.Array) -> jax.Array:
    """Lower-tail CVaR_α of a discrete distribution: (1/α) Σ_i z_(i) min(p_(i), (α - F_(i-1))^+).

    Args:
      atoms: [N] or [..., N] support (any order).
      probs: [..., N] probabilities.
      alpha: level in (0, 1].

    Returns:
      [...] CVaR values.

    Raises:
      ValueError: if a concrete ``alpha`` is outside (0, 1] or concrete ``probs`` are not
        distributions (negative, non-finite or not summing to 1); traced ones are not checked.
    """
    checks.check_range("alpha", alpha, low=0.0, low_open=True, high=1.0)
    checks.check_distribution("probs", probs)
    atoms = jnp.broadcast_to(atoms, probs.shape)
    order = jnp.argsort(atoms, axis=-1)
    z = jnp.take_along_axis(atoms, order, axis=-1)
    p = jnp.take_along_axis(probs, order, axis=-1)
    cdf_before = jnp.cumsum(p, axis=-1) - p
    mass = jnp.minimum(p, jnp.maximum(alpha - cdf_before, 0.0))
    return jnp.sum(mass * z, axis=-1) / alpha


def cvar_of_samples(samples: jax.Array, alpha: float | jax.Array) -> jax.Array:
    """Empirical lower-tail CVaR_α of samples [..., n] (equal weights). Returns [...]."""
    n = samples.shape[-1]
    return cvar(samples, jnp.full(samples.shape, 1.0 / n, samples.dtype), alpha)


def threshold_probability(atoms: jax.Array, probs: jax.Array, threshold: float) -> jax.Array:
    """P(G >= threshold). Returns [...]."""
    return jnp.sum(probs * (atoms >= threshold), axis=-1)


def homeostatic_score(atoms: jax.Array, probs: jax.Array, target: float) -> jax.Array:
    """-E|G - target|: zero iff G sits at the set point w.p. 1. Returns [...]."""
    return -jnp.sum(probs * jnp.abs(atoms - target), axis=-1)


def _cdf_on(support: jax.Array, atoms: jax.Array, probs: jax.Array) -> jax.Array:
    order = jnp.argsort(atoms)
    cdf = jnp.concatenate([jnp.zeros(1, probs.dtype), jnp.cumsum(probs[order])])
    return cdf[jnp.searchsorted(atoms[order], support, side="right")]


def _cdf_gap(atoms_a, probs_a, atoms_b, probs_b):
    chex.assert_rank([atoms_a, probs_a, atoms_b, probs_b], 1)
    support = jnp.sort(jnp.concatenate([atoms_a, atoms_b]))
    gap = _cdf_on(support, atoms_a, probs_a) - _cdf_on(support, atoms_b, probs_b)
    return gap[:-1], jnp.diff(support)


def wasserstein_1(atoms_a, probs_a, atoms_b, probs_b) -> jax.Array:
    """W1(ν_a, ν_b) = ∫ |F_a(x) - F_b(x)| dx for two discrete distributions.

    Args:
      atoms_a: [n], probs_a: [n], atoms_b: [m], probs_b: [m] (samples: probs = 1/n).

    Returns:
      [] distance (vmap for batches).

    Raises:
      ValueError: concrete ``probs_a`` / ``probs_b`` that are not distributions.
    """
    checks.check_distribution("probs_a", probs_a)
    checks.check_distribution("probs_b", probs_b)
    gap, width = _cdf_gap(atoms_a, probs_a, atoms_b, probs_b)
    return jnp.sum(jnp.abs(gap) * width)


def cramer_distance(atoms_a, probs_a, atoms_b, probs_b) -> jax.Array:
    """Cramér (ℓ2) distance (∫ (F_a(x) - F_b(x))² dx)^{1/2}. Shapes as `wasserstein_1`."""
    checks.check_distribution("probs_a", probs_a)
    checks.check_distribution("probs_b", probs_b)
    gap, width = _cdf_gap(atoms_a, probs_a, atoms_b, probs_b)
    return jnp.sqrt(jnp.sum(gap**2 * width))
