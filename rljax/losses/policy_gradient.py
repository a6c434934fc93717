"""Policy-gradient losses on per-token importance ratios, as pure per-element functions (no
averaging; see ``reduce``): REINFORCE, PPO's clip (DAPO's asymmetric range, TRL's two-sided
``delta``), dual clip, CISPO, SAPO's soft gate, and the entropies.

Sequence-level ratios (GSPO, LUSPO, VESPO) are in ``rljax.losses.sequence``; objectives whose
log-ratio is an implicit model (NFT, PACS, ROVER) in ``rljax.losses.implicit``.
"""

import chex
import jax
import jax.numpy as jnp

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
