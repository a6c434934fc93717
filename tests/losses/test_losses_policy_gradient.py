"""Tests for rljax.losses.policy_gradient: hand values, gradients, equivalences, no recompiles."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.losses import implicit, reduce, sequence
from rljax.losses import policy_gradient as pg

LOG15, LOG05, LOG5 = np.log(1.5), np.log(0.5), np.log(5.0)


def _val_grad(fn, log_ratio, adv, **kw):
    """Per-element values and d/dlogp of an elementwise loss at ``old_logp = 0``."""
    lr, a = jnp.asarray(log_ratio, jnp.float32), jnp.asarray(adv, jnp.float32)
    f = lambda x: fn(x, jnp.zeros_like(x), a, **kw)
    return np.asarray(f(lr)), np.asarray(jax.grad(lambda x: f(x).sum())(lr))


def test_ppo_clip_by_hand():
    cases = np.array(  # (log ratio, A, loss, d loss / d logp)
        [
            (LOG15, 2.0, -2.4, 0.0),  # clipped above: 1.2 * 2
            (LOG15, -2.0, 3.0, 3.0),  # pessimistic unclipped: -ρA, gradient -ρA
            (LOG05, -2.0, 1.6, 0.0),  # clipped below: 0.8 * -2
            (LOG05, 2.0, -1.0, -1.0),  # unclipped
        ]
    )
    v, g = _val_grad(pg.ppo_clip, cases[:, 0], cases[:, 1], eps_low=0.2, eps_high=0.2)
    np.testing.assert_allclose(v, cases[:, 2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, cases[:, 3], rtol=1e-5, atol=1e-6)
    # DAPO clip-higher: only the upper bound moves.
    v, _ = _val_grad(pg.ppo_clip, [LOG15, LOG05], [2.0, -2.0], eps_low=0.2, eps_high=0.28)
    np.testing.assert_allclose(v, [-2.56, 1.6], rtol=1e-5)


def test_dual_clip_by_hand():
    kw = dict(eps_low=0.2, eps_high=0.2)
    lr = [LOG5, LOG15, LOG5, LOG05]
    adv = [-1.0, -1.0, 1.0, 2.0]
    v, g = _val_grad(pg.ppo_dual_clip, lr, adv, **kw, dual_clip=3.0)
    v_ppo, g_ppo = _val_grad(pg.ppo_clip, lr, adv, **kw)
    # ρ = 5, A = -1: PPO gives loss 5 with gradient 5; dual clip floors it at 3 with gradient 0.
    np.testing.assert_allclose([v[0], g[0], v_ppo[0], g_ppo[0]], [3.0, 0.0, 5.0, 5.0], rtol=1e-5)
    # Below the floor, and for A > 0, dual clip equals PPO clip.
    np.testing.assert_allclose(v[1:], v_ppo[1:], rtol=1e-6)
    np.testing.assert_allclose(g[1:], g_ppo[1:], rtol=1e-6)


def test_reinforce_and_cispo_by_hand():
    logp, adv = jnp.array([-1.0, -2.0]), jnp.array([2.0, -1.0])
    np.testing.assert_allclose(pg.reinforce(logp, adv), [2.0, -2.0])
    old = logp - jnp.array([LOG15, LOG05])  # ρ = [1.5, 0.5]
    got = pg.cispo(logp, old, adv, eps_low=1.0, eps_high=0.2)
    np.testing.assert_allclose(got, [-1.2 * 2.0 * -1.0, -0.5 * -1.0 * -2.0], rtol=1e-5)
    # CISPO keeps a gradient for the clipped token (PPO would give 0 there).
    g = jax.grad(lambda lp: pg.cispo(lp, old, adv, eps_low=1.0, eps_high=0.2).sum())(logp)
    np.testing.assert_allclose(g, [-1.2 * 2.0, -0.5 * -1.0], rtol=1e-5)


def test_on_policy_gradients_agree():
    """At ρ = 1, PPO, dual-clip, CISPO and REINFORCE all give the gradient -A ∇logp."""
    logp = jnp.array([-0.3, -1.2, -2.0])
    adv = jnp.array([1.0, -0.5, 2.0])
    old = jax.lax.stop_gradient(logp)
    fns = [
        lambda lp: pg.reinforce(lp, adv),
        lambda lp: pg.ppo_clip(lp, old, adv, eps_low=0.2, eps_high=0.3),
        lambda lp: pg.ppo_dual_clip(lp, old, adv, eps_low=0.2, eps_high=0.3),
        lambda lp: pg.cispo(lp, old, adv, eps_low=0.2, eps_high=0.3),
    ]
    for f in fns:
        np.testing.assert_allclose(jax.grad(lambda lp, f=f: f(lp).sum())(logp), -adv, rtol=1e-6)


def _lm_batch(seed=0, b=4, l_max=6):
    rng = np.random.default_rng(seed)
    lens = np.array([6, 3, 1, 4])[:b]
    mask = jnp.asarray((np.arange(l_max)[None] < lens[:, None]).astype(np.float32))
    logp = jnp.asarray(-rng.random((b, l_max)).astype(np.float32) - 0.1)
    old = logp + jnp.asarray(rng.normal(size=(b, l_max)).astype(np.float32) * 0.05)
    adv = jnp.asarray(rng.normal(size=b).astype(np.float32))
    return logp, old, adv, mask, lens


def test_gspo_sequence_ratio_by_hand_and_loss():
    logp, old, adv, mask, lens = _lm_batch()
    log_s = sequence.gspo_log_ratio(logp, old, mask)
    for i, n in enumerate(lens):
        np.testing.assert_allclose(log_s[i], np.mean(np.asarray(logp - old)[i, :n]), rtol=1e-5)
    loss = sequence.gspo(logp, old, adv, mask, eps_low=3e-4, eps_high=4e-4)
    s = np.exp(np.asarray(log_s))
    a = np.asarray(adv)
    want = -np.minimum(s * a, np.clip(s, 1 - 3e-4, 1 + 4e-4) * a)
    np.testing.assert_allclose(loss, want, rtol=1e-5)


def test_gspo_token_matches_gspo_value_and_gradient():
    logp, old, adv, mask, _ = _lm_batch()
    kw = dict(eps_low=0.02, eps_high=0.03)
    f_seq = lambda lp: reduce.masked_mean(sequence.gspo(lp, old, adv, mask, **kw))
    f_tok = lambda lp: reduce.seq_mean_token_mean(
        sequence.gspo_token(lp, old, adv, mask, **kw), mask
    )
    np.testing.assert_allclose(f_seq(logp), f_tok(logp), rtol=1e-5)
    np.testing.assert_allclose(jax.grad(f_seq)(logp), jax.grad(f_tok)(logp), rtol=1e-4, atol=1e-6)
    # Padding tokens get no gradient.
    assert float(jnp.abs(jax.grad(f_seq)(logp) * (1 - mask)).max()) == 0.0


def test_entropies_closed_form():
    np.testing.assert_allclose(pg.categorical_entropy(jnp.zeros(4)), np.log(4.0), rtol=1e-6)
    log_std = jnp.array([0.0, np.log(2.0)])
    want = 0.5 * np.log(2 * np.pi * np.e) * 2 + np.log(2.0)
    np.testing.assert_allclose(pg.gaussian_entropy(log_std), want, rtol=1e-6)


def test_gradient_checks(grad_check):
    lp = np.array([-0.5, -1.0, -2.0, -0.7])
    old = np.array([-0.4, -1.3, -1.0, -0.7])  # ratios away from the clip kinks
    adv = np.array([1.0, -2.0, 0.5, -1.0])
    kw = dict(eps_low=0.2, eps_high=0.28)
    grad_check(lambda x: pg.ppo_clip(x, old, adv, **kw), [lp])
    grad_check(lambda x: pg.ppo_dual_clip(x, old, adv, **kw, dual_clip=3.0), [lp])
    grad_check(lambda x: pg.reinforce(x, adv), [lp])
    grad_check(pg.categorical_entropy, [np.array([0.3, -1.0, 2.0])])
    grad_check(pg.gaussian_entropy, [np.array([0.3, -1.0])])
    # CISPO stops the gradient through its IS weight, so finite differences of its value do
    # not apply; its gradient must be exactly -clip(ρ) A.
    w = jnp.clip(jnp.exp(lp - old), 0.8, 1.28)
    g = jax.grad(lambda x: pg.cispo(x, old, adv, **kw).sum())(jnp.asarray(lp))
    np.testing.assert_allclose(g, -w * adv, rtol=1e-6)
    logp, old2, adv2, mask, _ = _lm_batch()
    f = lambda x: sequence.gspo(x, old2, adv2, mask, eps_low=0.2, eps_high=0.2)
    grad_check(f, [np.asarray(logp, np.float64)])


def test_no_recompiles():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(logp, old, adv, mask):
        tok = pg.ppo_dual_clip(logp, old, adv[:, None] * mask, eps_low=0.2, eps_high=0.28)
        seq = sequence.gspo(logp, old, adv, mask, eps_low=3e-4, eps_high=4e-4)
        return reduce.token_mean(tok, mask) + reduce.masked_mean(seq)

    for s in range(3):
        logp, old, adv, mask, _ = _lm_batch(s)
        step(logp, old, adv, mask)


# --- NFT and PACS -------------------------------------------------------------------------------


def test_nft_by_hand():
    zero = jnp.zeros(3)
    rate = jnp.array([0.25, 0.25, 0.25])
    correct = jnp.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(implicit.nft(zero, zero, correct, rate), 0.0, atol=1e-7)
    logp = jnp.array([LOG15, LOG15, np.log(8.0)])  # r_q R = 2 > 1 for the last one: floored
    got = implicit.nft(logp, zero, correct, rate, neg_floor=0.01)
    want = [-np.log(1.5), -np.log((1 - 0.375) / 0.75), -np.log(0.01)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    g = jax.grad(lambda x: implicit.nft(x, zero, correct, rate, neg_floor=0.01).sum())(logp)
    assert np.all(np.isfinite(np.asarray(g)))


def test_nft_equals_grpo_and_dr_grpo_on_policy():
    """NFT's gradient equals GRPO's (population std) / Dr.GRPO's in strict on-policy training."""
    from rljax import returns

    rng = np.random.default_rng(5)
    b, g, l_len = 3, 6, 5
    reward = jnp.asarray(rng.integers(0, 2, size=(b, g)).astype(np.float32))
    reward = reward.at[:, 0].set(1.0).at[:, 1].set(0.0)  # every group mixed
    logp = jnp.asarray(-rng.random((b, g, l_len)).astype(np.float32) - 0.1)
    old = jax.lax.stop_gradient(logp)
    rate = jnp.mean(reward, axis=1, keepdims=True)  # [B, 1]

    def nft_loss(lp, weight):
        per_tok = implicit.nft(lp, old, reward[..., None], rate[..., None])
        return jnp.sum(per_tok * weight[..., None])

    def pg_loss(lp, adv):
        return jnp.sum(
            pg.ppo_clip(
                lp, old, jnp.broadcast_to(adv[..., None], lp.shape), eps_low=0.2, eps_high=0.2
            )
        )

    grpo_adv = returns.grpo_advantages(reward, eps=0.0, ddof=0)
    g_nft = jax.grad(nft_loss)(logp, jnp.sqrt((1 - rate) / rate) * jnp.ones((b, g)))
    np.testing.assert_allclose(g_nft, jax.grad(pg_loss)(logp, grpo_adv), rtol=1e-5, atol=1e-6)
    dr_adv = returns.dr_grpo_advantages(reward)
    g_nft = jax.grad(nft_loss)(logp, (1 - rate) * jnp.ones((b, g)))
    np.testing.assert_allclose(g_nft, jax.grad(pg_loss)(logp, dr_adv), rtol=1e-5, atol=1e-6)


