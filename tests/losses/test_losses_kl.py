"""Tests for rljax.losses.kl: hand values, Monte Carlo unbiasedness, exact expected gradients."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import kl

LOGITS_P = jnp.array([1.0, 0.2, -0.5, -1.0])
LOGITS_Q = jnp.array([0.0, 0.5, 0.3, -2.0])


def test_estimators_by_hand():
    logp, ref = jnp.log(0.5), jnp.log(0.25)  # r = 0.5
    np.testing.assert_allclose(kl.k1(logp, ref), np.log(2.0), rtol=1e-6)
    np.testing.assert_allclose(kl.k2(logp, ref), 0.5 * np.log(2.0) ** 2, rtol=1e-6)
    np.testing.assert_allclose(kl.k3(logp, ref), (0.5 - 1) + np.log(2.0), rtol=1e-6)
    assert float(kl.k3(ref, logp)) >= 0.0 and float(kl.k1(ref, logp)) < 0.0


def test_categorical_kl_closed_form():
    p, q = jax.nn.softmax(LOGITS_P), jax.nn.softmax(LOGITS_Q)
    want = float(np.sum(p * np.log(p / q)))
    np.testing.assert_allclose(kl.categorical_kl(LOGITS_P, LOGITS_Q), want, rtol=1e-6)
    np.testing.assert_allclose(kl.categorical_kl(LOGITS_P, LOGITS_P), 0.0, atol=1e-7)


def test_k1_k3_unbiased_k2_biased_monte_carlo():
    """Draw N samples from π; each unbiased mean lies within 5 standard errors of the exact KL."""
    n = 200_000
    log_p, log_q = jax.nn.log_softmax(LOGITS_P), jax.nn.log_softmax(LOGITS_Q)
    x = jax.random.categorical(jax.random.key(0), LOGITS_P, shape=(n,))
    exact = float(kl.categorical_kl(LOGITS_P, LOGITS_Q))
    for est in (kl.k1, kl.k3):
        vals = np.asarray(est(log_p[x], log_q[x]), np.float64)
        se = vals.std() / np.sqrt(n)
        assert abs(vals.mean() - exact) < 5 * se, (est.__name__, vals.mean(), exact, se)
    # k2 is biased: its exact expectation differs from the KL by much more than MC noise.
    k2_exact = float(jnp.sum(jnp.exp(log_p) * kl.k2(log_p, log_q)))
    assert abs(k2_exact - exact) > 0.01
    # k3 has lower variance than k1 here (π close to π_ref).
    assert np.var(kl.k3(log_p[x], log_q[x])) < np.var(kl.k1(log_p[x], log_q[x]))


def _expected_grad(est, theta, logits_ref):
    """Exact E_{x~π}[∇_θ k(x)] with samples held fixed: Σ_x sg(π(x)) ∇_θ k(x)."""

    def surrogate(th):
        log_p = jax.nn.log_softmax(th)
        log_q = jax.nn.log_softmax(logits_ref)
        w = jax.lax.stop_gradient(jnp.exp(log_p))
        return jnp.sum(w * est(log_p, log_q))

    return jax.grad(surrogate)(theta)


def test_expected_loss_gradients_of_each_estimator():
    g1 = _expected_grad(kl.k1, LOGITS_P, LOGITS_Q)
    g2 = _expected_grad(kl.k2, LOGITS_P, LOGITS_Q)
    g3 = _expected_grad(kl.k3, LOGITS_P, LOGITS_Q)
    reverse = jax.grad(lambda th: kl.categorical_kl(th, LOGITS_Q))(LOGITS_P)
    forward = jax.grad(lambda th: kl.categorical_kl(LOGITS_Q, th))(LOGITS_P)
    np.testing.assert_allclose(g1, 0.0, atol=1e-6)
    np.testing.assert_allclose(g2, reverse, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g3, forward, rtol=1e-5, atol=1e-6)
    assert np.abs(np.asarray(reverse - forward)).max() > 1e-2  # the two really differ here


GENS = {
    "reverse": kl.reverse_kl_generator,
    "forward": kl.forward_kl_generator,
    "js": kl.js_generator,
    "tv": kl.total_variation_generator,
    "chi2": kl.chi2_generator,
}


def test_f_divergences_closed_forms():
    p, q = np.asarray(jax.nn.softmax(LOGITS_P)), np.asarray(jax.nn.softmax(LOGITS_Q))
    m = 0.5 * (p + q)
    want = {
        "reverse": np.sum(p * np.log(p / q)),
        "forward": np.sum(q * np.log(q / p)),
        "js": 0.5 * np.sum(p * np.log(p / m)) + 0.5 * np.sum(q * np.log(q / m)),
        "tv": 0.5 * np.sum(np.abs(p - q)),
        "chi2": np.sum((p - q) ** 2 / q),
    }
    for name, gen in GENS.items():
        got = kl.categorical_f_divergence(LOGITS_P, LOGITS_Q, generator=gen)
        np.testing.assert_allclose(got, want[name], rtol=1e-5, err_msg=name)
        np.testing.assert_allclose(gen(jnp.zeros(())), 0.0, atol=1e-7, err_msg=name)  # f(1) = 0


@pytest.mark.parametrize("name", list(GENS))
def test_f_divergence_sample_is_exact_in_expectation_under_ref(name):
    log_p, log_q = jax.nn.log_softmax(LOGITS_P), jax.nn.log_softmax(LOGITS_Q)
    per_x = kl.f_divergence_sample(log_p, log_q, generator=GENS[name])
    exact = kl.categorical_f_divergence(LOGITS_P, LOGITS_Q, generator=GENS[name])
    np.testing.assert_allclose(jnp.sum(jnp.exp(log_q) * per_x), exact, rtol=1e-5)


def test_kl_in_reward_and_loss_by_hand():
    reward = jnp.array([1.0, 2.0, 5.0])
    kl_t = jnp.array([[0.1, 0.2, 0.3], [0.5, 0.0, 7.0], [1.0, 1.0, 1.0]])
    mask = jnp.array([[1, 1, 1], [1, 0, 0], [0, 0, 0]], jnp.float32)
    got = kl.kl_in_reward(reward, kl_t, mask, beta=0.5)
    # The empty third row keeps its reward R = 5 (on position 0): every row sums to R - β Σ kl.
    want = [[-0.05, -0.1, 1.0 - 0.15], [2.0 - 0.25, 0.0, 0.0], [5.0, 0.0, 0.0]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(
        kl.kl_in_loss(jnp.ones(2), jnp.array([0.2, 0.4]), beta=0.5), [1.1, 1.2]
    )


def test_gradient_check(grad_check):
    a, b = np.asarray(LOGITS_P, np.float64), np.asarray(LOGITS_Q, np.float64)
    lp, lq = a - np.log(np.exp(a).sum()), b - np.log(np.exp(b).sum())
    for est in (kl.k1, kl.k2, kl.k3):
        grad_check(est, [lp, lq])
    grad_check(kl.categorical_kl, [a, b])
    for gen in GENS.values():
        if gen is not kl.total_variation_generator:
            grad_check(lambda x, y, g=gen: kl.categorical_f_divergence(x, y, generator=g), [a, b])


def test_no_recompiles():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(lp, lq):
        return kl.k3(lp, lq) + kl.k2(lp, lq) + kl.categorical_kl(lp, lq)[..., None]

    for s in range(3):
        x = jax.random.normal(jax.random.key(s), (2, 5))
        f(x, -x)
