"""KL estimators, exact KL, and f-divergences as pure per-element functions.

Per-token estimators (Schulman 2020, "Approximating KL Divergence",
http://joschu.net/blog/kl-approx.html) of ``KL(π‖π_ref) = E_{x~π}[log π(x) - log π_ref(x)]`` from
one sample ``x ~ π``, written with ``log r = ref_logp - logp``:

=========  ===================  ===================================  ==========================
estimator  value                bias of the value                    E_π[∇_θ k] used as a loss
=========  ===================  ===================================  ==========================
``k1``     ``-log r``           unbiased; high variance; can be < 0  0 (no KL gradient at all)
``k2``     ``½ (log r)²``       biased (2nd order in log r); >= 0    ∇ KL(π‖π_ref), exactly
``k3``     ``(r - 1) - log r``  unbiased; >= 0; low variance         ∇ KL(π_ref‖π) (forward)
=========  ===================  ===================================  ==========================

"As a loss" means ``k`` is added to the loss and differentiated through ``logp`` with the samples
held fixed (KL-in-loss, as GRPO does with k3). To optimize the reverse KL ``KL(π‖π_ref)`` put
``k1`` in the *reward* (KL-in-reward, REINFORCE/PPO on ``r - β k1``), or use ``k2`` in the loss.
GRPO's k3-in-loss follows the gradient of the *forward* KL ``KL(π_ref‖π)`` (for sequences: of
each prefix's next-token forward KL, weighted by π's prefix distribution); see Tang & Munos
2025, "On a few pitfalls in KL divergence gradient estimation for RL". ``experiments/kl_bayes.py``
checks all of this exactly on a tabular sequence model.
"""

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp

from rljax import checks


