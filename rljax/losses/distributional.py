"""Distributional value losses: C51 categorical projection and QR-DQN quantile regression.

Index convention as in ``value``: ``r_t``, ``discount_t = γ (1 - terminated_t)``, next-state
quantities ``*_tp1`` come from the target network and carry no gradient.
"""

import chex
import jax
import jax.numpy as jnp

from rljax import checks
from rljax.losses import classification
from rljax.losses import value as value_losses


def categorical_projection(
    support_next: jax.Array, probs_next: jax.Array, support: jax.Array
) -> jax.Array:
    """Project a distribution on atoms ``support_next`` onto the fixed ``support`` (C51's Φ).

    Each source atom ``z_i`` (clipped to ``[s_0, s_{N-1}]``) splits its mass between its two
    neighbouring atoms by linear interpolation (the triangular kernel ``h_j``):
    ``p_j = Σ_i q_i h_j(clip(z_i))``. Total mass is kept and, when the support covers every
    ``z_i``, so is the mean. Bellemare et al. 2017, "A Distributional Perspective on RL";
    Rowland et al. 2018 (the Cramér projection). ``support`` may be non-uniform.

    Args:
      support_next: source atom locations ``[..., M]`` (e.g. ``r + γ z``).
      probs_next: source probabilities ``[..., M]``.
      support: increasing target atoms ``[N]``.

    Returns:
      Projected probabilities ``[..., N]``.
    """
    chex.assert_equal_shape([support_next, probs_next])
    chex.assert_rank(support, 1)
    checks.check_increasing("support", support)
    checks.check_distribution("probs_next", probs_next)
    z = jnp.clip(support_next, support[0], support[-1])[..., :, None]  # [..., M, 1]
    gaps = support[1:] - support[:-1]
    d_left = jnp.concatenate([jnp.ones((1,), support.dtype), gaps])  # s_j - s_{j-1}
    d_right = jnp.concatenate([gaps, jnp.ones((1,), support.dtype)])  # s_{j+1} - s_j
    diff = z - support  # [..., M, N]
    kernel = jnp.where(diff >= 0, 1.0 - diff / d_right, 1.0 + diff / d_left)
    kernel = jnp.clip(kernel, 0.0, 1.0)
    return jnp.sum(probs_next[..., :, None] * kernel, axis=-2)


def categorical_td_target(
    r_t: jax.Array, discount_t: jax.Array, probs_tp1: jax.Array, support: jax.Array
) -> jax.Array:
    """Projected distributional Bellman target ``Φ(r_t + discount_t z, p_tp1)``.

    Args:
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      probs_tp1: next-state return distribution of the chosen next action ``[B, N]``.
      support: atoms ``[N]``.

    Returns:
      Target probabilities ``[B, N]`` (no gradient).
    """
    chex.assert_rank([r_t, discount_t, probs_tp1], [1, 1, 2])
    z_tp1 = r_t[:, None] + discount_t[:, None] * support[None, :]
    target = categorical_projection(z_tp1, probs_tp1, support)
    return jax.lax.stop_gradient(target)


def categorical_q_learning(
    logits_q_t: jax.Array,
    a_t: jax.Array,
    r_t: jax.Array,
    discount_t: jax.Array,
    logits_q_tp1: jax.Array,
    support: jax.Array,
) -> jax.Array:
    """C51 loss: cross-entropy of ``Z(s_t, a_t)`` against the projected greedy target.

    The next action is ``argmax_a E[Z_target(s'_t, a)]``; for double-DQN selection build the
    target with ``categorical_td_target`` and use ``classification.cross_entropy``. Bellemare et
    al. 2017, "A Distributional Perspective on Reinforcement Learning".

    Args:
      logits_q_t: online logits ``[B, A, N]``.
      a_t: taken actions ``[B]``.
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      logits_q_tp1: target-network logits at the next states ``[B, A, N]``.
      support: atoms ``[N]``.

    Returns:
      Loss per transition ``[B]``.
    """
    chex.assert_rank([logits_q_t, a_t, logits_q_tp1], [3, 1, 3])
    probs_tp1 = jax.nn.softmax(logits_q_tp1, axis=-1)
    a_tp1 = jnp.argmax(jnp.sum(probs_tp1 * support, axis=-1), axis=-1)
    probs_tp1_a = jnp.take_along_axis(probs_tp1, a_tp1[:, None, None], axis=1)[:, 0]
    target = categorical_td_target(r_t, discount_t, probs_tp1_a, support)
    logits_a = jnp.take_along_axis(logits_q_t, a_t[:, None, None].astype(jnp.int32), axis=1)[:, 0]
    return classification.cross_entropy(logits_a, target)


