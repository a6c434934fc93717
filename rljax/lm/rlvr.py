"""RL with verifiable rewards: one jitted update for the whole GRPO family.

GRPO, Dr.GRPO, DAPO, Lite PPO, NGRPO, GSPO and RLOO differ only in which pure functions of the
loss library they plug in (`RLConfig`, filled from `presets.py`): the advantage estimator
(`rljax.returns`), the ratio level (token PPO clip or GSPO's sequence ratio), the clip range, the
aggregation (`rljax.losses.reduce`) and the KL estimator, placed in the loss or in the reward
(`rljax.losses.kl`). One `update(state, batch, key)` computes old/reference log-probs, the
advantages, and runs `num_epochs` x `num_minibatches` AdamW steps, all under one `jit`.

Batch layout: `RolloutBatch` rows are problem-major, `B * G` rows of G samples per prompt;
`group_mask [B, G]` is 0 for groups dropped by dynamic sampling (kept only for static shapes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from rljax.lm.logprobs import completion_log_probs
from rljax.lm.model import TransformerConfig
from rljax.losses import kl as kl_lib
from rljax.losses import policy_gradient, reduce


@dataclasses.dataclass(frozen=True)
class RLConfig:
    """What the trainer computes. Callables come from `presets.make_rl_config`."""

    advantage_fn: Callable  # rewards [B, G], mask [B, G] -> advantages [B, G]
    aggregate_fn: Callable  # per-token loss [N, A], mask [N, A] -> scalar
    sequence_ratio: bool  # GSPO: clip the length-normalized sequence ratio, not per token
    eps_low: float  # lower clip range
    eps_high: float  # upper clip range (> eps_low = DAPO clip-higher)
    kl_fn: Callable | None  # per-token estimator (logp, ref_logp) -> [N, A]; None = no KL
    kl_coef: float  # β
    kl_in_reward: bool  # True: subtract β Σ_t kl_t from the reward; False: add β kl_t to the loss
    entropy_coef: float  # entropy bonus weight
    num_epochs: int  # optimization passes over each batch
    num_minibatches: int  # minibatches per pass (must divide B * G)
    learning_rate: float  # AdamW learning rate (constant)
    max_grad_norm: float  # global-norm gradient clipping

    def __post_init__(self):
        for name in ("num_epochs", "num_minibatches"):
            if getattr(self, name) < 1:
                raise ValueError(f"RLConfig.{name}={getattr(self, name)} must be >= 1")
        for name in ("eps_low", "eps_high", "kl_coef", "entropy_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"RLConfig.{name}={getattr(self, name)} must be >= 0")
        if not self.learning_rate > 0:
            raise ValueError(f"RLConfig.learning_rate={self.learning_rate} must be > 0")
        if self.kl_coef > 0 and self.kl_fn is None:
            raise ValueError(f"RLConfig.kl_coef={self.kl_coef} > 0 needs a kl_fn (k1, k2 or k3)")


class RLState(NamedTuple):
    params: dict  # policy π_θ
    opt_state: optax.OptState
    ref_params: dict  # frozen reference π_ref (the base model)
    step: jax.Array  # number of updates so far


class RolloutBatch(NamedTuple):
    """B prompts x G samples, flattened to N = B * G rows."""

    prompt_tokens: jax.Array  # [N, P]
    prompt_mask: jax.Array  # [N, P]
    completion_tokens: jax.Array  # [N, A]
    completion_mask: jax.Array  # [N, A]
    rewards: jax.Array  # [B, G]
    group_mask: jax.Array  # [B, G], 0 = dropped group (dynamic sampling padding)


def make_optimizer(cfg: RLConfig) -> optax.GradientTransformation:
    return optax.chain(
        optax.clip_by_global_norm(cfg.max_grad_norm), optax.adamw(cfg.learning_rate, b2=0.99)
    )


def init(cfg: RLConfig, base_params) -> RLState:
    """The policy starts at the base model, which is also the KL reference."""
    # Copies: the state is donated to the jitted update, the caller's base must survive it.
    params = jax.tree.map(jnp.array, base_params)
    ref_params = jax.tree.map(jnp.array, base_params)
    return RLState(params, make_optimizer(cfg).init(params), ref_params, jnp.zeros((), jnp.int32))


def loss_fn(params, cfg: RLConfig, model_cfg: TransformerConfig, mb: dict):
    """The clipped policy-gradient loss of one minibatch (+ KL in loss, - entropy bonus).

    Args:
      params: policy parameters.
      cfg: RL config.
      model_cfg: transformer config.
      mb: dict of `[M, ...]` arrays: prompt/completion tokens and masks, `mask` (completion mask
        times group validity), `old_logp`, `ref_logp` `[M, A]` and `adv` `[M]`.

    Returns:
      (scalar loss, metrics).
    """
    logp, entropy = completion_log_probs(
        params,
        model_cfg,
        mb["prompt_tokens"],
        mb["prompt_mask"],
        mb["completion_tokens"],
        mb["completion_mask"],
    )
    mask = mb["mask"]
    adv = mb["adv"]
    if cfg.sequence_ratio:
        per_seq = policy_gradient.gspo(
            logp, mb["old_logp"], adv, mask, eps_low=cfg.eps_low, eps_high=cfg.eps_high
        )
        policy_loss = reduce.masked_mean(per_seq, jnp.max(mask, axis=1))
        log_ratio = policy_gradient.gspo_log_ratio(logp, mb["old_logp"], mask)
        clipped = (log_ratio > jnp.log1p(cfg.eps_high)) | (log_ratio < jnp.log1p(-cfg.eps_low))
        clip_frac = reduce.masked_mean(clipped.astype(jnp.float32), jnp.max(mask, axis=1))
    else:
        adv_t = jnp.broadcast_to(adv[:, None], logp.shape)
        per_token = policy_gradient.ppo_clip(
            logp, mb["old_logp"], adv_t, eps_low=cfg.eps_low, eps_high=cfg.eps_high
        )
        policy_loss = cfg.aggregate_fn(per_token, mask)
        ratio = jnp.exp(logp - mb["old_logp"])
        clipped = (ratio > 1 + cfg.eps_high) | (ratio < 1 - cfg.eps_low)
        clip_frac = reduce.masked_mean(clipped.astype(jnp.float32), mask)
    entropy_mean = cfg.aggregate_fn(entropy, mask)
    loss = policy_loss - cfg.entropy_coef * entropy_mean
    metrics = {"loss/policy": policy_loss, "entropy": entropy_mean, "clip_frac": clip_frac}
    if cfg.kl_fn is not None:
        kl = cfg.kl_fn(logp, mb["ref_logp"]) * mask
        metrics["kl"] = reduce.masked_mean(kl, mask)
        if not cfg.kl_in_reward and cfg.kl_coef > 0:
            loss = loss + cfg.kl_coef * cfg.aggregate_fn(kl, mask)
    metrics["loss/total"] = loss
    return loss, metrics


def update(
    state: RLState,
    batch: RolloutBatch,
    key: jax.Array,
    *,
    cfg: RLConfig,
    model_cfg: TransformerConfig,
):
    """Old/reference log-probs, advantages, then epochs x minibatches of AdamW steps.

    Returns:
      (new state, flat dict of scalar metrics averaged over the minibatch steps).
    """
    chex.assert_rank([batch.rewards, batch.group_mask], 2)
    num_groups, group_size = batch.rewards.shape
    num_rows = num_groups * group_size
    if num_rows % cfg.num_minibatches:
        raise ValueError(
            f"RLConfig.num_minibatches={cfg.num_minibatches} must divide B*G={num_rows}"
        )
    seqs = (batch.prompt_tokens, batch.prompt_mask, batch.completion_tokens, batch.completion_mask)
    old_logp, _ = completion_log_probs(state.params, model_cfg, *seqs)
    row_valid = batch.group_mask.reshape(num_rows).astype(jnp.float32)
    mask = batch.completion_mask.astype(jnp.float32) * row_valid[:, None]
    rewards = batch.rewards
    if cfg.kl_fn is not None:
        ref_logp, _ = completion_log_probs(state.ref_params, model_cfg, *seqs)
        if cfg.kl_in_reward and cfg.kl_coef > 0:
            token_rewards = kl_lib.kl_in_reward(
                rewards.reshape(num_rows), cfg.kl_fn(old_logp, ref_logp), mask, beta=cfg.kl_coef
            )
            rewards = jnp.sum(token_rewards, axis=1).reshape(num_groups, group_size)
    else:
        ref_logp = jnp.zeros_like(old_logp)
    adv = cfg.advantage_fn(rewards, batch.group_mask).reshape(num_rows)
    data = {  # jnp arrays: the scan indexes them with traced permutations
        "prompt_tokens": batch.prompt_tokens,
        "prompt_mask": batch.prompt_mask,
        "completion_tokens": batch.completion_tokens,
        "completion_mask": batch.completion_mask,
        "mask": mask,
        "old_logp": old_logp,
        "ref_logp": ref_logp,
        "adv": adv,
    }
    data = jax.tree.map(jnp.asarray, data)
    optimizer = make_optimizer(cfg)
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    key = jax.random.fold_in(key, state.step)

    def minibatch_step(carry, index):
        params, opt_state = carry
        mb = jax.tree.map(lambda x: x[index], data)
        (_, metrics), grads = grad_fn(params, cfg, model_cfg, mb)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return (optax.apply_updates(params, updates), opt_state), metrics

    perms = jnp.stack(
        [jax.random.permutation(k, num_rows) for k in jax.random.split(key, cfg.num_epochs)]
    ).reshape(cfg.num_epochs * cfg.num_minibatches, num_rows // cfg.num_minibatches)
    (params, opt_state), metrics = jax.lax.scan(
        minibatch_step, (state.params, state.opt_state), perms
    )
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["reward/mean"] = reduce.masked_mean(batch.rewards, batch.group_mask)
    metrics["adv/abs_mean"] = reduce.masked_mean(jnp.abs(adv), row_valid)
    metrics["groups/kept_frac"] = jnp.mean(batch.group_mask.max(axis=1).astype(jnp.float32))
    return RLState(params, opt_state, state.ref_params, state.step + 1), metrics
