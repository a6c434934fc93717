"""rljax.returns.q_lambda_returns (PQN's target): by hand, edge cases, invariants, rlax."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import returns

GAMMA, LAM = 0.9, 0.8
R = np.array([1.0, 2.0, 3.0])
Q_TP1 = np.array([1.0, 1.5, 2.0])


def _g(discount, done, lam=LAM):
    col = lambda x: jnp.asarray(x, jnp.float32)[:, None]  # [T, B=1]
    g = returns.q_lambda_returns(col(R), col(discount), col(Q_TP1), col(done), lambda_=lam)
    return np.asarray(g[:, 0])


def test_by_hand_no_episode_end():
    # G2 = 3 + .9*2 (the rollout ends: one-step bootstrap); G1 = 2 + .9(.2*1.5 + .8*G2);
    # G0 = 1 + .9(.2*1 + .8*G1).
    np.testing.assert_allclose(_g([GAMMA] * 3, [0, 0, 0]), [5.30272, 5.726, 4.8], rtol=1e-6)


def test_truncation_bootstraps_from_the_final_observation_and_cuts_the_trace():
    # Truncated at t=1: G1 = 2 + .9*1.5; G0 = 1 + .9(.2*1 + .8*G1).
    np.testing.assert_allclose(_g([GAMMA] * 3, [0, 1, 0]), [3.592, 3.35, 4.8], rtol=1e-6)


def test_termination_zeroes_the_bootstrap():
    # Terminated at t=1: G1 = 2; G0 = 1 + .9(.2*1 + .8*2).
    np.testing.assert_allclose(_g([GAMMA, 0.0, GAMMA], [0, 1, 0]), [2.62, 2.0, 4.8], rtol=1e-6)


def test_lambda_zero_is_one_step_and_one_is_the_discounted_return():
    np.testing.assert_allclose(_g([GAMMA] * 3, [0, 0, 0], 0.0), R + GAMMA * Q_TP1, rtol=1e-6)
    np.testing.assert_allclose(_g([GAMMA] * 3, [0, 0, 0], 1.0), [6.688, 6.32, 4.8], rtol=1e-6)


def _consistent_rollout(seed, t=12, b=5):
    """Random rollout whose q_tp1[t] is the value of obs[t+1] wherever the episode continues."""
    rng = np.random.default_rng(seed)
    terminated = rng.uniform(size=(t, b)) < 0.15
    truncated = ~terminated & (rng.uniform(size=(t, b)) < 0.1)
    done = terminated | truncated
    v_t = rng.normal(size=(t, b))
    v_tp1 = np.where(done, rng.normal(size=(t, b)), np.roll(v_t, -1, axis=0))
    v_tp1[-1] = rng.normal(size=b)
    r_t = rng.normal(size=(t, b))
    discount_t = GAMMA * (1.0 - terminated)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return f32(r_t), f32(discount_t), f32(v_t), f32(v_tp1), f32(done)


@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_equals_lambda_returns_with_max_q_as_the_value(lam):
    r_t, discount_t, v_t, v_tp1, done_t = _consistent_rollout(0)
    np.testing.assert_allclose(
        returns.q_lambda_returns(r_t, discount_t, v_tp1, done_t, lambda_=lam),
        returns.lambda_returns(r_t, discount_t, v_t, v_tp1, done_t, lambda_=lam),
        rtol=1e-5, atol=1e-5,
    )  # fmt: skip


def test_matches_rlax_lambda_returns_with_terminations():
    """rlax cuts episodes only through discount 0, so the check uses terminations alone."""
    rlax = pytest.importorskip("rlax")
    rng = np.random.default_rng(1)
    t, b = 10, 4
    terminated = (rng.uniform(size=(t, b)) < 0.2).astype(np.float32)
    r_t = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
    q_tp1 = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
    discount_t = jnp.asarray(GAMMA * (1 - terminated), jnp.float32)
    ours = returns.q_lambda_returns(r_t, discount_t, q_tp1, jnp.asarray(terminated), lambda_=0.7)
    ref = jax.vmap(lambda r, d, v: rlax.lambda_returns(r, d, v, 0.7), in_axes=1, out_axes=1)(
        r_t, discount_t, q_tp1
    )
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_batched_equals_looped_and_jits_with_traced_lambda():
    r_t, discount_t, _, v_tp1, done_t = _consistent_rollout(2)
    f = jax.jit(lambda lam: returns.q_lambda_returns(r_t, discount_t, v_tp1, done_t, lambda_=lam))
    whole = f(0.9)
    for j in range(r_t.shape[1]):
        col = returns.q_lambda_returns(
            r_t[:, j], discount_t[:, j], v_tp1[:, j], done_t[:, j], lambda_=0.9
        )
        np.testing.assert_allclose(whole[:, j], col, rtol=1e-6)


def test_bad_lambda_is_a_one_line_error():
    with pytest.raises(
        ValueError, match=r"^lambda_=1.5 is invalid; allowed: a finite number in \[0, 1\]$"
    ):
        _g([GAMMA] * 3, [0, 0, 0], 1.5)
