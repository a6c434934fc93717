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
    buf = _Buffer(
        jnp.concatenate([prompt_tokens.astype(jnp.int32), pad], axis=1),
        jnp.concatenate([prompt_mask.astype(bool), jnp.zeros(pad.shape, bool)], axis=1),
        jnp.zeros((n, total), bool),
        jnp.full((n, total), -1, jnp.int32),
        jnp.sum(prompt_mask, axis=1).astype(jnp.int32),  # real tokens so far: next position
        None,
        None,
    )

    def full_logits(buf):  # the reference: the whole buffer, last real slot's logits
        mask = buf.valid
        logits, _ = forward(params, cfg, buf.seq, positions_from_mask(mask), causal_mask(mask))
        last = jnp.max(jnp.where(mask, slots, -1), axis=1)
        return jnp.take_along_axis(logits, last[:, None, None], axis=1)[:, 0]

    if recompute:
        buf = buf._replace(logits=full_logits(buf))
    else:  # the prompt's prefill, as `sampling.sample` does it
        mask = _chunk_mask(slots, buf.valid, jnp.arange(prompt_len))
        positions = positions_from_mask(prompt_mask)
        cache = init_cache(cfg, n, total)
        logits, cache = forward(params, cfg, prompt_tokens, positions, mask, cache, 0)
        buf = buf._replace(cache=cache, logits=logits[:, -1])

    def token_step(c: _TokenLoop) -> _TokenLoop:
        buf, active = c.buf, c.active
        slot = first + c.t * (A + OBS) + c.i
        token = choose(buf.logits, fold(keys, c.t * A + c.i), temperature, top_p)
        token = jnp.where(active, token, cfg.pad_id)
        buf = _write(buf, slot, token[:, None], active[:, None], active[:, None], c.t)
        if recompute:
            logits = full_logits(buf)
        else:
            mask = ((slots <= slot)[None, :] & buf.valid)[:, None, :]
            logits, cache = forward(
                params, cfg, token[:, None], buf.count[:, None], mask, buf.cache, slot
            )
            buf = buf._replace(cache=cache)
            logits = logits[:, -1]
        buf = buf._replace(
            logits=jnp.where(active[:, None], logits, buf.logits),
            count=buf.count + active.astype(jnp.int32),
        )
        return _TokenLoop(buf, active & ~jnp.isin(token, stop_ids), c.i + 1, c.t)

    def turn_step(e: _EpisodeLoop) -> _EpisodeLoop:
        live, t = ~e.done, e.t
        turn = _TokenLoop(e.buf, live, jnp.asarray(0, jnp.int32), t)
        buf = jax.lax.while_loop(lambda c: (c.i < A) & jnp.any(c.active), token_step, turn).buf
        start = first + t * (A + OBS)
        action = jax.lax.dynamic_slice_in_dim(buf.seq, start, A, axis=1)
        action_mask = jax.lax.dynamic_slice_in_dim(buf.policy, start, A, axis=1).astype(jnp.int32)
        obs, stepped, reward, env_done = jax.vmap(env.step)(e.states, action, action_mask)
        keep = lambda new, old: jnp.where(  # noqa: E731
            live.reshape(live.shape + (1,) * (new.ndim - 1)), new, old
        )
        states = jax.tree.map(keep, stepped, e.states)
        rewards = e.rewards.at[:, t].set(jnp.where(live, reward.astype(jnp.float32), 0.0))
        ended = live & env_done.astype(bool)
        done_now = ended | (live & (t == T - 1))
        if OBS and T > 1:  # the observation of the rows that go on, prefilled in one chunk
            obs_start = start + A
            obs_valid = obs.mask.astype(bool) & (live & ~done_now)[:, None]
            obs_tokens = jnp.where(obs_valid, obs.tokens.astype(jnp.int32), cfg.pad_id)
            count = buf.count
            buf = _write(buf, obs_start, obs_tokens, obs_valid, jnp.zeros_like(obs_valid), t)
            obs_len = jnp.sum(obs_valid, axis=1).astype(jnp.int32)
            if recompute:
                logits = full_logits(buf)
            else:
                positions = count[:, None] + jnp.maximum(jnp.cumsum(obs_valid, axis=1) - 1, 0)
                mask = _chunk_mask(slots, buf.valid, obs_start + jnp.arange(OBS))
                chunk, cache = forward(
                    params, cfg, obs_tokens, positions, mask, buf.cache, obs_start
                )
                buf = buf._replace(cache=cache)
                last = jnp.maximum(obs_len - 1, 0)
                logits = jnp.take_along_axis(chunk, last[:, None, None], axis=1)[:, 0]
            buf = buf._replace(
                logits=jnp.where((obs_len > 0)[:, None], logits, buf.logits),
                count=count + obs_len,
            )
        return _EpisodeLoop(
            buf, states, rewards, e.ended | ended, e.done | done_now,
            e.turns + live.astype(jnp.int32), t + 1,
        )  # fmt: skip

    no = jnp.zeros((n,), bool)
    init = _EpisodeLoop(buf, states, jnp.zeros((n, T), jnp.float32), no, no,
                        jnp.zeros((n,), jnp.int32), jnp.asarray(0, jnp.int32))  # fmt: skip
    out = jax.lax.while_loop(lambda e: (e.t < T) & jnp.any(~e.done), turn_step, init)
    end = prompt_len + spec.episode_length()  # the spare observation block is cut off
    cut = lambda x: x[:, prompt_len:end]  # noqa: E731
    return Episodes(
        cut(out.buf.seq),
        cut(out.buf.valid).astype(jnp.int32),
        cut(out.buf.policy).astype(jnp.int32),
        cut(out.buf.turn),
        out.rewards,
        out.turns,
        out.ended,
        out.states,
    )


