"""rljax.losses.policy_gradient: SAPO, VESPO, LUSPO and the two-sided clip (TRL's loss types).

Hand values from the closed forms, gradients (formula and finite differences), agreement with
the existing losses they reduce to, masking == slicing, and `delta=None` computing exactly what
`ppo_clip` computed before it had `delta`. The agreement with TRL's own code is
scripts/check_trl_losses.py (results/trl_losses/results.json): torch is not a test dependency.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import policy_gradient as pg
from rljax.losses import reduce, sequence

LOG15, LOG05, LOG5 = np.log(1.5), np.log(0.5), np.log(5.0)
VESPO = dict(k_pos=2.0, lambda_pos=3.0, k_neg=3.0, lambda_neg=2.0)  # TRL's defaults


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _val_grad(fn, log_ratio, adv, **kw):
    """Per-element values and d/dlogp of an elementwise loss at ``old_logp = 0``."""
    lr, a = jnp.asarray(log_ratio, jnp.float32), jnp.asarray(adv, jnp.float32)
    f = lambda x: fn(x, jnp.zeros_like(x), a, **kw)
    return np.asarray(f(lr)), np.asarray(jax.grad(lambda x: f(x).sum())(lr))


def _lm_batch(seed=0, b=4, l_max=6, scale=0.3):
    """Log-probs with garbage at padding (masked-out entries must not matter)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, l_max + 1, size=b)
    mask = (np.arange(l_max)[None] < lengths[:, None]).astype(np.float32)
    old = -rng.uniform(0.1, 2.0, size=(b, l_max))
    logp = old + scale * rng.normal(size=(b, l_max))
    logp = np.where(mask > 0, logp, 50.0)  # would overflow any ratio if it leaked in
    adv = rng.normal(size=b)
    return (jnp.asarray(x, jnp.float32) for x in (logp, old, adv, mask)), lengths


