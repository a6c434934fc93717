"""Tests for rljax.losses.distributional: C51 projection invariants and QR-DQN quantile loss."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads

from rljax.losses import classification as cls
from rljax.losses import distributional as dist

SUPPORT = jnp.linspace(-5.0, 5.0, 11)


def _np_c51_project(z, p, support):
    """The C51 paper's Algorithm 1 as a NumPy loop (uniform support)."""
    s = np.asarray(support, np.float64)
    v_min, v_max, dz = s[0], s[-1], s[1] - s[0]
    m = np.zeros_like(s)
    for zi, pi in zip(z, p, strict=True):
        b = (np.clip(zi, v_min, v_max) - v_min) / dz
        lo, hi = int(np.floor(b)), int(np.ceil(b))
        if lo == hi:
            m[lo] += pi
        else:
            m[lo] += pi * (hi - b)
            m[hi] += pi * (b - lo)
    return m


def test_projection_matches_c51_algorithm():
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = rng.uniform(-7, 7, size=9)
        z[0] = 2.0  # exactly on an atom
        p = rng.dirichlet(np.ones(9))
        got = dist.categorical_projection(
            jnp.asarray(z, jnp.float32), jnp.asarray(p, jnp.float32), SUPPORT
        )
        np.testing.assert_allclose(got, _np_c51_project(z, p, SUPPORT), atol=1e-6)


def test_projection_keeps_mass_and_mean_when_covered():
    rng = np.random.default_rng(1)
    uneven = jnp.array([-5.0, -2.0, -1.0, 0.0, 0.5, 3.0, 5.0])
    for support in (SUPPORT, uneven):
        z = jnp.asarray(rng.uniform(-4.9, 4.9, size=(3, 6)), jnp.float32)
        p = jnp.asarray(rng.dirichlet(np.ones(6), size=3), jnp.float32)
        out = dist.categorical_projection(z, p, support)
        np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(jnp.sum(out * support, -1), jnp.sum(p * z, -1), atol=1e-5)
        assert float(out.min()) >= 0.0
    # Outside the support mass is kept but the mean is clipped.
    out = dist.categorical_projection(jnp.array([9.0]), jnp.array([1.0]), SUPPORT)
    np.testing.assert_allclose(out, np.eye(11)[-1])


def test_categorical_q_learning_composes_target_and_ce():
    rng = np.random.default_rng(2)
    b, a, n = 3, 2, 11
    logits_t = jnp.asarray(rng.normal(size=(b, a, n)), jnp.float32)
    logits_tp1 = jnp.asarray(rng.normal(size=(b, a, n)), jnp.float32)
    a_t, r_t, disc = jnp.array([0, 1, 1]), jnp.array([1.0, -0.5, 0.3]), jnp.array([0.9, 0.9, 0.0])
    got = dist.categorical_q_learning(logits_t, a_t, r_t, disc, logits_tp1, SUPPORT)
    for i in range(b):
        p_next = np.asarray(jax.nn.softmax(logits_tp1[i]))
        a_star = int(np.argmax(p_next @ np.asarray(SUPPORT)))
        z = float(r_t[i]) + float(disc[i]) * np.asarray(SUPPORT)
        target = _np_c51_project(z, p_next[a_star], SUPPORT)
        want = -(target * np.asarray(jax.nn.log_softmax(logits_t[i, int(a_t[i])]))).sum()
        np.testing.assert_allclose(got[i], want, rtol=1e-5)
    # Terminal transition: the target is the two-hot of r.
    np.testing.assert_allclose(
        dist.categorical_td_target(r_t[2:], disc[2:], jax.nn.softmax(logits_tp1[2:, 0]), SUPPORT),
        cls.two_hot(r_t[2:], SUPPORT),
        atol=1e-6,
    )


def _np_quantile_huber(theta, y, kappa):
    n = theta.shape[0]
    total = 0.0
    for i in range(n):
        tau = (i + 0.5) / n
        for yj in y:
            u = yj - theta[i]
            h = (
                abs(u)
                if kappa == 0
                else (0.5 * u * u if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)) / kappa
            )
            total += abs(tau - (u < 0)) * h / len(y)
    return total


def test_quantile_huber_matches_numpy_loop():
    rng = np.random.default_rng(3)
    theta, y = rng.normal(size=5), rng.normal(size=7) * 2
    for kappa in (0.0, 1.0, 0.5):
        got = dist.quantile_huber(
            jnp.asarray(theta, jnp.float32), jnp.asarray(y, jnp.float32), kappa=kappa
        )
        np.testing.assert_allclose(got, _np_quantile_huber(theta, y, kappa), rtol=1e-5)


def test_quantile_loss_minimizer_is_the_quantile():
    """Brute force over a grid: each θ_i's argmin is the τ_i-quantile of the samples (κ = 0)."""
    y = jnp.asarray(np.random.default_rng(4).exponential(size=101), jnp.float32)
    grid = jnp.linspace(0.0, 4.0, 2001)
    n = 4
    for i in range(n):
        # Vary θ_i alone; the other quantiles add a constant.
        thetas = jnp.zeros((grid.shape[0], n)).at[:, i].set(grid)
        losses = jax.vmap(lambda th: dist.quantile_huber(th, y, kappa=0.0))(thetas)
        best = float(grid[jnp.argmin(losses)])
        q = np.quantile(np.asarray(y), (i + 0.5) / n, method="inverted_cdf")
        assert abs(best - q) < 0.01, (i, best, q)


def test_quantile_q_learning_by_hand_and_grad():
    theta_t = jnp.array([[[0.0, 1.0], [5.0, 5.0]]])  # [B=1, A=2, N=2]
    theta_tp1 = jnp.array([[[1.0, 3.0], [0.0, 1.0]]])
    loss = dist.quantile_q_learning(
        theta_t, jnp.array([0]), jnp.array([1.0]), jnp.array([0.5]), theta_tp1, kappa=0.0
    )
    targets = 1.0 + 0.5 * np.array([1.0, 3.0])  # a* = 0 (mean 2 > 0.5)
    np.testing.assert_allclose(
        loss, [_np_quantile_huber(np.array([0.0, 1.0]), targets, 0.0)], rtol=1e-6
    )
    with jax.enable_x64(True):
        y = jnp.array([0.3, -1.2, 2.5])
        check_grads(
            lambda th: dist.quantile_huber(th, y, kappa=1.0), [jnp.array([0.1, 0.9])], order=1
        )
        p = jnp.array([0.2, 0.5, 0.3])
        check_grads(
            lambda z: dist.categorical_projection(z, p, SUPPORT.astype(jnp.float64)),
            [jnp.array([-1.3, 0.25, 2.7])],
            1,
        )


def test_no_recompiles():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(logits_t, logits_tp1, q_t, q_tp1, a_t, r_t, disc):
        c51 = dist.categorical_q_learning(logits_t, a_t, r_t, disc, logits_tp1, SUPPORT)
        qr = dist.quantile_q_learning(q_t, a_t, r_t, disc, q_tp1)
        return c51 + qr

    for s in range(3):
        k = jax.random.split(jax.random.key(s), 4)
        f(
            jax.random.normal(k[0], (4, 3, 11)),
            jax.random.normal(k[1], (4, 3, 11)),
            jax.random.normal(k[2], (4, 3, 8)),
            jax.random.normal(k[3], (4, 3, 8)),
            jnp.array([0, 1, 2, 0]),
            jnp.ones(4),
            jnp.full(4, 0.9),
        )
