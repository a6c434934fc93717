"""rljax.bandits: regret bookkeeping on a known bandit, Thompson/UCB1 behaviour, no label leak."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import bandits

MEANS = jnp.asarray([[0.1, 0.9, 0.5]])  # one known task, best arm 1


def _fixed(arm):
    return lambda actions, rewards, t, key: jnp.full(actions.shape[:1], arm, jnp.int32)


def test_regret_of_fixed_arms_is_exact():
    key = jax.random.PRNGKey(0)
    for arm, gap in ((1, 0.0), (0, 0.8), (2, 0.4)):
        actions, rewards, regret = bandits.run_online(_fixed(arm), MEANS, key, 40)
        assert (actions == arm).all()
        np.testing.assert_allclose(regret.sum(), 40 * gap, rtol=1e-6)
        # rewards are Bernoulli draws of the pulled arm
        assert set(np.unique(rewards).tolist()) <= {0.0, 1.0}


def test_counts_see_only_the_first_t_pulls():
    actions = jnp.asarray([[2, 0, 2, 1]])
    rewards = jnp.asarray([[1.0, 0.0, 0.0, 1.0]])
    n, s = bandits.counts(actions, rewards, jnp.asarray(3), 3)
    np.testing.assert_array_equal(n, [[1, 0, 2]])
    np.testing.assert_array_equal(s, [[0, 0, 1]])


@pytest.mark.slow
def test_ucb1_pulls_each_arm_first_then_stays_within_its_bound():
    means = jnp.tile(MEANS, (200, 1))
    pol = functools.partial(bandits.ucb1, num_arms=3)
    actions, _, regret = bandits.run_online(pol, means, jax.random.PRNGKey(1), 200)
    np.testing.assert_array_equal(jnp.sort(actions[:, :3], -1), jnp.tile(jnp.arange(3), (200, 1)))
    # Auer et al. 2002, Theorem 1: E[regret] <= Σ_{Δ>0} 8 ln T / Δ + (1 + π²/3) Σ Δ.
    bound = sum(8 * np.log(200) / d + (1 + np.pi**2 / 3) * d for d in (0.8, 0.4))
    assert float(regret.sum(-1).mean()) < bound


@pytest.mark.slow
def test_thompson_beats_uniform_and_its_regret_flattens():
    means = jnp.tile(MEANS, (200, 1))
    ts = functools.partial(bandits.thompson, num_arms=3)
    uni = functools.partial(bandits.uniform, num_arms=3)
    key = jax.random.PRNGKey(2)
    r_ts = bandits.run_online(ts, means, key, 100)[2].mean(0)
    r_uni = bandits.run_online(uni, means, key, 100)[2].mean(0)
    np.testing.assert_allclose(r_uni.mean(), 0.4, atol=0.03)  # (0.8 + 0 + 0.4) / 3
    assert r_ts.sum() < 0.25 * r_uni.sum()
    assert r_ts[-20:].mean() < 0.2 * r_ts[:10].mean()


@pytest.mark.slow
def test_pretraining_data_does_not_leak_the_label():
    tokens, best, means = bandits.pretraining_batch(jax.random.PRNGKey(3), 8000, 5, 30)
    assert tokens.shape == (8000, 31, 12)
    np.testing.assert_array_equal(best, jnp.argmax(means, -1))
    # The action distribution is drawn independently of the task: the most-pulled arm is the
    # best arm at chance rate 1/K (binomial sd ~ 0.0045 here).
    pulls = tokens[:, 1:, :5].sum(1)
    rate = float(jnp.mean(jnp.argmax(pulls, -1) == best))
    assert abs(rate - 0.2) < 0.02
    # ...while the rewards carry it: the arm with the best empirical mean is often the label.
    wins = tokens[:, 1:, 5:10].sum(1)
    emp = wins / jnp.maximum(pulls, 1)
    assert float(jnp.mean(jnp.argmax(emp, -1) == best)) > 0.4


def test_history_features_encode_pulls_in_order():
    f = bandits.history_features(jnp.asarray([[1, 0]]), jnp.asarray([[1.0, 0.0]]), 2)
    np.testing.assert_allclose(
        f[0], [[0, 0, 0, 0, 0, 1], [0, 1, 0, 1, 0.5, 0], [1, 0, 0, 0, 1.0, 0]]
    )


def test_greedy_takes_the_best_posterior_mean_and_breaks_ties_at_random():
    # Arm 0: 1 success in 1 pull (mean 2/3); arm 1: 0 of 1 (1/3); arm 2 unpulled (1/2).
    actions = jnp.asarray([[0, 1, 0]])
    rewards = jnp.asarray([[1.0, 0.0, 0.0]])
    pol = functools.partial(bandits.greedy, num_arms=3)
    keys = jax.random.split(jax.random.PRNGKey(0), 50)
    picks = jax.vmap(lambda k: pol(actions, rewards, jnp.asarray(2), k))(keys)
    assert (picks == 0).all()
    # At t = 3 arm 0 has 1 of 2 (1/2), tied with unpulled arm 2; arm 1 (1/3) is never taken.
    picks = np.asarray(jax.vmap(lambda k: pol(actions, rewards, jnp.asarray(3), k))(keys))
    assert set(picks[:, 0].tolist()) == {0, 2}
