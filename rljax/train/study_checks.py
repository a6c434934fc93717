"""Exact checks of rljax's losses that more than one study reports (experiments/estimator_audit.py,
experiments/nft_pacs.py)."""

import jax
import jax.numpy as jnp
import numpy as np

from rljax import returns
from rljax.losses import implicit, policy_gradient


def nft_identity(num_groups: int = 64, group: int = 8, seed: int = 0) -> dict:
    """On-policy NFT gradient against Dr.GRPO's and GRPO's on one random batch.

    With R = π_θ/π_old = 1, NFT's per-token gradient is −∇log π on positives and
    r_q/(1 − r_q)·∇log π on negatives (r_q: the prompt's accuracy). Times (1 − r_q) that is
    −(r_i − r_q)∇log π: Dr.GRPO's. GRPO divides r_i − r_q by the group std, which for 0/1
    rewards is sqrt(r_q(1 − r_q)) with ddof=0 and sqrt(G/(G−1))·sqrt(r_q(1 − r_q)) with ddof=1
    (rljax's default), so the per-prompt weights are sqrt((1 − r_q)/r_q) and
    sqrt((1 − r_q)/r_q)·sqrt((G − 1)/G). Returns the largest relative differences (ε = 0 in the
    std) and the cosine between unweighted NFT and GRPO, which is below 1 whenever prompts'
    accuracies differ.
    """
    rng = np.random.default_rng(seed)
    max_len = 5
    reward = rng.integers(0, 2, size=(num_groups, group)).astype(np.float32)
    reward[:, 0], reward[:, 1] = 1.0, 0.0  # every group mixed (others carry no signal)
    lengths = rng.integers(1, max_len + 1, size=(num_groups, group))
    mask = jnp.asarray((np.arange(max_len) < lengths[..., None]).astype(np.float32))
    logp = jnp.asarray(-rng.random((num_groups, group, max_len)).astype(np.float32) - 0.1)
    reward = jnp.asarray(reward)
    rate = jnp.mean(reward, axis=1)  # r_q [B]
    old = jax.lax.stop_gradient(logp)

    def nft_dir(weight):
        def loss(lp):
            tok = implicit.nft(lp, old, reward[..., None], rate[:, None, None])
            return jnp.sum(weight[:, None, None] * tok * mask)

        return -jax.grad(loss)(logp).ravel()

    def pg_dir(adv):
        def loss(lp):
            return jnp.sum(policy_gradient.reinforce(lp, adv[..., None] * mask) * mask)

        return -jax.grad(loss)(logp).ravel()

    def rel(a, b):
        return float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))

    w_std = jnp.sqrt((1.0 - rate) / rate)
    grpo1 = pg_dir(returns.grpo_advantages(reward, eps=0.0, ddof=1))
    plain = nft_dir(jnp.ones_like(rate))
    return {
        "dr_grpo_max_rel_diff": rel(nft_dir(1.0 - rate),
                                    pg_dir(returns.dr_grpo_advantages(reward))),
        "grpo_ddof0_max_rel_diff": rel(
            nft_dir(w_std), pg_dir(returns.grpo_advantages(reward, eps=0.0, ddof=0))),
        "grpo_ddof1_max_rel_diff": rel(nft_dir(w_std * np.sqrt((group - 1) / group)), grpo1),
        "unweighted_vs_grpo_cosine": float(
            plain @ grpo1 / (jnp.linalg.norm(plain) * jnp.linalg.norm(grpo1))),
    }  # fmt: skip
