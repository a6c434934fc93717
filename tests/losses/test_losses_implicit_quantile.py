"""rljax.losses.distributional.implicit_quantile_huber: IQN's loss at sampled fractions τ."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import distributional as dist

THETA = jnp.array([0.0, 1.0])
TAU = jnp.array([0.1, 0.8])
Y = jnp.array([0.5, 2.0])


@pytest.mark.parametrize(
    "kappa, expected",
    [
        # u_0 = [0.5, 2.0] (both >= 0: weight τ_0 = 0.1), u_1 = [-0.5, 1.0] (weights 0.2, 0.8).
        # κ=1: H = [0.125, 1.5], [0.125, 0.5] -> 0.1 * 1.625/2 + (0.2*0.125 + 0.8*0.5)/2.
        (1.0, 0.08125 + 0.2125),
        # κ=0: |u| -> 0.1 * 2.5/2 + (0.2*0.5 + 0.8*1.0)/2.
        (0.0, 0.125 + 0.45),
        # κ=2: H_2/2 = [0.0625, 1.0], [0.0625, 0.25] -> 0.1 * 1.0625/2 + (0.2*0.0625 + 0.8*0.25)/2.
        (2.0, 0.053125 + 0.10625),
    ],
)
def test_by_hand(kappa, expected):
    got = dist.implicit_quantile_huber(THETA, TAU, Y, kappa=kappa)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_at_midpoint_fractions_it_is_qr_dqns_loss():
    rng = np.random.default_rng(0)
    theta = jnp.asarray(rng.normal(size=(3, 5)), jnp.float32)
    y = jnp.asarray(rng.normal(size=(3, 7)), jnp.float32)
    tau = jnp.broadcast_to((jnp.arange(5) + 0.5) / 5, (3, 5))
    for kappa in (0.0, 1.0, 0.5):
        np.testing.assert_allclose(
            dist.implicit_quantile_huber(theta, tau, y, kappa=kappa),
            dist.quantile_huber(theta, y, kappa=kappa),
            rtol=1e-6,
        )


def test_matches_rlax_quantile_regression_loss():
    """rlax's Huber is not divided by κ: rlax(κ) = κ · ours(κ) (κ = 0: both the plain loss)."""
    rlax = pytest.importorskip("rlax")
    rng = np.random.default_rng(1)
    theta = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
    tau = jnp.asarray(rng.uniform(size=(4, 6)), jnp.float32)
    y = jnp.asarray(2 * rng.normal(size=(4, 9)), jnp.float32)
    for kappa in (0.0, 1.0, 2.5):
        ref = jax.vmap(lambda t, u, z: rlax.quantile_regression_loss(t, u, z, kappa))(  # noqa: B023
            theta, tau, y
        )
        ours = dist.implicit_quantile_huber(theta, tau, y, kappa=kappa)
        np.testing.assert_allclose(ours * (kappa or 1.0), ref, rtol=1e-5)
        g_ref = jax.grad(
            lambda t: jnp.sum(jax.vmap(rlax.quantile_regression_loss, (0, 0, 0, None))(
                t, tau, y, kappa))  # noqa: B023
        )(theta)  # fmt: skip
        g = jax.grad(lambda t: jnp.sum(dist.implicit_quantile_huber(t, tau, y, kappa=kappa)))(  # noqa: B023
            theta
        )
        np.testing.assert_allclose(g * (kappa or 1.0), g_ref, rtol=1e-5, atol=1e-7)


def test_minimizer_at_each_sampled_fraction_is_that_quantile():
    """Brute force: θ_i's argmin is the τ_i-quantile of the samples (κ = 0), for any τ_i."""
    y = jnp.asarray(np.random.default_rng(4).exponential(size=101), jnp.float32)
    grid = jnp.linspace(0.0, 4.0, 2001)
    tau = jnp.array([0.07, 0.33, 0.61, 0.9])
    for i in range(4):
        thetas = jnp.zeros((grid.shape[0], 4)).at[:, i].set(grid)
        losses = jax.vmap(lambda th: dist.implicit_quantile_huber(th, tau, y, kappa=0.0))(thetas)
        best = float(grid[jnp.argmin(losses)])
        q = np.quantile(np.asarray(y), float(tau[i]), method="inverted_cdf")
        assert abs(best - q) < 0.01, (i, best, q)


def test_gradient_flows_to_predictions_only(grad_check):
    y = jnp.asarray([0.3, -1.2, 2.5])
    tau = jnp.asarray([0.2, 0.7])
    grad_check(
        lambda th: dist.implicit_quantile_huber(th, tau, y, kappa=1.0), [np.array([0.1, 0.9])]
    )
    g_tau, g_y = jax.grad(
        lambda t, z: jnp.sum(dist.implicit_quantile_huber(THETA, t, z, kappa=1.0)), (0, 1)
    )(TAU, Y)
    assert not np.any(g_tau) and not np.any(g_y)


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^kappa=-1.0 is invalid; allowed: >= 0$"):
        dist.implicit_quantile_huber(THETA, TAU, Y, kappa=-1.0)
    with pytest.raises(AssertionError):
        dist.implicit_quantile_huber(THETA, TAU[:1], Y)