class _Buffer(NamedTuple):
    """The rows' sequences as the loops write them (`[N, S]`, S slots in all)."""

    seq: jax.Array  # int32 tokens
    valid: jax.Array  # bool: a real token (attended)
    policy: jax.Array  # bool: written by the policy
    turn: jax.Array  # int32: the slot's turn (-1: the prompt or unused)
    count: jax.Array  # [N] int32: real tokens so far (the next RoPE position)
    cache: Any  # the KV cache (None for the reference)
    logits: jax.Array  # [N, V] the next token's logits


class _TokenLoop(NamedTuple):
    buf: _Buffer
    active: jax.Array  # [N] bool: the row is still writing this turn
    i: jax.Array  # the turn's token index
    t: jax.Array  # the turn


class _EpisodeLoop(NamedTuple):
    buf: _Buffer
    states: Any  # the environments' states
    rewards: jax.Array  # [N, T]
    ended: jax.Array  # [N] bool: the environment ended the episode
    done: jax.Array  # [N] bool: ended, or out of turns
    turns: jax.Array  # [N] int32 turns taken
    t: jax.Array  # the next turn


def _write(buf: _Buffer, slot, tokens, valid, policy, turn) -> _Buffer:
    """`tokens [N, W]` written into slots `slot .. slot + W` with their flags; the slots of
    `valid` rows belong to turn `turn`."""
    put = lambda x, v: jax.lax.dynamic_update_slice_in_dim(x, v, slot, axis=1)  # noqa: E731
    return buf._replace(
        seq=put(buf.seq, tokens),
        valid=put(buf.valid, valid),
        policy=put(buf.policy, policy),
        turn=put(buf.turn, jnp.where(valid, turn, -1)),
    )


def _chunk_mask(slots: jax.Array, valid: jax.Array, query_slots: jax.Array) -> jax.Array:
    """`[N, W, S]` attention of a chunk of queries at `query_slots [W]`: every real key at or
    before its slot, and itself (a padded query's softmax stays defined)."""
    causal = slots[None, :] <= query_slots[:, None]
    return causal[None] & (valid[:, None, :] | (slots[None, :] == query_slots[:, None])[None])


def final_action(episodes: Episodes, spec: env_lib.EnvSpec) -> jax.Array:
    """The last turn's action of every episode, `[N, A]` tokens (`pad` after its real ones): the
    answer a task's host verifier reads."""
    stride = spec.action_tokens + spec.observation_tokens
    start = jnp.maximum(episodes.turns - 1, 0) * stride
    idx = start[:, None] + jnp.arange(spec.action_tokens)[None, :]
    return jnp.take_along_axis(episodes.tokens, idx, axis=1)  # pad in the unwritten slots
