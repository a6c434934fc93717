"""Tests for rljax.dp.mdp and rljax.dp.instances: validation, shapes, vmap without recompiles."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import dp


def _two_state():
    p = np.zeros((2, 2, 2))
    p[:, 0, 0] = 1.0
    p[:, 1, 1] = 1.0
    return p, np.array([[0.0, 1.0], [2.0, 3.0]])


def test_make_mdp_builds_and_expected_reward():
    p, r = _two_state()
    mdp = dp.make_mdp(p, r, 0.5)
    assert mdp.transitions.dtype == jnp.float32
    assert mdp.reward_values.shape == (2, 2, 2, 1)
    np.testing.assert_allclose(dp.expected_reward(mdp), r)


def test_reward_distribution_mean():
    p, _ = _two_state()
    values = np.broadcast_to(np.array([-1.0, 3.0]), (2, 2, 2, 2))
    probs = np.broadcast_to(np.array([0.25, 0.75]), (2, 2, 2, 2))
    mdp = dp.make_mdp(p, values, 0.9, reward_probs=probs)
    np.testing.assert_allclose(dp.expected_reward(mdp), np.full((2, 2), 2.0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"transitions": np.full((2, 2, 2), 0.4)}, r"transitions: got row \(0, 0\) sums to 0.8"),
        ({"transitions": np.ones((2, 2, 3)) / 3}, r"transitions: got shape \(2, 2, 3\)"),
        ({"discount": 1.5}, r"discount: got 1.5; allowed: a number in \[0, 1\]"),
        ({"discount": -0.1}, r"discount: got -0.1"),
        ({"discount": 1.0}, r"discount: got 1.0; allowed: < 1 when horizon is None"),
        ({"rewards": np.zeros((3, 2))}, r"rewards: got shape \(3, 2\)"),
        ({"horizon": 0}, r"horizon: got 0"),
        ({"initial_dist": np.array([0.5, 0.6])}, r"initial_dist: got row \(\) sums to 1.1"),
    ],
)
def test_make_mdp_rejects_bad_input(kwargs, match):
    p, r = _two_state()
    args = {"transitions": p, "rewards": r, "discount": 0.9} | kwargs
    with pytest.raises(ValueError, match=match):
        dp.make_mdp(**args)


def test_reward_probs_must_sum_to_one():
    p, _ = _two_state()
    values = np.zeros((2, 2, 2, 2))
    with pytest.raises(ValueError, match="reward_probs: got row"):
        dp.make_mdp(p, values, 0.9, reward_probs=np.full((2, 2, 2, 2), 0.3))


def test_instances_are_valid_and_sized():
    assert dp.chain(5).transitions.shape == (5, 2, 5)
    gamble = dp.gamble_chain(5)
    assert gamble.horizon == 5 and gamble.num_reward_atoms == 2
    cliff = dp.cliff_gridworld(4, 6)
    assert cliff.transitions.shape == (25, 4, 25)
    tree = dp.tree_mdp(0, depth=3, branching=2)
    assert tree.transitions.shape == (16, 2, 16) and tree.horizon == 3
    assert dp.homeostasis().num_actions == 3
    for mdp in (gamble, cliff, tree, dp.homeostasis()):
        np.testing.assert_allclose(mdp.transitions.sum(-1), 1.0, atol=1e-6)


def test_random_mdps_vmap_without_recompiles():
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    batch = jax.vmap(lambda k: dp.random_mdp(k, 4, 3, num_reward_atoms=2))(keys)
    np.testing.assert_allclose(batch.transitions.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(batch.reward_probs.sum(-1), 1.0, atol=1e-5)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def solve(mdp):
        return dp.value_iteration(mdp).values

    jax.vmap(solve)(batch)
    batch2 = jax.vmap(lambda k: dp.random_mdp(k, 4, 3, num_reward_atoms=2))(keys + 1)
    jax.vmap(solve)(batch2)  # same shapes, new numbers: no retrace
    stacked = dp.stack_mdps([dp.chain(4), dp.chain(4, slip=0.3)])
    assert stacked.transitions.shape == (2, 4, 2, 4)