def k1(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """k1 estimator ``log π(x) - log π_ref(x)`` of ``KL(π‖π_ref)``, ``x ~ π``.

    Unbiased, high variance, can be negative. Its loss gradient ``∇ log π`` has expectation 0,
    so use it in the reward, not the loss. Schulman 2020, "Approximating KL Divergence".

    Args:
      logp: log π(x) of the sampled tokens/actions ``[...]``.
      ref_logp: log π_ref(x) of the same samples ``[...]``.

    Returns:
      Per-element estimate ``[...]``.
    """
    chex.assert_equal_shape([logp, ref_logp])
    return logp - ref_logp


def k2(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """k2 estimator ``½ (log π(x) - log π_ref(x))²`` of ``KL(π‖π_ref)``, ``x ~ π``.

    Biased (it is the f-divergence with ``f(u) = ½ log² u``, equal to KL to second order), low
    variance, >= 0. As a loss its gradient ``(log π - log π_ref) ∇ log π`` is, in expectation
    under π, exactly ``∇ KL(π‖π_ref)``. Schulman 2020, "Approximating KL Divergence".

    Args:
      logp: log π(x) ``[...]``.
      ref_logp: log π_ref(x) ``[...]``.

    Returns:
      Per-element estimate ``[...]``.
    """
    chex.assert_equal_shape([logp, ref_logp])
    return 0.5 * jnp.square(logp - ref_logp)


def k3(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """k3 estimator ``(r - 1) - log r`` with ``r = π_ref(x)/π(x)``, of ``KL(π‖π_ref)``, ``x ~ π``.

    Unbiased (``E_π[r] = 1``), >= 0, lower variance than k1 when π ≈ π_ref. Used per token in
    GRPO's KL-in-loss (Shao et al. 2024, "DeepSeekMath"). As a loss its expected gradient is
    ``E_π[(1 - r) ∇ log π] = ∇ KL(π_ref‖π)``, the forward KL. Schulman 2020.

    Args:
      logp: log π(x) ``[...]``.
      ref_logp: log π_ref(x) ``[...]``.

    Returns:
      Per-element estimate ``[...]``.
    """
    chex.assert_equal_shape([logp, ref_logp])
    log_r = ref_logp - logp
    return jnp.expm1(log_r) - log_r


def categorical_kl(logits_p: jax.Array, logits_q: jax.Array) -> jax.Array:
    """Exact ``KL(p‖q) = Σ_a p(a) (log p(a) - log q(a))`` between categoricals given by logits.

    Args:
      logits_p: logits of p ``[..., A]``.
      logits_q: logits of q ``[..., A]``.

    Returns:
      KL per distribution ``[...]``, in nats.
    """
    chex.assert_equal_shape([logits_p, logits_q])
    log_p = jax.nn.log_softmax(logits_p, axis=-1)
    log_q = jax.nn.log_softmax(logits_q, axis=-1)
    return jnp.sum(jnp.exp(log_p) * (log_p - log_q), axis=-1)


def kl_in_reward(
    reward: jax.Array, kl: jax.Array, mask: jax.Array, *, beta: float | jax.Array
) -> jax.Array:
    """Per-token rewards for KL-in-reward RLHF: ``r_t = -β kl_t + 1[t = last] R``.

    Ziegler et al. 2019, "Fine-Tuning Language Models from Human Preferences"; Ouyang et al.
    2022 (InstructGPT). The sequence reward goes on the last real token; every real token pays
    ``β kl_t`` (use ``k1`` for the unbiased reverse-KL penalty). Sum over t to get the
    sequence-level penalized reward ``R - β Σ_t kl_t``.

    Args:
      reward: sequence rewards ``[B]``.
      kl: per-token KL estimates ``[B, L]`` (treated as constants).
      mask: ``[B, L]``, 1 = real token (right-padded).
      beta: KL coefficient β >= 0.

    Returns:
      Per-token rewards ``[B, L]``, 0 at padding, so every row sums to ``R - β Σ_t kl_t``; a
      row with no real token (an empty response) keeps its reward ``R`` at position 0. Padded
      entries never influence the result, even when they hold NaN or inf.
    """
    chex.assert_rank([reward, kl], [1, 2])
    chex.assert_equal_shape([kl, mask])
    checks.check_range("beta", beta, low=0.0)
    real = mask > 0
    n_tok = jnp.sum(real, axis=1).astype(jnp.int32)
    last = jax.nn.one_hot(jnp.maximum(n_tok - 1, 0), kl.shape[1], dtype=kl.dtype)
    penalty = jnp.where(real, -beta * jax.lax.stop_gradient(kl), 0.0)
    return penalty + reward[:, None] * last


def kl_in_loss(loss: jax.Array, kl: jax.Array, *, beta: float | jax.Array) -> jax.Array:
    """Per-element KL-in-loss ``ℓ + β kl`` (GRPO: k3 per token, gradient flows through kl).

    Shao et al. 2024, "DeepSeekMath". See the module table for which divergence's gradient each
    estimator gives when used here.

    Args:
      loss: per-element policy loss ``[...]``.
      kl: per-element KL estimate ``[...]`` (differentiable).
      beta: KL coefficient β >= 0.

    Returns:
      ``[...]``.
    """
    chex.assert_equal_shape([loss, kl])
    checks.check_range("beta", beta, low=0.0)
    return loss + beta * kl


# ---------------------------------------------------------------------------------------------
# f-divergences ``D_f(P‖Q) = E_Q[f(P/Q)]`` with convex ``f``, ``f(1) = 0`` ("The Choice of
# Divergence", Li et al. 2025, arXiv 2509.07430, DPH-RL). With P = π_θ and Q = π_ref and samples
# from π_ref, ``f(exp(logp - ref_logp))`` is a per-sample loss that needs no online reference
# model: the reference's samples and log-probs can be precomputed.
# ---------------------------------------------------------------------------------------------


def reverse_kl_generator(log_u: jax.Array) -> jax.Array:
    """Reverse KL generator ``f(u) = u log u``: ``D_f(π‖π_ref) = KL(π‖π_ref)`` (mode-seeking).

    Li et al. 2025, "The Choice of Divergence" (DPH-RL); f-divergences: Csiszár 1967.

    Args:
      log_u: log density ratio ``log(π/π_ref)`` ``[...]`` (log space for stability).

    Returns:
      ``f(u)`` ``[...]``.
    """
    return jnp.exp(log_u) * log_u


def forward_kl_generator(log_u: jax.Array) -> jax.Array:
    """Forward KL generator ``f(u) = -log u``: ``D_f(π‖π_ref) = KL(π_ref‖π)`` (mass-covering).

    Li et al. 2025, "The Choice of Divergence" (DPH-RL); f-divergences: Csiszár 1967.

    Args:
      log_u: log density ratio ``log(π/π_ref)`` ``[...]`` (log space for stability).

    Returns:
      ``f(u)`` ``[...]``.
    """
    return -log_u


def js_generator(log_u: jax.Array) -> jax.Array:
    """Jensen-Shannon generator ``f(u) = ½ [u log u - (1 + u) log((1 + u)/2)]`` (mass-covering).

    Li et al. 2025, "The Choice of Divergence" (DPH-RL); f-divergences: Csiszár 1967.

    Args:
      log_u: log density ratio ``log(π/π_ref)`` ``[...]`` (log space for stability).

    Returns:
      ``f(u)`` ``[...]``.
    """
    u = jnp.exp(log_u)
    log_mid = jnp.logaddexp(log_u, 0.0) - jnp.log(2.0)
    return 0.5 * (u * log_u - (1.0 + u) * log_mid)


def total_variation_generator(log_u: jax.Array) -> jax.Array:
    """Total variation generator ``f(u) = ½ |u - 1|``.

    Li et al. 2025, "The Choice of Divergence" (DPH-RL); f-divergences: Csiszár 1967.

    Args:
      log_u: log density ratio ``log(π/π_ref)`` ``[...]`` (log space for stability).

    Returns:
      ``f(u)`` ``[...]``.
    """
    return 0.5 * jnp.abs(jnp.expm1(log_u))


def chi2_generator(log_u: jax.Array) -> jax.Array:
    """Pearson χ² generator ``f(u) = (u - 1)²``.

    Li et al. 2025, "The Choice of Divergence" (DPH-RL); f-divergences: Csiszár 1967.

    Args:
      log_u: log density ratio ``log(π/π_ref)`` ``[...]`` (log space for stability).

    Returns:
      ``f(u)`` ``[...]``.
    """
    return jnp.square(jnp.expm1(log_u))


def f_divergence_sample(
    logp: jax.Array,
    ref_logp: jax.Array,
    *,
    generator: Callable[[jax.Array], jax.Array],
) -> jax.Array:
    """Per-sample estimate ``f(π(x)/π_ref(x))`` of ``D_f(π‖π_ref)`` from ``x ~ π_ref``.

    Unbiased for ``D_f(π‖π_ref) = E_{π_ref}[f(π/π_ref)]`` and differentiable in ``logp``: the
    DPH-RL loss on the initial policy's samples (Li et al. 2025, "The Choice of Divergence").
    With ``forward_kl_generator`` this is ``-log π(x) + log π_ref(x)``, i.e. SFT on π_ref's samples.

    Args:
      logp: log π(x) of reference samples ``[...]``.
      ref_logp: log π_ref(x) of the same samples ``[...]``.
      generator: ``f`` as a function of ``log u`` (e.g. ``js_generator``).

    Returns:
      Per-element estimate ``[...]``.
    """
    chex.assert_equal_shape([logp, ref_logp])
    return generator(logp - ref_logp)


def categorical_f_divergence(
    logits_p: jax.Array,
    logits_q: jax.Array,
    *,
    generator: Callable[[jax.Array], jax.Array],
) -> jax.Array:
    """Exact ``D_f(p‖q) = Σ_a q(a) f(p(a)/q(a))`` between categoricals given by logits.

    Args:
      logits_p: logits of p ``[..., A]``.
      logits_q: logits of q ``[..., A]`` (q > 0 wherever p > 0).
      generator: ``f`` as a function of ``log u``.

    Returns:
      Divergence per distribution ``[...]``.
    """
    chex.assert_equal_shape([logits_p, logits_q])
    log_p = jax.nn.log_softmax(logits_p, axis=-1)
    log_q = jax.nn.log_softmax(logits_q, axis=-1)
    return jnp.sum(jnp.exp(log_q) * generator(log_p - log_q), axis=-1)
