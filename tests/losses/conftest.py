"""Shared fixture for tests/losses: a cheap directional finite-difference gradient check."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def _grad_check(f, args, *, eps=1e-6, rtol=1e-5, seed=0):
    """Check ``f``'s reverse-mode derivative against central differences, in float64.

    For each argument, a random direction ``v`` and output cotangent ``w``:
    ``<w, J v>`` from ``jax.vjp`` must match ``<w, (f(x + εv) - f(x - εv)) / 2ε>``. Cheaper
    than ``jax.test_util.check_grads`` (one VJP and two evaluations per argument).
    """
    rng = np.random.default_rng(seed)
    f = jax.jit(f)  # one compiled program instead of one compile per eager op
    with jax.enable_x64(True):
        args = [jnp.asarray(a, jnp.float64) for a in args]
        out, vjp = jax.vjp(f, *args)
        w = jnp.asarray(rng.normal(size=np.shape(out)))
        grads = vjp(w)
        for i, (a, g) in enumerate(zip(args, grads, strict=True)):
            v = jnp.asarray(rng.normal(size=np.shape(a)))
            plus = [x + eps * v if j == i else x for j, x in enumerate(args)]
            minus = [x - eps * v if j == i else x for j, x in enumerate(args)]
            fd = jnp.sum(w * (f(*plus) - f(*minus))) / (2 * eps)
            ad = jnp.sum(g * v)
            np.testing.assert_allclose(
                float(ad), float(fd), rtol=rtol, atol=1e-8, err_msg=f"arg {i}"
            )


@pytest.fixture
def grad_check():
    return _grad_check
