"""rljax.dp.monte_carlo: sampled returns against returns worked out by hand."""

import jax
import jax.numpy as jnp
import numpy as np

from rljax.dp import mdp as mdp_lib
from rljax.dp import monte_carlo


def _two_armed(horizon=None, discount=0.5):
    """One state; action 0 pays 1, action 1 pays 0 or 4 with equal probability."""
    transitions = np.ones((1, 2, 1))
    atoms = np.array([[[[1.0, 1.0]], [[0.0, 4.0]]]])  # [S, A, S', K]
    probs = np.array([[[[0.5, 0.5]], [[0.5, 0.5]]]])
    return mdp_lib.make_mdp(transitions, atoms, discount, horizon=horizon, reward_probs=probs)


def test_deterministic_policy_return_is_the_discounted_sum():
    mdp = _two_armed()
    returns = monte_carlo.sample_returns(mdp, jnp.array([[1.0, 0.0]]), jax.random.PRNGKey(0), 4, 3)
    np.testing.assert_allclose(returns, np.full(4, 1 + 0.5 + 0.25), rtol=1e-6)


def test_random_rewards_average_to_their_mean_and_stay_on_the_atoms():
    mdp = _two_armed(horizon=1, discount=1.0)
    returns = np.asarray(
        monte_carlo.sample_returns(mdp, jnp.array([[0.0, 1.0]]), jax.random.PRNGKey(1), 4000)
    )
    assert set(np.unique(returns)) == {0.0, 4.0}
    assert abs(returns.mean() - 2.0) < 5 * 2.0 / np.sqrt(4000)  # 5 standard errors
