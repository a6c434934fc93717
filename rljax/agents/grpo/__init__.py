"""RLVR for the GRPO family as one learner: a whole step under one `jit`, choices as leaves.

One `update(config, data, state)` samples G completions for each of B prompts with the KV cache,
scores them on device (`rljax.lm.tasks.device_reward`; a host verifier through `jax.pure_callback`
where a task needs a parser), turns rewards into advantages and runs epochs × minibatches of
AdamW steps. Every numeric hyperparameter and every discrete choice (advantage estimator,
aggregation, policy loss, divergence and its placement, dynamic sampling, epochs, minibatches)
is a leaf of `Hparams`, so `jax.vmap` over learners trains a grid of presets × seeds in one
compiled program (`rljax.agents.grpo.presets` names the choices; `rljax.agents.grpo.objective`
computes them).

Static shapes everywhere: dynamic sampling draws `oversample × B` groups and keeps the first B
whose rewards vary (and, for balanced filtering, whose pass rate p̂ has |p̂ − ½| ≤ δ), refilling
with masked-out groups; learners without it keep the first B. Which problems are drawn is a
choice too (`rljax.agents.grpo.curriculum`): uniformly over the split, or a level by a bandit over
levels
(SEC, UCB) that the learner's state carries and updates with the mean |A| of its groups, then a
problem uniformly within the level.
Minibatches are whole groups (PACS needs its group-mates). Minibatch counts that differ between
learners share one schedule of `max_minibatches` micro-batches per epoch: a learner with M
minibatches accumulates `max_minibatches / M` micro-batch gradients per AdamW step, with
aggregation normalizers taken over its whole minibatch, so it computes what M minibatches would.
Epochs beyond a learner's `num_epochs` are skipped the same way.

Keys: each learner has a root key (`init`); step s uses `fold_in(root, s)` split once per
purpose (prompts, sampling, reference samples, minibatch order). Group g's problem uses
`fold_in(prompt key, g)`: directly for a uniform draw, split in two (level, problem) by curricula.
Evaluation uses its own key, shared by all learners: `fold_in(learner.eval_key(eval_seed), step)`,
on a branch no training key reaches (`rljax.agents.learner`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rljax import checks
from rljax.agents import learner
from rljax.agents.grpo import curriculum, groups, objective, presets
from rljax.lm.model import lora
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.logprobs import completion_log_probs, completion_token_stats
from rljax.lm.tasks import device_reward


@dataclasses.dataclass(frozen=True)
class Config:
    """Static settings shared by every learner of a population."""

    model: TransformerConfig  # the policy's architecture (the base's)
    reward_kind: str  # device_reward.KINDS[task]
    completion_length: int  # A, sampled tokens per completion
    prompts_per_step: int = 32  # B, groups per update
    group_size: int = 8  # G, samples per prompt
    oversample: int = 1  # groups drawn per kept group (2 when any learner samples dynamically)
    max_epochs: int = 2  # E_max: the largest num_epochs of the population
    max_minibatches: int = 2  # M_max: a multiple of every learner's num_minibatches
    reference_samples: int = 0  # base samples per prompt for forward-KL / JS (0: none needed)
    # The policy losses the population's learners use (`presets.POLICY_LOSSES` names): the step
    # computes only these, so a population of PPO-clip learners does not trace the other nine.
    policy_losses: tuple[str, ...] = presets.POLICY_LOSSES
    temperature: float = 1.0  # sampling temperature (training and quick evaluation)
    top_p: float = 1.0  # nucleus mass
    format_weight: float = 0.0  # reward weight of a well-formed answer
    max_grad_norm: float = 1.0  # global-norm gradient clipping
    eval_seed: int = 0  # the run's seed: evaluations use learner.eval_key(eval_seed)'s branch
    eval_levels: int = 0  # also report the quick pass@1 of levels 1..eval_levels
    num_levels: int = 0  # K: levels 1..K the curricula choose among (0: every learner uniform)
    host_scorer: Callable | None = None  # device_reward.host_scorer for reward_kind "host"
    # None: full-parameter learners; else params are adapters over TaskData's shared base
    lora: lora.LoraConfig | None = None
    log_problems: int = 0  # n: also report the training accuracy of problems 0..n-1 per step
    # A sharding whose spec splits an array's leading axis (the B × G rows) over mesh axes:
    # the step constrains its prompts, completions and micro-batches to it, so each device runs
    # its share of the rows (`rljax.train.lm_sharding.jit_learner_update`). None: XLA's propagation.
    row_sharding: Any = None
    # A `rljax.lm.agentic.env.TextEnv` (with `success(state)` and `metrics(state)`): each sample
    # is an episode of several turns whose observations are context, not trained;
    # completion_length must be its `spec.episode_length()`. None: single-turn completions.
    env: Any = None


class Hparams(NamedTuple):
    """Per-learner values: floats and integer choice codes (`rljax.agents.grpo.presets`)."""

    learning_rate: jax.Array
    weight_decay: jax.Array  # AdamW's decoupled weight decay
    eps_low: jax.Array
    eps_high: jax.Array
    kl_coef: jax.Array
    entropy_coef: jax.Array
    pacs_beta: jax.Array
    rover_rho: jax.Array
    advantage: jax.Array
    aggregation: jax.Array
    policy_loss: jax.Array
    divergence: jax.Array
    placement: jax.Array
    dynamic_sampling: jax.Array
    num_epochs: jax.Array
    num_minibatches: jax.Array
    reward: jax.Array  # int32 code in presets.REWARDS (rljax.agents.grpo.reward_signal)
    curriculum: jax.Array  # int32 code in presets.CURRICULA (rljax.agents.grpo.curriculum)
    curriculum_temp: jax.Array  # τ of softmax(value / τ) over levels
    curriculum_lr: jax.Array  # α of the TD(0) update of the level values
    ucb_c: jax.Array  # c of UCB's exploration bonus
    balance_delta: jax.Array  # δ: dynamic sampling keeps groups with |p̂ − ½| ≤ δ too
    delta: jax.Array  # two-sided clip: cap δ on the unclipped ratio (0: none; TRL's `delta`)
    mask_truncated_completions: jax.Array  # 1: completions without a stop token do not train
    sapo_tau_pos: jax.Array  # SAPO's gate temperature where A > 0
    sapo_tau_neg: jax.Array  # ... and where A <= 0
    vespo_k_pos: jax.Array  # VESPO's Gamma weight: power k and decay λ where A >= 0
    vespo_lambda_pos: jax.Array
    vespo_k_neg: jax.Array  # ... and where A < 0
    vespo_lambda_neg: jax.Array


INT_FIELDS = (
    "advantage", "aggregation", "policy_loss", "divergence", "placement", "dynamic_sampling",
    "num_epochs", "num_minibatches", "reward", "curriculum", "mask_truncated_completions",
)  # fmt: skip


def make_hparams(values: dict) -> Hparams:
    """One learner's `Hparams` from `presets.hparam_values` output (scalars)."""
    return Hparams(
        **{
            f: jnp.asarray(values[f], jnp.int32 if f in INT_FIELDS else jnp.float32)
            for f in Hparams._fields
        }
    )


