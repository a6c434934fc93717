"""MPO's maths as pure per-element functions: E-step weights, the temperature dual and the
M-step's KL constraints with learned Lagrange multipliers.

Maximum a Posteriori Policy Optimisation (Abdolmaleki et al. 2018, "Maximum a Posteriori Policy
Optimisation", ICLR; "Relative Entropy Regularized Policy Iteration", arXiv:1812.02256).

E-step. For a state s with actions a_j (N samples from the target policy π', or all A actions of
a discrete policy weighted by π'), the non-parametric improved policy is

    q(a_j | s) ∝ π'(a_j | s) exp(Q(s, a_j) / η),

the solution of max_q E_q[Q] s.t. KL(q ‖ π') <= ε. Its temperature η minimizes the convex dual

    g(η) = η ε + η log Σ_j π'(a_j | s) exp(Q(s, a_j) / η)

(for N samples from π', the prior weights are 1/N). M-step: fit π_θ to q by weighted maximum
likelihood, -Σ_j q_j log π_θ(a_j | s), subject to KL(π' ‖ π_θ) <= ε_KL; for a Gaussian the bound
is split into one on the mean and one on the covariance (``decoupled_gaussian_kl``). Every
multiplier is a learned dual variable kept positive by ``softplus`` (``multiplier``).

Shapes: ``[B]`` states, ``[B, N]`` actions per state (N samples or A discrete actions), ``D``
action dimensions. Functions return one value per state; the caller averages with ``reduce``.
"""

import chex
import jax
import jax.numpy as jnp

from rljax import checks

MIN_MULTIPLIER = 1e-8  # softplus(x) + this: a multiplier never reaches exactly 0


def multiplier(raw: jax.Array) -> jax.Array:
    """A positive dual variable from its unconstrained parameter: ``softplus(raw) + 1e-8``.

    Args:
      raw: unconstrained parameter ``[...]``.

    Returns:
      The multiplier ``[...]``, > 0.
    """
    return jax.nn.softplus(raw) + MIN_MULTIPLIER


def e_step_weights(q_values: jax.Array, log_prior: jax.Array, temperature: jax.Array):
    """Normalized E-step weights ``q_j = softmax_j(log π'(a_j) + Q(s, a_j) / η)``.

    Abdolmaleki et al. 2018, eq. (8). Gradients are stopped (the weights are a fixed target of the
    M-step).

    Args:
      q_values: ``Q(s, a_j)`` ``[B, N]``.
      log_prior: ``log π'(a_j | s)`` ``[B, N]``: ``-log N`` for N samples drawn from π', the
        target policy's log-probabilities for an enumerated discrete action set.
      temperature: η > 0, scalar or ``[B]``.

    Returns:
      Weights ``[B, N]`` summing to 1 over N.
    """
    chex.assert_rank(q_values, 2)
    chex.assert_equal_shape([q_values, log_prior])
    eta = jnp.reshape(temperature, jnp.shape(temperature) + (1,) * (2 - jnp.ndim(temperature)))
    logits = log_prior + q_values / jax.lax.stop_gradient(eta)
    return jax.lax.stop_gradient(jax.nn.softmax(logits, axis=-1))


def temperature_dual(
    q_values: jax.Array,
    log_prior: jax.Array,
    temperature: jax.Array,
    *,
    epsilon: float | jax.Array,
) -> jax.Array:
    """The E-step's dual ``g(η) = η ε + η log Σ_j π'(a_j) exp(Q(s, a_j) / η)`` per state.

    Abdolmaleki et al. 2018, eq. (9) (there with samples: the sum is ``1/N Σ_j``). Minimizing the
    batch mean over η gives the temperature at which KL(q ‖ π') = ε. Q-values get no gradient.

    Args:
      q_values: ``Q(s, a_j)`` ``[B, N]``.
      log_prior: ``log π'(a_j | s)`` ``[B, N]`` (``-log N`` for N samples from π').
      temperature: η > 0, scalar (the gradient flows into it).
      epsilon: the KL bound ε > 0 of the E-step.

    Returns:
      ``g(η)`` per state ``[B]``.
    """
    chex.assert_rank(q_values, 2)
    chex.assert_equal_shape([q_values, log_prior])
    checks.check_range("epsilon", epsilon, low=0.0, low_open=True)
    q = jax.lax.stop_gradient(q_values)
    log_z = jax.scipy.special.logsumexp(log_prior + q / temperature, axis=-1)
    return temperature * epsilon + temperature * log_z