def test_pacs_by_hand_and_gradient_formula():
    seq_logp = jnp.array([[1.0, 0.0]])
    zero = jnp.zeros((1, 2))
    got = implicit.pacs(seq_logp, zero, jnp.array([[1.0, 0.0]]), beta=1.0)
    np.testing.assert_allclose(got, [[np.log1p(np.e) - 1.0, np.log1p(np.exp(-1.0))]], rtol=1e-6)

    rng = np.random.default_rng(6)
    b, g, beta = 2, 5, 0.5
    lp = jnp.asarray(rng.normal(size=(b, g)).astype(np.float32))
    ref = jnp.asarray(rng.normal(size=(b, g)).astype(np.float32))
    reward = jnp.asarray(rng.integers(0, 2, size=(b, g)).astype(np.float32))
    grad = jax.grad(lambda x: implicit.pacs(x, ref, reward, beta=beta).sum())(lp)
    r_hat = beta * (np.asarray(lp) - np.asarray(ref))
    psi = r_hat - (r_hat.sum(1, keepdims=True) - r_hat) / (g - 1)
    w = -(np.asarray(reward) - 1 / (1 + np.exp(-psi)))  # dL/dψ = -(R - σ(ψ))
    want = beta * (w - (w.sum(1, keepdims=True) - w) / (g - 1))  # chain rule through the LOO mean
    np.testing.assert_allclose(grad, want, rtol=1e-4, atol=1e-6)


