"""Distributional evaluation against Monte Carlo, classic evaluation and hand-computed values.

Tolerance for W1(DP, Monte Carlo) on returns in an interval of length L, n samples:
  * representation error: categorical Δ / (2 (1 - γ)); quantile L / (2 N (1 - γ)) (module
    docstring of rljax.dp.distributional); zero for a finite horizon with rewards on the grid;
  * sampling: E W1(F_n, F) <= ∫ sqrt(F (1 - F) / n) dx (computed from the DP law itself), plus a
    McDiarmid deviation L sqrt(ln(1/δ) / (2n)) at δ = 1e-3 (one sample moves W1 by <= L / n);
  * truncation of infinite-horizon episodes after T steps: γ^T L.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import dp

NUM_EPISODES = 10_000
DELTA = 1e-3


def _sampling_tol(atoms, probs, width, n=NUM_EPISODES):
    order = np.argsort(atoms)
    x = np.asarray(atoms)[order]
    cdf = np.clip(np.cumsum(np.asarray(probs, np.float64)[order]), 0.0, 1.0)
    expected = np.sum(np.sqrt(cdf[:-1] * (1 - cdf[:-1]) / n) * np.diff(x))
    return expected + width * np.sqrt(np.log(1 / DELTA) / (2 * n))


def _random_setup():
    mdp = dp.random_mdp(jax.random.PRNGKey(0), 4, 2, discount=0.9, num_reward_atoms=2)
    policy = jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(1), (4, 2)))
    returns = dp.sample_returns(mdp, policy, jax.random.PRNGKey(2), NUM_EPISODES, 100)
    return mdp, policy, returns


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_categorical_matches_monte_carlo_and_classic_mean():
    mdp, policy, returns = _random_setup()
    atoms = jnp.linspace(0.0, 10.0, 201)
    eta = dp.categorical_policy_evaluation(mdp, policy, atoms)
    law = mdp.initial_dist @ eta
    np.testing.assert_allclose(eta.sum(-1), 1.0, atol=1e-5)
    w1 = dp.wasserstein_1(atoms, law, returns, jnp.full(NUM_EPISODES, 1.0 / NUM_EPISODES))
    tol = 0.05 / (2 * 0.1) + _sampling_tol(atoms, law, 10.0) + 0.9**100 * 10
    assert float(w1) < tol, (float(w1), tol)
    v, _ = dp.policy_evaluation(mdp, policy)
    np.testing.assert_allclose(dp.mean(atoms, eta), v, atol=1e-4)  # projection keeps the mean


def test_quantile_matches_monte_carlo():
    mdp, policy, returns = _random_setup()
    theta = dp.quantile_policy_evaluation(mdp, policy, 100)
    atoms = theta.reshape(-1)
    probs = (mdp.initial_dist[:, None] * jnp.full((4, 100), 0.01)).reshape(-1)
    w1 = dp.wasserstein_1(atoms, probs, returns, jnp.full(NUM_EPISODES, 1.0 / NUM_EPISODES))
    bound = 10.0 / (2 * 100 * 0.1)
    tol = bound + _sampling_tol(atoms, probs, 10.0) + 0.9**100 * 10
    assert float(w1) < tol, (float(w1), tol)
    v, _ = dp.policy_evaluation(mdp, policy)
    # |mean difference| <= W1 between the quantile fixed point and the true law.
    np.testing.assert_allclose(jnp.mean(theta, -1), v, atol=bound)


def test_finite_horizon_integer_rewards_are_exact():
    mdp = dp.gamble_chain(4)
    policy = jnp.full((5, 2), 0.5)
    atoms = jnp.arange(-40.0, 21.0)
    eta = dp.categorical_policy_evaluation(mdp, policy, atoms)
    assert eta.shape == (5, 5, 61)
    # Hand count for 4 fair coin flips between safe (+1) and the gamble (+5 / -10 w.p. .95/.05).
    per_step = {1.0: 0.5, 5.0: 0.475, -10.0: 0.025}
    exact = {0.0: 1.0}
    for _ in range(4):
        nxt = {}
        for g, pg in exact.items():
            for r, pr in per_step.items():
                nxt[g + r] = nxt.get(g + r, 0.0) + pg * pr
        exact = nxt
    expected = np.zeros(61)
    for g, pg in exact.items():
        expected[int(g) + 40] += pg
    np.testing.assert_allclose(eta[0, 0], expected, atol=1e-6)
    returns = dp.sample_returns(mdp, policy, jax.random.PRNGKey(0), NUM_EPISODES)
    w1 = dp.wasserstein_1(atoms, eta[0, 0], returns, jnp.full(NUM_EPISODES, 1 / NUM_EPISODES))
    assert float(w1) < _sampling_tol(atoms, eta[0, 0], 60.0)
    theta = dp.quantile_policy_evaluation(mdp, policy, 40)
    assert theta.shape == (5, 5, 40)
    v, _ = dp.policy_evaluation(mdp, policy)
    np.testing.assert_allclose(dp.mean(atoms, eta[0]), v[0], atol=1e-4)


def test_projection_keeps_mass_and_mean():
    atoms = jnp.linspace(-1.0, 1.0, 5)
    values = jnp.array([-0.8, 0.1, 0.33, 0.9])
    weights = jnp.array([0.1, 0.2, 0.3, 0.4])
    probs = dp.categorical_projection(atoms, values, weights)
    np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-6)
    np.testing.assert_allclose(jnp.dot(probs, atoms), jnp.dot(weights, values), atol=1e-6)
    # A point at 0.25 = halfway between atoms 0 and 0.5 splits evenly.
    half = dp.categorical_projection(atoms, jnp.array([0.25]), jnp.ones(1))
    np.testing.assert_allclose(half, [0, 0, 0.5, 0.5, 0], atol=1e-6)


def test_distances_and_functionals_hand_computed():
    one = jnp.ones(1)
    assert float(dp.wasserstein_1(jnp.zeros(1), one, jnp.ones(1) * 3, one)) == 3.0
    assert abs(float(dp.cramer_distance(jnp.zeros(1), one, jnp.ones(1) * 4, one)) - 2.0) < 1e-6
    # Bernoulli(0.5) on {0, 1} vs δ_0: W1 = 0.5, Cramér = sqrt(0.25) = 0.5.
    x, p = jnp.array([0.0, 1.0]), jnp.array([0.5, 0.5])
    assert abs(float(dp.wasserstein_1(x, p, jnp.zeros(1), one)) - 0.5) < 1e-6
    assert abs(float(dp.cramer_distance(x, p, jnp.zeros(1), one)) - 0.5) < 1e-6
    # CVaR_0.25 of {-10: .1, 0: .2, 5: .7} = (0.1 * -10 + 0.15 * 0) / 0.25 = -4.
    z, q = jnp.array([5.0, -10.0, 0.0]), jnp.array([0.7, 0.1, 0.2])
    assert abs(float(dp.cvar(z, q, 0.25)) + 4.0) < 1e-5
    assert abs(float(dp.cvar(z, q, 1.0)) - float(dp.mean(z, q))) < 1e-5
    samples = jnp.arange(100.0)
    assert abs(float(dp.cvar_of_samples(samples, 0.1)) - 4.5) < 1e-4
    assert abs(float(dp.threshold_probability(z, q, 0.0)) - 0.9) < 1e-6
    assert abs(float(dp.homeostatic_score(z, q, 0.0)) + 4.5) < 1e-6


def test_greedy_distributional_control_with_mean_is_value_iteration():
    mdp = dp.gamble_chain(4)
    atoms = jnp.arange(-40.0, 21.0)
    policy, etas = dp.greedy_distributional_control(mdp, atoms, dp.mean)
    vi = dp.value_iteration(mdp)
    np.testing.assert_array_equal(policy, vi.policy)
    np.testing.assert_allclose(dp.mean(atoms, etas), vi.values, atol=1e-4)
