"""Library boundaries: out-of-range concrete hyperparameters are rejected, traced ones pass, and
masked-out entries (NaN or inf included) never influence unmasked results.

Covers rljax.losses, rljax.returns and rljax.dp, plus the three loss defects of issue 15
(hl_gauss rows for targets outside the support, ppo_clip with an overflowing ratio and A = 0,
kl_in_reward on an empty row).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import checks, dp, returns
from rljax.losses import (
    classification,
    distributional,
    implicit,
    kl,
    policy_gradient,
    reduce,
    sequence,
    value,
)

NAN, INF = float("nan"), float("inf")
SUPPORT = jnp.linspace(-1.0, 1.0, 11)
ONES = jnp.ones(3)
LM = jnp.zeros((2, 3))
LM_MASK = jnp.ones((2, 3))

# (call with the bad hyperparameter, the name the message must carry)
BAD_HYPERPARAMETERS = {
    "ppo_clip eps_low<0": (
        lambda: policy_gradient.ppo_clip(ONES, ONES, ONES, eps_low=-0.1, eps_high=0.2),
        "eps_low",
    ),
    "ppo_clip eps_high nan": (
        lambda: policy_gradient.ppo_clip(ONES, ONES, ONES, eps_low=0.2, eps_high=NAN),
        "eps_high",
    ),
    "ppo_clip eps numpy<0": (
        lambda: policy_gradient.ppo_clip(ONES, ONES, ONES, eps_low=np.float32(-1), eps_high=0.2),
        "eps_low",
    ),
    "cispo eps_high<0": (
        lambda: policy_gradient.cispo(ONES, ONES, ONES, eps_low=0.2, eps_high=-0.2),
        "eps_high",
    ),
    "gspo eps_low nan": (
        lambda: sequence.gspo(LM, LM, jnp.ones(2), LM_MASK, eps_low=NAN, eps_high=0.2),
        "eps_low",
    ),
    "dual_clip<=1": (
        lambda: policy_gradient.ppo_dual_clip(
            ONES, ONES, ONES, eps_low=0.2, eps_high=0.2, dual_clip=1.0
        ),
        "dual_clip",
    ),
    "pacs beta<=0": (lambda: implicit.pacs(LM, LM, LM, beta=0.0), "beta"),
    "kl_in_reward beta<0": (
        lambda: kl.kl_in_reward(jnp.ones(2), LM, LM_MASK, beta=-1.0),
        "beta",
    ),
    "kl_in_loss beta inf": (lambda: kl.kl_in_loss(ONES, ONES, beta=INF), "beta"),
    "huber delta<=0": (lambda: value.huber(ONES, delta=0.0), "delta"),
    "clipped_value_loss eps nan": (
        lambda: value.clipped_value_loss(ONES, ONES, ONES, clip_eps=NAN),
        "clip_eps",
    ),
    "hl_gauss sigma<=0": (lambda: classification.hl_gauss(ONES, SUPPORT, sigma=0.0), "sigma"),
    "hl_gauss unsorted support": (
        lambda: classification.hl_gauss(ONES, SUPPORT[::-1], sigma=0.1),
        "support",
    ),
    "two_hot repeated atom": (
        lambda: classification.two_hot(ONES, jnp.array([0.0, 1.0, 1.0, 2.0])),
        "support",
    ),
    "two_hot nan atom": (lambda: classification.two_hot(ONES, jnp.array([0.0, NAN])), "support"),
    "categorical_projection unsorted": (
        lambda: distributional.categorical_projection(
            jnp.zeros((1, 3)), jnp.ones((1, 3)) / 3, np.array([1.0, 0.0, 2.0])
        ),
        "support",
    ),
    "gae lambda>1": (
        lambda: returns.gae(ONES, ONES, ONES, ONES, ONES, lambda_=1.5),
        "lambda_",
    ),
    "gae lambda<0": (
        lambda: returns.gae(ONES, ONES, ONES, ONES, ONES, lambda_=-0.1),
        "lambda_",
    ),
    "lambda_returns lambda nan": (
        lambda: returns.lambda_returns(ONES, ONES, ONES, ONES, ONES, lambda_=NAN),
        "lambda_",
    ),
    "grpo eps<0": (lambda: returns.grpo_advantages(LM, eps=-1e-3), "eps"),
    "ngrpo r_max nan": (lambda: returns.ngrpo_advantages(LM, r_max=NAN), "r_max"),
    "seq_mean_token_sum_norm max_len 0": (
        lambda: reduce.seq_mean_token_sum_norm(LM, LM_MASK, max_len=0),
        "max_len",
    ),
    "cvar alpha 0": (lambda: dp.cvar(jnp.arange(3.0), ONES / 3, 0.0), "alpha"),
    "cvar alpha>1": (lambda: dp.cvar(jnp.arange(3.0), ONES / 3, 1.5), "alpha"),
    "cvar_of_samples alpha nan": (lambda: dp.cvar_of_samples(jnp.arange(3.0), NAN), "alpha"),
    "cvar_optimize alpha<0": (
        lambda: dp.cvar_optimize(dp.gamble_chain(), dp.stock_grid(dp.gamble_chain()), -0.5),
        "alpha",
    ),
    "stock_grid spacing 0": (lambda: dp.stock_grid(dp.gamble_chain(), spacing=0.0), "spacing"),
}


@pytest.mark.parametrize("case", list(BAD_HYPERPARAMETERS))
def test_out_of_range_concrete_hyperparameter_is_rejected(case):
    call, name = BAD_HYPERPARAMETERS[case]
    with pytest.raises(ValueError, match=name) as info:
        call()
    assert "\n" not in str(info.value) and "allowed" in str(info.value)


def test_check_range_message_names_value_and_interval():
    with pytest.raises(ValueError, match=r"^lambda_=1\.5 is invalid; allowed: .*\[0, 1\]$"):
        checks.check_range("lambda_", 1.5, low=0, high=1)
    checks.check_range("lambda_", np.array([0.0, 0.5, 1.0]), low=0, high=1)  # arrays: all checked
    checks.check_range("lambda_", jnp.array(7.0), low=0, high=1)  # jax arrays are not checked


def test_traced_and_vmapped_hyperparameters_are_not_checked():
    """PPO sweeps pass hyperparameters as vmapped array leaves: those must keep working."""
    logp = jnp.array([0.1, -0.2, 0.3])

    def loss(eps, lam):
        adv = returns.gae(ONES, ONES * 0.9, ONES, ONES, jnp.zeros(3), lambda_=lam)
        return jnp.sum(policy_gradient.ppo_clip(logp, jnp.zeros(3), adv, eps_low=eps, eps_high=eps))

    out = jax.jit(jax.vmap(loss))(jnp.array([0.1, 0.2]), jnp.array([0.9, 0.95]))
    assert out.shape == (2,) and np.all(np.isfinite(out))
    alphas = jnp.array([0.1, 0.5, 1.0])
    cvars = jax.vmap(lambda a: dp.cvar(jnp.arange(4.0), jnp.ones(4) / 4, a))(alphas)
    np.testing.assert_allclose(cvars, [0.0, 0.5, 1.5], atol=1e-6)


# ---- masked slots holding NaN / inf never leak into unmasked results ------------------------

REWARDS = jnp.array([[1.0, 0.0, 1.0, 0.5], [0.0, 0.0, 1.0, 0.0]])
GROUP_MASK = jnp.array([[1, 1, 1, 0], [1, 1, 1, 1]], jnp.float32)
ADVANTAGES = {
    "grpo": returns.grpo_advantages,
    "dr_grpo": returns.dr_grpo_advantages,
    "lite_ppo": returns.lite_ppo_advantages,
    "batch": returns.batch_advantages,
    "rloo": returns.rloo_advantages,
    "ngrpo": returns.ngrpo_advantages,
}


@pytest.mark.parametrize("poison", [NAN, INF, -INF])
@pytest.mark.parametrize("name", list(ADVANTAGES))
def test_group_advantages_ignore_nan_and_inf_in_padded_slots(name, poison):
    fn = ADVANTAGES[name]
    clean = fn(REWARDS, GROUP_MASK)
    poisoned = fn(REWARDS.at[0, 3].set(poison), GROUP_MASK)
    np.testing.assert_array_equal(poisoned, clean)
    assert float(poisoned[0, 3]) == 0.0


LOSS = jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
TOKEN_MASK = jnp.array([[1, 1, 0], [1, 0, 0]], jnp.float32)
REDUCERS = {
    "masked_mean": lambda x, m: reduce.masked_mean(x, m),
    "masked_mean_axis": lambda x, m: reduce.masked_mean(x, m, axis=1),
    "masked_std": lambda x, m: reduce.masked_std(x, m),
    "token_mean": reduce.token_mean,
    "seq_mean_token_mean": reduce.seq_mean_token_mean,
    "seq_mean_token_sum": reduce.seq_mean_token_sum,
    "seq_mean_token_sum_norm": lambda x, m: reduce.seq_mean_token_sum_norm(x, m, max_len=3),
}


@pytest.mark.parametrize("poison", [NAN, INF])
@pytest.mark.parametrize("name", list(REDUCERS))
def test_reductions_ignore_nan_and_inf_in_masked_slots(name, poison):
    fn = REDUCERS[name]
    poisoned = LOSS.at[0, 2].set(poison).at[1, 1].set(poison)
    np.testing.assert_array_equal(fn(poisoned, TOKEN_MASK), fn(LOSS, TOKEN_MASK))
    grad = jax.grad(lambda x: jnp.sum(fn(x, TOKEN_MASK)))(poisoned)
    assert np.all(np.isfinite(grad)) and float(grad[0, 2]) == 0.0


def test_sequence_losses_ignore_nan_in_padded_tokens():
    logp = jnp.array([[-0.5, -1.0, -0.2], [-0.3, -0.4, -0.9]])
    old = logp - 0.05
    bad = logp.at[0, 2].set(NAN).at[1, 1].set(INF)
    kw = dict(eps_low=0.2, eps_high=0.2)
    adv = jnp.array([1.0, -1.0])
    np.testing.assert_array_equal(
        sequence.gspo(bad, old, adv, TOKEN_MASK, **kw),
        sequence.gspo(logp, old, adv, TOKEN_MASK, **kw),
    )
    np.testing.assert_array_equal(
        sequence.gspo_token(bad, old, adv, TOKEN_MASK, **kw),
        sequence.gspo_token(logp, old, adv, TOKEN_MASK, **kw),
    )
    seq, ref = jnp.array([[-1.0, -2.0, NAN]]), jnp.array([[-1.5, -1.5, INF]])
    reward, mask = jnp.array([[1.0, 0.0, NAN]]), jnp.array([[1.0, 1.0, 0.0]])
    got = implicit.pacs(seq, ref, reward, mask, beta=1.0)
    want = implicit.pacs(seq[:, :2], ref[:, :2], reward[:, :2], beta=1.0)
    np.testing.assert_allclose(got[:, :2], want, rtol=1e-6)
    assert float(got[0, 2]) == 0.0
    kl_t = jnp.array([[0.1, 0.2, NAN], [0.3, INF, -INF]])
    np.testing.assert_allclose(
        kl.kl_in_reward(jnp.array([1.0, 2.0]), kl_t, TOKEN_MASK, beta=0.5),
        [[-0.05, 1.0 - 0.1, 0.0], [2.0 - 0.15, 0.0, 0.0]],
        rtol=1e-6,
    )


# ---- issue 15: the three loss defects ---------------------------------------------------------


@pytest.mark.parametrize("target", [-2.0, 2.5, -100.0, 1e6])
def test_hl_gauss_targets_outside_the_support_keep_a_full_row(target):
    """Regression: support linspace(-1, 1, 11), σ = 0.15: target -2 summed to 0.0, 2.5 to 5e-9."""
    probs = classification.hl_gauss(jnp.array([target]), SUPPORT, sigma=0.15)
    np.testing.assert_allclose(jnp.sum(probs), 1.0, rtol=1e-5)
    end = classification.hl_gauss(jnp.array([float(np.clip(target, -1, 1))]), SUPPORT, sigma=0.15)
    np.testing.assert_allclose(probs, end, rtol=1e-6)  # clipped to the nearest end atom
    logits = jnp.zeros((1, 11))
    grad = jax.grad(lambda z: jnp.sum(classification.cross_entropy(z, probs)))(logits)
    assert float(jnp.abs(grad).sum()) > 0.1  # the sample still trains the head


def test_ppo_clip_overflowing_ratio_with_zero_advantage_is_finite():
    """Regression: log-ratio 100 overflows float32 exp to inf; inf · 0 gave a NaN loss."""
    logp = jnp.array([100.0, 100.0, 0.3])
    old = jnp.zeros(3)
    adv = jnp.array([0.0, 1.0, -0.5])
    loss = policy_gradient.ppo_clip(logp, old, adv, eps_low=0.2, eps_high=0.2)
    np.testing.assert_allclose(loss, [0.0, -1.2, 0.5 * np.exp(0.3)], rtol=1e-6)
    logp, old, adv = logp[::2], old[::2], adv[::2]  # (A > 0 with inf ratio: inf in the grad)
    grad = jax.grad(
        lambda lp: jnp.sum(policy_gradient.ppo_clip(lp, old, adv, eps_low=0.2, eps_high=0.2))
    )(logp)
    np.testing.assert_allclose(grad, [0.0, 0.5 * np.exp(0.3)], rtol=1e-6)


def test_kl_in_reward_empty_row_keeps_its_reward():
    """Regression: a fully masked row returned 0 instead of R - β Σ kl = R."""
    reward = jnp.array([3.0, -1.0])
    kl_t = jnp.array([[0.5, 0.5], [0.2, 0.2]])
    mask = jnp.array([[0, 0], [1, 0]], jnp.float32)
    got = kl.kl_in_reward(reward, kl_t, mask, beta=1.0)
    np.testing.assert_allclose(jnp.sum(got, axis=1), [3.0, -1.0 - 0.2], rtol=1e-6)
