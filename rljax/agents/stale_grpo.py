"""Stale RLVR: the GRPO learner trained on completions its sampler drew k updates ago.

An asynchronous pipeline (a sampler that runs ahead of the learner) feeds update t with
completions sampled by the parameters of update t − k. Here the lag is deterministic and lives
inside the one compiled step, with no threads: the state carries a ring of the last L + 1
parameter snapshots (slot s mod (L + 1) holds the parameters before update s), and update t
samples its batch with the snapshot of update max(t − k, 0) (the first k batches come from the
initial policy, as a pipeline that starts full). With `Config.sampler_dtype="bfloat16"` the
sampler runs those parameters in bf16 while the learner trains in float32 (an inference engine's
precision mismatch, there at k = 0 too). Then it trains the current parameters on them
with one of four corrections of the sampler/learner mismatch, per token, with μ the sampler's
probability and π_prox the learner's before the update (`rljax.agents.grpo`'s π_old):

* ``none``: PPO's clipped ratio π_θ/π_prox, the lag ignored;
* ``tis``: truncated importance sampling, the token's loss weighted by sg(min(π_prox/μ, C));
* ``mis``: masked importance sampling, weighted by sg(π_prox/μ) where π_prox/μ <= C and 0 above;
* ``cispo``: CISPO's loss with the ratio taken against the sampler, −sg(min(π_θ/μ, 1 + ε_high))
  · A · log π_θ (its learner's policy loss must be ``cispo``).

The weights multiply the token mask the aggregation reads, so with ``token_mean`` (every preset
these studies use) the loss is Σ w ℓ / Σ mask: the token-level IS estimate. The lag k, the
correction and the cap C are per-learner leaves, so one population trains every (k, correction)
pair in one program. Metrics add ``stale/lag`` (t minus the sampler's update: min(t, k)),
``stale/sampler_norm`` and ``stale/params_norm`` (the global norms of the sampling parameters
and of the learner's before the update: the first at t is the second at t − k), and the mismatch's
``stale/abs_log_ratio`` (mean |log π_prox/μ|) and ``stale/over_cap`` (share of tokens with
π_prox/μ > C).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rljax import checks
from rljax.agents import grpo, learner
from rljax.agents.grpo import presets
from rljax.lm.model.decoder import DTYPES
from rljax.lm.model.logprobs import completion_token_stats

CORRECTIONS = ("none", "tis", "mis", "cispo")
TaskData = grpo.TaskData


@dataclasses.dataclass(frozen=True)
class Config:
    """The GRPO learner's static config, the largest lag L of the population and the sampler's
    precision."""

    grpo: grpo.Config
    max_lag: int = 8  # L: the ring holds L + 1 snapshots
    # The sampler's `TransformerConfig.dtype` ("": the learner's). "bfloat16" beside a float32
    # learner is an inference engine's precision mismatch: μ is the bf16 model's distribution.
    sampler_dtype: str = ""


class Hparams(NamedTuple):
    grpo: grpo.Hparams  # the learner's own values (`rljax.agents.grpo.presets`)
    lag: jax.Array  # int32 k in [0, L]
    correction: jax.Array  # int32 code in CORRECTIONS
    is_cap: jax.Array  # C of TIS and MIS


HPARAM_RULES = {
    "is_cap": (lambda v: 1 <= v < float("inf"), "a finite >= 1"),
}


class State(NamedTuple):
    inner: grpo.State
    history: dict  # the parameters' ring [L + 1, ...]
    hparams: Hparams

    @property
    def params(self):
        return self.inner.params


def make_hparams(values: dict, lag: int, correction: str, is_cap: float = 2.0) -> Hparams:
    """One learner's `Hparams` from resolved preset fields and its lag / correction / cap."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction={correction!r} is unknown; valid: {', '.join(CORRECTIONS)}")
    if (correction == "cispo") != (values["policy_loss"] == "cispo"):
        raise ValueError(
            f"correction={correction!r} with rl.policy_loss={values['policy_loss']!r}; allowed: "
            "correction 'cispo' exactly with policy_loss 'cispo'"
        )
    checks.check_int("lag", lag, low=0)
    if not 1 <= is_cap < float("inf"):
        raise ValueError(f"is_cap={is_cap!r} is invalid; allowed: {HPARAM_RULES['is_cap'][1]}")
    return Hparams(
        grpo.make_hparams(presets.hparam_values(values)),
        jnp.asarray(lag, jnp.int32),
        jnp.asarray(CORRECTIONS.index(correction), jnp.int32),
        jnp.asarray(is_cap, jnp.float32),
    )


