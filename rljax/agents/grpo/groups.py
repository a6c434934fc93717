"""The groups of one RLVR step: sample G completions per drawn problem, score them on device,
and keep B groups (dynamic sampling keeps those whose rewards vary, and balanced filtering those
whose pass rate lies near ½), all at static shapes so learners that sample differently share one
compiled program; and the typed batch the update trains on. `config` is the learner's
`rljax.agents.grpo.Config`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rljax.agents.grpo import curriculum, reward_signal
from rljax.lm.agentic.rollout import sample_episodes
from rljax.lm.model.sampling import sample
from rljax.lm.tasks import device_reward


class Sampled(NamedTuple):
    """One sample per row: a completion, or with `config.env` an episode (`[R, A]` slots after
    the prompt, `A = env.spec.episode_length()`)."""

    tokens: jax.Array  # [R, A]
    mask: jax.Array  # [R, A] 1 = a real token (attended)
    policy_mask: jax.Array  # [R, A] 1 = written by the policy (trained); = mask without env
    metrics: dict  # per-row episode statistics `[R]` (turns, the env's own); {} without env


def act(config, params, prompt_tokens, prompt_mask, key):
    """Samples one completion per prompt row (`[R, P]`) at the config's temperature / top-p."""
    return sample(
        params,
        config.model,
        prompt_tokens,
        prompt_mask,
        key,
        max_new_tokens=config.completion_length,
        temperature=config.temperature,
        top_p=config.top_p,
    )


def split_rows(config, tree):
    """`tree` with every array's leading (row) axis constrained to `config.row_sharding`
    (unchanged where that is None): each device computes with its share of the rows."""
    if getattr(config, "row_sharding", None) is None:
        return tree
    return jax.tree.map(
        lambda x: jax.lax.with_sharding_constraint(x, config.row_sharding) if x.ndim else x, tree
    )


def sample_and_score(config, params, table: device_reward.ProblemTable, rows, key):
    """One completion (or episode) per row of `table[rows]`, its reward and correctness.

    With `config.env` the policy acts over several turns in the environment
    (`rljax.lm.agentic.rollout.sample_episodes`): the reward is the episode's return and the
    correctness the environment's `success`. Returns (`Sampled`, reward `[R]`, correct `[R]`).
    """
    prompt = split_rows(config, (table.prompt_tokens[rows], table.prompt_mask[rows]))
    if config.env is not None:
        problems = jax.tree.map(lambda x: x[rows], table)
        ep = sample_episodes(
            params, config.model, config.env, *prompt, problems, key,
            temperature=config.temperature, top_p=config.top_p,
        )  # fmt: skip
        metrics = {"episode/turns": ep.turns.astype(jnp.float32), **config.env.metrics(ep.state)}
        out = Sampled(ep.tokens, ep.mask, ep.policy_mask, metrics)
        return out, ep.episode_return, config.env.success(ep.state)
    completions = act(config, params, *prompt, key)
    out = Sampled(completions.tokens, completions.mask, completions.mask, {})
    reward, correct = device_reward.score(
        config.reward_kind,
        out.tokens,
        table,
        rows,
        format_weight=config.format_weight,
        host=config.host_scorer,
    )
    return out, reward, correct


class Rollout(NamedTuple):
    """The B kept groups of one step, rows problem-major (`N = B × G`)."""

    prompt_tokens: jax.Array  # [N, P]
    prompt_mask: jax.Array
    tokens: jax.Array  # [N, A]
    completion_mask: jax.Array
    mask: jax.Array  # [N, A] float: completion mask × group validity
    rewards: jax.Array  # [B, G] the rewards trained on (rljax.agents.grpo.reward_signal)
    correct: jax.Array  # [N] float: the signal's labels (NFT / PACS targets)
    verified: jax.Array  # [N] float: the verifier's verdicts (metrics)
    group_valid: jax.Array  # [B] float
    problem: jax.Array  # [B] table rows
    level: jax.Array  # [B] int32 level index 0..K-1 of each kept group's problem
    generated: jax.Array  # float: completion tokens the learner sampled (all groups it needs)
    metrics: dict  # means of the kept rows' episode statistics ({} without an environment)