# The float fields' ranges (the choice codes are checked by name in
# rljax.agents.grpo.presets.check).
HPARAM_RULES = presets.HPARAM_RULES


def env_steps_per_update(config: Config) -> int:
    """Completions one update samples and trains on: B prompts × G samples."""
    return config.prompts_per_step * config.group_size


class TaskData(NamedTuple):
    """What a learner trains on (the LM "environment"): shared by all learners, not vmapped."""

    base_params: dict  # the SFT base: initial policy and KL / divergence reference
    train: device_reward.ProblemTable  # prompts the steps draw from
    eval: device_reward.ProblemTable  # the quick held-out evaluation set


class State(NamedTuple):
    params: dict  # the policy's parameters; with config.lora only its adapters
    opt_state: optax.OptState
    key: jax.Array  # the learner's root key; step s uses fold_in(key, s)
    step: jax.Array  # updates done (int32)
    hparams: Hparams
    curriculum: curriculum.CurriculumState  # level values and counts [K] (read by sec / ucb)


def validate(config: Config) -> None:
    """Checks the static config; raises ValueError naming the field, value and allowed range."""
    for name in ("completion_length", "prompts_per_step", "oversample", "max_epochs"):
        checks.check_int(name, getattr(config, name), low=1)
    checks.check_int("max_minibatches", config.max_minibatches, low=1)
    checks.check_int("group_size", config.group_size, low=2)
    if config.prompts_per_step % config.max_minibatches:
        raise ValueError(
            f"prompts_per_step={config.prompts_per_step} is not divisible by the minibatch "
            f"schedule {config.max_minibatches}; allowed: a multiple of every num_minibatches"
        )
    if config.reward_kind not in set(device_reward.KINDS.values()):
        raise ValueError(f"reward_kind={config.reward_kind!r}; valid: {set(device_reward.KINDS)}")
    if config.reward_kind == "host" and config.host_scorer is None:
        raise ValueError("reward_kind='host' needs config.host_scorer")
    if not config.temperature > 0:
        raise ValueError(f"temperature={config.temperature!r} is invalid; allowed: > 0")
    if not 0 < config.top_p <= 1:
        raise ValueError(f"top_p={config.top_p!r} is invalid; allowed: in (0, 1]")
    for name in ("num_levels", "log_problems"):
        checks.check_int(name, getattr(config, name), low=0)
    if config.format_weight < 0 or config.reference_samples < 0:
        raise ValueError("format_weight and reference_samples must be >= 0")
    if config.env is not None:
        length = config.env.spec.episode_length()
        if config.completion_length != length:
            raise ValueError(
                f"completion_length={config.completion_length} with an environment; allowed: its "
                f"episode length {length} (max_turns x action_tokens + (max_turns - 1) x "
                "observation_tokens)"
            )
        if config.reference_samples:
            raise ValueError(
                "reference_samples > 0 with an environment: the sample divergences (forward KL, "
                "JS) are defined on single-turn completions; allowed: 0"
            )
    unknown = [n for n in config.policy_losses if n not in presets.POLICY_LOSSES]
    if unknown or not config.policy_losses:
        raise ValueError(
            f"policy_losses={config.policy_losses!r}; allowed: a non-empty tuple of "
            f"{', '.join(presets.POLICY_LOSSES)}"
        )