def test_pacs_masking_equals_slicing_and_grad_check(grad_check):
    rng = np.random.default_rng(7)
    lp = jnp.asarray(rng.normal(size=(2, 5)))
    ref = jnp.asarray(rng.normal(size=(2, 5)))
    reward = jnp.asarray(rng.integers(0, 2, size=(2, 5)).astype(np.float32))
    mask = jnp.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], jnp.float32)
    full = implicit.pacs(lp, ref, reward, mask, beta=1.0)
    sliced = implicit.pacs(lp[:1, :3], ref[:1, :3], reward[:1, :3], beta=1.0)
    np.testing.assert_allclose(full[:1, :3], sliced, rtol=1e-6)
    np.testing.assert_allclose(full[0, 3:], 0.0)
    f = lambda x: implicit.pacs(x, ref, reward, beta=0.7)
    grad_check(f, [np.asarray(lp)])
    f = lambda x: implicit.nft(x, jnp.zeros(2), jnp.array([1.0, 0.0]), jnp.array([0.3, 0.3]))
    grad_check(f, [np.array([0.1, -0.2])])


def test_rover_by_hand_gradient_and_masking(grad_check):
    # One sequence of 3 tokens (the third is padding): ρ = 2, r̃ = 0.5.
    logp = jnp.array([[-1.0, -2.0, 0.0]])
    old = jnp.array([[-1.5, -1.0, 0.0]])
    mean_lp = jnp.array([[-4.0, -3.0, 0.0]])
    old_mean = jnp.array([[-4.2, -3.5, 0.0]])
    mask = jnp.array([[1.0, 1.0, 0.0]])
    got = implicit.rover(logp, old, mean_lp, old_mean, jnp.array([0.5]), mask, rho=2.0)
    # t=0: Q = 2(-1 + 1.5) = 1; V(s_1) = 2(-3 + 3.5) = 1; target 1.5 -> 0.25
    # t=1: Q = 2(-2 + 1) = -2; last real token: target 0.5 -> 6.25; t=2 padding -> 0
    np.testing.assert_allclose(got, [[0.25, 6.25, 0.0]], rtol=1e-6)
    # The target is a constant: dℓ_t/dlogp_t = 2ρ(Q_t − target_t); V gets no gradient.
    grads = jax.grad(
        lambda lp, m: implicit.rover(lp, old, m, old_mean, jnp.array([0.5]), mask, rho=2.0).sum(),
        argnums=(0, 1),
    )(logp, mean_lp)
    np.testing.assert_allclose(grads[0], [[2 * 2 * (1 - 1.5), 2 * 2 * (-2 - 0.5), 0.0]], rtol=1e-6)
    np.testing.assert_allclose(grads[1], 0.0)
    # On policy (θ = θ_old): REINFORCE with the centred reward, scaled by 2ρ.
    rng = np.random.default_rng(8)
    lp = jnp.asarray(rng.normal(size=(3, 4)).astype(np.float32))
    mlp = jnp.asarray(rng.normal(size=(3, 4)).astype(np.float32))
    r = jnp.asarray(rng.normal(size=3).astype(np.float32))
    full = jnp.ones((3, 4))
    g = jax.grad(lambda x: implicit.rover(x, lp, mlp, mlp, r, full, rho=0.5).sum())(lp)
    want = jax.grad(lambda x: pg.reinforce(x, jnp.broadcast_to(r[:, None], (3, 4))).sum())(lp)
    np.testing.assert_allclose(g, 2 * 0.5 * want, rtol=1e-6)
    # masking == slicing: a sequence cut after 2 tokens equals its 2-token slice.
    cut = jnp.array([[1.0, 1.0, 0.0, 0.0]] * 3)
    masked = implicit.rover(lp, lp * 0.9, mlp, mlp * 1.1, r, cut, rho=1.0)
    sliced = implicit.rover(
        lp[:, :2], lp[:, :2] * 0.9, mlp[:, :2], mlp[:, :2] * 1.1, r, cut[:, :2], rho=1.0
    )
    np.testing.assert_allclose(masked[:, :2], sliced, rtol=1e-6)
    np.testing.assert_allclose(masked[:, 2:], 0.0)
    with pytest.raises(ValueError, match="rho"):
        implicit.rover(lp, lp, mlp, mlp, r, full, rho=0.0)
    f = lambda x: implicit.rover(x, lp * 0.9, mlp, mlp * 1.1, r, full, rho=1.5)  # noqa: E731
    grad_check(f, [np.asarray(lp, np.float64)])
