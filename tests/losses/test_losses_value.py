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
