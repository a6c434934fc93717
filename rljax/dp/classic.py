"""Classic dynamic programming: policy evaluation, value iteration and policy iteration.

Every function takes a `TabularMDP` and returns arrays only, so it can be jitted once and vmapped
over a batch of same-shape MDPs. Shapes depend on the (static) horizon:
  * infinite horizon (`mdp.horizon is None`): values [S], q-values [S, A], policy [S];
  * finite horizon H: values [H + 1, S] (V_H = 0), q-values [H, S, A], policy [H, S].
Policies returned by solvers are deterministic action indices; policies passed to evaluation
are probabilities ([S, A] or [H, S, A]); `jax.nn.one_hot(policy, A)` converts.

Reference: Puterman, "Markov Decision Processes" (1994), ch. 4 and 6.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.dp.mdp import TabularMDP, as_time_indexed, expected_reward


class Solution(NamedTuple):
    """Values, q-values and a greedy deterministic policy (shapes in the module docstring)."""

    values: jax.Array
    q_values: jax.Array
    policy: jax.Array


def bellman_q(mdp: TabularMDP, v_next: jax.Array, discount_t: jax.Array | float) -> jax.Array:
    """Q(s, a) = r̄(s, a) + γ_t Σ_{s'} P(s'|s, a) V'(s').

    Args:
      mdp: the MDP.
      v_next: [S] next-step values V'.
      discount_t: γ (or any scalar weight on the continuation).

    Returns:
      [S, A] q-values.
    """
    chex.assert_rank(v_next, 1)
    return expected_reward(mdp) + discount_t * jnp.einsum("sat,t->sa", mdp.transitions, v_next)


def _greedy(q: jax.Array) -> jax.Array:
    return jnp.argmax(q, axis=-1)


@jax.jit
def policy_evaluation(mdp: TabularMDP, policy_probs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact V^π and Q^π.

    Infinite horizon: V = (I - γ P_π)^{-1} r_π, solved directly. Finite horizon H: backward
    induction V_t = Σ_a π_t(a|s) [r̄(s, a) + γ Σ_{s'} P V_{t+1}(s')], V_H = 0.

    Args:
      mdp: the MDP.
      policy_probs: [S, A], or [H, S, A] for a finite-horizon time-indexed policy.

    Returns:
      (values, q_values): ([S], [S, A]) or ([H + 1, S], [H, S, A]).
    """
    num_states = mdp.num_states
    if mdp.horizon is None:
        chex.assert_shape(policy_probs, (num_states, mdp.num_actions))
        r_pi = jnp.sum(policy_probs * expected_reward(mdp), axis=-1)
        p_pi = jnp.einsum("sa,sat->st", policy_probs, mdp.transitions)
        values = jnp.linalg.solve(jnp.eye(num_states) - mdp.discount * p_pi, r_pi)
        return values, bellman_q(mdp, values, mdp.discount)

    policy_probs = as_time_indexed(policy_probs, mdp.horizon)
    chex.assert_shape(policy_probs, (mdp.horizon, num_states, mdp.num_actions))

    def backup(v_next, pi_t):
        q_t = bellman_q(mdp, v_next, mdp.discount)
        return jnp.sum(pi_t * q_t, axis=-1), q_t

    v_0, (v_t, q_t) = _backward_scan(backup, jnp.zeros(num_states), policy_probs)
    return v_t, q_t


def _backward_scan(backup, v_last, xs=None, length=None):
    """Runs V_t = backup(V_{t+1}, x_t) from t = H - 1 down to 0; returns (V_0, ([H + 1] V, ys))."""

    def body(v_next, x):
        v, y = backup(v_next, x)
        return v, (v, y)

    v_0, (vs, ys) = jax.lax.scan(body, v_last, xs, length=length, reverse=True)
    return v_0, (jnp.concatenate([vs, v_last[None]], axis=0), ys)


@functools.partial(jax.jit, static_argnames=("tol", "max_iterations"))
def value_iteration(
    mdp: TabularMDP, *, tol: float = 1e-7, max_iterations: int = 10_000
) -> Solution:
    """Optimal values by value iteration: V ← max_a [r̄ + γ P V].

    Infinite horizon: iterate until sup |V_{n+1} - V_n| <= tol (or `max_iterations`); the
    returned V is then within γ tol / (1 - γ) of V*. Finite horizon: exact backward induction.

    Args:
      mdp: the MDP.
      tol: stopping threshold on the sup-norm change (infinite horizon).
      max_iterations: iteration cap (infinite horizon).

    Returns:
      `Solution` with the greedy deterministic policy.
    """
    if mdp.horizon is not None:

        def backup(v_next, _):
            q_t = bellman_q(mdp, v_next, mdp.discount)
            return jnp.max(q_t, axis=-1), q_t

        _, (values, q_values) = _backward_scan(
            backup, jnp.zeros(mdp.num_states), length=mdp.horizon
        )
        return Solution(values, q_values, _greedy(q_values))

    def cond(carry):
        n, _, delta = carry
        return (n < max_iterations) & (delta > tol)

    def body(carry):
        n, v, _ = carry
        v_new = jnp.max(bellman_q(mdp, v, mdp.discount), axis=-1)
        return n + 1, v_new, jnp.max(jnp.abs(v_new - v))

    v0 = jnp.zeros(mdp.num_states)
    _, values, _ = jax.lax.while_loop(cond, body, (0, v0, jnp.asarray(jnp.inf, v0.dtype)))
    q_values = bellman_q(mdp, values, mdp.discount)
    return Solution(values, q_values, _greedy(q_values))


@functools.partial(jax.jit, static_argnames=("max_iterations",))
def policy_iteration(mdp: TabularMDP, *, max_iterations: int = 1_000) -> Solution:
    """Optimal values by policy iteration: exact evaluation, then greedy improvement.

    An action changes only if it improves Q by more than 1e-6 (relative), so float32 ties cannot
    make the loop cycle. Works for both horizons (a finite-horizon policy is [H, S]).

    Args:
      mdp: the MDP.
      max_iterations: cap on improvement steps (PI converges in at most A^S; usually < 10).

    Returns:
      `Solution` of the final policy.
    """
    num_actions = mdp.num_actions
    shape = (mdp.num_states,) if mdp.horizon is None else (mdp.horizon, mdp.num_states)

    def evaluate(policy):
        return policy_evaluation(mdp, jax.nn.one_hot(policy, num_actions))

    def cond(carry):
        n, _, changed = carry
        return (n < max_iterations) & changed

    def body(carry):
        n, policy, _ = carry
        _, q = evaluate(policy)
        q_old = jnp.take_along_axis(q, policy[..., None], axis=-1)[..., 0]
        q_max = jnp.max(q, axis=-1)
        improve = q_max > q_old + 1e-6 * (1.0 + jnp.abs(q_max))
        new_policy = jnp.where(improve, _greedy(q), policy)
        return n + 1, new_policy, jnp.any(improve)

    init = (0, jnp.zeros(shape, jnp.int32), jnp.asarray(True))
    _, policy, _ = jax.lax.while_loop(cond, body, init)
    values, q_values = evaluate(policy)
    return Solution(values, q_values, policy)


def initial_value(mdp: TabularMDP, values: jax.Array) -> jax.Array:
    """J = Σ_s μ(s) V_0(s) for values [S] or [H + 1, S]. Returns []."""
    v_0 = values if values.ndim == 1 else values[0]
    return jnp.dot(mdp.initial_dist, v_0)
