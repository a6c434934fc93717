"""rljax.dp.trees: level-by-level tree DP against hand-computed trees and the dense rljax.dp
solvers, ROVER's theorem and its two negative controls."""

import math

import jax
import numpy as np
import pytest

from rljax import dp
from rljax.dp import trees


def _dense(leaf_rewards, branching, transitions=None):
    """The same tree as a dense `TabularMDP` (breadth-first numbering, as `dp.tree_mdp`)."""
    depth = round(math.log(len(leaf_rewards), branching))
    size = trees.num_nodes(branching, depth)
    terminal = size
    p = np.zeros((size + 1, branching, size + 1))
    r = np.zeros((size + 1, branching, size + 1))
    p[size - branching**depth :, :, terminal] = 1.0
    p[terminal, :, terminal] = 1.0
    for d in range(depth):
        offset = trees.num_nodes(branching, d - 1) if d else 0
        child_offset = trees.num_nodes(branching, d)
        for n in range(branching**d):
            children = child_offset + n * branching + np.arange(branching)
            for a in range(branching):
                if transitions is None:
                    p[offset + n, a, children[a]] = 1.0
                else:
                    p[offset + n, a, children] = np.asarray(transitions[d])[n, a]
                if d == depth - 1:
                    r[offset + n, a, children] = leaf_rewards[n * branching + np.arange(branching)]
    return dp.make_mdp(p, r, 1.0, horizon=depth)


def _level(dense_q, branching, d):
    """Level d of a dense time-indexed [H, S, A] q-table, as [b^d, b]."""
    offset = trees.num_nodes(branching, d - 1) if d else 0
    return np.asarray(dense_q[d, offset : offset + branching**d])


def test_depth_two_binary_tree_by_hand():
    # Leaves [1, 0 | 1, 1]: Q_1 = [[1, 0], [1, 1]], V_1 = [1/2, 1], Q_0 = [[1/2, 1]].
    r = np.array([1.0, 0.0, 1.0, 1.0], np.float32)
    q = trees.uniform_q(r, 2)
    np.testing.assert_allclose(q[1], [[1, 0], [1, 1]])
    np.testing.assert_allclose(q[0], [[0.5, 1.0]])
    np.testing.assert_allclose(trees.optimal_q(r, 2)[0], [[1.0, 1.0]])
    # ROVER at τ = 1/2: root softmax([1, 2]), left node softmax([2, 0]), right node uniform.
    pi = trees.softmax_policy(q, 0.5)
    e = math.e
    root = [1 / (1 + e), e / (1 + e)]
    left = [e**2 / (1 + e**2), 1 / (1 + e**2)]
    np.testing.assert_allclose(pi[0], [root], rtol=1e-6)
    leaves = [root[0] * left[0], root[0] * left[1], root[1] / 2, root[1] / 2]
    np.testing.assert_allclose(trees.leaf_distribution(pi), leaves, rtol=1e-6)
    success = float(trees.leaf_distribution(pi) @ r)
    assert success == pytest.approx(root[0] * left[0] + root[1], rel=1e-6)
    assert float(trees.policy_q(r, pi)[0][0] @ pi[0][0]) == pytest.approx(success, rel=1e-6)
    # Greedy (τ → 0) takes the right subtree and then either leaf; π ∝ Q is uniform on the 3.
    np.testing.assert_allclose(trees.leaf_distribution(trees.greedy_policy(q)), [0, 0, 0.5, 0.5])
    np.testing.assert_allclose(
        trees.leaf_distribution(trees.proportional_policy(q)), [1 / 3, 0, 1 / 3, 1 / 3], rtol=1e-6
    )
    # k samples from π ∝ Q: each correct leaf is missed w.p. (2/3)^k.
    got = trees.expected_distinct(
        trees.leaf_distribution(trees.proportional_policy(q)), r, np.array([1, 2, 5])
    )
    np.testing.assert_allclose(got, [3 * (1 - (2 / 3) ** k) for k in (1, 2, 5)], rtol=1e-5)


def test_temperature_limits():
    r = trees.random_leaf_rewards(3, branching=3, depth=3, num_correct=4)
    q = trees.uniform_q(r, 3)
    cold = trees.leaf_distribution(trees.softmax_policy(q, 1e-4))
    np.testing.assert_allclose(cold, trees.leaf_distribution(trees.greedy_policy(q)), atol=1e-4)
    hot = trees.leaf_distribution(trees.softmax_policy(q, 1e6))
    np.testing.assert_allclose(hot, np.full(27, 1 / 27), atol=1e-6)