def used_policy_losses(values: list[dict]) -> tuple[str, ...]:
    """`Config.policy_losses` of a population from its learners' resolved preset values, in
    `presets.POLICY_LOSSES` order."""
    used = {v["policy_loss"] for v in values}
    return tuple(n for n in presets.POLICY_LOSSES if n in used)


def _optimizer(config: Config) -> optax.GradientTransformation:
    """AdamW without its step size and weight decay: both are per-learner leaves, applied as
    p ← p − lr·(u + wd·p) (`update`), which is `add_decayed_weights` then the step size."""
    return optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.scale_by_adam(b2=0.99)
    )


def init(config: Config, data: TaskData, key: jax.Array, hparams: Hparams) -> State:
    """A learner starting at the base model with root key `key`."""
    params = jax.tree.map(jnp.array, data.base_params)  # a copy: states are donated
    if config.lora is not None:  # B = 0: the adapted policy starts equal to the base
        params = lora.init_adapters(data.base_params, config.lora)
    return State(
        params,
        _optimizer(config).init(params),
        key,
        jnp.zeros((), jnp.int32),
        hparams,
        # one unused slot without levels: checkpoints cannot hold zero-size arrays
        curriculum.init(max(config.num_levels, 1)),
    )


def policy(config: Config, data: TaskData, params):
    """What `model.forward` runs for a learner's `params` (with LoRA: the base + adapters)."""
    return lora.with_base(config.lora, data.base_params, params)


