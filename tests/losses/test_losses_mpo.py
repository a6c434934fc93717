"""Tests for rljax.losses.mpo: hand values, gradients, the dual's derivative, rlax agreement."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import mpo

LN2, LN3 = np.log(2.0), np.log(3.0)


def test_multiplier_is_softplus_and_positive():
    np.testing.assert_allclose(mpo.multiplier(jnp.array([0.0, -50.0])), [LN2, 1e-8], rtol=1e-6)


def test_e_step_weights_by_hand():
    """Uniform prior over 2 samples, Q = (0, ln 3) at η = 1, or (0, 2 ln 3) at η = 2: (1/4, 3/4)."""
    prior = jnp.full((2, 2), -LN2)
    q = jnp.array([[0.0, LN3], [0.0, 2 * LN3]])
    w = mpo.e_step_weights(q, prior, jnp.array([1.0, 2.0]))
    np.testing.assert_allclose(w, [[0.25, 0.75], [0.25, 0.75]], rtol=1e-6)
    # A discrete prior multiplies in: π' = (3/4, 1/4) with Q = (0, ln 3) gives (1/2, 1/2).
    w = mpo.e_step_weights(q[:1], jnp.log(jnp.array([[0.75, 0.25]])), jnp.asarray(1.0))
    np.testing.assert_allclose(w, [[0.5, 0.5]], rtol=1e-6)
    grads = jax.grad(lambda q: jnp.sum(mpo.e_step_weights(q, prior, 1.0)[:, 1]))(q)
    np.testing.assert_allclose(grads, 0.0)  # a constant target of the M-step


def test_temperature_dual_by_hand_and_its_derivative():
    """g(η) = η ε + η log Σ π' exp(Q/η); dg/dη = ε - KL(q ‖ π') (the constraint's slack)."""
    prior = jnp.full((1, 2), -LN2)
    q = jnp.array([[0.0, LN3]])
    g = lambda eta: mpo.temperature_dual(q, prior, eta, epsilon=0.1)[0]  # noqa: E731
    np.testing.assert_allclose(g(1.0), 0.1 + LN2, rtol=1e-6)  # log(½(1 + 3)) = ln 2
    np.testing.assert_allclose(g(2.0), 0.2 + 2 * np.log(0.5 * (1 + np.sqrt(3))), rtol=1e-6)
    kl = 0.25 * np.log(0.25 / 0.5) + 0.75 * np.log(0.75 / 0.5)
    np.testing.assert_allclose(jax.grad(g)(1.0), 0.1 - kl, rtol=1e-5)
    # No gradient into the Q-values.
    dq = jax.grad(lambda q: mpo.temperature_dual(q, prior, 1.0, epsilon=0.1).sum())(q)
    np.testing.assert_allclose(dq, 0.0)


def test_temperature_dual_minimum_meets_the_kl_bound():
    """At the η minimizing g, the E-step's KL(q ‖ π') equals ε (strong duality)."""
    q = jax.random.normal(jax.random.PRNGKey(0), (1, 8)) * 3.0
    prior = jnp.full_like(q, -np.log(8))
    etas = jnp.exp(jnp.linspace(-3, 4, 20001))
    g = jax.vmap(lambda e: mpo.temperature_dual(q, prior, e, epsilon=0.2)[0])(etas)
    eta = etas[jnp.argmin(g)]
    w = mpo.e_step_weights(q, prior, eta)
    kl = jnp.sum(w * (jnp.log(w) - prior))
    np.testing.assert_allclose(kl, 0.2, atol=2e-3)


def test_weighted_log_likelihood_by_hand():
    w = jnp.array([[0.25, 0.75]])
    logp = jnp.log(jnp.array([[0.5, 0.2]]))
    np.testing.assert_allclose(
        mpo.weighted_log_likelihood(w, logp), [-(0.25 * np.log(0.5) + 0.75 * np.log(0.2))]
    )
    np.testing.assert_allclose(jax.grad(lambda x: mpo.weighted_log_likelihood(w, x).sum())(logp),
                               -w)  # fmt: skip


def test_gaussian_kl_by_hand_and_decoupled_parts():
    """KL(N(0,1) ‖ N(1,2²)) = ln 2 + (1 + 1)/8 - ½; decoupled: mean part ½, std part ln 2 - 3/8."""
    zero, one = jnp.zeros((1, 1)), jnp.ones((1, 1))
    np.testing.assert_allclose(mpo.gaussian_kl(zero, one, one, 2 * one), [LN2 - 0.25], rtol=1e-6)
    kl_mean, kl_std = mpo.decoupled_gaussian_kl(zero, one, one, 2 * one)
    np.testing.assert_allclose(kl_mean, [0.5], rtol=1e-6)
    np.testing.assert_allclose(kl_std, [LN2 - 0.375], rtol=1e-6)
    # Dimensions add; each part only depends on its own online statistic.
    kl2 = mpo.gaussian_kl(
        jnp.zeros((1, 2)), jnp.ones((1, 2)), jnp.ones((1, 2)), 2 * jnp.ones((1, 2))
    )
    np.testing.assert_allclose(kl2, [2 * (LN2 - 0.25)], rtol=1e-6)
    d_std = jax.grad(lambda s: mpo.decoupled_gaussian_kl(zero, one, one, s)[0].sum())(2 * one)
    d_mean = jax.grad(lambda m: mpo.decoupled_gaussian_kl(zero, one, m, 2 * one)[1].sum())(one)
    np.testing.assert_allclose(d_std, 0.0)
    np.testing.assert_allclose(d_mean, 0.0)


def test_gaussian_kl_gradient_check(grad_check):
    rng = np.random.default_rng(0)
    m0, m1 = rng.normal(size=(2, 3, 2))
    s0, s1 = np.exp(rng.normal(size=(2, 3, 2)) * 0.3)
    grad_check(mpo.gaussian_kl, [m0, s0, m1, s1])


def test_kl_constraint_by_hand():
    """sg(α) KL + α (ε - sg(KL)): value α ε; d/dKL = α; d/dα = ε - KL."""
    kl = jnp.array([0.2, 0.05])
    f = lambda k, a: mpo.kl_constraint(k, a, epsilon=0.1)  # noqa: E731
    np.testing.assert_allclose(f(kl, 2.0), [0.2, 0.2], rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda k: f(k, 2.0).sum())(kl), [2.0, 2.0])
    d_alpha = jax.grad(lambda a: f(kl, a).sum())(2.0 * jnp.ones(2))
    np.testing.assert_allclose(d_alpha, [-0.1, 0.05], rtol=1e-5)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_bounds_must_be_positive(bad):
    q = jnp.zeros((1, 2))
    with pytest.raises(ValueError, match=rf"epsilon={bad} is invalid"):
        mpo.temperature_dual(q, q, 1.0, epsilon=bad)
    with pytest.raises(ValueError, match=rf"epsilon={bad} is invalid"):
        mpo.kl_constraint(q, 1.0, epsilon=bad)