# ------------------------------------------------------------------ two-sided clip (delta)
def test_two_sided_clip_by_hand():
    kw = dict(eps_low=0.2, eps_high=0.2, delta=3.0)
    cases = np.array(  # (log ratio, A, loss, d loss / d logp)
        [
            (LOG5, -1.0, 3.0, 0.0),  # ρ = 5 > δ, A < 0: the cap holds the loss at -δA = 3
            (LOG15, -1.0, 1.5, 1.5),  # below the cap: PPO's pessimistic -ρA
            (LOG5, 1.0, -1.2, 0.0),  # A > 0: PPO's upper clip 1 + ε acts first
            (LOG05, 2.0, -1.0, -1.0),  # unclipped
        ]
    )
    v, g = _val_grad(pg.ppo_clip, cases[:, 0], cases[:, 1], **kw)
    np.testing.assert_allclose(v, cases[:, 2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, cases[:, 3], rtol=1e-5, atol=1e-6)
    # δ below 1 + ε_high also lowers the positive-advantage cap: ρ = 1.15 capped at 1.1.
    v, g = _val_grad(pg.ppo_clip, [np.log(1.15)], [1.0], eps_low=0.2, eps_high=0.2, delta=1.1)
    np.testing.assert_allclose([v[0], g[0]], [-1.1, 0.0], rtol=1e-5, atol=1e-7)


def test_two_sided_clip_above_one_plus_eps_is_dual_clip():
    rng = np.random.default_rng(1)
    lr, adv = rng.normal(scale=1.0, size=200), rng.normal(size=200)
    kw = dict(eps_low=0.2, eps_high=0.28)
    for delta in (1.5, 3.0):
        v, g = _val_grad(pg.ppo_clip, lr, adv, **kw, delta=delta)
        v_dual, g_dual = _val_grad(pg.ppo_dual_clip, lr, adv, **kw, dual_clip=delta)
        np.testing.assert_allclose(v, v_dual, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g, g_dual, rtol=1e-6, atol=1e-7)


def test_no_delta_and_an_infinite_cap_compute_the_old_ppo_clip_bit_for_bit():
    """`delta=None` is the old graph; an inf cap (the objective's "off") gives the same bits."""
    rng = np.random.default_rng(2)
    lr = jnp.asarray(rng.normal(scale=0.5, size=(64,)), jnp.float32)
    adv = jnp.asarray(rng.normal(size=(64,)), jnp.float32).at[:4].set(0.0)
    old = jnp.asarray(rng.normal(size=(64,)), jnp.float32)

    def old_ppo_clip(logp):  # the formula before `delta` existed
        log_ratio = jnp.where(adv == 0, 0.0, logp - jax.lax.stop_gradient(old))
        ratio = jnp.exp(log_ratio)
        clipped = jnp.clip(ratio, 1.0 - 0.2, 1.0 + 0.28)
        return -jnp.minimum(ratio * adv, clipped * adv)

    want = jax.jit(jax.value_and_grad(lambda x: old_ppo_clip(x).sum()))(old + lr)
    for delta in (None, jnp.asarray(jnp.inf, jnp.float32)):
        f = lambda x, d=delta: pg.ppo_clip(x, old, adv, eps_low=0.2, eps_high=0.28, delta=d)
        got = jax.jit(jax.value_and_grad(lambda x, f=f: f(x).sum()))(old + lr)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_delta_is_checked_when_concrete():
    x = jnp.zeros(3)
    with pytest.raises(ValueError, match="delta=1.0 is invalid"):
        pg.ppo_clip(x, x, x, eps_low=0.2, eps_high=0.2, delta=1.0)


# ------------------------------------------------------------------ SAPO
def test_sapo_by_hand():
    tau_pos, tau_neg = 1.0, 1.05
    # (log ratio, A): on policy, A > 0 off policy, A < 0 off policy
    lr, adv = [0.0, LOG15, LOG05], [3.0, 2.0, -1.0]
    v, g = _val_grad(pg.sapo, lr, adv, tau_pos=tau_pos, tau_neg=tau_neg)
    s_pos, s_neg = _sigmoid(tau_pos * 0.5), _sigmoid(tau_neg * -0.5)
    # ℓ = -(4/τ) σ(τ(ρ - 1)) A: on policy σ(0) = ½, so ℓ = -2A/τ
    want_v = [-2.0 * 3.0 / tau_pos, -4 / tau_pos * s_pos * 2.0, 4 / tau_neg * s_neg]
    # d/dlogp = -4 σ(1-σ) ρ A: on policy exactly -A (PPO's gradient)
    want_g = [-3.0, -4 * s_pos * (1 - s_pos) * 1.5 * 2.0, 4 * s_neg * (1 - s_neg) * 0.5]
    np.testing.assert_allclose(v, want_v, rtol=1e-5)
    np.testing.assert_allclose(g, want_g, rtol=1e-5)


def test_sapo_temperature_sides_and_zero_advantage():
    # A > 0 reads τ_pos only, A < 0 (and A = 0) τ_neg only.
    a = _val_grad(pg.sapo, [LOG15, LOG15], [1.0, -1.0], tau_pos=1.0, tau_neg=2.0)[0]
    b = _val_grad(pg.sapo, [LOG15, LOG15], [1.0, -1.0], tau_pos=1.0, tau_neg=5.0)[0]
    assert a[0] == b[0] and a[1] != b[1]
    # A = 0: loss 0 and gradient 0 even where the ratio overflows (as ppo_clip).
    v, g = _val_grad(pg.sapo, [200.0], [0.0], tau_pos=1.0, tau_neg=1.05)
    assert v[0] == 0.0 and g[0] == 0.0
    with pytest.raises(ValueError, match="tau_neg=0.0 is invalid"):
        pg.sapo(jnp.zeros(2), jnp.zeros(2), jnp.zeros(2), tau_pos=1.0, tau_neg=0.0)


def test_sapo_gate_decays_smoothly_where_ppo_drops_to_zero():
    lr = np.log(np.array([1.1, 1.3, 2.0, 4.0]))
    _, g = _val_grad(pg.sapo, lr, np.ones(4), tau_pos=1.0, tau_neg=1.05)
    _, g_ppo = _val_grad(pg.ppo_clip, lr, np.ones(4), eps_low=0.2, eps_high=0.2)
    assert np.all(g < 0) and np.all(np.diff(np.abs(g * np.exp(-lr))) < 0)  # smaller per unit ρ
    assert np.all(g_ppo[1:] == 0.0)


# ------------------------------------------------------------------ VESPO
def test_vespo_weight_by_hand():
    # Sequence 0: log ratios 0.2 + 0.3 (w = e^0.5), A >= 0; padding with a huge ratio ignored.
    # Sequence 1: the same w with A < 0. Sequence 2: on policy (φ = 1). Sequence 3: clamps.
    lr = jnp.asarray(
        [[0.2, 0.3, 40.0], [0.2, 0.3, 0.0], [0.0, 0.0, 0.0], [30.0, 30.0, 0.0]], jnp.float32
    )
    mask = jnp.asarray([[1, 1, 0], [1, 1, 1], [1, 1, 1], [1, 1, 0]], jnp.float32)
    adv = jnp.asarray([1.0, -1.0, 0.5, 1.0])
    phi = sequence.vespo_weight(lr, jnp.zeros_like(lr), adv, mask, **VESPO)
    w = math.exp(0.5)
    want = [
        math.exp(3.0 + 2.0 * 0.5 - 3.0 * w),  # e^λ w^k e^{-λw}, (k, λ) = (2, 3)
        math.exp(2.0 + 3.0 * 0.5 - 2.0 * w),  # (k, λ) = (3, 2)
        1.0,  # φ(1) = 1
        0.0,  # log w clamped to 20: e^{-3 e^20} underflows to 0
    ]
    np.testing.assert_allclose(phi, want, rtol=1e-5, atol=1e-30)
    # w → 0: log w is floored at log 1e-8, so φ = e^λ 1e-8^k e^{-λ 1e-8} (tiny, not NaN)
    tiny = sequence.vespo_weight(-lr[3:], jnp.zeros_like(lr[3:]), adv[3:], mask[3:], **VESPO)
    np.testing.assert_allclose(tiny, [math.exp(3.0) * 1e-16], rtol=1e-4)


def test_vespo_loss_and_gradient_formula():
    (logp, old, adv, mask), _ = _lm_batch(3)
    loss = sequence.vespo(logp, old, adv, mask, **VESPO)
    phi = sequence.vespo_weight(logp, old, adv, mask, **VESPO)
    m = np.asarray(mask)
    np.testing.assert_allclose(loss, -(phi * adv)[:, None] * logp * m, rtol=1e-6)
    # φ is a stopped weight: the gradient is -φ A on each real token (REINFORCE's at w = 1)
    g = jax.grad(lambda x: sequence.vespo(x, old, adv, mask, **VESPO).sum())(logp)
    np.testing.assert_allclose(g, -(phi * adv)[:, None] * m, rtol=1e-6)
    g_on = jax.grad(lambda x: sequence.vespo(x, x, adv, mask, **VESPO).sum())(logp)
    np.testing.assert_allclose(g_on, -adv[:, None] * m, rtol=1e-6)  # on policy φ = 1


def test_vespo_weight_peaks_at_k_over_lambda():
    log_w = jnp.log(jnp.linspace(0.05, 3.0, 600))[:, None]
    phi = sequence.vespo_weight(
        log_w, jnp.zeros_like(log_w), jnp.ones(600), jnp.ones_like(log_w), **VESPO
    )
    peak = float(jnp.exp(log_w[jnp.argmax(phi), 0]))
    np.testing.assert_allclose(peak, 2.0 / 3.0, atol=6e-3)


# ------------------------------------------------------------------ LUSPO
def test_luspo_by_hand():
    lr = jnp.asarray([[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]], jnp.float32)  # s = e^0.2 = 1.2214
    mask = jnp.ones_like(lr)
    adv = jnp.asarray([1.0, -1.0])
    kw = dict(eps_low=0.2, eps_high=0.2)
    per_tok = sequence.luspo(lr, jnp.zeros_like(lr), adv, mask, **kw)
    s = math.exp(0.2)
    np.testing.assert_allclose(per_tok, [[-1.2] * 3, [s] * 3], rtol=1e-5)
    # token sum |y| ℓ: d/dlogp_t = |y| · ∂ℓ/∂log s · (1/|y|) = -A s where unclipped, 0 clipped
    g = jax.grad(lambda x: sequence.luspo(x, jnp.zeros_like(x), adv, mask, **kw).sum())(lr)
    np.testing.assert_allclose(g, [[0.0] * 3, [s] * 3], rtol=1e-5, atol=1e-7)


def test_luspo_aggregations_are_length_weighted_gspo_and_gspo():
    (logp, old, adv, mask), lengths = _lm_batch(4, scale=0.05)
    kw = dict(eps_low=0.02, eps_high=0.03, delta=1.2)

    def luspo(x, agg):
        return agg(sequence.luspo(x, old, adv, mask, **kw), mask)

    def length_weighted_gspo(x):  # LUSPO's (1/N) Σ_i |y_i| ℓ_i, TRL's loss_type="luspo"
        return jnp.mean(sequence.gspo(x, old, adv, mask, **kw) * jnp.asarray(lengths, jnp.float32))

    for got_fn, want_fn in (
        (lambda x: luspo(x, reduce.seq_mean_token_sum), length_weighted_gspo),
        (lambda x: luspo(x, reduce.seq_mean_token_mean),
         lambda x: jnp.mean(sequence.gspo(x, old, adv, mask, **kw))),
    ):  # fmt: skip
        got, want = jax.value_and_grad(got_fn)(logp), jax.value_and_grad(want_fn)(logp)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)
    assert float(jnp.max(jnp.abs(got[1]))) > 1e-3  # some sequences unclipped: a real gradient


