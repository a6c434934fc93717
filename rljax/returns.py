"""Advantages and returns: GAE and λ-returns that respect termination vs truncation.

Conventions (see ``rljax.types``): time-major ``[T, B]``; for transition ``t``, ``r_t`` is its
reward, ``discount_t = γ (1 - terminated_t)``, ``v_t = V(s_t)``, ``v_tp1 = V(s'_t)`` is the value
of the *true* next state (the final observation when the episode ended), and ``done_t`` is 1 where
the environment reset after step ``t`` (terminated or truncated), which stops the λ-trace.
"""

import chex
import jax
import jax.numpy as jnp

from rljax import checks


def gae(
    r_t: jax.Array,
    discount_t: jax.Array,
    v_t: jax.Array,
    v_tp1: jax.Array,
    done_t: jax.Array,
    *,
    lambda_: float | jax.Array,
) -> jax.Array:
    """Generalized advantage estimation over a time-major rollout.

    ``δ_t = r_t + discount_t · v_tp1_t - v_t`` and
    ``A_t = δ_t + discount_t · λ · (1 - done_t) · A_{t+1}``, with ``A_T = 0``.
    Schulman et al. 2016, "High-Dimensional Continuous Control Using GAE". Termination zeroes the
    bootstrap through ``discount_t``; truncation keeps the bootstrap from the final observation
    but cuts the trace through ``done_t``.

    Args:
      r_t: rewards ``[T, ...]``.
      discount_t: ``γ (1 - terminated_t)`` ``[T, ...]``.
      v_t: values of the states the actions were taken in ``[T, ...]``.
      v_tp1: values of the true next states ``[T, ...]``.
      done_t: 1 where the episode ended at step t (terminated or truncated) ``[T, ...]``.
      lambda_: trace parameter λ in [0, 1] (scalar).

    Returns:
      Advantages ``[T, ...]``.
    """
    chex.assert_equal_shape([r_t, discount_t, v_t, v_tp1, done_t])
    checks.check_range("lambda_", lambda_, low=0.0, high=1.0)
    delta_t = r_t + discount_t * v_tp1 - v_t
    trace_t = discount_t * lambda_ * (1.0 - done_t.astype(r_t.dtype))

    def _step(adv_tp1, inputs):
        delta, trace = inputs
        # Where the trace is cut (episode end, λ = 0 or γ = 0) nothing of A_{t+1} flows back:
        # a select, not 0 · A_{t+1}, so a NaN in the next episode cannot cross the boundary.
        adv = delta + trace * jnp.where(trace == 0, 0.0, adv_tp1)
        return adv, adv

    _, adv_t = jax.lax.scan(_step, jnp.zeros_like(r_t[0]), (delta_t, trace_t), reverse=True)
    return adv_t


def lambda_returns(
    r_t: jax.Array,
    discount_t: jax.Array,
    v_t: jax.Array,
    v_tp1: jax.Array,
    done_t: jax.Array,
    *,
    lambda_: float | jax.Array,
) -> jax.Array:
    """λ-returns ``G^λ_t = A^GAE_t + v_t``; the critic's regression target in PPO.

    Equivalently ``G_t = r_t + discount_t ((1 - λ') v_tp1_t + λ' G_{t+1})`` with
    ``λ' = λ (1 - done_t)``. Sutton & Barto 2018, §12.1.

    Args:
      r_t, discount_t, v_t, v_tp1, done_t: as in ``gae``, ``[T, ...]``.
      lambda_: λ in [0, 1].

    Returns:
      λ-returns ``[T, ...]``.
    """
    return gae(r_t, discount_t, v_t, v_tp1, done_t, lambda_=lambda_) + v_t


# ---------------------------------------------------------------------------------------------
# Group-relative advantages for outcome rewards: ``rewards[B, G]`` holds the scalar rewards of G
# sampled responses to each of B prompts; ``mask[B, G]`` is 1 for real samples, 0 for padding.
# Padded samples get advantage 0 and never enter any statistic (NaN or inf rewards in padded
# slots included: they are replaced by 0 before any arithmetic). ``ddof=1`` (the unbiased std, as
# ``torch.std`` in common GRPO code) reproduces the papers' worked numbers; ``ddof=0`` is the
# population std.
# ---------------------------------------------------------------------------------------------


