"""Distributional policy evaluation (categorical and quantile) and greedy distributional control.

The distributional Bellman operator maps return distributions η(s') to
  (T^π η)(s) = Law( R + γ G(S') ),  A ~ π(·|s), S' ~ P(·|s, A), R ~ p(·|s, A, S'), G(s') ~ η(s').
It is a γ-contraction in the supremum Wasserstein distance (Bellemare et al., 2017).

* Categorical DP represents η(s) on fixed uniform atoms z_1 < … < z_N (spacing Δ) and applies the
  Cramér projection Π_C after each backup (Rowland et al., 2018). Π_C keeps the mean of any
  distribution supported in [z_1, z_N] and moves it by at most Δ/2 in W1, so the projected fixed
  point satisfies W1(η_C, η^π) <= Δ / (2 (1 - γ)) (triangle inequality + contraction). With a
  finite horizon and rewards on the atom grid (γ = 1, integer rewards, integer atoms) it is exact.
* Quantile DP represents η(s) by N equally weighted atoms at the τ_i = (2i - 1)/(2N) quantiles
  (Dabney et al., 2018; Rowland et al., 2019). The quantile projection moves a distribution on an
  interval of length L by at most L / (2N) in W1, so W1(η_Q, η^π) <= L / (2N (1 - γ)).

Shapes: S states, A actions, K reward atoms, N atoms/quantiles, H horizon. Infinite horizon
returns [S, N]; finite horizon returns [H + 1, S, N] (index t is the law of the return-to-go).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp

from rljax import checks
from rljax.dp.mdp import TabularMDP, as_time_indexed


def categorical_projection(atoms: jax.Array, values: jax.Array, weights: jax.Array) -> jax.Array:
    """Cramér projection of Σ_j w_j δ_{x_j} onto uniform atoms (values outside are clipped).

    Mass w_j at x_j splits between the two neighbouring atoms in proportion to proximity, which
    keeps total mass and (inside the support) the mean.

    Args:
      atoms: [N] uniformly spaced, increasing.
      values: [L] locations x_j.
      weights: [L] masses w_j.

    Returns:
      [N] projected masses.

    Raises:
      ValueError: concrete ``weights`` that are not a distribution (negative, non-finite or not
        summing to 1), or concrete ``atoms`` that are not strictly increasing.
    """
    chex.assert_rank([atoms, values, weights], 1)
    checks.check_increasing("atoms", atoms)
    checks.check_distribution("weights", weights)
    num_atoms = atoms.shape[0]
    delta = atoms[1] - atoms[0]
    b = jnp.clip((values - atoms[0]) / delta, 0.0, num_atoms - 1.0)
    lo = jnp.floor(b)
    frac = b - lo
    lo = lo.astype(jnp.int32)
    hi = jnp.minimum(lo + 1, num_atoms - 1)
    out = jnp.zeros(num_atoms, weights.dtype).at[lo].add(weights * (1.0 - frac))
    return out.at[hi].add(weights * frac)


def _categorical_q_backup(mdp: TabularMDP, atoms, eta_next, discount_t) -> jax.Array:
    """Per-action projected backup: [S', N] -> [S, A, N]."""
    targets = mdp.reward_values[..., None] + discount_t * atoms  # [S, A, S', K, N]
    weights = mdp.transitions[..., None, None] * mdp.reward_probs[..., None] * eta_next[:, None, :]
    s, a = mdp.num_states, mdp.num_actions
    flat = (s, a, -1)
    project = jax.vmap(jax.vmap(categorical_projection, (None, 0, 0)), (None, 0, 0))
    return project(atoms, targets.reshape(flat), weights.reshape(flat))


def _dirac(atoms: jax.Array, num_states: int, value: float = 0.0) -> jax.Array:
    one = categorical_projection(atoms, jnp.full(1, value, atoms.dtype), jnp.ones(1, atoms.dtype))
    return jnp.broadcast_to(one, (num_states, atoms.shape[0]))


@functools.partial(jax.jit, static_argnames=("num_iterations",))
def categorical_policy_evaluation(
    mdp: TabularMDP, policy_probs: jax.Array, atoms: jax.Array, *, num_iterations: int = 300
) -> jax.Array:
    """Projected categorical distributional policy evaluation, η ← Π_C T^π η.

    Args:
      mdp: the MDP.
      policy_probs: [S, A] (or [H, S, A] with a finite horizon).
      atoms: [N] uniform support; choose it to cover `return_bounds(mdp)`.
      num_iterations: iterations from δ_0 (infinite horizon); error decays like γ^n.

    Returns:
      [S, N] probabilities, or [H + 1, S, N] for a finite horizon.
    """
    chex.assert_rank(atoms, 1)
    eta_last = _dirac(atoms, mdp.num_states)
    if mdp.horizon is None:
        chex.assert_shape(policy_probs, (mdp.num_states, mdp.num_actions))

        def body(_, eta):
            eta_sa = _categorical_q_backup(mdp, atoms, eta, mdp.discount)
            return jnp.einsum("sa,san->sn", policy_probs, eta_sa)

        return jax.lax.fori_loop(0, num_iterations, body, eta_last)

    policy_probs = as_time_indexed(policy_probs, mdp.horizon)

    def step(eta_next, pi_t):
        eta_sa = _categorical_q_backup(mdp, atoms, eta_next, mdp.discount)
        eta_t = jnp.einsum("sa,san->sn", pi_t, eta_sa)
        return eta_t, eta_t

    _, etas = jax.lax.scan(step, eta_last, policy_probs, reverse=True)
    return jnp.concatenate([etas, eta_last[None]], axis=0)


def _quantile_backup(mdp: TabularMDP, policy_probs, theta_next, discount_t) -> jax.Array:
    """Quantile-projected backup: [S', N] -> [S, N]."""
    num_quantiles = theta_next.shape[-1]
    targets = mdp.reward_values[..., None] + discount_t * theta_next[:, None, :]  # [S,A,S',K,N]
    weights = (
        policy_probs[:, :, None, None, None]
        * mdp.transitions[..., None, None]
        * mdp.reward_probs[..., None]
        / num_quantiles
    )
    weights = jnp.broadcast_to(weights, targets.shape)
    taus = (2.0 * jnp.arange(num_quantiles) + 1.0) / (2.0 * num_quantiles)

    def project(x, w):
        order = jnp.argsort(x)
        cdf = jnp.cumsum(w[order])
        idx = jnp.clip(jnp.searchsorted(cdf, taus, side="left"), 0, x.shape[0] - 1)
        return x[order][idx]

    s = mdp.num_states
    return jax.vmap(project)(targets.reshape(s, -1), weights.reshape(s, -1))


@functools.partial(jax.jit, static_argnames=("num_quantiles", "num_iterations"))
def quantile_policy_evaluation(
    mdp: TabularMDP, policy_probs: jax.Array, num_quantiles: int, *, num_iterations: int = 300
) -> jax.Array:
    """Quantile distributional policy evaluation, θ ← Π_Q T^π θ.

    Args:
      mdp: the MDP.
      policy_probs: [S, A] (or [H, S, A] with a finite horizon).
      num_quantiles: N, atoms at the τ_i = (2i - 1)/(2N) quantiles, each of weight 1/N.
      num_iterations: iterations from θ = 0 (infinite horizon).

    Returns:
      [S, N] quantile locations, or [H + 1, S, N] for a finite horizon.
    """
    theta_last = jnp.zeros((mdp.num_states, num_quantiles), jnp.float32)
    if mdp.horizon is None:
        chex.assert_shape(policy_probs, (mdp.num_states, mdp.num_actions))

        def body(_, theta):
            return _quantile_backup(mdp, policy_probs, theta, mdp.discount)

        return jax.lax.fori_loop(0, num_iterations, body, theta_last)

    policy_probs = as_time_indexed(policy_probs, mdp.horizon)

    def step(theta_next, pi_t):
        theta_t = _quantile_backup(mdp, pi_t, theta_next, mdp.discount)
        return theta_t, theta_t

    _, thetas = jax.lax.scan(step, theta_last, policy_probs, reverse=True)
    return jnp.concatenate([thetas, theta_last[None]], axis=0)


@functools.partial(jax.jit, static_argnames=("functional",))
def greedy_distributional_control(
    mdp: TabularMDP,
    atoms: jax.Array,
    functional: Callable[..., jax.Array],
    functional_args: tuple = (),
) -> tuple[jax.Array, jax.Array]:
    """Greedy distributional control without a stock: a_t(s) = argmax_a K(η_t(s, a)).

    Backward induction on categorical return-to-go distributions, choosing at each (t, s) the
    action whose return-to-go distribution maximizes K. For K = E this is value iteration; for
    risk measures such as CVaR it is time-inconsistent (it ignores the rewards already collected),
    which is the baseline stock augmentation fixes (Ávila Pires et al., 2025, §3).

    Args:
      mdp: a finite-horizon MDP.
      atoms: [N] uniform support covering the returns-to-go.
      functional: K, called as functional(atoms, probs [..., N], *functional_args) -> [...]
        (static under jit: pass a module-level function such as `rljax.dp.cvar`).
      functional_args: traced parameters of K (e.g. (alpha,)), so changing them does not
        recompile.

    Returns:
      (policy [H, S] action indices, dists [H + 1, S, N] return-to-go laws under that policy).
    """
    if mdp.horizon is None:
        raise ValueError(
            "greedy_distributional_control.mdp.horizon: got None; allowed: an int >= 1."
        )
    eta_last = _dirac(atoms, mdp.num_states)

    def step(eta_next, _):
        eta_sa = _categorical_q_backup(mdp, atoms, eta_next, mdp.discount)
        action = jnp.argmax(functional(atoms, eta_sa, *functional_args), axis=-1)
        eta_t = jnp.take_along_axis(eta_sa, action[:, None, None], axis=1)[:, 0]
        return eta_t, (eta_t, action)

    _, (etas, policy) = jax.lax.scan(step, eta_last, length=mdp.horizon, reverse=True)
    return policy, jnp.concatenate([etas, eta_last[None]], axis=0)