# ------------------------------------------------------------------ shared invariants
@pytest.mark.parametrize("name", ["vespo", "luspo"])
def test_masking_equals_slicing(name):
    (logp, old, adv, mask), lengths = _lm_batch(5)
    kw = VESPO if name == "vespo" else dict(eps_low=0.2, eps_high=0.28, delta=2.0)
    fn = {"sapo": pg.sapo, "vespo": sequence.vespo, "luspo": sequence.luspo}[name]
    padded = fn(logp, old, adv, mask, **kw)
    for i, n in enumerate(lengths):
        row = lambda x, i=i, n=n: x[i : i + 1, :n]  # noqa: E731
        alone = fn(row(logp), row(old), adv[i : i + 1], row(mask), **kw)
        np.testing.assert_allclose(padded[i, :n], alone[0], rtol=1e-6)
        np.testing.assert_array_equal(padded[i, n:], 0.0)


def test_gradient_checks(grad_check):
    rng = np.random.default_rng(6)
    lr = rng.normal(scale=0.3, size=(8,))
    adv = rng.normal(size=(8,))
    old = -rng.uniform(0.1, 2.0, size=(8,))
    grad_check(
        lambda x: pg.sapo(x, jnp.asarray(old), jnp.asarray(adv), tau_pos=1.0, tau_neg=1.05),
        [old + lr],
    )
    # two-sided clip away from its kinks (|log ρ - log δ| > ε of the differences)
    grad_check(
        lambda x: pg.ppo_clip(
            x, jnp.asarray(old), jnp.asarray(adv), eps_low=0.2, eps_high=0.2, delta=1.1
        ),
        [old + lr],
    )
    (logp, old2, adv2, mask), _ = _lm_batch(7, scale=0.1)
    kw = dict(eps_low=0.2, eps_high=0.2, delta=1.5)
    grad_check(
        lambda x: sequence.luspo(x, old2.astype(x.dtype), adv2.astype(x.dtype), mask, **kw),
        [np.where(np.asarray(mask) > 0, np.asarray(logp), 0.0)],
    )