def act(config: Config, data: TaskData, state: State, obs, key: jax.Array, *, greedy=False):
    """One completion per prompt row of ``obs = (prompt_tokens [R, P], prompt_mask [R, P])`` by
    the learner's policy (with LoRA: the base + its adapters) at the config's temperature /
    top-p, or by greedy decoding: a ``rljax.lm.model.sampling`` completion (``.tokens [R, A]``)."""
    cfg = dataclasses.replace(config, temperature=0.0) if greedy else config
    return groups.act(cfg, policy(config, data, state.params), *obs, key)


def _choice(hp: Hparams) -> objective.Choice:
    return objective.Choice(**{f: getattr(hp, f) for f in objective.Choice._fields})


def _rollout(config: Config, data: TaskData, state: State, key_prompts, key_sample, params=None):
    """The step's B kept groups (`rljax.agents.grpo.groups.draw`), sampled with `params` (None:
    own)."""
    hp, bandit = state.hparams, state.curriculum
    params = policy(config, data, state.params if params is None else params)
    return groups.draw(config, data.train, params, hp, bandit, key_prompts, key_sample)


def _has_observations(config: Config) -> bool:
    """Whether the episodes can hold environment tokens (several turns with observations)."""
    spec = None if config.env is None else config.env.spec
    return spec is not None and spec.max_turns > 1 and spec.observation_tokens > 0


def loss_fn(params, config: Config, hp: Hparams, batch: groups.Batch, refs, norms, base=None):
    """The micro-batch's contribution to its minibatch's loss. Returns (loss, metrics).

    `refs`: the micro-batch's `groups.RefSamples` (None when `config.reference_samples` is 0).
    `base`: with `config.lora`, the frozen base the adapters `params` apply to (no gradient).
    """
    params = lora.with_base(config.lora, base, params)
    logp, entropy, mean_log_probs = completion_token_stats(
        params,
        config.model,
        batch.prompt_tokens,
        batch.prompt_mask,
        batch.tokens,
        batch.completion_mask,
        config.group_size,  # micro-batches are whole groups: each prompt runs once
    )
    if _has_observations(config):  # observations: context only, no log-prob reaches a loss
        policy_tokens = batch.mask > 0
        logp, entropy, mean_log_probs = (
            jnp.where(policy_tokens, x, 0.0) for x in (logp, entropy, mean_log_probs)
        )
    choice = _choice(hp)
    mb = objective.MicroBatch(
        logp,
        entropy,
        mean_log_probs,
        batch.old_mean_log_probs,
        batch.old_logp,
        batch.ref_logp,
        batch.mask,
        batch.adv,
        batch.correct,
        batch.correct_rate,
        config.group_size,
    )
    max_len = float(config.completion_length)
    policy, clip_share = objective.policy_loss(
        choice, mb, norms, max_len, used=config.policy_losses
    )
    ent_term, kl_term, mean_entropy, mean_kl = objective.regularizers(choice, mb, norms, max_len)
    loss = policy - hp.entropy_coef * ent_term + hp.kl_coef * kl_term
    metrics = {"loss/policy": policy, "entropy": mean_entropy, "kl/k3": mean_kl}
    if config.reference_samples:
        ref_logp_theta, _ = completion_log_probs(
            params,
            config.model,
            refs.prompt_tokens,
            refs.prompt_mask,
            refs.tokens,
            refs.completion_mask,
            config.reference_samples,
        )
        divergence = objective.sample_divergence(
            choice, jnp.sum(ref_logp_theta, axis=1), refs.seq_logp, norms
        )
        loss = loss + hp.kl_coef * divergence
        metrics["loss/divergence"] = divergence
    metrics["loss/total"] = loss
    metrics["clip_frac"] = clip_share
    return loss, metrics