def validate(config: Config) -> None:
    grpo.validate(config.grpo)
    checks.check_int("max_lag", config.max_lag, low=0)
    if config.sampler_dtype not in ("", *DTYPES):
        raise ValueError(
            f"sampler_dtype={config.sampler_dtype!r} is unknown; valid: '' (the learner's), "
            + ", ".join(DTYPES)
        )


def sampler_model(config: Config):
    """The `TransformerConfig` that samples (and scores μ): the learner's, in `sampler_dtype`."""
    model = config.grpo.model
    return dataclasses.replace(model, dtype=config.sampler_dtype or model.dtype)


def env_steps_per_update(config: Config) -> int:
    return grpo.env_steps_per_update(config.grpo)


def init(config: Config, data: TaskData, key: jax.Array, hparams: Hparams) -> State:
    inner = grpo.init(config.grpo, data, key, hparams.grpo)
    ring = jax.tree.map(lambda p: jnp.repeat(p[None], config.max_lag + 1, axis=0), inner.params)
    return State(inner, ring, hparams)


def act(config: Config, data: TaskData, state: State, obs, key: jax.Array, *, greedy=False):
    """GRPO's ``act`` with the current parameters (not the stale sampler's)."""
    return grpo.act(config.grpo, data, state.inner, obs, key, greedy=greedy)


def evaluate(config: Config, data: TaskData, state: State, key: jax.Array) -> dict:
    """GRPO's ``evaluate`` of the current parameters."""
    return grpo.evaluate(config.grpo, data, state.inner, key)


def correct(hp: Hparams, batch, mu_logp: jax.Array):
    """The batch with the chosen correction applied, and the mismatch's metrics.

    `batch`: `rljax.agents.grpo.groups.Batch` whose `old_logp` is π_prox; `mu_logp [N, A]`: log μ.
    """
    log_rho = jnp.clip(batch.old_logp - mu_logp, -20.0, 20.0)  # log π_prox/μ
    rho = jnp.exp(log_rho)
    code = hp.correction
    weight = jnp.where(code == CORRECTIONS.index("tis"), jnp.minimum(rho, hp.is_cap), 1.0)
    weight = jnp.where(
        code == CORRECTIONS.index("mis"), jnp.where(rho <= hp.is_cap, rho, 0.0), weight
    )
    is_cispo = code == CORRECTIONS.index("cispo")
    mask = batch.completion_mask.astype(rho.dtype) * (batch.mask > 0)
    tokens = jnp.maximum(jnp.sum(mask), 1.0)
    metrics = {
        "stale/abs_log_ratio": jnp.sum(jnp.abs(log_rho) * mask) / tokens,
        "stale/over_cap": jnp.sum((rho > hp.is_cap) * mask) / tokens,
    }
    fixed = batch._replace(
        mask=batch.mask * jax.lax.stop_gradient(weight),
        old_logp=jnp.where(is_cispo, mu_logp, batch.old_logp),
    )
    return fixed, metrics


def update(config: Config, data: TaskData, state: State) -> tuple[State, dict[str, jax.Array]]:
    """Update t: sample with the snapshot of update max(t − k, 0), correct, train (GRPO)."""
    slots = config.max_lag + 1
    t = state.inner.step
    history = jax.tree.map(lambda h, p: h.at[t % slots].set(p), state.history, state.inner.params)
    source = jnp.maximum(t - state.hparams.lag, 0)
    sampler = jax.tree.map(lambda h: h[source % slots], history)
    cfg, model = config.grpo, sampler_model(config)

    def behaviour(batch):
        seqs = (batch.prompt_tokens, batch.prompt_mask, batch.tokens, batch.completion_mask)
        mu_params = grpo.policy(cfg, data, sampler)  # with LoRA: the base + the adapters
        mu_logp, _, _ = completion_token_stats(mu_params, model, *seqs, cfg.group_size)
        return correct(state.hparams, batch, mu_logp)

    inner, metrics = grpo.step(
        cfg, data, state.inner, sampler=sampler, behaviour=behaviour, sampler_model=model
    )
    metrics["stale/lag"] = (t - source).astype(jnp.float32)
    metrics["stale/sampler_norm"] = optax.tree.norm(sampler)
    metrics["stale/params_norm"] = optax.tree.norm(state.inner.params)  # before the update
    return State(inner, history, state.hparams), metrics


def train_chunk(
    config: Config, data: TaskData, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """`num_updates` stale steps as a `lax.scan`, then GRPO's quick held-out evaluation."""
    state, metrics = learner.train_chunk(update, config, data, state, num_updates)
    correct_ = grpo._eval_correct(config.grpo, data, state.inner.params, state.inner.step)
    metrics["eval/pass@1"] = jnp.full((num_updates,), jnp.nan).at[-1].set(jnp.mean(correct_))
    return state, metrics
