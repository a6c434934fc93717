"""Tests for rljax.losses.classification: encodings read back their value; CE against NumPy."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads

from rljax.losses import classification as cls
from rljax.losses import distributional

SUPPORT = jnp.linspace(-10.0, 10.0, 51)  # bin width 0.4


def test_two_hot_by_hand():
    s = jnp.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(cls.two_hot(jnp.array(1.25), s), [0.0, 0.75, 0.25])
    np.testing.assert_allclose(cls.two_hot(jnp.array(2.0), s), [0.0, 0.0, 1.0])
    np.testing.assert_allclose(cls.two_hot(jnp.array(-5.0), s), [1.0, 0.0, 0.0])  # clipped
    uneven = jnp.array([0.0, 1.0, 4.0])
    np.testing.assert_allclose(cls.two_hot(jnp.array(2.0), uneven), [0.0, 2 / 3, 1 / 3], rtol=1e-6)


def test_two_hot_reads_back_value_and_equals_projection_of_a_point():
    x = jnp.asarray(np.random.default_rng(0).uniform(-9.9, 9.9, size=(7, 3)), jnp.float32)
    probs = cls.two_hot(x, SUPPORT)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(jnp.sum(probs * SUPPORT, -1), x, atol=1e-5)
    np.testing.assert_allclose(cls.expectation(jnp.log(probs + 1e-30), SUPPORT), x, atol=1e-4)
    point = distributional.categorical_projection(
        x[..., None], jnp.ones_like(x)[..., None], SUPPORT
    )
    np.testing.assert_allclose(point, probs, atol=1e-6)


def _np_hl_gauss(x, support, sigma):
    s = np.asarray(support, np.float64)
    w = s[1] - s[0]
    edges = np.concatenate([s - w / 2, [s[-1] + w / 2]])
    cdf = np.array([0.5 * (1 + math.erf((e - x) / (sigma * math.sqrt(2)))) for e in edges])
    return np.diff(cdf) / (cdf[-1] - cdf[0])


def test_hl_gauss_matches_erf_reference_and_reads_back_value():
    sigma = 0.75 * 0.4
    for x in [-4.3, 0.0, 0.17, 6.66]:
        got = cls.hl_gauss(jnp.float32(x), SUPPORT, sigma=sigma)
        np.testing.assert_allclose(got, _np_hl_gauss(x, SUPPORT, sigma), atol=1e-6)
        np.testing.assert_allclose(float(jnp.sum(got)), 1.0, rtol=1e-6)
        np.testing.assert_allclose(float(jnp.sum(got * SUPPORT)), x, atol=1e-4)
    # Near the edge the truncated Gaussian's mean is pulled inwards; it stays inside the support.
    edge = float(jnp.sum(cls.hl_gauss(jnp.float32(9.9), SUPPORT, sigma=sigma) * SUPPORT))
    assert 9.5 < edge < 9.9


def test_cross_entropy_matches_numpy_and_grad():
    rng = np.random.default_rng(1)
    logits = jnp.asarray(rng.normal(size=(4, 51)), jnp.float32)
    target = cls.hl_gauss(jnp.asarray(rng.uniform(-5, 5, size=4), jnp.float32), SUPPORT, sigma=0.3)
    lp = np.asarray(logits, np.float64)
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    np.testing.assert_allclose(
        cls.cross_entropy(logits, target), -(np.asarray(target) * lp).sum(-1), rtol=1e-5
    )
    g = jax.grad(lambda z: cls.cross_entropy(z, target).sum())(logits)
    np.testing.assert_allclose(g, jax.nn.softmax(logits) - target, atol=1e-6)
    with jax.enable_x64(True):
        check_grads(lambda z: cls.cross_entropy(z, target.astype(jnp.float64)), [lp], order=2)
        check_grads(lambda z: cls.expectation(z, SUPPORT.astype(jnp.float64)), [lp], order=2)


def test_fitting_ce_recovers_the_target_value():
    """A few hundred Adam-free gradient steps on CE move the read-back value to the target."""
    target = cls.two_hot(jnp.float32(3.3), SUPPORT)
    logits = jnp.zeros(51)
    for _ in range(300):
        logits = logits - 5.0 * jax.grad(lambda z: cls.cross_entropy(z, target))(logits)
    np.testing.assert_allclose(cls.expectation(logits, SUPPORT), 3.3, atol=0.05)


def test_no_recompiles():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(logits, x):
        return cls.cross_entropy(logits, cls.hl_gauss(x, SUPPORT, sigma=0.3)) + cls.cross_entropy(
            logits, cls.two_hot(x, SUPPORT)
        )

    for s in range(3):
        f(jax.random.normal(jax.random.key(s), (2, 51)), jnp.array([0.1 * s, -1.0]))