def update(config: Config, data: TaskData, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One RLVR step: sample, score, advantages, epochs × minibatches of AdamW. Metrics: scalars."""
    return step(config, data, state)


def step(
    config: Config, data: TaskData, state: State, sampler=None, behaviour=None, sampler_model=None
):
    """`update`, sampled with `sampler` (None: the learner's own parameters) run by
    `sampler_model` (None: `config.model`; e.g. the same model in bf16) and with
    `behaviour(batch) -> (batch, metrics)` applied before training (`rljax.agents.stale_grpo`)."""
    hp, choice = state.hparams, _choice(state.hparams)
    B, G = config.prompts_per_step, config.group_size
    k_prompts, k_sample, k_ref, k_order = jax.random.split(
        jax.random.fold_in(state.key, state.step), 4
    )
    sampling = config if sampler_model is None else dataclasses.replace(config, model=sampler_model)
    ro = _rollout(sampling, data, state, k_prompts, k_sample, sampler)
    seqs = groups.split_rows(
        config, (ro.prompt_tokens, ro.prompt_mask, ro.tokens, ro.completion_mask)
    )
    current = policy(config, data, state.params)
    old_logp, _, old_mean_log_probs = completion_token_stats(current, config.model, *seqs, G)
    ref_logp, _ = completion_log_probs(data.base_params, config.model, *seqs, G)
    penalty = objective.kl_reward_penalty(choice, old_logp, ref_logp, ro.mask)
    group_mask = jnp.broadcast_to(ro.group_valid[:, None], (B, G))
    shaped = ro.rewards - penalty.reshape(B, G)
    adv = objective.advantages(choice, shaped, group_mask, 1.0 + config.format_weight)
    correct = ro.correct.reshape(B, G)
    rate = jnp.sum(correct * group_mask, 1) / jnp.maximum(jnp.sum(group_mask, 1), 1.0)
    # mask_truncated_completions: truncated rows leave the loss mask, not the sequence count
    eos = config.model.eos_ids
    kept = objective.loss_rows(hp.mask_truncated_completions, ro.tokens, ro.completion_mask, eos)
    loss_mask = ro.mask * kept[:, None]
    batch = groups.Batch(
        *seqs, loss_mask, old_logp, old_mean_log_probs, ref_logp, adv.reshape(-1), ro.correct,
        jnp.repeat(rate, G),
    )  # fmt: skip
    batch, extra = (batch, {}) if behaviour is None else behaviour(batch)
    refs, R = None, config.reference_samples
    if R:  # the base's own samples, for forward KL / JS
        rows = jnp.repeat(ro.problem, R)
        ref_prompt = (data.train.prompt_tokens[rows], data.train.prompt_mask[rows])
        ref_out = groups.act(config, data.base_params, *ref_prompt, k_ref)
        base_logp, _ = completion_log_probs(
            data.base_params, config.model, *ref_prompt, ref_out.tokens, ref_out.mask, R
        )
        refs = groups.RefSamples(
            *ref_prompt, ref_out.tokens, ref_out.mask, jnp.sum(base_logp, axis=1)
        )
    # rows, groups, norms, flags
    schedule = objective.micro_schedule(config, hp, loss_mask, k_order, seq_mask=ro.mask)
    optimizer = _optimizer(config)
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def micro_step(carry, x):
        params, opt_state, acc = carry
        row, group, norm, is_active, is_apply = x
        micro = groups.split_rows(config, jax.tree.map(lambda v: v[row], batch))
        micro_refs = None
        if refs is not None:
            ref_rows = (group[:, None] * R + jnp.arange(R)).reshape(-1)
            micro_refs = jax.tree.map(lambda v: v[ref_rows], refs)
        base = data.base_params  # with LoRA the frozen base (no gradient), else unused
        (_, metrics), grads = grad_fn(params, config, hp, micro, micro_refs, norm, base)
        acc = jax.tree.map(lambda a, g: a + jnp.where(is_active, g, 0.0), acc, grads)
        updates, new_opt = optimizer.update(acc, opt_state, params)
        new_params = jax.tree.map(
            lambda p, u: p - hp.learning_rate * (u + hp.weight_decay * p), params, updates
        )
        params = jax.tree.map(lambda n, o: jnp.where(is_apply, n, o), new_params, params)
        opt_state = jax.tree.map(lambda n, o: jnp.where(is_apply, n, o), new_opt, opt_state)
        metrics = {k: jnp.where(is_active, v, 0.0) for k, v in metrics.items()}
        metrics["grad_norm"] = jnp.where(is_apply, optax.tree.norm(acc), 0.0)
        acc = jax.tree.map(lambda a: jnp.where(is_apply, 0.0, a), acc)
        return (params, opt_state, acc), metrics

    zeros = jax.tree.map(jnp.zeros_like, state.params)
    (params, opt_state, _), metrics = jax.lax.scan(
        micro_step, (state.params, state.opt_state, zeros), schedule
    )
    num_updates = (hp.num_epochs * hp.num_minibatches).astype(jnp.float32)
    metrics = {k: jnp.sum(v) / num_updates for k, v in metrics.items()}
    valid = jnp.repeat(ro.group_valid, G)
    metrics.update({
        "reward/mean": jnp.mean(ro.rewards),
        "correct/mean": jnp.mean(ro.verified),
        "adv/abs_mean": jnp.sum(jnp.abs(batch.adv) * valid) / jnp.maximum(valid.sum(), 1),
        "groups/kept_frac": jnp.mean(ro.group_valid),
        "groups/zero_var_frac": jnp.mean(jnp.std(ro.rewards, axis=1) == 0),
        "groups/zero_adv_frac": groups.zero_advantage_share(
            batch.adv.reshape(-1, G), ro.group_valid
        ),
        "response/length": jnp.mean(jnp.sum(ro.completion_mask, axis=1).astype(jnp.float32)),
        "tokens/generated": ro.generated, **ro.metrics, **extra,
    })  # fmt: skip
    if config.log_problems:  # per-problem training accuracy (1-shot RLVR's example selection)
        metrics.update(groups.problem_accuracy(ro.problem, ro.verified, config.log_problems))
    bandit = state.curriculum
    if config.num_levels:  # every learner tracks its levels; only sec / ucb draw by them
        # The bandit's reward for a trained group: its mean |A| (0 for a dropped group).
        group_abs = jnp.mean(jnp.abs(adv), axis=1) * ro.group_valid
        bandit = curriculum.update(bandit, ro.level, group_abs, learning_rate=hp.curriculum_lr)
        for k in range(config.num_levels):
            metrics[f"curriculum/level{k + 1}"] = jnp.mean(ro.level == k)
            metrics[f"curriculum/value{k + 1}"] = bandit.value[k]
    new_state = State(params, opt_state, state.key, state.step + 1, hp, bandit)
    return new_state, metrics


def evaluate(config: Config, data: TaskData, state: State, key: jax.Array) -> dict:
    """Held-out pass@1 and mean reward: one completion per problem of ``data.eval`` at the
    config's temperature (the quick evaluation ``train_chunk`` also reports)."""
    reward, correct = _held_out(config, data, policy(config, data, state.params), key)
    return {"eval/pass@1": jnp.mean(correct), "eval/reward": jnp.mean(reward)}


def _held_out(config: Config, data: TaskData, params, key: jax.Array):
    rows = jnp.arange(data.eval.level.shape[0])
    _, reward, correct = groups.sample_and_score(config, params, data.eval, rows, key)
    return reward, correct.astype(jnp.float32)


def _eval_correct(config: Config, data: TaskData, params, step: jax.Array) -> jax.Array:
    key = jax.random.fold_in(learner.eval_key(config.eval_seed), step)  # never a training key
    return _held_out(config, data, params, key)[1]


def train_chunk(
    config: Config, data: TaskData, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """`num_updates` steps as a `lax.scan`, then the quick evaluation; metrics `[num_updates]`.

    `"eval/pass@1"` is NaN except at the chunk's last update.
    """
    state, metrics = learner.train_chunk(update, config, data, state, num_updates)
    correct = _eval_correct(config, data, policy(config, data, state.params), state.step)
    last = lambda x: jnp.full((num_updates,), jnp.nan).at[-1].set(x)  # noqa: E731
    metrics["eval/pass@1"] = last(jnp.mean(correct))
    for level in range(1, config.eval_levels + 1):  # NaN where the set has no such level
        here = (data.eval.level == level).astype(jnp.float32)
        metrics[f"eval/pass@1/level{level}"] = last(jnp.sum(correct * here) / jnp.sum(here))
    return state, metrics
