"""The text-environment contract: pure, jittable, vmappable functions on token arrays.

An agent acts over several turns. In turn t it writes up to `action_tokens` tokens, ending at a
tool-call stop token (`call_ids`), at an end token (the model's `eos_ids`: its final answer) or
at the turn budget; the environment then steps and answers with up to `observation_tokens`
tokens, which are appended to the same sequence and read by the next turn. An episode ends when
the environment says `done` or after `max_turns` turns.

One row of the sequence (`rljax.lm.agentic.rollout`) has fixed slots:

    prompt [P] | action 1 [A] | observation 1 [O] | action 2 [A] | ... | action T [A]

Slots a turn leaves unused are masked out of attention and do not advance RoPE positions, so
the sequence reads exactly as the real tokens written one after another. With `max_turns = 1`
the layout is `[P | A]`, today's single-turn completion.

An environment is any object with

    spec: EnvSpec
    reset(key, problem) -> state
    step(state, action, action_mask) -> (Observation, state, reward, done)
    success(state) -> bool                 the episode's outcome (pass@k, NFT / PACS labels)
    metrics(state) -> {name: float32}      per-episode statistics (e.g. "tool/calls")

for ONE episode (the rollout vmaps them over rows). `problem` is one row of the task's problem
table (`rljax.lm.tasks.device_reward.ProblemTable`), whose prompt is the episode's first
observation; `state` is any pytree of arrays
of fixed shapes; `action` is the turn's `[A]` tokens with `action_mask [A]` (1 = written by the
policy, the stop token included); `reward` a float32 scalar for this turn; `done` a bool scalar.
A malformed action (a tool call that does not parse, a tool error) must become an observation
such as "error: ...", never an exception: everything here runs inside one compiled program.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp

from rljax import checks


class Observation(NamedTuple):
    """What the environment answers: tokens and 0/1 mask `[O]`, real tokens first."""

    tokens: jax.Array
    mask: jax.Array


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """The static limits of an environment's episodes."""

    max_turns: int  # T: policy turns per episode (>= 1)
    action_tokens: int  # A: tokens the policy may write per turn (>= 1)
    observation_tokens: int  # O: tokens one observation may hold (0: no observations)
    call_ids: tuple[int, ...] = ()  # tokens that end a turn as a tool call (besides eos_ids)

    def episode_length(self) -> int:
        """Slots after the prompt: T actions and the T - 1 observations between them."""
        return self.max_turns * self.action_tokens + (self.max_turns - 1) * self.observation_tokens


def validate(spec: EnvSpec, *, prompt_length: int, max_len: int, vocab_size: int) -> None:
    """One-line errors (field, value, allowed range) before anything compiles."""
    checks.check_int("max_turns", spec.max_turns, low=1)
    checks.check_int("action_tokens", spec.action_tokens, low=1)
    checks.check_int("observation_tokens", spec.observation_tokens, low=0)
    if spec.max_turns > 1 and spec.observation_tokens == 0 and spec.call_ids:
        raise ValueError(
            "observation_tokens=0 with call_ids: a tool call would get no answer; allowed: "
            "observation_tokens >= 1 when the policy can call a tool"
        )
    total = prompt_length + spec.episode_length()
    if total > max_len:
        raise ValueError(
            f"prompt length {prompt_length} + max_turns={spec.max_turns} x action_tokens="
            f"{spec.action_tokens} + {spec.max_turns - 1} x observation_tokens="
            f"{spec.observation_tokens} = {total} exceeds the model's max_len={max_len}"
        )
    bad = [i for i in spec.call_ids if not 0 <= int(i) < vocab_size]
    if bad:
        raise ValueError(
            f"call_ids={spec.call_ids}: {bad} outside the vocabulary [0, {vocab_size})"
        )


def last_token(action: jax.Array, action_mask: jax.Array, pad_id: int) -> jax.Array:
    """The token that ended a turn: the last one the policy wrote in `action [A]` (`pad_id` for
    an empty turn). Environments read from it whether the turn is a call, an answer or neither.
    """
    real = action_mask.astype(bool)
    last = jnp.max(jnp.where(real, jnp.arange(action.shape[0]), -1))
    return jnp.where(last >= 0, action[jnp.maximum(last, 0)], pad_id)


class TextEnv(Protocol):
    """The contract of the module docstring (for type checkers; nothing registers)."""

    spec: EnvSpec

    def reset(self, key: jax.Array, problem: jax.Array) -> Any: ...

    def step(
        self, state: Any, action: jax.Array, action_mask: jax.Array
    ) -> tuple[Observation, Any, jax.Array, jax.Array]: ...

    def success(self, state: Any) -> jax.Array: ...

    def metrics(self, state: Any) -> dict[str, jax.Array]: ...
