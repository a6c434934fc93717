"""Tests for rljax.losses.value."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads

from rljax.losses import value


def test_clipped_value_loss_by_hand():
    f = lambda v, old, t: value.clipped_value_loss(v, old, t, clip_eps=0.2)
    cases = [  # v, old_v, target, loss, dloss/dv
        (1.5, 1.0, 2.0, 0.5 * 0.64, 0.0),  # clipped branch (v_c = 1.2) is larger and flat in v
        (0.5, 1.0, 0.0, 0.5 * 0.64, 0.0),  # v_c = 0.8
        (1.1, 1.0, 2.0, 0.5 * 0.81, -0.9),  # inside the clip range: plain ½(v - G)²
        (1.5, 1.0, 1.0, 0.5 * 0.25, 0.5),  # unclipped branch is larger
    ]
    for v, old, t, want, want_g in cases:
        args = [jnp.float32(x) for x in (v, old, t)]
        np.testing.assert_allclose(f(*args), want, rtol=1e-5)
        np.testing.assert_allclose(jax.grad(f)(*args), want_g, rtol=1e-5, atol=1e-6)


def test_clipped_value_loss_gradient_check():
    with jax.enable_x64(True):
        v = jnp.array([1.5, 0.5, 1.1, -3.0])
        old = jnp.array([1.0, 1.0, 1.0, -2.0])
        t = jnp.array([2.0, 0.0, 2.0, 1.0])
        check_grads(lambda x: value.clipped_value_loss(x, old, t, clip_eps=0.2), [v], order=1)


def test_huber_l2_by_hand_and_grad():
    x = jnp.array([0.5, -3.0, 2.0])
    np.testing.assert_allclose(value.huber(x, delta=1.0), [0.125, 2.5, 1.5])
    np.testing.assert_allclose(value.huber(x, delta=2.0), [0.125, 4.0, 2.0])
    np.testing.assert_allclose(value.l2(x), [0.125, 4.5, 2.0])
    np.testing.assert_allclose(jax.grad(lambda z: value.huber(z).sum())(x), [0.5, -1.0, 1.0])
    with jax.enable_x64(True):
        check_grads(lambda z: value.huber(z, delta=1.0), [jnp.array([0.3, -2.0, 1.7])], order=1)
        check_grads(value.l2, [jnp.array([0.3, -2.0])], order=2)


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
