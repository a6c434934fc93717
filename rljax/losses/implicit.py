"""Objectives whose policy log-ratio is an implicit model, per element (no averaging): NFT's
implicit negative policy, PACS's implicit critic (a reward score), ROVER's Q of the uniform
random policy.
"""

import chex
import jax
import jax.numpy as jnp

from rljax import checks


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
