"""Multi-turn episodes in one jitted loop: sample a turn, step the environment, prefill its
observation into the same KV cache in one chunk, sample the next turn.

The layout, the stop rule and the environment contract are `rljax.lm.agentic.env`'s. A
`lax.while_loop` runs the turns until every episode has ended (or `max_turns`); inside a turn
another runs the policy's tokens until every live row has stopped (a tool-call or end token, or
the turn budget). Finished rows write `pad_id` into unused slots, which attention never reads and
RoPE positions skip. Row r's token i of turn t is drawn with `fold_in(fold_in(key, r), t·A + i)`,
so with `max_turns = 1` every draw is `rljax.lm.model.sampling.sample`'s: the same tokens for the
same key (tests/lm/agentic).

`recompute=True` is the slow reference: no cache, the whole buffer re-run after every write; the
two agree token for token (tests).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.lm.agentic import env as env_lib
from rljax.lm.model.decoder import (
    TransformerConfig,
    causal_mask,
    forward,
    init_cache,
    positions_from_mask,
)
from rljax.lm.model.sampling import choose, row_keys


class Episodes(NamedTuple):
    """Sampled episodes; every `[N, L]` array covers the slots after the prompt."""

    tokens: jax.Array  # [N, L] int32: actions and observations, pad_id in unused slots
    mask: jax.Array  # [N, L] int32: 1 = a real token (the policy's or the environment's)
    policy_mask: jax.Array  # [N, L] int32: 1 = written by the policy (trained; gets a log-prob)
    turn: jax.Array  # [N, L] int32: the turn a slot belongs to (its action and observation)
    rewards: jax.Array  # [N, T] float32: each turn's reward (0 after the episode ended)
    turns: jax.Array  # [N] int32: turns taken
    ended: jax.Array  # [N] bool: the environment ended the episode (False: out of turns)
    state: Any  # the environments' final states (vmapped pytree)

    @property
    def episode_return(self) -> jax.Array:
        """Σ_t r_t per episode `[N]`."""
        return jnp.sum(self.rewards, axis=1)


def _slot_layout(spec: env_lib.EnvSpec, prompt_len: int) -> tuple[int, int]:
    """(buffer length, slot of turn 0's first action token). Beyond one turn the buffer keeps
    one spare observation block after the last action, so no write is ever clamped."""
    tail = spec.observation_tokens if spec.max_turns > 1 else 0
    return prompt_len + spec.episode_length() + tail, prompt_len


def sample_episodes(
    params,
    cfg: TransformerConfig,
    env,
    prompt_tokens: jax.Array,
    prompt_mask: jax.Array,
    problem: jax.Array,
    key: jax.Array,
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    recompute: bool = False,
) -> Episodes:
    """Runs one episode per row of `env` from its prompt.

    Args:
      params: the policy's parameters; cfg: its config (static).
      env: a `rljax.lm.agentic.env.TextEnv` (static: its spec and functions).
      prompt_tokens, prompt_mask: `[N, P]` left-padded prompts (the first observation).
      problem: the rows' problems, a pytree with leading axis N (e.g. the problem table's
        rows), passed row by row to `env.reset`.
      key: the rollout key; `reset` gets `fold_in(row key, 2**31 - 1)`.
      temperature, top_p: the sampling settings (static).
      recompute: the cache-free reference (slow).

    Returns:
      `Episodes`.
    """
    chex.assert_rank([prompt_tokens, prompt_mask], 2)
    chex.assert_tree_shape_prefix(problem, prompt_tokens.shape[:1])
    spec = env.spec
    n, prompt_len = prompt_tokens.shape
    env_lib.validate(spec, prompt_length=prompt_len, max_len=cfg.max_len, vocab_size=cfg.vocab_size)
    total, first = _slot_layout(spec, prompt_len)
    A, OBS, T = spec.action_tokens, spec.observation_tokens, spec.max_turns
    stop_ids = jnp.asarray(tuple(cfg.eos_ids) + tuple(spec.call_ids), jnp.int32)
    slots = jnp.arange(total)
    keys = row_keys(key, n)
    fold = jax.vmap(jax.random.fold_in, in_axes=(0, None))
    states = jax.vmap(env.reset)(fold(keys, 2**31 - 1), problem)

    pad = jnp.full((n, total - prompt_len), cfg.pad_id, jnp.int32)
    seq = jnp.concatenate([prompt_tokens.astype(jnp.int32), pad], axis=1)
    valid = jnp.concatenate([prompt_mask.astype(bool), jnp.zeros(pad.shape, bool)], axis=1)
    policy = jnp.zeros((n, total), bool)
    turn_of = jnp.full((n, total), -1, jnp.int32)
    count = jnp.sum(prompt_mask, axis=1).astype(jnp.int32)  # real tokens so far: next position

    def full_logits(seq, valid):  # the reference: the whole buffer, last real slot's logits
        logits, _ = forward(params, cfg, seq, positions_from_mask(valid), causal_mask(valid))
        last = jnp.max(jnp.where(valid, slots, -1), axis=1)
        return jnp.take_along_axis(logits, last[:, None, None], axis=1)[:, 0]

    if recompute:
        cache, last_logits = None, full_logits(seq, valid)
    else:  # the prompt's prefill, as `sampling.sample` does it
        positions = positions_from_mask(prompt_mask)
        j = jnp.arange(prompt_len)[:, None]
        prefill_mask = (slots[None, :] <= j)[None] & (
            valid[:, None, :] | (slots[None, :] == j)[None]
        )
        logits, cache = forward(
            params, cfg, prompt_tokens, positions, prefill_mask, init_cache(cfg, n, total), 0
        )
        last_logits = logits[:, -1]

    def token_step(carry):
        seq, valid, policy, turn_of, count, cache, last_logits, active, i, t = carry
        slot = first + t * (A + OBS) + i
        token = choose(last_logits, fold(keys, t * A + i), temperature, top_p)
        token = jnp.where(active, token, cfg.pad_id)
        seq = jax.lax.dynamic_update_slice_in_dim(seq, token[:, None], slot, axis=1)
        valid = jax.lax.dynamic_update_slice_in_dim(valid, active[:, None], slot, axis=1)
        policy = jax.lax.dynamic_update_slice_in_dim(policy, active[:, None], slot, axis=1)
        turn_of = jax.lax.dynamic_update_slice_in_dim(
            turn_of, jnp.where(active, t, -1)[:, None], slot, axis=1
        )
        if recompute:
            logits = full_logits(seq, valid)
        else:
            mask = ((slots <= slot)[None, :] & valid)[:, None, :]
            logits, cache = forward(params, cfg, token[:, None], count[:, None], mask, cache, slot)
            logits = logits[:, -1]
        last_logits = jnp.where(active[:, None], logits, last_logits)
        count = count + active.astype(jnp.int32)
        active = active & ~jnp.isin(token, stop_ids)
        return seq, valid, policy, turn_of, count, cache, last_logits, active, i + 1, t

    def turn_step(carry):
        seq, valid, policy, turn_of, count, cache, last_logits, states, rewards = carry[:9]
        ended_all, done, turns, t = carry[9:]
        live = ~done
        inner = (seq, valid, policy, turn_of, count, cache, last_logits, live, 0, t)
        inner = jax.lax.while_loop(lambda c: (c[8] < A) & jnp.any(c[7]), token_step, inner)
        seq, valid, policy, turn_of, count, cache, last_logits = inner[:7]
        start = first + t * (A + OBS)
        action = jax.lax.dynamic_slice_in_dim(seq, start, A, axis=1)
        action_mask = jax.lax.dynamic_slice_in_dim(policy, start, A, axis=1).astype(jnp.int32)
        obs, stepped, reward, env_done = jax.vmap(env.step)(states, action, action_mask)
        keep = lambda new, old: jnp.where(  # noqa: E731
            live.reshape(live.shape + (1,) * (new.ndim - 1)), new, old
        )
        states = jax.tree.map(keep, stepped, states)
        rewards = rewards.at[:, t].set(jnp.where(live, reward.astype(jnp.float32), 0.0))
        ended = live & env_done.astype(bool)
        done_now = ended | (live & (t == T - 1))
        turns = turns + live.astype(jnp.int32)
        if OBS and T > 1:  # the observation of the rows that go on, prefilled in one chunk
            go_on = live & ~done_now
            obs_start = start + A
            obs_valid = obs.mask.astype(bool) & go_on[:, None]
            obs_tokens = jnp.where(obs_valid, obs.tokens.astype(jnp.int32), cfg.pad_id)
            seq = jax.lax.dynamic_update_slice_in_dim(seq, obs_tokens, obs_start, axis=1)
            valid = jax.lax.dynamic_update_slice_in_dim(valid, obs_valid, obs_start, axis=1)
            turn_of = jax.lax.dynamic_update_slice_in_dim(
                turn_of, jnp.where(obs_valid, t, -1), obs_start, axis=1
            )
            obs_len = jnp.sum(obs_valid, axis=1).astype(jnp.int32)
            if recompute:
                logits = full_logits(seq, valid)
            else:
                rank = jnp.cumsum(obs_valid, axis=1) - 1
                positions = count[:, None] + jnp.maximum(rank, 0)
                q_slot = obs_start + jnp.arange(OBS)
                mask = (slots[None, :] <= q_slot[:, None])[None] & (
                    valid[:, None, :] | (slots[None, :] == q_slot[:, None])[None]
                )
                chunk, cache = forward(params, cfg, obs_tokens, positions, mask, cache, obs_start)
                last = jnp.maximum(obs_len - 1, 0)
                logits = jnp.take_along_axis(chunk, last[:, None, None], axis=1)[:, 0]
            last_logits = jnp.where((obs_len > 0)[:, None], logits, last_logits)
            count = count + obs_len
        return (seq, valid, policy, turn_of, count, cache, last_logits, states, rewards,
                ended_all | ended, done | done_now, turns, t + 1)  # fmt: skip

    rewards = jnp.zeros((n, T), jnp.float32)
    zeros_n = jnp.zeros((n,), bool)
    init = (seq, valid, policy, turn_of, count, cache, last_logits, states, rewards,
            zeros_n, zeros_n, jnp.zeros((n,), jnp.int32), jnp.asarray(0, jnp.int32))  # fmt: skip
    out = jax.lax.while_loop(lambda c: (c[12] < T) & jnp.any(~c[10]), turn_step, init)
    seq, valid, policy, turn_of = out[:4]
    states, rewards, ended, turns = out[7], out[8], out[9], out[11]
    end = prompt_len + spec.episode_length()  # the spare observation block is cut off
    cut = lambda x: x[:, prompt_len:end]  # noqa: E731
    return Episodes(
        cut(seq),
        cut(valid).astype(jnp.int32),
        cut(policy).astype(jnp.int32),
        cut(turn_of),
        rewards,
        turns,
        ended,
        states,
    )


def final_action(episodes: Episodes, spec: env_lib.EnvSpec) -> jax.Array:
    """The last turn's action of every episode, `[N, A]` tokens (`pad` after its real ones): the
    answer a task's host verifier reads."""
    stride = spec.action_tokens + spec.observation_tokens
    start = jnp.maximum(episodes.turns - 1, 0) * stride
    idx = start[:, None] + jnp.arange(spec.action_tokens)[None, :]
    tokens = jnp.take_along_axis(episodes.tokens, idx, axis=1)
    written = jnp.take_along_axis(episodes.policy_mask, idx, axis=1)
    return jnp.where(written > 0, tokens, 0)
