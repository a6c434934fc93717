"""The effective horizon (Laidlaw et al.) and random-policy valuation (ROVER).

Laidlaw, Russell & Dragan, "Bridging RL Theory and Practice with the Effective Horizon" (2023)
and Laidlaw, Zhu, Russell & Dragan, "The Effective Horizon Explains Deep RL Performance in
Stochastic Environments" (SQIRL, 2024): many MDPs are solved by acting greedily on a few steps of
Q-value iteration started from the uniformly random policy's Q-function,
  Q^0 = Q^{π_rand},   Q^{i+1} = T* Q^i,
  (T* Q)(s, a) = r̄(s, a) + γ Σ_{s'} P(s'|s, a) max_{a'} Q(s', a').
Convention: k counts Bellman-optimality steps, so k = 0 is "greedy on Q^{π_rand}" (the papers'
k = 1). An MDP is k-QVI-solvable when every greedy action of Q^k is optimal.

He et al., "Random Policy Valuation is Enough" (ROVER, 2025), Thm 3.1: in a finite-horizon,
deterministic, tree-structured MDP with binary terminal rewards, greedy on Q^{π_rand} is optimal
(i.e. such MDPs are 0-QVI-solvable); `tree_mdp` builds instances.

Shapes follow `classic`: infinite horizon [S, A]; finite horizon H time-indexed [H, S, A].
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from rljax.dp.classic import bellman_q, policy_evaluation, value_iteration
from rljax.dp.mdp import TabularMDP, return_bounds


@jax.jit
def random_policy_q(mdp: TabularMDP) -> jax.Array:
    """Q^{π_rand}, the q-values of the uniformly random policy. Returns [S, A] or [H, S, A]."""
    uniform = jnp.full((mdp.num_states, mdp.num_actions), 1.0 / mdp.num_actions)
    return policy_evaluation(mdp, uniform)[1]


@jax.jit
def q_value_iteration(mdp: TabularMDP, q: jax.Array, num_steps) -> jax.Array:
    """Applies the Bellman optimality operator `num_steps` times: Q ← T* Q.

    With a finite horizon Q is time-indexed and (T* Q)_t uses max_a' Q_{t+1}(s', a'), Q_H = 0.

    Args:
      mdp: the MDP.
      q: [S, A] or [H, S, A] starting q-values (e.g. `random_policy_q(mdp)`).
      num_steps: k >= 0 (may be traced: no recompiles across k).

    Returns:
      T*^k Q, same shape as `q`.
    """

    def apply(_, q):
        if mdp.horizon is None:
            return bellman_q(mdp, jnp.max(q, axis=-1), mdp.discount)
        v_next = jnp.concatenate([jnp.max(q[1:], axis=-1), jnp.zeros((1, mdp.num_states))])
        return jax.vmap(lambda v: bellman_q(mdp, v, mdp.discount))(v_next)

    return jax.lax.fori_loop(0, num_steps, apply, q)


@functools.partial(jax.jit, static_argnames=("atol",))
def greedy_is_optimal(mdp: TabularMDP, q: jax.Array, *, atol: float = 1e-4) -> jax.Array:
    """True iff every action within `atol` of max_a q is optimal (within `atol` of max_a Q*).

    Checked at every (time,) state; `atol` absorbs float32 ties. Returns [] bool.
    """
    q_star = value_iteration(mdp).q_values
    greedy = q >= jnp.max(q, axis=-1, keepdims=True) - atol
    optimal = q_star >= jnp.max(q_star, axis=-1, keepdims=True) - atol
    return jnp.all(~greedy | optimal)


@functools.partial(jax.jit, static_argnames=("max_steps", "atol"))
def min_qvi_steps(mdp: TabularMDP, max_steps: int, *, atol: float = 1e-4) -> jax.Array:
    """Smallest k in [0, max_steps] such that the MDP is k-QVI-solvable; max_steps + 1 if none."""

    def step(q, k):
        return q_value_iteration(mdp, q, 1), greedy_is_optimal(mdp, q, atol=atol)

    _, solved = jax.lax.scan(step, random_policy_q(mdp), jnp.arange(max_steps + 1))
    return jnp.where(jnp.any(solved), jnp.argmax(solved), max_steps + 1)


@functools.partial(jax.jit, static_argnames=("atol",))
def action_gap(mdp: TabularMDP, q: jax.Array, *, atol: float = 1e-4) -> jax.Array:
    """Δ = min over (time,) states of [max_a q - max_{a non-optimal} q]; +inf if no such action.

    Where Δ > 0, estimates of q accurate to Δ/2 pick an optimal action. Returns [].
    """
    q_star = value_iteration(mdp).q_values
    optimal = q_star >= jnp.max(q_star, axis=-1, keepdims=True) - atol
    best_bad = jnp.max(jnp.where(optimal, -jnp.inf, q), axis=-1)
    return jnp.min(jnp.max(q, axis=-1) - best_bad)


@functools.partial(jax.jit, static_argnames=("max_steps", "failure_prob", "atol"))
def effective_horizon(
    mdp: TabularMDP, max_steps: int, *, failure_prob: float = 0.5, atol: float = 1e-4
) -> jax.Array:
    """A GORP-style effective horizon H = min_k [ k + log_A m_k ].

    m_k is a Hoeffding count of random rollouts per leaf action that estimates Q^k to within
    Δ_k / 2 (Δ_k = `action_gap(Q^k)`) for all A actions w.p. 1 - `failure_prob`:
      m_k = ⌈ 2 L² ln(2A / failure_prob) / Δ_k² ⌉,  L = G_max - G_min.
    Only k-QVI-solvable k (Δ_k > 0) count; +inf if none up to `max_steps`. The constants differ
    from the papers' exact definition; use it to compare MDPs, not as the papers' number.

    Returns:
      [] effective horizon (float).
    """
    g_min, g_max = return_bounds(mdp)
    width = jnp.maximum(g_max - g_min, 1e-6)
    num_actions = mdp.num_actions
    log_term = jnp.log(2.0 * num_actions / failure_prob)

    def step(q, k):
        gap = action_gap(mdp, q, atol=atol)
        solvable = greedy_is_optimal(mdp, q, atol=atol) & (gap > atol)  # inf gap: all optimal
        m_k = jnp.ceil(2.0 * width**2 * log_term / jnp.maximum(gap, 1e-12) ** 2)
        m_k = jnp.where(jnp.isinf(gap), 1.0, m_k)
        h_k = k + jnp.log(m_k) / jnp.log(num_actions)
        return q_value_iteration(mdp, q, 1), jnp.where(solvable, h_k, jnp.inf)

    _, h = jax.lax.scan(step, random_policy_q(mdp), jnp.arange(max_steps + 1))
    return jnp.min(h)


@jax.jit
def rover_policy(mdp: TabularMDP) -> jax.Array:
    """ROVER's greedy policy argmax_a Q^{π_rand}(s, a). Returns [S] or [H, S] actions."""
    return jnp.argmax(random_policy_q(mdp), axis=-1)
