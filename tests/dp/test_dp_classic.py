"""Classic DP against brute-force enumeration of deterministic policies (NumPy, float64)."""

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import dp

NUM_STATES, NUM_ACTIONS = 4, 3


def _np(mdp):
    p = np.asarray(mdp.transitions, np.float64)
    r = np.sum(np.asarray(mdp.reward_values, np.float64) * np.asarray(mdp.reward_probs), -1)
    return p, np.sum(p * r, -1), float(mdp.discount)


def _brute_force_infinite(mdp):
    """max over all A^S deterministic stationary policies of V^π (per state), by linear solves."""
    p, r, gamma = _np(mdp)
    best = np.full(p.shape[0], -np.inf)
    idx = np.arange(p.shape[0])
    for pi in itertools.product(range(p.shape[1]), repeat=p.shape[0]):
        v = np.linalg.solve(np.eye(p.shape[0]) - gamma * p[idx, pi], r[idx, pi])
        best = np.maximum(best, v)
    return best


def _brute_force_finite(mdp):
    """max over all A^(H S) deterministic time-indexed policies of V_0^π (per state)."""
    p, r, gamma = _np(mdp)
    idx = np.arange(p.shape[0])
    best = np.full(p.shape[0], -np.inf)
    for flat in itertools.product(range(p.shape[1]), repeat=mdp.horizon * p.shape[0]):
        pi = np.array(flat).reshape(mdp.horizon, p.shape[0])
        v = np.zeros(p.shape[0])
        for t in reversed(range(mdp.horizon)):
            v = r[idx, pi[t]] + gamma * p[idx, pi[t]] @ v
        best = np.maximum(best, v)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vi_and_pi_match_brute_force_infinite_horizon(seed):
    # float32 throughout: |V| <= 1 / (1 - 0.9) = 10, so float32 rounding (~1e-6) is far inside
    # 1e-5; VI stops at sup-change 1e-7, within 0.9e-7 / 0.1 ~ 1e-6 of V*.
    mdp = dp.random_mdp(jax.random.PRNGKey(seed), NUM_STATES, NUM_ACTIONS, num_reward_atoms=2)
    expected = _brute_force_infinite(mdp)
    vi = dp.value_iteration(mdp)
    pi = dp.policy_iteration(mdp)
    np.testing.assert_allclose(vi.values, expected, atol=1e-5)
    np.testing.assert_allclose(pi.values, expected, atol=1e-5)
    # The greedy policies are optimal too (their exact values attain the optimum).
    v_greedy, _ = dp.policy_evaluation(mdp, jax.nn.one_hot(vi.policy, NUM_ACTIONS))
    np.testing.assert_allclose(v_greedy, expected, atol=1e-5)


def test_vi_and_pi_match_brute_force_finite_horizon():
    mdp = dp.random_mdp(jax.random.PRNGKey(7), 3, 2, horizon=3, discount=0.95)
    expected = _brute_force_finite(mdp)
    vi = dp.value_iteration(mdp)
    pi = dp.policy_iteration(mdp)
    assert vi.values.shape == (4, 3) and vi.policy.shape == (3, 3)
    np.testing.assert_allclose(vi.values[0], expected, atol=1e-5)
    np.testing.assert_allclose(pi.values[0], expected, atol=1e-5)
    np.testing.assert_allclose(vi.values[-1], 0.0)


def test_policy_evaluation_hand_computed():
    # Two states, one action: 0 -> 1 (reward 1), 1 -> 1 (reward 0). V(1) = 0, V(0) = 1.
    p = np.zeros((2, 1, 2))
    p[:, 0, 1] = 1.0
    mdp = dp.make_mdp(p, np.array([[1.0], [0.0]]), 0.5)
    v, q = dp.policy_evaluation(mdp, jnp.ones((2, 1)))
    np.testing.assert_allclose(v, [1.0, 0.0], atol=1e-6)
    # Chain, "always right": Q^π(s, π(s)) must equal V^π(s) (Bellman consistency).
    chain = dp.chain(4)
    v, q = dp.policy_evaluation(chain, jax.nn.one_hot(jnp.ones(4, jnp.int32), 2))
    np.testing.assert_allclose(q[:, 1], v, atol=1e-5)


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_batched_equals_looped_and_no_recompile():
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    batch = jax.vmap(lambda k: dp.random_mdp(k, NUM_STATES, NUM_ACTIONS))(keys)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def solve(mdp):
        return dp.policy_iteration(mdp).values

    batched = jax.vmap(solve)(batch)
    for i, k in enumerate(keys):
        np.testing.assert_allclose(
            batched[i], solve(dp.random_mdp(k, NUM_STATES, NUM_ACTIONS)), atol=1e-5
        )
