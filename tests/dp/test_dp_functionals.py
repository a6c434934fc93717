"""rljax.dp.functionals on batches: one value per distribution, atoms in any order."""

import jax
import jax.numpy as jnp
import numpy as np

from rljax.dp import functionals


def test_functionals_return_one_value_per_distribution():
    atoms = jnp.array([2.0, -1.0, 0.0])
    probs = jnp.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(functionals.mean(atoms, probs), [0.75, -1.0], atol=1e-6)
    np.testing.assert_allclose(functionals.cvar(atoms, probs, 0.5), [-0.5, -1.0], atol=1e-6)
    np.testing.assert_allclose(
        functionals.expected_utility(atoms**2, probs), [2.25, 1.0], atol=1e-6
    )


def test_wasserstein_is_symmetric_and_vmaps():
    a, pa = jnp.array([0.0, 2.0]), jnp.array([0.5, 0.5])
    b, pb = jnp.array([1.0]), jnp.ones(1)
    d_ab = functionals.wasserstein_1(a, pa, b, pb)
    assert abs(float(d_ab) - 1.0) < 1e-6
    assert abs(float(functionals.wasserstein_1(b, pb, a, pa)) - float(d_ab)) < 1e-6
    shifts = jnp.arange(3.0)
    batch = jax.vmap(lambda s: functionals.wasserstein_1(a + s, pa, a, pa))(shifts)
    np.testing.assert_allclose(batch, shifts, atol=1e-6)
