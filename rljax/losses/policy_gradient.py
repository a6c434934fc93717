"""Policy-gradient losses as pure per-element functions (no averaging; see ``reduce``)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rljax import checks


def ppo_clip(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
    delta: float | jax.Array | None = None,
) -> jax.Array:
    """Per-element PPO clipped surrogate loss with asymmetric clipping.

    ``ℓ = -min(ρ A, clip(ρ, 1 - ε_low, 1 + ε_high) A)`` with ``ρ = exp(logp - old_logp)``.
    Schulman et al. 2017, "Proximal Policy Optimization Algorithms"; ``ε_high > ε_low`` is DAPO's
    clip-higher (Yu et al. 2025). Symmetric PPO is ``eps_low == eps_high``.

    Two-sided clip (``delta``, INTELLECT-2 technical report, arXiv 2505.07291; TRL's ``delta``):
    the unclipped ratio is capped as well, ``ℓ = -min(min(ρ, δ) A, clip(ρ, 1-ε_low, 1+ε_high) A)``,
    so a negative-advantage element whose ratio passed δ has loss ``-δA`` and no gradient. For
    ``δ > 1 + ε_high`` this is ``ppo_dual_clip`` with ``c = δ``; a smaller δ also lowers the
    positive-advantage cap to δ.

    Args:
      logp: log π_θ(a|s) of the taken action, ``[...]``.
      old_logp: log π_old(a|s) of the same action, ``[...]``.
      adv: advantage estimates, ``[...]`` (treated as constants).
      eps_low: lower clip range ε_low in [0, 1] (the ratio is clipped below at 1 - ε_low).
      eps_high: upper clip range ε_high >= 0.
      delta: the two-sided cap δ > 1 on the unclipped ratio (None: no cap; an array may hold
        inf for no cap).

    Returns:
      Loss per element, ``[...]``. An element with ``A = 0`` has loss 0 and gradient 0 even
      when its float ratio overflows to inf (``inf · 0`` would be NaN).

    Raises:
      ValueError: if a concrete ``eps_low`` is outside [0, 1], ``eps_high`` is negative or NaN,
        or ``delta`` is not a finite number > 1.
    """
    checks.check_range("eps_low", eps_low, low=0.0, high=1.0)
    checks.check_range("eps_high", eps_high, low=0.0)
    if delta is not None:
        checks.check_range("delta", delta, low=1.0, low_open=True)
    chex.assert_equal_shape([logp, old_logp, adv])
    adv = jax.lax.stop_gradient(adv)
    # A zero advantage contributes nothing: its log-ratio is replaced before exp, so an
    # overflowing ratio cannot make inf · 0 = NaN in the value or the gradient.
    log_ratio = jnp.where(adv == 0, 0.0, logp - jax.lax.stop_gradient(old_logp))
    ratio = jnp.exp(log_ratio)
    clipped = jnp.clip(ratio, 1.0 - eps_low, 1.0 + eps_high)
    unclipped = ratio if delta is None else jnp.minimum(ratio, delta)
    return -jnp.minimum(unclipped * adv, clipped * adv)


def reinforce(logp: jax.Array, adv: jax.Array) -> jax.Array:
    """Per-element REINFORCE-with-baseline loss ``ℓ = -sg(A) log π(a|s)``.

    Williams 1992, "Simple Statistical Gradient-Following Algorithms"; ``A = G - b`` with any
    action-independent baseline ``b`` (e.g. from ``rljax.returns``) keeps the gradient unbiased.

    Args:
      logp: log π_θ(a|s) of the taken action ``[...]``.
      adv: advantages or returns minus baseline ``[...]`` (constants).

    Returns:
      Loss per element ``[...]``.
    """
    chex.assert_equal_shape([logp, adv])
    return -jax.lax.stop_gradient(adv) * logp


def ppo_dual_clip(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
    dual_clip: float | jax.Array = 3.0,
) -> jax.Array:
    """Per-element dual-clip PPO loss: PPO clip, plus a floor ``c A`` on the objective when A < 0.

    ``J = min(ρA, clip(ρ, 1-ε_low, 1+ε_high) A)`` for A >= 0 and ``max(J, c A)`` for A < 0;
    ``ℓ = -J``. Bounds the loss of a negative-advantage sample whose ratio has blown up (ρ > c)
    and gives it zero gradient. Ye et al. 2020, "Mastering Complex Control in MOBA Games with
    Deep RL" (c = 3); asymmetric ε as in DAPO (Yu et al. 2025).

    Args:
      logp: log π_θ(a|s) ``[...]``.
      old_logp: log π_old(a|s) ``[...]``.
      adv: advantages ``[...]`` (constants).
      eps_low: lower clip range ε_low in [0, 1] (the ratio is clipped below at 1 - ε_low).
      eps_high: upper clip range ε_high >= 0.
      dual_clip: c > 1.

    Returns:
      Loss per element ``[...]``.
    """
    checks.check_range("dual_clip", dual_clip, low=1.0, low_open=True)
    clipped_loss = ppo_clip(logp, old_logp, adv, eps_low=eps_low, eps_high=eps_high)
    adv = jax.lax.stop_gradient(adv)
    return jnp.where(adv < 0, jnp.minimum(clipped_loss, -dual_clip * adv), clipped_loss)


def cispo(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    *,
    eps_low: float | jax.Array,
    eps_high: float | jax.Array,
) -> jax.Array:
    """Per-token CISPO loss: truncated importance-weighted REINFORCE.

    ``ℓ = -sg(clip(ρ, 1 - ε_low, 1 + ε_high)) · A · log π_θ`` with ``ρ = π_θ/π_old``. Unlike PPO
    clipping, no token's gradient is dropped: the IS weight is clipped and stopped instead.
    MiniMax 2025, "MiniMax-M1" (CISPO); the loss of ScaleRL (arXiv 2510.13786). A large
    ``eps_low`` (e.g. 1.0) means no lower bound, as in MiniMax-M1.

    Args:
      logp: log π_θ of the sampled tokens ``[...]``.
      old_logp: log π_old (behaviour policy) of the same tokens ``[...]``.
      adv: advantages ``[...]`` (constants).
      eps_low: lower truncation ε_low in [0, 1].
      eps_high: upper truncation ε_high >= 0.

    Returns:
      Loss per element ``[...]``. At ρ = 1 its gradient equals PPO's / REINFORCE's.
    """
    checks.check_range("eps_low", eps_low, low=0.0, high=1.0)
    checks.check_range("eps_high", eps_high, low=0.0)
    chex.assert_equal_shape([logp, old_logp, adv])
    ratio = jnp.exp(logp - old_logp)
    weight = jax.lax.stop_gradient(jnp.clip(ratio, 1.0 - eps_low, 1.0 + eps_high))
    return -weight * jax.lax.stop_gradient(adv) * logp


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


def sapo(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    *,
    tau_pos: float | jax.Array,
    tau_neg: float | jax.Array,
) -> jax.Array:
    """Per-token SAPO loss: a smooth, temperature-controlled gate in place of PPO's hard clip.

    ``ℓ = -(4/τ) σ(τ (ρ - 1)) A`` with ``ρ = π_θ/π_old``, ``τ = τ_pos`` where ``A > 0`` and
    ``τ_neg`` elsewhere. Its gradient is ``-4 σ(x)(1 - σ(x)) ρ A ∇log π`` at ``x = τ(ρ - 1)``:
    PPO's ``-A ∇log π`` on policy (ρ = 1), fading smoothly as ρ leaves 1 (faster for a larger
    τ) instead of dropping to zero at a clip boundary. Soft Adaptive Policy Optimization
    (SAPO, arXiv 2511.20347); ``τ_neg > τ_pos`` (TRL's 1.05 / 1.0) damps off-policy
    negative-advantage tokens sooner.

    Args:
      logp: log π_θ of the sampled tokens ``[...]``.
      old_logp: log π_old of the same tokens ``[...]``.
      adv: advantages ``[...]`` (constants).
      tau_pos: temperature τ_pos > 0 for ``A > 0``.
      tau_neg: temperature τ_neg > 0 for ``A <= 0``.

    Returns:
      Loss per element ``[...]``; 0 with gradient 0 where ``A = 0``.
    """
    checks.check_range("tau_pos", tau_pos, low=0.0, low_open=True)
    checks.check_range("tau_neg", tau_neg, low=0.0, low_open=True)
    chex.assert_equal_shape([logp, old_logp, adv])
    adv = jax.lax.stop_gradient(adv)
    # As in ppo_clip: a zero advantage keeps an overflowing ratio out of inf · 0.
    log_ratio = jnp.where(adv == 0, 0.0, logp - jax.lax.stop_gradient(old_logp))
    tau = jnp.where(adv > 0, tau_pos, tau_neg)
    gate = jax.nn.sigmoid(tau * (jnp.exp(log_ratio) - 1.0)) * 4.0 / tau
    return -gate * adv


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


def _floor_keep_grad(x: jax.Array, floor: float | jax.Array) -> jax.Array:
    """``max(x, floor)`` in value, identity in gradient (a straight-through floor)."""
    return x + jax.lax.stop_gradient(jnp.maximum(x, floor) - x)


def nft(
    logp: jax.Array,
    old_logp: jax.Array,
    correct: jax.Array,
    correct_rate: jax.Array,
    *,
    pos_floor: float | jax.Array = 0.0,
    neg_floor: float | jax.Array = 1e-2,
) -> jax.Array:
    """Per-token NFT (negative-aware fine-tuning) loss with an implicit negative policy.

    With ``R = π_θ/π_old`` and group accuracy ``r_q``, the negative policy is
    ``π⁻ = (π_old - r_q π_θ)/(1 - r_q)``; maximum likelihood on positives under π_θ and on
    negatives under π⁻ gives ``ℓ = -log R`` for correct samples and
    ``ℓ = -log((1 - r_q R)/(1 - r_q))`` for wrong ones. Chen et al. 2025, "Bridging Supervised
    Learning and Reinforcement Learning in Math Reasoning" (NFT, arXiv 2505.18116). Both
    arguments of the logs are floored in value only (the gradient passes straight through), as
    in the authors' code, so a sample whose ``r_q R`` passes 1 cannot produce NaN.

    On-policy (``R = 1``) the gradient is ``-∇log π`` for positives and
    ``r_q/(1 - r_q) ∇log π`` for negatives; scaling each prompt by ``(1 - r_q)`` gives exactly
    Dr.GRPO's ``-A ∇log π`` with ``A = R - r_q``, and by ``sqrt((1 - r_q)/r_q)`` GRPO's with the
    population std. Apply those weights before ``reduce``.

    Args:
      logp: log π_θ of the sampled tokens ``[...]``.
      old_logp: log π_old (the sampling policy) ``[...]``.
      correct: 1 for a correct (positive) sample, 0 for a wrong one ``[...]`` (broadcast per
        sequence, e.g. ``[B, 1]`` against ``[B, L]``).
      correct_rate: the prompt's accuracy ``r_q`` in (0, 1) ``[...]`` (broadcastable); groups
        that are all right or all wrong carry no signal and should be masked out.
      pos_floor: value floor for ``R`` in the positive term.
      neg_floor: value floor for ``(1 - r_q R)/(1 - r_q)`` in the negative term.

    Returns:
      Loss per element, the broadcast shape of the inputs.
    """
    chex.assert_equal_shape([logp, old_logp])
    ratio = jnp.exp(logp - jax.lax.stop_gradient(old_logp))
    correct_rate = jax.lax.stop_gradient(correct_rate)
    pos = -jnp.log(_floor_keep_grad(ratio, pos_floor))
    neg_arg = (1.0 - correct_rate * ratio) / (1.0 - correct_rate)
    neg = -jnp.log(_floor_keep_grad(neg_arg, neg_floor))
    return jnp.where(correct > 0, pos, neg)


def pacs(
    seq_logp: jax.Array,
    seq_ref_logp: jax.Array,
    reward: jax.Array,
    mask: jax.Array | None = None,
    *,
    beta: float | jax.Array,
) -> jax.Array:
    """Per-sample PACS loss: BCE between a policy-parameterized score ψ and the 0/1 reward.

    Reward proxy ``r̂_i = β (log π_θ(o_i|q) - log π_ref(o_i|q))`` (sequence log-probs); score
    ``ψ_i = r̂_i - mean_{j≠i} r̂_j`` (leave-one-out over the group);
    ``ℓ_i = -[R_i log σ(ψ_i) + (1 - R_i) log(1 - σ(ψ_i))]``. Its gradient is
    ``-(R_i - σ(ψ_i)) ∇ψ_i``: a policy gradient whose weight ``R - σ(ψ)`` acts as an implicit
    critic. Li et al. 2025, "Implicit Actor Critic Coupling via a Supervised Learning Framework
    for RLVR" (PACS, arXiv 2509.02522). The anchor π_ref is whichever fixed policy the caller
    chooses (the paper uses the policy's log-probability ratio to an earlier policy).

    Args:
      seq_logp: sequence log-probs ``Σ_t log π_θ`` ``[B, G]``.
      seq_ref_logp: sequence log-probs of the anchor policy ``[B, G]``.
      reward: 0/1 outcome labels ``[B, G]``.
      mask: ``[B, G]``, 1 = real sample; groups need at least two real samples.
      beta: scale β > 0 of the reward proxy.

    Returns:
      Loss per sample ``[B, G]``, 0 at padded samples.
    """
    chex.assert_rank(seq_logp, 2)
    chex.assert_equal_shape([seq_logp, seq_ref_logp, reward])
    m = jnp.ones_like(seq_logp) if mask is None else mask.astype(seq_logp.dtype)
    chex.assert_equal_shape([seq_logp, m])
    checks.check_range("beta", beta, low=0.0, low_open=True)
    real = m > 0
    r_hat = jnp.where(real, beta * (seq_logp - jax.lax.stop_gradient(seq_ref_logp)), 0.0)
    n = jnp.sum(m, axis=1, keepdims=True)
    others_mean = (jnp.sum(r_hat, axis=1, keepdims=True) - r_hat) / jnp.maximum(n - 1, 1.0)
    psi = r_hat - others_mean
    label = jnp.where(real, jax.lax.stop_gradient(reward), 0.0)
    bce = jax.nn.softplus(psi) - label * psi
    return jnp.where(real, bce, 0.0)


def rover(
    logp: jax.Array,
    old_logp: jax.Array,
    mean_log_probs: jax.Array,
    old_mean_log_probs: jax.Array,
    reward: jax.Array,
    mask: jax.Array,
    *,
    rho: float | jax.Array,
) -> jax.Array:
    """Per-token ROVER loss: the uniform random policy's Q, regressed onto its Bellman target.

    ROVER parameterizes ``Q(s_t, a) = ρ (log π_θ(a|s_t) - log π_old(a|s_t))`` and evaluates the
    *uniform* policy: its value of the next state is the vocabulary mean of Q,
    ``V(s_{t+1}) = (1/|V|) Σ_a Q(s_{t+1}, a) = ρ (mean_a log π_θ(a|s_{t+1}) -
    mean_a log π_old(a|s_{t+1}))``, zero after the last token. With the group-centred sequence
    reward ``r̃`` given to every token,

        ℓ_t = (Q(s_t, o_t) - sg[r̃ + V(s_{t+1})])².

    Sampling from π_θ = π_old · exp(Q/ρ) / Z is sampling from softmax(Q/ρ) around π_old.
    He et al. 2025, "Random Policy Valuation is Enough for LLM Reasoning with Verifiable Rewards"
    (ROVER, arXiv 2509.24981). At θ = θ_old, Q = V = 0 and the gradient is
    ``-2 ρ r̃ ∇log π_θ(o_t|s_t)``: REINFORCE with the centred reward.

    Args:
      logp: log π_θ of the sampled tokens ``[N, A]``.
      old_logp: log π_old of the same tokens ``[N, A]``.
      mean_log_probs: vocabulary mean of log π_θ(·|s_t) at each completion position ``[N, A]``
        (the state before token t); only ``t + 1`` is read, under a stop-gradient.
      old_mean_log_probs: the same under π_old ``[N, A]``.
      reward: group-centred reward r̃ of each sequence ``[N]`` (treated as a constant).
      mask: ``[N, A]``, 1 = real token; the last real token has no successor.
      rho: the scale ρ > 0 of Q (the temperature of softmax(Q/ρ)).

    Returns:
      Loss per token ``[N, A]``, 0 at padding.
    """
    chex.assert_rank(logp, 2)
    chex.assert_equal_shape([logp, old_logp, mean_log_probs, old_mean_log_probs, mask])
    chex.assert_shape(reward, logp.shape[:1])
    checks.check_range("rho", rho, low=0.0, low_open=True)
    m = mask.astype(logp.dtype)
    q = rho * (logp - jax.lax.stop_gradient(old_logp))
    v = rho * (mean_log_probs - old_mean_log_probs)
    # V(s_{t+1}) read at position t + 1 where that token is real; zero past the end.
    v_next = jnp.concatenate([v[:, 1:] * m[:, 1:], jnp.zeros_like(v[:, :1])], axis=1)
    target = jax.lax.stop_gradient(reward[:, None] + v_next)
    return jnp.where(m > 0, jnp.square(q - target), 0.0)


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """Entropy of a categorical distribution given by logits.

    ``H = -Σ_a π(a) log π(a)`` with ``π = softmax(logits)``.

    Args:
      logits: unnormalized log-probabilities ``[..., A]``.

    Returns:
      Entropy per distribution, ``[...]``.
    """
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy of a diagonal Gaussian, summed over action dimensions.

    ``H = Σ_d (log σ_d + ½ log(2πe))``.

    Args:
      log_std: log standard deviations ``[..., D]``.

    Returns:
      Entropy per distribution, ``[...]``.
    """
    return jnp.sum(log_std + 0.5 * jnp.log(2.0 * jnp.pi * jnp.e), axis=-1)