def weighted_log_likelihood(weights: jax.Array, log_probs: jax.Array) -> jax.Array:
    """The M-step's cross-entropy ``-Σ_j q_j log π_θ(a_j | s)`` per state.

    Args:
      weights: E-step weights ``[B, N]`` (constants).
      log_probs: ``log π_θ(a_j | s)`` ``[B, N]``.

    Returns:
      ``[B]``.
    """
    chex.assert_equal_shape([weights, log_probs])
    return -jnp.sum(jax.lax.stop_gradient(weights) * log_probs, axis=-1)


def gaussian_kl(
    mean_p: jax.Array, std_p: jax.Array, mean_q: jax.Array, std_q: jax.Array
) -> jax.Array:
    """``KL(p ‖ q)`` of diagonal Gaussians, summed over the D action dimensions.

    ``KL = Σ_d [log(σ_q/σ_p) + (σ_p² + (μ_p - μ_q)²) / (2σ_q²) - ½]``.

    Args:
      mean_p, std_p: p's mean and standard deviation ``[B, D]``.
      mean_q, std_q: q's ``[B, D]``.

    Returns:
      ``[B]``.
    """
    chex.assert_equal_shape([mean_p, std_p, mean_q, std_q])
    var_ratio = jnp.square(std_p / std_q)
    mahalanobis = jnp.square((mean_p - mean_q) / std_q)
    return 0.5 * jnp.sum(var_ratio + mahalanobis - 1.0 - jnp.log(var_ratio), axis=-1)


def decoupled_gaussian_kl(
    target_mean: jax.Array, target_std: jax.Array, mean: jax.Array, std: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """MPO's decoupled KLs of the online Gaussian π_θ = N(μ, σ) from the target π' = N(μ', σ').

    ``KL_μ = KL(π' ‖ N(μ, σ'))`` (only the mean moves) and ``KL_Σ = KL(π' ‖ N(μ', σ))`` (only
    the covariance moves); Abdolmaleki et al. 2018, "Relative Entropy Regularized Policy
    Iteration", §4.2. Bounding them separately stops the covariance from collapsing while the
    mean moves. Where ``σ = σ'`` (or ``μ = μ'``) their sum is the full ``KL(π' ‖ π_θ)``.

    Args:
      target_mean, target_std: π' ``[B, D]`` (constants).
      mean, std: π_θ ``[B, D]``.

    Returns:
      ``(kl_mean [B], kl_std [B])``.
    """
    target_mean = jax.lax.stop_gradient(target_mean)
    target_std = jax.lax.stop_gradient(target_std)
    kl_mean = gaussian_kl(target_mean, target_std, mean, target_std)
    kl_std = gaussian_kl(target_mean, target_std, target_mean, std)
    return kl_mean, kl_std


def kl_constraint(kl: jax.Array, dual: jax.Array, *, epsilon: float | jax.Array) -> jax.Array:
    """A hard KL bound as a Lagrangian: ``sg(α) KL + α (ε - sg(KL))`` per element.

    The first term pushes the policy's KL down with weight α; the second trains the multiplier
    α by gradient descent on its dual: α grows while KL > ε and shrinks while KL < ε
    (Abdolmaleki et al. 2018, eq. (13); rlax ``kl_constraint_loss`` sums the same two terms).

    Args:
      kl: the constrained KL per element ``[...]`` (gradient flows to the policy).
      dual: the multiplier α > 0 (e.g. ``multiplier(raw)``), scalar or ``[...]``.
      epsilon: the bound ε > 0.

    Returns:
      ``[...]``.
    """
    checks.check_range("epsilon", epsilon, low=0.0, low_open=True)
    sg = jax.lax.stop_gradient
    return sg(dual) * kl + dual * (epsilon - sg(kl))
