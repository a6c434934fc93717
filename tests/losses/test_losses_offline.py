"""rljax.losses.offline: CQL's penalty, BCQ's filter, CRR's weight and target, by hand."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import offline


def test_cql_penalty_by_hand():
    q = jnp.array([[1.0, 2.0], [0.0, 0.0], [3.0, -1.0]])
    a = jnp.array([0, 1, 0])
    got = np.asarray(offline.cql_penalty(q, a))
    want = [math.log(math.e + math.e**2) - 1.0, math.log(2.0), math.log(math.e**3 + math.e**-1) - 3]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert np.all(got >= 0)


def test_cql_penalty_gradient_pushes_unseen_actions_down():
    q = jnp.array([[0.0, 0.0, 0.0]])
    g = jax.grad(lambda x: offline.cql_penalty(x, jnp.array([1]))[0])(q)
    # d/dq_a [logsumexp - q_1] = softmax_a - 1[a = 1]: +1/3 for unseen, -2/3 for the data action
    np.testing.assert_allclose(np.asarray(g), [[1 / 3, -2 / 3, 1 / 3]], rtol=1e-6)


def test_bcq_filter_by_hand():
    logits = jnp.log(jnp.array([[0.5, 0.25, 0.1, 0.15]]))  # ratios to the max: 1, .5, .2, .3
    np.testing.assert_array_equal(
        offline.bcq_allowed(logits, threshold=0.3), [[True, True, False, True]]
    )
    np.testing.assert_array_equal(
        offline.bcq_allowed(logits, threshold=0.31), [[True, True, False, False]]
    )
    assert bool(jnp.all(offline.bcq_allowed(logits, threshold=0.0)))  # τ = 0: DQN
    np.testing.assert_array_equal(  # τ = 1: only the most likely action (BC)
        offline.bcq_allowed(logits, threshold=1.0), [[True, False, False, False]]
    )


def test_masked_argmax_ignores_filtered_actions():
    q = jnp.array([[1.0, 5.0, 3.0], [2.0, 1.0, 0.0]])
    allowed = jnp.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(offline.masked_argmax(q, allowed), [2, 2])


def test_expected_q_target_by_hand():
    y = offline.expected_q_target(
        jnp.array([1.0, 1.0]), jnp.array([0.5, 0.0]),
        jnp.array([[2.0, 4.0], [9.0, 9.0]]), jnp.array([[0.25, 0.75], [0.5, 0.5]]),
    )  # fmt: skip
    np.testing.assert_allclose(np.asarray(y), [1 + 0.5 * (0.5 + 3.0), 1.0])


@pytest.mark.parametrize("beta, a, want", [(1.0, 1, math.e), (1.0, 0, math.e**-1), (0.1, 1, 20.0)])
def test_crr_weight_by_hand(beta, a, want):
    # π = (½, ½), Q = (1, 3): V = 2, A(·, 1) = +1, A(·, 0) = -1; exp(1/0.1) is clipped at 20.
    w = offline.crr_weight(jnp.array([[1.0, 3.0]]), jnp.zeros((1, 2)), jnp.array([a]), beta=beta)
    np.testing.assert_allclose(np.asarray(w), [want], rtol=1e-6)
