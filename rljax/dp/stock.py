"""Stock augmentation: optimize functionals of the return with (distributional) DP.

Ávila Pires et al., "Optimizing Return Distributions with Distributional Dynamic Programming"
(JMLR 2025, arXiv 2501.13028) augment the state with a *stock*, a statistic of the rewards
collected since t = 0, and score the law of c_0 + G with a functional K. We use the discounted
cumulative reward
  c_{t+1} = c_t + γ^t r_t,   so   c_H = c_0 + G,
kept on a uniform grid `stock_atoms` [M] (linear interpolation = splitting the mass between the two
neighbouring grid points; exact when every reachable stock lies on the grid, e.g. γ = 1 and
integer rewards on an integer grid). The paper's stock C_t = γ^{-t} c_t is the same statistic
rescaled so that its policies are stationary; with a finite horizon we index by time instead.

For expected utilities K(ν) = E_ν[f(c_H)] the augmented problem is a classic finite-horizon MDP
with terminal utility, so backward induction over (t, s, c) is optimal among all history-dependent
policies (Bäuerle & Ott, 2011):
  V_H(s, c) = f(c),  V_t(s, c) = max_a E[ V_{t+1}(S', c + γ^t R) ].
That covers expected return (f(c) = c), expected utility, P(c_H >= θ) and homeostatic scores.
CVaR_α is not an expected utility, but by Rockafellar–Uryasev
  CVaR_α(G) = max_b { b + E[min(G - b, 0)] / α },
so one backward pass with f(c) = min(c, 0) gives, for every initial stock c_0 = -b on the grid,
the inner expectation; CVaR_α* = max_{c_0} (-c_0 + J(c_0) / α) and the optimal policy is greedy
in the augmented state starting from the best c_0. `stock_distributional_value_iteration` is the
distributional form, greedy in K on the law of c_H; it equals the above for expected utilities and
shows what goes wrong when K is not one (e.g. CVaR applied directly: time-inconsistent).

Shapes: S states, A actions, K reward atoms, M stock grid points, H horizon.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rljax import checks
from rljax.dp.mdp import TabularMDP, make_mdp, return_bounds


class StockSolution(NamedTuple):
    """values [H + 1, S, M], q_values [H, S, A, M], policy [H, S, M] (action per (t, s, c_m))."""

    values: jax.Array
    q_values: jax.Array
    policy: jax.Array


class CVaRSolution(NamedTuple):
    """cvar [], initial_stock [] (= -b*, b* the optimal VaR threshold), the augmented solution."""

    cvar: jax.Array
    initial_stock: jax.Array
    solution: StockSolution


def stock_grid(
    mdp: TabularMDP, *, spacing: float = 1.0, bounds: tuple[float, float] | None = None
) -> jax.Array:
    """A uniform stock grid wide enough for CVaR: [G_min - G_max, G_max - G_min] in `spacing` steps.

    Every initial stock c_0 = -b with b in [G_min, G_max] then keeps c_0 + (partial sums) on the
    grid without clipping, provided `bounds` (default `return_bounds(mdp)`, often loose) bound
    every partial sum of rewards. Host-side (not jittable): it fixes the static grid size M.
    """
    checks.check_range("spacing", spacing, low=0.0, low_open=True)
    g_min, g_max = (float(x) for x in (bounds or return_bounds(mdp)))
    half = np.ceil((g_max - g_min) / spacing) * spacing
    num = int(round(2 * half / spacing)) + 1
    return jnp.linspace(-half, half, num, dtype=jnp.float32)


def _stock_moves(mdp: TabularMDP, stock_atoms: jax.Array, t) -> tuple[jax.Array, jax.Array]:
    """Grid index lo and weight frac of c_m + γ^t r for every (s, a, s', k, m): [S, A, S', K, M]."""
    delta = stock_atoms[1] - stock_atoms[0]
    num = stock_atoms.shape[0]
    nxt = stock_atoms + (mdp.discount**t * mdp.reward_values)[..., None]
    b = jnp.clip((nxt - stock_atoms[0]) / delta, 0.0, num - 1.0)
    # Snap values within float32 noise of a grid point, so exact grids stay exact.
    b = jnp.where(jnp.abs(b - jnp.round(b)) < 1e-4, jnp.round(b), b)
    lo = jnp.floor(b)
    return lo.astype(jnp.int32), b - lo


def _expected_next(mdp: TabularMDP, stock_atoms, t, table_next: jax.Array) -> jax.Array:
    """E[table_{t+1}(S', c + γ^t R)] for table [S, M, ...] -> [S, A, M, ...]."""
    lo, frac = _stock_moves(mdp, stock_atoms, t)
    hi = jnp.minimum(lo + 1, stock_atoms.shape[0] - 1)
    s_next = jnp.arange(mdp.num_states)[None, None, :, None, None]
    extra = (None,) * (table_next.ndim - 2)
    frac = frac[(...,) + extra]
    gathered = (1.0 - frac) * table_next[s_next, lo] + frac * table_next[s_next, hi]
    weights = (mdp.transitions[..., None] * mdp.reward_probs)[(...,) + (None,) + extra]
    return jnp.sum(weights * gathered, axis=(2, 3))


@jax.jit
def stock_value_iteration(
    mdp: TabularMDP, stock_atoms: jax.Array, utility: jax.Array
) -> StockSolution:
    """Backward induction in the stock-augmented MDP for K = E[f(c_0 + G)].

    Args:
      mdp: finite-horizon MDP.
      stock_atoms: [M] uniform stock grid.
      utility: [M] terminal utility f(c_m) (an array, so it can be vmapped over objectives).

    Returns:
      `StockSolution`; values[0, s, m] = max_π E[f(c_m + G) | s_0 = s].
    """
    if mdp.horizon is None:
        raise ValueError("stock_value_iteration.mdp.horizon: got None; allowed: an int >= 1.")
    chex.assert_equal_shape([stock_atoms, utility])
    v_last = jnp.broadcast_to(utility, (mdp.num_states,) + utility.shape)

    def step(v_next, t):
        q_t = _expected_next(mdp, stock_atoms, t, v_next)  # [S, A, M]
        return jnp.max(q_t, axis=1), (q_t, jnp.argmax(q_t, axis=1))

    _, (q_values, policy) = jax.lax.scan(step, v_last, jnp.arange(mdp.horizon), reverse=True)
    values = jnp.concatenate([_values_from_q(q_values), v_last[None]], axis=0)
    return StockSolution(values, q_values, policy)


def _values_from_q(q_values: jax.Array) -> jax.Array:
    return jnp.max(q_values, axis=2)


def cvar_optimize(mdp: TabularMDP, stock_atoms: jax.Array, alpha) -> CVaRSolution:
    """Maximizes CVaR_α of the return over stock-dependent policies (Bäuerle & Ott, 2011).

    CVaR_α* = max_{c_0 on grid} [ -c_0 + (1/α) Σ_s μ(s) V_0(s, c_0) ] with f(c) = min(c, 0).

    Args:
      mdp: finite-horizon MDP.
      stock_atoms: [M] grid; `stock_grid(mdp)` covers every threshold b in [G_min, G_max].
      alpha: CVaR level in (0, 1] (may be traced, so vmap over levels works).

    Returns:
      `CVaRSolution`; act with `solution.policy` from stock `initial_stock`.

    Raises:
      ValueError: if a concrete ``alpha`` is outside (0, 1].
    """
    checks.check_range("alpha", alpha, low=0.0, low_open=True, high=1.0)
    return _cvar_optimize(mdp, stock_atoms, alpha)


@jax.jit
def _cvar_optimize(mdp: TabularMDP, stock_atoms: jax.Array, alpha) -> CVaRSolution:
    solution = stock_value_iteration(mdp, stock_atoms, jnp.minimum(stock_atoms, 0.0))
    j_0 = jnp.einsum("s,sm->m", mdp.initial_dist, solution.values[0])
    score = -stock_atoms + j_0 / alpha
    best = jnp.argmax(score)
    return CVaRSolution(score[best], stock_atoms[best], solution)


@functools.partial(jax.jit, static_argnames=("functional",))
def stock_distributional_value_iteration(
    mdp: TabularMDP,
    stock_atoms: jax.Array,
    functional: Callable[..., jax.Array],
    functional_args: tuple = (),
) -> tuple[jax.Array, jax.Array]:
    """Distributional DP on the law of c_H = c_0 + G, greedy in K at every augmented state.

    ψ_H(s, c) = δ_c,  ψ_t(s, c, a) = E[ψ_{t+1}(S', c + γ^t R)],
    a_t(s, c) = argmax_a K(ψ_t(s, c, a)).

    Args:
      mdp: finite-horizon MDP.
      stock_atoms: [M] grid (both the stock and the support of c_H).
      functional: K, called as functional(stock_atoms, probs [..., M], *functional_args) -> [...]
        (static under jit; e.g. `rljax.dp.cvar` with functional_args=(alpha,)).
      functional_args: traced parameters of K.

    Returns:
      (policy [H, S, M], final-stock laws psi [H + 1, S, M, M] under that policy).
    """
    if mdp.horizon is None:
        raise ValueError(
            "stock_distributional_value_iteration.mdp.horizon: got None; allowed: an int >= 1."
        )
    num = stock_atoms.shape[0]
    psi_last = jnp.broadcast_to(jnp.eye(num, dtype=jnp.float32), (mdp.num_states, num, num))

    def step(psi_next, t):
        psi_sa = _expected_next(mdp, stock_atoms, t, psi_next)  # [S, A, M, M]
        action = jnp.argmax(functional(stock_atoms, psi_sa, *functional_args), axis=1)  # [S, M]
        psi_t = jnp.take_along_axis(psi_sa, action[:, None, :, None], axis=1)[:, 0]
        return psi_t, (psi_t, action)

    _, (psis, policy) = jax.lax.scan(step, psi_last, jnp.arange(mdp.horizon), reverse=True)
    return policy, jnp.concatenate([psis, psi_last[None]], axis=0)


@jax.jit
def evaluate_stock_policy(
    mdp: TabularMDP, stock_atoms: jax.Array, policy: jax.Array, initial_stock
) -> jax.Array:
    """Exact law of c_0 + G under a stock-dependent deterministic policy.

    Args:
      mdp: finite-horizon MDP.
      stock_atoms: [M] grid.
      policy: [H, S, M] actions (a stock-free policy [H, S] is broadcast over the stock).
      initial_stock: c_0 (snapped to the nearest grid point).

    Returns:
      [M] probabilities of c_H on `stock_atoms`, averaged over the initial-state distribution.
    """
    num = stock_atoms.shape[0]
    if policy.ndim == 2:
        policy = jnp.broadcast_to(policy[..., None], policy.shape + (num,))
    chex.assert_shape(policy, (mdp.horizon, mdp.num_states, num))
    psi_last = jnp.broadcast_to(jnp.eye(num, dtype=jnp.float32), (mdp.num_states, num, num))

    def step(psi_next, xs):
        t, action = xs
        psi_sa = _expected_next(mdp, stock_atoms, t, psi_next)
        return jnp.take_along_axis(psi_sa, action[:, None, :, None], axis=1)[:, 0], None

    psi_0, _ = jax.lax.scan(step, psi_last, (jnp.arange(mdp.horizon), policy), reverse=True)
    m_0 = jnp.argmin(jnp.abs(stock_atoms - initial_stock))
    return jnp.einsum("s,sn->n", mdp.initial_dist, psi_0[:, m_0])


def augment_with_stock(
    mdp: TabularMDP, stock_atoms: jax.Array, utility: jax.Array, initial_stock: float = 0.0
) -> TabularMDP:
    """The stock-augmented MDP as a plain `TabularMDP` over S·M states (host-side, γ = 1 only).

    State (s, m) has index s * M + m. Transitions move the stock by r (split between neighbouring
    grid points); the reward of a move c_m -> c_{m'} is f(c_{m'}) - f(c_m), which telescopes to
    f(c_H) - f(c_0), so classic value iteration on it optimizes E[f(c_0 + G)] (up to f(c_0)).
    Quadratic in S·M: meant for small instances and cross-checks.
    """
    if float(mdp.discount) != 1.0 or mdp.horizon is None:
        raise ValueError(
            f"augment_with_stock.mdp.discount: got {float(mdp.discount)} with horizon "
            f"{mdp.horizon}; allowed: discount 1 with a finite horizon."
        )
    s, a, num = mdp.num_states, mdp.num_actions, stock_atoms.shape[0]
    lo, frac = (np.asarray(x) for x in _stock_moves(mdp, stock_atoms, 0))
    hi = np.minimum(lo + 1, num - 1)
    w = np.asarray(mdp.transitions)[..., None, None] * np.asarray(mdp.reward_probs)[..., None]
    p = np.zeros((s, num, a, s, num))
    idx_s, idx_a, idx_t, idx_k, idx_m = np.indices(lo.shape)
    np.add.at(p, (idx_s, idx_m, idx_a, idx_t, lo), w * (1.0 - frac))
    np.add.at(p, (idx_s, idx_m, idx_a, idx_t, hi), w * frac)
    f = np.asarray(utility, np.float64)
    reward = np.broadcast_to(f[None, None, None, None, :] - f[None, :, None, None, None], p.shape)
    mu = np.zeros((s, num))
    mu[:, int(np.argmin(np.abs(np.asarray(stock_atoms) - initial_stock)))] = np.asarray(
        mdp.initial_dist
    )
    return make_mdp(
        p.reshape(s * num, a, s * num),
        reward.reshape(s * num, a, s * num),
        1.0,
        mu.reshape(-1),
        horizon=mdp.horizon,
    )
