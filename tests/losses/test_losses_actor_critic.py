"""Tests for the off-policy targets (rljax.losses.value) and actor losses
(rljax.losses.actor_critic): hand values, stopped gradients, gradient checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import actor_critic, value

LN3 = np.log(3.0)


def test_clipped_double_q_target_by_hand():
    r, d = jnp.array([1.0, 0.0]), jnp.array([0.9, 0.0])
    q_tp1 = jnp.array([[2.0, 5.0], [3.0, 4.0]])  # [K=2, B=2]
    np.testing.assert_allclose(value.clipped_double_q_target(r, d, q_tp1), [2.8, 0.0], rtol=1e-6)
    # One critic: the DDPG target r + d Q'.
    np.testing.assert_allclose(value.clipped_double_q_target(r, d, q_tp1[1:]), [3.7, 0.0])
    dq = jax.grad(lambda q: value.clipped_double_q_target(r, d, q).sum())(q_tp1)
    np.testing.assert_allclose(dq, 0.0)


def test_soft_bellman_target_by_hand():
    """min(2, 4) + 0.2 = 2.2 -> 1 + 0.5 · 2.2; min(3, 1) - 0.2 · 0.5 = 0.9 -> -1 + 0.9 · 0.9."""
    r, d = jnp.array([1.0, -1.0]), jnp.array([0.5, 0.9])
    q_tp1 = jnp.array([[2.0, 3.0], [4.0, 1.0]])
    logp = jnp.array([-1.0, 0.5])
    y = value.soft_bellman_target(r, d, q_tp1, logp, alpha=0.2)
    np.testing.assert_allclose(y, [2.1, -0.19], rtol=1e-6)
    # α = 0 is the clipped double-Q target.
    np.testing.assert_allclose(value.soft_bellman_target(r, d, q_tp1, logp, alpha=0.0),
                               value.clipped_double_q_target(r, d, q_tp1))  # fmt: skip
    with pytest.raises(ValueError, match="alpha=-0.1 is invalid"):
        value.soft_bellman_target(r, d, q_tp1, logp, alpha=-0.1)


def test_soft_bellman_target_discrete_by_hand():
    """π = (1/4, 3/4), min Q = (1, 2), α = ½: ¼ (1 - ½ ln ¼) + ¾ (2 - ½ ln ¾)."""
    q_tp1 = jnp.array([[[1.0, 3.0]], [[2.0, 2.0]]])  # [K=2, B=1, A=2]
    logits = jnp.array([[0.0, LN3]])
    y = value.soft_bellman_target_discrete(
        jnp.array([0.5]), jnp.array([0.9]), q_tp1, logits, alpha=0.5
    )
    v = 0.25 * (1 - 0.5 * np.log(0.25)) + 0.75 * (2 - 0.5 * np.log(0.75))
    np.testing.assert_allclose(y, [0.5 + 0.9 * v], rtol=1e-6)
    # Matches a sampled estimate's expectation: brute force over the two actions.
    logp = np.log([0.25, 0.75])
    sampled = [value.soft_bellman_target(jnp.array([0.5]), jnp.array([0.9]),
                                         q_tp1[:, :, a], jnp.array([logp[a]]), alpha=0.5)[0]
               for a in range(2)]  # fmt: skip
    np.testing.assert_allclose(y[0], 0.25 * sampled[0] + 0.75 * sampled[1], rtol=1e-6)


def test_sac_actor_by_hand_and_alpha_is_a_constant():
    q, logp = jnp.array([1.0, 2.0]), jnp.array([-1.0, 0.5])
    np.testing.assert_allclose(actor_critic.sac_actor(q, logp, alpha=0.2), [-1.2, -1.9])
    d_alpha = jax.grad(lambda a: actor_critic.sac_actor(q, logp, alpha=a).sum())(0.2)
    np.testing.assert_allclose(d_alpha, 0.0)
    d_logp = jax.grad(lambda x: actor_critic.sac_actor(q, x, alpha=0.2).sum())(logp)
    np.testing.assert_allclose(d_logp, [0.2, 0.2], rtol=1e-6)


def test_sac_actor_discrete_by_hand(grad_check):
    q, logits = jnp.array([[1.0, 3.0]]), jnp.array([[0.0, LN3]])
    expected = 0.25 * (0.5 * np.log(0.25) - 1) + 0.75 * (0.5 * np.log(0.75) - 3)
    np.testing.assert_allclose(actor_critic.sac_actor_discrete(q, logits, alpha=0.5), [expected],
                               rtol=1e-6)  # fmt: skip
    grad_check(lambda x: actor_critic.sac_actor_discrete(q, x, alpha=0.5), [np.array(logits)])
    # The policy minimizing it is softmax(Q / α) (a Boltzmann policy): zero gradient there.
    opt = jnp.asarray(q) / 0.5
    d = jax.grad(lambda x: actor_critic.sac_actor_discrete(q, x, alpha=0.5).sum())(opt)
    np.testing.assert_allclose(d, 0.0, atol=1e-6)


def test_sac_temperature_by_hand():
    """log α (H - H̄): α shrinks (gradient > 0) while the entropy is above the target."""
    ent = jnp.array([1.0, -1.0])
    loss = actor_critic.sac_temperature(jnp.asarray(0.3), ent, target_entropy=-1.0)
    np.testing.assert_allclose(loss, [0.6, 0.0], rtol=1e-6)
    g = jax.grad(lambda a: actor_critic.sac_temperature(a, ent, target_entropy=-1.0).mean())(0.3)
    np.testing.assert_allclose(g, 1.0)
    d_ent = jax.grad(lambda e: actor_critic.sac_temperature(0.3, e, target_entropy=-1.0).sum())
    np.testing.assert_allclose(d_ent(ent), 0.0)


def test_deterministic_policy_gradient_reaches_the_action():
    """-Q(s, μ(s)) for Q(s, a) = -(a - 0.5)²: the gradient in a is 2 (a - 0.5)."""
    a = jnp.array([0.0, 1.0])
    g = jax.grad(lambda a: actor_critic.deterministic_policy_gradient(-((a - 0.5) ** 2)).sum())(a)
    np.testing.assert_allclose(g, [-1.0, 1.0])
