"""Tests for rljax.losses.value."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from rljax.losses import value


def test_clipped_value_loss_by_hand():
    cases = np.array(  # v, old_v, target, loss, dloss/dv
        [
            (1.5, 1.0, 2.0, 0.5 * 0.64, 0.0),  # clipped branch (v_c = 1.2) is larger, flat in v
            (0.5, 1.0, 0.0, 0.5 * 0.64, 0.0),  # v_c = 0.8
            (1.1, 1.0, 2.0, 0.5 * 0.81, -0.9),  # inside the clip range: plain ½(v - G)²
            (1.5, 1.0, 1.0, 0.5 * 0.25, 0.5),  # unclipped branch is larger
        ],
        np.float32,
    )
    v, old, t = (jnp.asarray(cases[:, i]) for i in range(3))
    f = lambda x: value.clipped_value_loss(x, old, t, clip_eps=0.2)
    np.testing.assert_allclose(f(v), cases[:, 3], rtol=1e-5)
    np.testing.assert_allclose(jax.grad(lambda x: f(x).sum())(v), cases[:, 4], rtol=1e-5, atol=1e-6)


def test_clipped_value_loss_gradient_check(grad_check):
    v = np.array([1.5, 0.5, 1.1, -3.0])
    old = np.array([1.0, 1.0, 1.0, -2.0])
    t = np.array([2.0, 0.0, 2.0, 1.0])
    grad_check(lambda x: value.clipped_value_loss(x, old, t, clip_eps=0.2), [v])


def test_huber_l2_by_hand_and_grad(grad_check):
    x = jnp.array([0.5, -3.0, 2.0])
    np.testing.assert_allclose(value.huber(x, delta=1.0), [0.125, 2.5, 1.5])
    np.testing.assert_allclose(value.huber(x, delta=2.0), [0.125, 4.0, 2.0])
    np.testing.assert_allclose(value.l2(x), [0.125, 4.5, 2.0])
    np.testing.assert_allclose(jax.grad(lambda z: value.huber(z).sum())(x), [0.5, -1.0, 1.0])
    grad_check(lambda z: value.huber(z, delta=1.0), [np.array([0.3, -2.0, 1.7])])
    grad_check(value.l2, [np.array([0.3, -2.0])])


Q_TP1 = jnp.array([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]])
Q_ONLINE = jnp.array([[0.0, 0.0, 9.0], [1.0, 0.0, 0.0]])
R_T = jnp.array([1.0, 2.0])
DISC = jnp.array([0.9, 0.0])


def test_q_targets_by_hand():
    np.testing.assert_allclose(value.q_learning_target(R_T, DISC, Q_TP1), [1 + 0.9 * 3, 2.0])
    np.testing.assert_allclose(
        value.double_q_learning_target(R_T, DISC, Q_TP1, Q_ONLINE), [1 + 0.9 * 2, 2.0]
    )
    q_t = jnp.array([[0.5, 1.0, 0.0], [2.0, 0.0, 0.0]])
    a_t = jnp.array([1, 0])
    target = value.q_learning_target(R_T, DISC, Q_TP1)
    np.testing.assert_allclose(value.q_td_error(q_t, a_t, target), [3.7 - 1.0, 0.0])
    g = jax.grad(lambda q: value.l2(value.q_td_error(q, a_t, target)).sum())(q_t)
    np.testing.assert_allclose(g, [[0, -2.7, 0], [0, 0, 0]], atol=1e-6)


def test_td_error_by_hand_and_stop_gradient():
    v_t, v_tp1 = jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])
    np.testing.assert_allclose(value.td_error(v_t, R_T, DISC, v_tp1), [1 + 2.7 - 1, 0.0])
    g_next = jax.grad(lambda v: value.td_error(v_t, R_T, DISC, v).sum())(v_tp1)
    np.testing.assert_allclose(g_next, 0.0)
    g_now = jax.grad(lambda v: value.td_error(v, R_T, DISC, v_tp1).sum())(v_t)
    np.testing.assert_allclose(g_now, -1.0)


def test_agrees_with_optax_reference():
    """optax is used only here, as an independent reference implementation."""
    x = jnp.linspace(-4.0, 4.0, 17)
    np.testing.assert_allclose(
        value.huber(x, delta=1.5), optax.losses.huber_loss(x, delta=1.5), rtol=1e-6
    )
    np.testing.assert_allclose(value.l2(x), optax.losses.l2_loss(x), rtol=1e-6)


def test_no_recompiles():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(q_t, a_t, r_t, disc, q_tp1, q_online):
        y = value.double_q_learning_target(r_t, disc, q_tp1, q_online)
        y = y + value.q_learning_target(r_t, disc, q_tp1)
        return value.huber(value.q_td_error(q_t, a_t, y)) + value.l2(
            value.td_error(r_t, r_t, disc, r_t)
        )

    for s in range(3):
        q = jax.random.normal(jax.random.key(s), (4, 3))
        f(q, jnp.array([0, 1, 2, 0]), jnp.ones(4) * s, jnp.full(4, 0.9), -q, q * 2)