def draw(config, table: device_reward.ProblemTable, params, hp, bandit, key_prompts, key_sample):
    """Draws `oversample × B` groups of G completions from `table`, scores them, and keeps B.

    Args:
      config: the learner's static `rljax.agents.grpo.Config`.
      table: the training problems.
      params: the policy; hp: its `Hparams` (choice codes); bandit: its curriculum state.
      key_prompts, key_sample: the step's keys for the problems and the completions.

    Returns:
      The kept groups as a `Rollout` (rows problem-major).
    """
    B, G = config.prompts_per_step, config.group_size
    drawn = B * config.oversample
    num_problems = table.level.shape[0]
    # One key per group, so drawing more groups (dynamic sampling) keeps the first draws.
    group_keys = jax.vmap(lambda g: jax.random.fold_in(key_prompts, g))(jnp.arange(drawn))
    problem = jax.vmap(lambda k: jax.random.randint(k, (), 0, num_problems))(group_keys)
    if config.num_levels:  # curricula: a level by the learner's bandit, then a problem in it
        index = curriculum.level_index(table.level, config.num_levels)
        logits = curriculum.level_logits(
            hp.curriculum,
            bandit,
            index.count > 0,
            temperature=hp.curriculum_temp,
            ucb_c=hp.ucb_c,
        )
        chosen, _ = jax.vmap(lambda k: curriculum.draw(k, logits, index))(group_keys)
        problem = jnp.where(hp.curriculum == curriculum.UNIFORM, problem, chosen)
    rows = jnp.repeat(problem, G)
    prompt_tokens, prompt_mask = table.prompt_tokens[rows], table.prompt_mask[rows]
    out, reward, verified = sample_and_score(config, params, table, rows, key_sample)
    # The signal the learner trains on (the verifier's unless an ablation says otherwise); its
    # key is a fold_in of the prompt key no group index reaches.
    rewards, correct = reward_signal.signal(
        hp.reward,
        config.reward_kind,
        out.tokens.reshape(drawn, G, -1),
        reward.reshape(drawn, G),
        verified.reshape(drawn, G),
        jax.random.fold_in(key_prompts, 2**31 - 1),
    )
    # Dynamic sampling keeps groups whose rewards vary (0 < p̂ < 1 for 0/1 rewards) and whose
    # pass rate lies in the balanced band |p̂ − ½| ≤ δ (every group for δ = ½).
    pass_rate = jnp.mean(correct.reshape(drawn, G).astype(jnp.float32), axis=1)
    varies = (jnp.std(rewards, axis=1) > 0) & curriculum.balanced(pass_rate, hp.balance_delta)
    dynamic = hp.dynamic_sampling == 1
    rank = jnp.where(dynamic & ~varies, drawn, 0) + jnp.arange(drawn)
    keep = jnp.argsort(rank)[:B]  # varied groups first (dynamic), else the first B
    group_valid = jnp.where(dynamic, varies[keep], True).astype(jnp.float32)
    kept = (keep[:, None] * G + jnp.arange(G)).reshape(-1)
    # the loss mask: the policy's tokens (an environment's observations are context, not trained)
    mask = out.policy_mask[kept].astype(jnp.float32) * jnp.repeat(group_valid, G)[:, None]
    # Tokens sampled for the groups this learner needs: all drawn groups if it samples
    # dynamically, else its first B (what it would sample alone).
    needed = jnp.where(dynamic, True, jnp.arange(drawn) < B)
    generated = jnp.sum(out.policy_mask.reshape(drawn, -1).astype(jnp.float32) * needed[:, None])
    return Rollout(
        prompt_tokens[kept],
        prompt_mask[kept],
        out.tokens[kept],
        out.mask[kept],
        mask,
        rewards[keep],
        correct.reshape(-1)[kept],
        verified.reshape(-1)[kept].astype(jnp.float32),
        group_valid,
        problem[keep],
        table.level[problem[keep]] - 1,
        generated,
        {k: jnp.mean(v[kept]) for k, v in out.metrics.items()},
    )


class Batch(NamedTuple):
    """A step's trained rows (`N = B × G`, problem-major); a micro-batch is whole groups of it."""

    prompt_tokens: jax.Array  # [N, P]
    prompt_mask: jax.Array  # [N, P]
    tokens: jax.Array  # [N, A] the sampled completions
    completion_mask: jax.Array  # [N, A]
    mask: jax.Array  # [N, A] float: completion mask × group validity
    old_logp: jax.Array  # [N, A] log π_old (the sampling policy)
    old_mean_log_probs: jax.Array  # [N, A] vocabulary mean of log π_old (ROVER)
    ref_logp: jax.Array  # [N, A] log π_ref (the base)
    adv: jax.Array  # [N]
    correct: jax.Array  # [N] 0/1 labels of the reward signal
    correct_rate: jax.Array  # [N] the group's accuracy


class RefSamples(NamedTuple):
    """The base's own samples for sample divergences (forward KL / JS), `R` per prompt."""

    prompt_tokens: jax.Array  # [B × R, P]
    prompt_mask: jax.Array
    tokens: jax.Array  # [B × R, A]
    completion_mask: jax.Array
    seq_logp: jax.Array  # [B × R] sequence log-prob under the base


def zero_advantage_share(adv: jax.Array, group_valid: jax.Array) -> jax.Array:
    """Share of the trained groups whose advantages are all zero: they give no policy gradient.

    Args:
      adv: `[B, G]` advantages.
      group_valid: `[B]` 1 for a trained group (dynamic sampling drops the others).
    """
    zero = jnp.all(jnp.abs(adv) < 1e-6, axis=1)
    return jnp.sum(zero * group_valid) / jnp.maximum(jnp.sum(group_valid), 1)


PROBLEM_KEY = "problem/correct"  # + i: a step's training accuracy on problem i (NaN: not drawn)


def problem_accuracy(problem: jax.Array, verified: jax.Array, num: int) -> dict[str, jax.Array]:
    """The step's training accuracy on each of the first `num` problems of the table.

    acc_i = mean of the verifier's verdicts over every completion of the step's groups on
    problem i (several groups on one problem count as one visit); NaN where no group drew it.
    1-shot RLVR ranks examples by the variance of acc_i over the visits of a run.

    Args:
      problem: `[B]` table rows of the step's groups.
      verified: `[B × G]` 0/1 verdicts, rows problem-major.
      num: how many leading problems to report.

    Returns:
      ``{f"{PROBLEM_KEY}{i}": scalar}`` for i < num.
    """
    B = problem.shape[0]
    per_group = jnp.mean(verified.reshape(B, -1).astype(jnp.float32), axis=1)  # [B]
    hit = (problem[None, :] == jnp.arange(num)[:, None]).astype(jnp.float32)  # [num, B]
    count = jnp.sum(hit, axis=1)
    acc = jnp.where(count > 0, hit @ per_group / jnp.maximum(count, 1.0), jnp.nan)
    return {f"{PROBLEM_KEY}{i}": acc[i] for i in range(num)}
