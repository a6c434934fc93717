"""Tests for rljax.returns: GAE / λ-returns by hand and against a NumPy loop; group advantages."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from rljax import returns

GAMMA, LAM = 0.9, 0.8
R = np.array([1.0, 2.0, 3.0])
V_T = np.array([0.5, 1.0, 1.5])
V_TP1 = np.array([1.0, 1.5, 2.0])


def _gae(discount, done):
    col = lambda x: jnp.asarray(x, jnp.float32)[:, None]  # [T, B=1]
    adv = returns.gae(col(R), col(discount), col(V_T), col(V_TP1), col(done), lambda_=LAM)
    return np.asarray(adv[:, 0])


def test_gae_by_hand_no_episode_end():
    # δ = [1.4, 2.35, 3.3]; A2 = 3.3; A1 = 2.35 + .72 * 3.3; A0 = 1.4 + .72 * A1.
    adv = _gae([GAMMA] * 3, [0, 0, 0])
    np.testing.assert_allclose(adv, [4.80272, 4.726, 3.3], rtol=1e-5)


def test_gae_truncation_bootstraps_but_cuts_trace():
    # Truncated after t=1: δ1 keeps γ v_tp1 = 0.9 * 1.5, but A1 does not see A2.
    adv = _gae([GAMMA] * 3, [0, 1, 0])
    np.testing.assert_allclose(adv, [1.4 + 0.72 * 2.35, 2.35, 3.3], rtol=1e-5)


def test_gae_termination_zero_bootstrap():
    # Terminated after t=1: discount_1 = 0 so δ1 = r1 - v1 = 1.0.
    adv = _gae([GAMMA, 0.0, GAMMA], [0, 1, 0])
    np.testing.assert_allclose(adv, [1.4 + 0.72 * 1.0, 1.0, 3.3], rtol=1e-5)


def _numpy_lambda_returns(r, discount, v_tp1, done, lam):
    t_len = r.shape[0]
    g = np.zeros_like(r)
    nxt = v_tp1[-1]  # unused when λ' = 0 at the end; G_T has no successor
    for t in reversed(range(t_len)):
        lam_t = lam * (1.0 - done[t]) if t < t_len - 1 else 0.0
        nxt = g[t + 1] if t < t_len - 1 else v_tp1[t]
        g[t] = r[t] + discount[t] * ((1 - lam_t) * v_tp1[t] + lam_t * nxt)
    return g


def test_lambda_returns_match_numpy_loop():
    rng = np.random.default_rng(0)
    t_len, b = 7, 3
    r = rng.normal(size=(t_len, b))
    v_t, v_tp1 = rng.normal(size=(t_len, b)), rng.normal(size=(t_len, b))
    term = rng.random((t_len, b)) < 0.2
    trunc = (rng.random((t_len, b)) < 0.2) & ~term
    discount = GAMMA * (1.0 - term)
    done = (term | trunc).astype(float)
    # In a real rollout v_tp1[t] is v_t[t + 1] unless the episode ended at t.
    v_tp1[:-1] = np.where(done[:-1] > 0, v_tp1[:-1], v_t[1:])
    got = returns.lambda_returns(
        *(jnp.asarray(x, jnp.float32) for x in (r, discount, v_t, v_tp1, done)), lambda_=LAM
    )
    want = np.stack(
        [
            _numpy_lambda_returns(r[:, i], discount[:, i], v_tp1[:, i], done[:, i], LAM)
            for i in range(b)
        ],
        axis=1,
    )
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_gae_lambda_one_is_monte_carlo_minus_value():
    r = jnp.array([[1.0], [1.0], [1.0]])
    disc = jnp.full((3, 1), GAMMA)
    zeros = jnp.zeros((3, 1))
    adv = returns.gae(r, disc, zeros, zeros, zeros, lambda_=1.0)
    np.testing.assert_allclose(adv[:, 0], [1 + 0.9 + 0.81, 1 + 0.9, 1.0], rtol=1e-6)


def test_gae_gradient_check():
    rng = np.random.default_rng(1)
    args = [jnp.asarray(rng.normal(size=(4, 2))) for _ in range(3)]
    disc, done = jnp.full((4, 2), GAMMA), jnp.zeros((4, 2))
    with jax.enable_x64(True):
        args = [a.astype(jnp.float64) for a in args]
        f = lambda r, v, vn: returns.gae(r, disc.astype(jnp.float64), v, vn, done, lambda_=LAM)
        check_grads(f, args, order=1, modes=("rev",))


# --- group advantages ---------------------------------------------------------------------------

ONE_OF_FOUR = jnp.array([[1.0, 0.0, 0.0, 0.0]])


def test_group_advantages_by_hand():
    np.testing.assert_allclose(
        returns.grpo_advantages(ONE_OF_FOUR, eps=0.0), [[1.5, -0.5, -0.5, -0.5]], rtol=1e-6
    )
    np.testing.assert_allclose(
        returns.grpo_advantages(ONE_OF_FOUR, eps=0.0, ddof=0),
        [[0.75 / np.sqrt(0.1875), *[-0.25 / np.sqrt(0.1875)] * 3]],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        returns.dr_grpo_advantages(ONE_OF_FOUR), [[0.75, -0.25, -0.25, -0.25]], rtol=1e-6
    )
    np.testing.assert_allclose(
        returns.rloo_advantages(ONE_OF_FOUR), [[1.0, -1 / 3, -1 / 3, -1 / 3]], rtol=1e-6
    )


def test_ngrpo_worked_values_from_paper():
    all_wrong = jnp.zeros((1, 8))
    np.testing.assert_allclose(returns.ngrpo_advantages(all_wrong, eps=0.0), -1 / 3, rtol=1e-6)
    np.testing.assert_allclose(returns.grpo_advantages(all_wrong), 0.0)
    np.testing.assert_allclose(returns.ngrpo_advantages(jnp.ones((1, 8))), 0.0, atol=1e-6)
    one_right = jnp.zeros((1, 8)).at[0, 0].set(1.0)
    g = returns.grpo_advantages(one_right)
    n = returns.ngrpo_advantages(one_right)
    np.testing.assert_allclose([g[0, 0], g[0, 1]], [2.47, -0.35], atol=0.01)
    np.testing.assert_allclose([n[0, 0], n[0, 1]], [1.76, -0.50], atol=0.01)


def _np_group(r, m, kind, ddof=1):
    """Reference loop: slice each group to its real samples."""
    out = np.zeros_like(r)
    real = r[m > 0]
    for b in range(r.shape[0]):
        x = r[b][m[b] > 0]
        if x.size == 0:
            continue
        if kind == "grpo":
            a = (x - x.mean()) / (x.std(ddof=ddof) + 1e-6) if x.size > 1 else x * 0
        elif kind == "dr":
            a = x - x.mean()
        elif kind == "lite":
            a = (x - x.mean()) / (real.std(ddof=ddof) + 1e-6)
        elif kind == "batch":
            a = (x - real.mean()) / (real.std(ddof=ddof) + 1e-6)
        elif kind == "rloo":
            a = (
                np.array([x[i] - np.delete(x, i).mean() for i in range(x.size)])
                if x.size > 1
                else x * 0
            )
        elif kind == "ngrpo":
            y = np.append(x, 1.0)
            a = (x - y.mean()) / (y.std(ddof=ddof) + 1e-6)
        out[b, m[b] > 0] = a
    return out


FNS = {
    "grpo": returns.grpo_advantages,
    "dr": returns.dr_grpo_advantages,
    "lite": returns.lite_ppo_advantages,
    "batch": returns.batch_advantages,
    "rloo": returns.rloo_advantages,
    "ngrpo": returns.ngrpo_advantages,
}


@pytest.mark.parametrize("kind", list(FNS))
def test_group_advantages_match_sliced_numpy_loop(kind):
    rng = np.random.default_rng(2)
    r = rng.integers(0, 2, size=(5, 6)).astype(np.float64) + rng.normal(size=(5, 6)) * 0.1
    m = np.ones((5, 6))
    m[1, 4:] = 0  # padded group
    m[3, :] = 0  # fully padded group
    m[4, 1:] = 0  # group of one
    got = FNS[kind](jnp.asarray(r, jnp.float32), jnp.asarray(m, jnp.float32))
    np.testing.assert_allclose(np.asarray(got), _np_group(r, m, kind), rtol=1e-4, atol=1e-4)


def test_group_advantages_gradient_check():
    r = jnp.array([[0.3, 1.2, -0.4], [2.0, 0.1, 0.7]])
    with jax.enable_x64(True):
        for fn in FNS.values():
            check_grads(fn, [r.astype(jnp.float64)], order=1, modes=("rev",))


def test_ddof_validation():
    with pytest.raises(ValueError, match="ddof"):
        returns.grpo_advantages(ONE_OF_FOUR, ddof=2)


def test_no_recompiles_same_shapes():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(r, m, v):
        adv = returns.grpo_advantages(r, m) + returns.ngrpo_advantages(r, m)
        g = returns.gae(v, v, v, v, v, lambda_=0.9)
        return adv, g

    rng = np.random.default_rng(3)
    for _ in range(3):
        f(
            jnp.asarray(rng.normal(size=(2, 4))),
            jnp.ones((2, 4)),
            jnp.asarray(rng.normal(size=(3, 2))),
        )


def _np_n_step(r, discount, v_tp1, done, n):
    t_len = r.shape[0]
    out = np.zeros_like(r)
    for t in range(t_len):
        g, disc = 0.0, 1.0
        for k in range(n):
            i = t + k
            g += disc * r[i]
            disc *= discount[i]
            if k == n - 1 or i == t_len - 1 or done[i]:
                g += disc * v_tp1[i]
                break
        out[t] = g
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 10])
def test_n_step_returns_match_numpy_loop(n):
    rng = np.random.default_rng(4)
    t_len = 8
    r, v_tp1 = rng.normal(size=t_len), rng.normal(size=t_len)
    term = np.zeros(t_len, bool)
    term[2] = True
    done = term.copy()
    done[5] = True  # truncation
    discount = GAMMA * (1.0 - term)
    got = returns.n_step_returns(
        *(jnp.asarray(x, jnp.float32)[:, None] for x in (r, discount, v_tp1, done)), n=n
    )
    np.testing.assert_allclose(
        got[:, 0], _np_n_step(r, discount, v_tp1, done, n), rtol=1e-5, atol=1e-6
    )


def test_n_step_by_hand_and_validation():
    r = jnp.array([[1.0], [2.0], [3.0]])
    disc = jnp.full((3, 1), 0.5)
    v = jnp.array([[10.0], [20.0], [30.0]])
    got = returns.n_step_returns(r, disc, v, jnp.zeros((3, 1)), n=2)
    np.testing.assert_allclose(
        got[:, 0], [1 + 0.5 * 2 + 0.25 * 20, 2 + 0.5 * 3 + 0.25 * 30, 3 + 15]
    )
    with pytest.raises(ValueError, match="n must be"):
        returns.n_step_returns(r, disc, v, v, n=0)