def quantile_huber(
    pred_quantiles: jax.Array, target_samples: jax.Array, *, kappa: float = 1.0
) -> jax.Array:
    """Quantile-Huber regression loss of N predicted quantiles against M target samples.

    ``τ_i = (2i + 1)/(2N)``, ``u_ij = y_j - θ_i``,
    ``ℓ = Σ_i (1/M) Σ_j |τ_i - 1[u_ij < 0]| · H_κ(u_ij)/κ`` (``κ = 0``: the plain quantile loss
    ``|τ - 1[u<0]| |u|``). Dabney et al. 2018, "Distributional RL with Quantile Regression"
    (QR-DQN). Each θ_i is minimized at the τ_i-quantile of the targets (for κ → 0).

    Args:
      pred_quantiles: predicted quantiles θ ``[..., N]``.
      target_samples: target samples y ``[..., M]`` (no gradient).
      kappa: Huber threshold κ >= 0 (static).

    Returns:
      Loss per element ``[...]``.
    """
    if not kappa >= 0:
        raise ValueError(f"kappa must be >= 0, got {kappa!r}")
    chex.assert_equal_shape_prefix([pred_quantiles, target_samples], pred_quantiles.ndim - 1)
    n = pred_quantiles.shape[-1]
    tau = (jnp.arange(n, dtype=pred_quantiles.dtype) + 0.5) / n
    u = jax.lax.stop_gradient(target_samples)[..., None, :] - pred_quantiles[..., :, None]
    weight = jnp.abs(tau[:, None] - (u < 0).astype(u.dtype))
    base = jnp.abs(u) if kappa == 0 else value_losses.huber(u, delta=kappa) / kappa
    return jnp.sum(jnp.mean(weight * base, axis=-1), axis=-1)


def quantile_q_learning(
    dist_q_t: jax.Array,
    a_t: jax.Array,
    r_t: jax.Array,
    discount_t: jax.Array,
    dist_q_tp1: jax.Array,
    *,
    kappa: float = 1.0,
) -> jax.Array:
    """QR-DQN loss: quantile-Huber of ``θ(s_t, a_t)`` against ``r_t + discount_t θ_tp1(a*)``.

    ``a* = argmax_a mean_i θ_target(s'_t, a)_i``. Dabney et al. 2018 (QR-DQN).

    Args:
      dist_q_t: online quantiles ``[B, A, N]``.
      a_t: taken actions ``[B]``.
      r_t: rewards ``[B]``.
      discount_t: ``γ (1 - terminated_t)`` ``[B]``.
      dist_q_tp1: target-network quantiles at the next states ``[B, A, N]``.
      kappa: Huber threshold κ >= 0.

    Returns:
      Loss per transition ``[B]``.
    """
    chex.assert_rank([dist_q_t, a_t, r_t, discount_t, dist_q_tp1], [3, 1, 1, 1, 3])
    a_tp1 = jnp.argmax(jnp.mean(dist_q_tp1, axis=-1), axis=-1)
    theta_tp1 = jnp.take_along_axis(dist_q_tp1, a_tp1[:, None, None], axis=1)[:, 0]
    target = r_t[:, None] + discount_t[:, None] * theta_tp1
    theta_t = jnp.take_along_axis(dist_q_t, a_t[:, None, None].astype(jnp.int32), axis=1)[:, 0]
    return quantile_huber(theta_t, jax.lax.stop_gradient(target), kappa=kappa)


def implicit_quantile_huber(
    pred_quantiles: jax.Array,
    tau: jax.Array,
    target_samples: jax.Array,
    *,
    kappa: float = 1.0,
) -> jax.Array:
    """Quantile-Huber loss at *sampled* fractions τ (IQN): N predictions against M targets.

    ``u_ij = y_j - θ_i`` and
    ``ℓ = Σ_i (1/M) Σ_j |τ_i - 1[u_ij < 0]| · H_κ(u_ij)/κ``, with ``H_κ`` the Huber loss
    (``κ = 0``: the plain quantile loss ``|τ - 1[u<0]| |u|``). θ_i = Z_τ_i(s, a) is the network's
    value at the fraction τ_i it was given; the targets are ``y_j = r + γ Z_τ'_j(s', a*)`` at
    independent fractions τ'. Dabney et al. 2018b, "Implicit Quantile Networks for
    Distributional RL", eq. (3). With ``τ_i = (2i + 1)/(2N)`` it is QR-DQN's ``quantile_huber``.

    Args:
      pred_quantiles: predicted quantile values θ ``[..., N]``.
      tau: the fractions θ was evaluated at, in [0, 1] ``[..., N]`` (no gradient).
      target_samples: target samples y ``[..., M]`` (no gradient).
      kappa: Huber threshold κ >= 0 (static).

    Returns:
      Loss per element ``[...]``.
    """
    if not kappa >= 0:
        raise ValueError(f"kappa={kappa!r} is invalid; allowed: >= 0")
    chex.assert_equal_shape([pred_quantiles, tau])
    chex.assert_equal_shape_prefix([pred_quantiles, target_samples], pred_quantiles.ndim - 1)
    u = jax.lax.stop_gradient(target_samples)[..., None, :] - pred_quantiles[..., :, None]
    tau = jax.lax.stop_gradient(tau)[..., :, None]
    weight = jnp.abs(tau - (u < 0).astype(u.dtype))
    base = jnp.abs(u) if kappa == 0 else value_losses.huber(u, delta=kappa) / kappa
    return jnp.sum(jnp.mean(weight * base, axis=-1), axis=-1)