@pytest.mark.parametrize("stochastic", [False, True])
def test_agrees_with_dense_dp(stochastic):
    b, depth = 3, 3
    r = trees.random_leaf_rewards(0, branching=b, depth=depth, num_correct=5)
    r = r * np.random.default_rng(1).uniform(0.2, 1.0, r.shape).astype(np.float32)  # not binary
    tr = trees.random_transitions(2, branching=b, depth=depth, slip=0.4) if stochastic else None
    mdp = _dense(r, b, tr)
    q_u, q_star = dp.random_policy_q(mdp), dp.value_iteration(mdp).q_values
    pi = trees.softmax_policy(trees.uniform_q(r, b, tr), 0.3)
    dense_pi = np.full((mdp.num_states, b), 1.0 / b)
    for d in range(depth):
        offset = trees.num_nodes(b, d - 1) if d else 0
        dense_pi[offset : offset + b**d] = np.asarray(pi[d])
    v_pi, q_pi = dp.policy_evaluation(mdp, np.broadcast_to(dense_pi, (depth, *dense_pi.shape)))
    for d in range(depth):
        np.testing.assert_allclose(trees.uniform_q(r, b, tr)[d], _level(q_u, b, d), atol=1e-6)
        np.testing.assert_allclose(trees.optimal_q(r, b, tr)[d], _level(q_star, b, d), atol=1e-6)
        np.testing.assert_allclose(trees.policy_q(r, pi, tr)[d], _level(q_pi, b, d), atol=1e-6)
    p = trees.leaf_distribution(pi, tr)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-6)
    assert float(p @ r) == pytest.approx(float(v_pi[0, 0]), abs=1e-6)


def test_rover_theorem_on_random_deterministic_binary_trees():
    for seed in range(5):
        r = trees.random_leaf_rewards(seed, branching=4, depth=4, num_correct=3)
        q = trees.uniform_q(r, 4)
        greedy = trees.leaf_distribution(trees.greedy_policy(q))
        assert float(greedy @ r) == pytest.approx(1.0, abs=1e-6)
        # every greedy action is optimal at every node, reachable or not
        q_star = trees.optimal_q(r, 4)
        for g, qs in zip(trees.greedy_policy(q), q_star, strict=True):
            assert bool(np.all((np.asarray(g) == 0) | (np.asarray(qs) == qs.max(-1)[:, None])))
        uniform_on_correct = trees.leaf_distribution(trees.proportional_policy(q))
        np.testing.assert_allclose(uniform_on_correct, r / r.sum(), atol=1e-6)


def test_negative_control_non_binary_reward_by_hand():
    # Leaves [0.6, 0.6 | 1, 0]: Q^{π_u}(root) = [0.6, 0.5], greedy gets 0.6, optimal 1.
    r = np.array([0.6, 0.6, 1.0, 0.0], np.float32)
    q = trees.uniform_q(r, 2)
    np.testing.assert_allclose(q[0], [[0.6, 0.5]], rtol=1e-6)
    assert float(trees.leaf_distribution(trees.greedy_policy(q)) @ r) == pytest.approx(0.6)
    assert float(np.max(trees.optimal_q(r, 2)[0])) == pytest.approx(1.0)


def test_negative_control_stochastic_transitions_by_hand():
    # b = 3, depth 2. Root deterministic. Child A: leaves [1, 0, 0], deterministic (V* = 1).
    # Child B: leaves [1, 1, 0], every action lands on a uniform child (V* = V^{π_u} = 2/3).
    # Child C: no correct leaf. Q^{π_u}(root) = [1/3, 2/3, 0]: greedy picks B and gets 2/3.
    r = np.array([1, 0, 0, 1, 1, 0, 0, 0, 0], np.float32)
    eye = np.eye(3)
    level1 = np.stack([eye, np.full((3, 3), 1 / 3), eye]).astype(np.float32)
    tr = (eye[None].astype(np.float32), level1)
    q = trees.uniform_q(r, 3, tr)
    np.testing.assert_allclose(q[0], [[1 / 3, 2 / 3, 0.0]], rtol=1e-6)
    greedy_value = float(trees.leaf_distribution(trees.greedy_policy(q), tr) @ r)
    assert greedy_value == pytest.approx(2 / 3, rel=1e-6)
    np.testing.assert_allclose(trees.optimal_q(r, 3, tr)[0], [[1.0, 2 / 3, 0.0]], rtol=1e-6)


def test_vmaps_over_trees_and_rejects_bad_shapes():
    rs = np.stack(
        [trees.random_leaf_rewards(s, branching=2, depth=5, num_correct=4) for s in (0, 1)]
    )
    batched = jax.vmap(lambda r: trees.uniform_q(r, 2))(rs)
    for d, q_d in enumerate(trees.uniform_q(rs[1], 2)):
        np.testing.assert_allclose(batched[d][1], q_d, atol=1e-7)
    with pytest.raises(ValueError, match="power of branching"):
        trees.uniform_q(np.zeros(10, np.float32), 3)
    with pytest.raises(ValueError, match="num_correct"):
        trees.random_leaf_rewards(0, branching=2, depth=2, num_correct=5)
