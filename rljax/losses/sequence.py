"""Policy-gradient losses on sequence-level importance ratios, per element (no averaging):
GSPO's geometric-mean sequence ratio and its token form, LUSPO (GSPO scaled by length) and
VESPO's Gamma weight of the whole-sequence ratio.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rljax import checks
from rljax.losses.policy_gradient import ppo_clip


def gspo_log_ratio(logp: jax.Array, old_logp: jax.Array, mask: jax.Array) -> jax.Array:
    """GSPO's length-normalized sequence log-ratio ``log s_i = (1/|y_i|) Σ_t log(π_θ/π_old)``.

    Zheng et al. 2025, "Group Sequence Policy Optimization" (GSPO):
    ``s_i = (π_θ(y_i)/π_old(y_i))^{1/|y_i|}``.

    Args:
      logp: per-token log π_θ ``[B, L]``.
      old_logp: per-token log π_old ``[B, L]``.
      mask: ``[B, L]``, 1 = real token.

    Returns:
      ``log s_i``, ``[B]`` (0 for empty sequences).
    """
    chex.assert_rank(logp, 2)
    chex.assert_equal_shape([logp, old_logp, mask])
    m = mask.astype(logp.dtype)
    diff = jnp.where(m > 0, logp - jax.lax.stop_gradient(old_logp), 0.0)
    return jnp.sum(diff, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1.0)


def gspo(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    mask: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
    delta: float | jax.Array | None = None,
) -> jax.Array:
    """Per-sequence GSPO loss ``ℓ_i = -min(s_i A_i, clip(s_i, 1-ε_low, 1+ε_high) A_i)``.

    Zheng et al. 2025, "Group Sequence Policy Optimization": the clip acts on the whole
    sequence's length-normalized ratio ``s_i`` (``gspo_log_ratio``), so ε is small (the paper
    uses about 3e-4 / 4e-4). Average over sequences with ``reduce.masked_mean``. ``delta`` is
    ``ppo_clip``'s two-sided cap, applied to ``s_i``.

    Args:
      logp: per-token log π_θ ``[B, L]``.
      old_logp: per-token log π_old ``[B, L]``.
      adv: sequence advantages ``[B]`` (constants), e.g. ``returns.grpo_advantages``.
      mask: ``[B, L]``, 1 = real token.
      eps_low: lower clip range.
      eps_high: upper clip range.
      delta: two-sided cap δ > 1 on ``s_i`` (None: none).

    Returns:
      Loss per sequence ``[B]``.
    """
    chex.assert_rank(adv, 1)
    log_s = gspo_log_ratio(logp, old_logp, mask)
    clip = dict(eps_low=eps_low, eps_high=eps_high, delta=delta)
    return ppo_clip(log_s, jnp.zeros_like(log_s), adv, **clip)


def gspo_token(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    mask: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
) -> jax.Array:
    """Per-token GSPO-token loss with ``s_it = sg(s_i) · π_θ(y_it)/sg(π_θ(y_it))``.

    Zheng et al. 2025 (GSPO-token): same value and, with equal per-token advantages ``A_it =
    A_i``, the same gradient as ``gspo`` once averaged with ``reduce.seq_mean_token_mean``; it
    allows per-token advantages.

    Args:
      logp: per-token log π_θ ``[B, L]``.
      old_logp: per-token log π_old ``[B, L]``.
      adv: advantages, per sequence ``[B]`` or per token ``[B, L]`` (constants).
      mask: ``[B, L]``, 1 = real token.
      eps_low: lower clip range.
      eps_high: upper clip range.

    Returns:
      Loss per token ``[B, L]``, 0 at padding.
    """
    log_s = jax.lax.stop_gradient(gspo_log_ratio(logp, old_logp, mask))
    log_s_t = log_s[:, None] + logp - jax.lax.stop_gradient(logp)
    adv_t = adv[:, None] * jnp.ones_like(logp) if adv.ndim == 1 else adv
    zeros = jnp.zeros_like(log_s_t)
    loss = ppo_clip(log_s_t, zeros, adv_t, eps_low=eps_low, eps_high=eps_high)
    return jnp.where(mask > 0, loss, 0.0)


def luspo(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    mask: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
    delta: float | jax.Array | None = None,
) -> jax.Array:
    """Per-token LUSPO loss: GSPO's sequence loss ``ℓ_i`` placed on every real token of ``y_i``.

    ``ℓ_it = ℓ_i = -min(s_i A_i, clip(s_i, 1-ε_low, 1+ε_high) A_i)`` for each real token, so
    its token sum is ``|y_i| ℓ_i``: LUSPO scales each sequence's GSPO loss by its length, which
    removes GSPO's bias towards short responses. Liu et al. 2026, "Length-Unbiased Sequence
    Policy Optimization" (LUSPO, arXiv 2602.05261). The aggregation stays the caller's:
    ``reduce.seq_mean_token_sum`` gives ``(1/N) Σ_i |y_i| ℓ_i`` (TRL's ``loss_type="luspo"``),
    ``reduce.token_mean`` gives ``Σ_i |y_i| ℓ_i / Σ_i |y_i|``, and ``reduce.seq_mean_token_mean``
    gives back GSPO. The gradient flows through ``s_i`` (every token of the sequence), exactly
    as for ``gspo``; ``delta`` is ``ppo_clip``'s two-sided cap on ``s_i``.

    Args:
      logp: per-token log π_θ ``[B, L]``.
      old_logp: per-token log π_old ``[B, L]``.
      adv: sequence advantages ``[B]`` (constants).
      mask: ``[B, L]``, 1 = real token.
      eps_low: lower clip range (on the sequence ratio: GSPO's small values).
      eps_high: upper clip range.
      delta: two-sided cap δ > 1 on ``s_i`` (None: none).

    Returns:
      Loss per token ``[B, L]``, 0 at padding.
    """
    per_seq = gspo(logp, old_logp, adv, mask, eps_low=eps_low, eps_high=eps_high, delta=delta)
    return jnp.where(mask > 0, per_seq[:, None], 0.0)


_VESPO_LOG_W_MIN = float(np.log(1e-8))  # the floor of log w (TRL's and the authors' code)


def vespo_weight(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    mask: jax.Array,
    *,
    k_pos: float | jax.Array,
    lambda_pos: float | jax.Array,
    k_neg: float | jax.Array,
    lambda_neg: float | jax.Array,
) -> jax.Array:
    """VESPO's Gamma-shaped weight ``φ(w_i) = e^λ w_i^k e^{-λ w_i}`` of each sequence (no gradient).

    ``w_i = π_θ(y_i)/π_old(y_i) = exp(Σ_t log ρ_it)`` is the *unnormalized* sequence ratio;
    ``(k, λ) = (k_pos, λ_pos)`` where ``A_i >= 0`` and ``(k_neg, λ_neg)`` elsewhere. ``φ(1) = 1``,
    φ vanishes as ``w → 0`` (power k) and as ``w → ∞`` (decay λ), with its peak at ``w = k/λ``.
    Computed in log space, ``log φ = λ + k log w - λ w``, with the clamps of TRL's
    implementation (which follows the authors' code): each ``log ρ_it`` to [-20, 20], ``log w``
    to [log 1e-8, 20], and a non-finite φ set to 0 (TRL also raises λ to at least 1e-4; here
    λ > 0 is the caller's). VESPO (Variational Sequence-Level Soft Policy Optimization, arXiv
    2602.10693).

    Args:
      logp: per-token log π_θ ``[B, L]``.
      old_logp: per-token log π_old ``[B, L]``.
      adv: sequence advantages ``[B]``.
      mask: ``[B, L]``, 1 = real token.
      k_pos, lambda_pos: the power k >= 0 and decay λ > 0 for ``A >= 0``.
      k_neg, lambda_neg: the same for ``A < 0``.

    Returns:
      ``φ(w_i)`` per sequence ``[B]``, under a stop-gradient (1 for an empty sequence).
    """
    chex.assert_rank([logp, adv], [2, 1])
    chex.assert_equal_shape([logp, old_logp, mask])
    for name, v in (("k_pos", k_pos), ("k_neg", k_neg)):
        checks.check_range(name, v, low=0.0)
    for name, v in (("lambda_pos", lambda_pos), ("lambda_neg", lambda_neg)):
        checks.check_range(name, v, low=0.0, low_open=True)
    log_ratio = jnp.clip(jax.lax.stop_gradient(logp - old_logp), -20.0, 20.0)
    log_w = jnp.sum(jnp.where(mask > 0, log_ratio, 0.0), axis=1)
    log_w = jnp.clip(log_w, _VESPO_LOG_W_MIN, 20.0)
    nonneg = adv >= 0
    k = jnp.where(nonneg, k_pos, k_neg)
    lam = jnp.where(nonneg, lambda_pos, lambda_neg)
    phi = jnp.exp(lam + k * log_w - lam * jnp.exp(log_w))
    return jax.lax.stop_gradient(jnp.where(jnp.isfinite(phi), phi, 0.0))


def vespo(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    mask: jax.Array,
    *,
    k_pos: float | jax.Array,
    lambda_pos: float | jax.Array,
    k_neg: float | jax.Array,
    lambda_neg: float | jax.Array,
) -> jax.Array:
    """Per-token VESPO loss: REINFORCE weighted by the Gamma weight of the sequence ratio.

    ``ℓ_it = -sg(φ(w_i)) A_i log π_θ(y_it)`` with ``φ`` from ``vespo_weight``: a smooth,
    asymmetric soft trust region on the whole sequence in place of a hard clip; on policy
    (``w = 1``, ``φ = 1``) its gradient is REINFORCE's ``-A ∇log π``. VESPO (arXiv 2602.10693);
    TRL aggregates it with the token mean (``reduce.token_mean``).

    Args:
      logp: per-token log π_θ ``[B, L]``.
      old_logp: per-token log π_old ``[B, L]``.
      adv: sequence advantages ``[B]`` (constants).
      mask: ``[B, L]``, 1 = real token.
      k_pos, lambda_pos, k_neg, lambda_neg: ``vespo_weight``'s shape parameters.

    Returns:
      Loss per token ``[B, L]``, 0 at padding.
    """
    phi = vespo_weight(
        logp, old_logp, adv, mask,
        k_pos=k_pos, lambda_pos=lambda_pos, k_neg=k_neg, lambda_neg=lambda_neg,
    )  # fmt: skip
    weight = phi * jax.lax.stop_gradient(adv)
    return jnp.where(mask > 0, -weight[:, None] * logp, 0.0)
