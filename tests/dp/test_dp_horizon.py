"""Effective horizon helpers and ROVER's theorem (and its failure on a stochastic tree)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import dp


def test_rover_greedy_is_optimal_on_random_trees():
    trees = dp.stack_mdps([dp.tree_mdp(seed, depth=4, branching=3) for seed in range(6)])

    @jax.jit
    @chex.assert_max_traces(n=1)
    def check(tree):
        policy = dp.rover_policy(tree)
        v_greedy, _ = dp.policy_evaluation(tree, jax.nn.one_hot(policy, tree.num_actions))
        return v_greedy, dp.value_iteration(tree).values

    v_greedy, v_star = jax.vmap(check)(trees)
    np.testing.assert_allclose(v_greedy, v_star, atol=1e-6)
    assert float(v_star[:, 0, 0].min()) == 1.0  # every tree has a success leaf: not vacuous
    assert bool(jnp.all(jax.vmap(lambda t: dp.min_qvi_steps(t, 2))(trees) == 0))


def _stochastic_counterexample():
    """Root: a0 -> node X (one of X's 3 actions succeeds); a1 -> success w.p. 0.5; a2 -> fail.

    Q^{π_rand}(root) = (1/3, 1/2, 0): greedy picks a1 (value 0.5) while a0 reaches 1.
    States: 0 root, 1 X, 2 success leaf, 3 fail leaf, 4 terminal.
    """
    p = np.zeros((5, 3, 5))
    r = np.zeros((5, 3, 5))
    p[0, 0, 1] = 1.0
    p[0, 1, [2, 3]] = 0.5
    p[0, 2, 3] = 1.0
    p[1, 0, 2] = 1.0
    p[1, 1:, 3] = 1.0
    p[2:, :, 4] = 1.0
    r[:, :, 2] = 1.0  # entering the success leaf pays 1
    return dp.make_mdp(p, r, 1.0, horizon=2)


def test_rover_fails_on_stochastic_counterexample():
    mdp = _stochastic_counterexample()
    q_rand = dp.random_policy_q(mdp)
    np.testing.assert_allclose(q_rand[0, 0], [1 / 3, 0.5, 0.0], atol=1e-6)
    policy = dp.rover_policy(mdp)
    v_greedy, _ = dp.policy_evaluation(mdp, jax.nn.one_hot(policy, 3))
    v_star = dp.value_iteration(mdp).values
    assert abs(float(v_greedy[0, 0]) - 0.5) < 1e-6 and abs(float(v_star[0, 0]) - 1.0) < 1e-6
    assert not bool(dp.greedy_is_optimal(mdp, q_rand))
    # One step of Q-value iteration fixes it: the MDP is 1-QVI-solvable, not 0.
    assert int(dp.min_qvi_steps(mdp, 3)) == 1


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_k_steps_of_qvi_reach_q_star_and_effective_horizon():
    mdp = dp.random_mdp(jax.random.PRNGKey(0), 5, 3, horizon=4, discount=1.0)
    q_star = dp.value_iteration(mdp).q_values
    q_h = dp.q_value_iteration(mdp, dp.random_policy_q(mdp), 4)
    np.testing.assert_allclose(q_h, q_star, atol=1e-5)  # H steps are exact in finite horizon
    k = int(dp.min_qvi_steps(mdp, 4))
    assert 0 <= k <= 4
    h = float(dp.effective_horizon(mdp, 4))
    assert k <= h < np.inf
    # Discounted case: T*^k Q_rand -> Q* geometrically, at rate γ.
    disc = dp.random_mdp(jax.random.PRNGKey(1), 4, 2, discount=0.5)
    err = [
        float(
            jnp.max(
                jnp.abs(
                    dp.q_value_iteration(disc, dp.random_policy_q(disc), k)
                    - dp.value_iteration(disc).q_values
                )
            )
        )
        for k in (0, 5)
    ]
    assert err[1] <= 0.5**5 * err[0] + 1e-5