def _group_mask(rewards: jax.Array, mask: jax.Array | None) -> tuple[jax.Array, jax.Array]:
    """``(rewards with padded entries set to 0, float mask)``."""
    chex.assert_rank(rewards, 2)
    if mask is None:
        return rewards, jnp.ones_like(rewards)
    chex.assert_equal_shape([rewards, mask])
    m = mask.astype(rewards.dtype)
    return jnp.where(m > 0, rewards, 0.0), m


def _check_eps(eps) -> None:
    checks.check_range("eps", eps, low=0.0)


def _masked_moments(
    x: jax.Array, mask: jax.Array, axis, ddof: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Masked mean, std (with ``ddof``) and count over ``axis`` (kept as size-1 dims)."""
    count = jnp.sum(mask, axis=axis, keepdims=True)
    mean = jnp.sum(x * mask, axis=axis, keepdims=True) / jnp.maximum(count, 1.0)
    sq = jnp.sum(jnp.square(x - mean) * mask, axis=axis, keepdims=True)
    std = jnp.sqrt(sq / jnp.maximum(count - ddof, 1.0))
    return mean, std, count


def _check_ddof(ddof: int) -> None:
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")


def grpo_advantages(
    rewards: jax.Array,
    mask: jax.Array | None = None,
    *,
    eps: float = 1e-6,
    ddof: int = 1,
) -> jax.Array:
    """GRPO group-relative advantage ``A_i = (r_i - mean_g r) / (std_g r + ε)``.

    Shao et al. 2024, "DeepSeekMath" (GRPO, outcome supervision). Groups whose rewards are all
    equal get ``A = 0``.

    Args:
      rewards: scalar rewards ``[B, G]`` (G samples per prompt).
      mask: ``[B, G]``, 1 = real sample, 0 = padding; ``None`` means all real.
      eps: added to the std to avoid 0/0.
      ddof: 1 for the unbiased std (default, as ``torch.std``), 0 for the population std.

    Returns:
      Advantages ``[B, G]``, 0 at padded samples.
    """
    _check_ddof(ddof)
    _check_eps(eps)
    rewards, m = _group_mask(rewards, mask)
    mean, std, _ = _masked_moments(rewards, m, axis=1, ddof=ddof)
    return (rewards - mean) / (std + eps) * m


def dr_grpo_advantages(rewards: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """Dr.GRPO advantage ``A_i = r_i - mean_g r``: GRPO without the std division.

    Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective" (Dr.GRPO):
    dividing by the group std up-weights near-uniform (too easy / too hard) prompts.

    Args:
      rewards: ``[B, G]``.
      mask: ``[B, G]`` or ``None``.

    Returns:
      Advantages ``[B, G]``, 0 at padded samples.
    """
    rewards, m = _group_mask(rewards, mask)
    mean, _, _ = _masked_moments(rewards, m, axis=1, ddof=0)
    return (rewards - mean) * m


def lite_ppo_advantages(
    rewards: jax.Array,
    mask: jax.Array | None = None,
    *,
    eps: float = 1e-6,
    ddof: int = 1,
) -> jax.Array:
    """Group mean, batch std: ``A_i = (r_i - mean_g r) / (std_batch r + ε)``.

    Liu et al. 2025, "Part I: Tricks or Traps? A Deep Dive into RL for LLM Reasoning" ("Lite
    PPO"): group-level centring with batch-level scale is robust when reward scales vary. The
    std is taken over every real sample of the batch.

    Args:
      rewards: ``[B, G]``.
      mask: ``[B, G]`` or ``None``.
      eps: added to the std.
      ddof: 1 (default) unbiased, 0 population.

    Returns:
      Advantages ``[B, G]``, 0 at padded samples.
    """
    _check_ddof(ddof)
    _check_eps(eps)
    rewards, m = _group_mask(rewards, mask)
    group_mean, _, _ = _masked_moments(rewards, m, axis=1, ddof=ddof)
    _, batch_std, _ = _masked_moments(rewards, m, axis=(0, 1), ddof=ddof)
    return (rewards - group_mean) / (batch_std + eps) * m


def batch_advantages(
    rewards: jax.Array,
    mask: jax.Array | None = None,
    *,
    eps: float = 1e-6,
    ddof: int = 1,
) -> jax.Array:
    """Batch-normalized advantage ``A_i = (r_i - mean_batch r) / (std_batch r + ε)``.

    The batch-level normalization ablated in "Tricks or Traps?" (Liu et al. 2025) and used by
    ScaleRL ("The Art of Scaling RL Compute for LLMs", arXiv 2510.13786).

    Args:
      rewards: ``[B, G]`` (any grouping; statistics are over all real samples).
      mask: ``[B, G]`` or ``None``.
      eps: added to the std.
      ddof: 1 (default) unbiased, 0 population.

    Returns:
      Advantages ``[B, G]``, 0 at padded samples.
    """
    _check_ddof(ddof)
    _check_eps(eps)
    rewards, m = _group_mask(rewards, mask)
    mean, std, _ = _masked_moments(rewards, m, axis=(0, 1), ddof=ddof)
    return (rewards - mean) / (std + eps) * m


def rloo_advantages(rewards: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """Leave-one-out baseline ``A_i = r_i - (1/(n-1)) Σ_{j≠i} r_j = n/(n-1) (r_i - mean_g r)``.

    Kool et al. 2019, "Buy 4 REINFORCE Samples, Get a Baseline for Free!"; Ahmadian et al.
    2024, "Back to Basics" (RLOO). ``n`` is the number of real samples in the group; a group with
    a single real sample gets ``A = 0`` (no baseline exists).

    Args:
      rewards: ``[B, G]``.
      mask: ``[B, G]`` or ``None``.

    Returns:
      Advantages ``[B, G]``, 0 at padded samples.
    """
    rewards, m = _group_mask(rewards, mask)
    mean, _, count = _masked_moments(rewards, m, axis=1, ddof=0)
    scale = jnp.where(count > 1, count / jnp.maximum(count - 1.0, 1.0), 0.0)
    return scale * (rewards - mean) * m


def ngrpo_advantages(
    rewards: jax.Array,
    mask: jax.Array | None = None,
    *,
    r_max: float = 1.0,
    eps: float = 1e-6,
    ddof: int = 1,
) -> jax.Array:
    """NGRPO advantage calibration with a virtual maximum-reward sample.

    ``A_i = (r_i - μ') / (σ' + ε)`` where ``μ'``, ``σ'`` are the mean and std of
    ``{r_1, …, r_n, r_max}``: the virtual sample enters the statistics, not the loss. An
    all-wrong group (G = 8, r = 0, r_max = 1, unbiased std) gets ``A = -1/3`` instead of GRPO's 0,
    so negatives still push; an all-correct group still gets 0. "NGRPO: Negative-enhanced Group
    Relative Policy Optimization" (Ant Group 2025, arXiv 2509.18851).

    Args:
      rewards: ``[B, G]``.
      mask: ``[B, G]`` or ``None``.
      r_max: reward of the virtual sample (the maximum attainable reward).
      eps: added to the std.
      ddof: 1 (default, matches the paper's numbers) unbiased, 0 population.

    Returns:
      Advantages ``[B, G]``, 0 at padded samples.
    """
    _check_ddof(ddof)
    _check_eps(eps)
    checks.check_range("r_max", r_max)
    rewards, m = _group_mask(rewards, mask)
    virtual = jnp.full((rewards.shape[0], 1), r_max, rewards.dtype)
    aug_r = jnp.concatenate([rewards, virtual], axis=1)
    aug_m = jnp.concatenate([m, jnp.ones_like(virtual)], axis=1)
    mean, std, _ = _masked_moments(aug_r, aug_m, axis=1, ddof=ddof)
    return (rewards - mean) / (std + eps) * m


def n_step_returns(
    r_t: jax.Array,
    discount_t: jax.Array,
    v_tp1: jax.Array,
    done_t: jax.Array,
    *,
    n: int,
) -> jax.Array:
    """n-step bootstrapped returns over a time-major rollout.

    ``G^(1)_t = r_t + discount_t v_tp1_t`` and
    ``G^(h)_t = r_t + discount_t [(1 - c_t) v_tp1_t + c_t G^(h-1)_{t+1}]`` with ``c_t = 1 -
    done_t`` (0 on the last row: the rollout ends there), so the return bootstraps early at an
    episode end (from the true next state; zero after termination via ``discount_t``) or at the
    end of the rollout. Sutton & Barto 2018, §7.1; the DQN-family target of Rainbow (Hessel et
    al. 2018).

    Args:
      r_t: rewards ``[T, ...]``.
      discount_t: ``γ (1 - terminated_t)`` ``[T, ...]``.
      v_tp1: bootstrap values of the true next states, e.g. ``max_a Q_target(s'_t, a)``,
        ``[T, ...]``.
      done_t: 1 where the episode ended at step t ``[T, ...]``.
      n: number of steps ``n >= 1`` (static).

    Returns:
      n-step returns ``[T, ...]``.
    """
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    chex.assert_equal_shape([r_t, discount_t, v_tp1, done_t])
    cont_t = (1.0 - done_t.astype(r_t.dtype)).at[-1].set(0.0)
    g_t = r_t + discount_t * v_tp1
    for _ in range(n - 1):
        g_next = jnp.concatenate([g_t[1:], jnp.zeros_like(g_t[:1])], axis=0)
        g_t = r_t + discount_t * ((1.0 - cont_t) * v_tp1 + cont_t * g_next)
    return g_t


def q_lambda_returns(
    r_t: jax.Array,
    discount_t: jax.Array,
    q_tp1: jax.Array,
    done_t: jax.Array,
    *,
    lambda_: float | jax.Array,
) -> jax.Array:
    """Peng's Q(λ) returns over a rollout: PQN's regression target.

    ``G_t = r_t + discount_t [(1 - λ c_t) q_tp1_t + λ c_t G_{t+1}]`` with ``c_t = 1 - done_t``
    (0 on the last row: the rollout ends there) and ``q_tp1_t = max_a Q(s'_t, a)`` at the *true*
    next state. Termination zeroes the bootstrap through ``discount_t``; truncation bootstraps
    from the final observation and cuts the trace through ``done_t``; the last row bootstraps
    one step. λ = 0 is the one-step Q-learning target, λ = 1 the discounted return to the end of
    the episode or rollout. Peng & Williams 1996; Gallici et al. 2024, "Simplifying Deep Temporal
    Difference Learning" (PQN). It equals ``lambda_returns`` with ``v_t = max_a Q(s_t, a)`` when
    ``q_tp1_t`` is the value of ``s_{t+1}`` wherever the episode continues.

    Args:
      r_t: rewards ``[T, ...]``.
      discount_t: ``γ (1 - terminated_t)`` ``[T, ...]``.
      q_tp1: bootstrap values of the true next states ``max_a Q(s'_t, a)`` ``[T, ...]``.
      done_t: 1 where the episode ended at step t (terminated or truncated) ``[T, ...]``.
      lambda_: trace parameter λ in [0, 1] (scalar).

    Returns:
      Returns ``[T, ...]`` (no gradient through them is intended: stop it at the caller).
    """
    chex.assert_equal_shape([r_t, discount_t, q_tp1, done_t])
    checks.check_range("lambda_", lambda_, low=0.0, high=1.0)
    trace_t = lambda_ * (1.0 - done_t.astype(r_t.dtype)).at[-1].set(0.0)

    def _step(g_tp1, inputs):
        r, discount, q, trace = inputs
        g = r + discount * ((1.0 - trace) * q + trace * g_tp1)
        return g, g

    inputs = (r_t, discount_t, q_tp1, trace_t)
    _, g_t = jax.lax.scan(_step, jnp.zeros_like(r_t[0]), inputs, reverse=True)
    return g_t