def test_agrees_with_rlax():
    """rlax's E-step (weights, temperature loss) and KL constraint give the same numbers."""
    rlax = pytest.importorskip("rlax")
    q = jax.random.normal(jax.random.PRNGKey(1), (5, 7)) * 2.0
    eta = jnp.asarray(0.7)
    loss, weights, _ = rlax.mpo_compute_weights_and_temperature_loss(
        q, rlax.LagrangePenalty(eta, jnp.asarray(0.1)), lambda x: x, sample_axis=1
    )
    prior = jnp.full_like(q, -np.log(7))
    np.testing.assert_allclose(mpo.e_step_weights(q, prior, eta), weights, rtol=1e-5)
    np.testing.assert_allclose(mpo.temperature_dual(q, prior, eta, epsilon=0.1), loss, rtol=1e-5)
    kl = jnp.abs(jax.random.normal(jax.random.PRNGKey(2), (5,)))
    kl_loss, alpha_loss = rlax.compute_parametric_kl_penalty_and_dual_loss(
        [(kl, rlax.LagrangePenalty(jnp.asarray(1.3), jnp.asarray(0.1)))], lambda x: x
    )
    np.testing.assert_allclose(mpo.kl_constraint(kl, 1.3, epsilon=0.1), kl_loss + alpha_loss,
                               rtol=1e-6)  # fmt: skip
    m0, m1 = jax.random.normal(jax.random.PRNGKey(3), (2, 5, 3))
    s0, s1 = jnp.exp(0.3 * jax.random.normal(jax.random.PRNGKey(4), (2, 5, 3)))
    np.testing.assert_allclose(
        mpo.gaussian_kl(m0, s0, m1, s1), rlax.multivariate_normal_kl_divergence(m0, s0, m1, s1),
        rtol=1e-5,
    )  # fmt: skip
