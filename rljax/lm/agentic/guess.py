"""Guess the number as a text environment, on device (`rljax.lm.tasks.guess`): a turn ending in
the call token ';' probes a number and is answered "h" (higher), "l" (lower), "y" (found) or
"x" (the probe is not a number); a turn ending in EOS is the answer, reward 1 if it is the
secret. A turn that ends without either (its budget) ends the episode with reward 0.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rljax.lm.agentic import env as env_lib
from rljax.lm.agentic.calculator import parse_int
from rljax.lm.agentic.env import EnvSpec, Observation
from rljax.lm.model import tokenizer
from rljax.lm.tasks import guess as task_lib

CALL = tokenizer.encode(task_lib.CALL)[0]
_REPLIES = jnp.asarray(
    tokenizer.encode(task_lib.HIGHER + task_lib.LOWER + task_lib.FOUND + "x"), jnp.int32
)


class State(NamedTuple):
    secret: jax.Array  # int32
    probes: jax.Array  # int32: probes made
    invalid: jax.Array  # int32: probes that were not numbers
    correct: jax.Array  # bool: the answer was the secret


@dataclasses.dataclass(frozen=True)
class GuessEnv:
    """The guessing game (module docstring); `tool=False`: one blind answer (single turn)."""

    spec: EnvSpec
    tool: bool = True

    @classmethod
    def make(cls, *, max_turns: int = 8, action_tokens: int = 4, observation_tokens: int = 1,
             tool: bool = True) -> GuessEnv:  # fmt: skip
        if not tool:
            return cls(EnvSpec(1, action_tokens, 0), tool=False)
        return cls(EnvSpec(max_turns, action_tokens, observation_tokens, (CALL,)), tool=True)

    def reset(self, key, problem) -> State:
        """`problem`: the rows' `device_reward.ProblemTable` fields (`target_int`: the secret)."""
        del key
        zero = jnp.asarray(0, jnp.int32)
        return State(problem.target_int.astype(jnp.int32), zero, zero, jnp.asarray(False))

    def step(self, state: State, action, action_mask):
        real = action_mask.astype(bool)
        last_token = env_lib.last_token(action, action_mask, tokenizer.PAD)
        text = real & (action != tokenizer.EOS) & (action != CALL)
        value, parsed = parse_int(action, text)
        answered = last_token == tokenizer.EOS
        probed = (last_token == CALL) & self.tool
        correct = answered & parsed & (value == state.secret)
        reply = jnp.where(
            ~parsed, 3, jnp.where(value == state.secret, 2, jnp.where(state.secret > value, 0, 1))
        )
        length = self.spec.observation_tokens
        tokens = jnp.zeros((length,), jnp.int32).at[:1].set(_REPLIES[reply])
        mask = (jnp.arange(length) < 1).astype(jnp.int32)
        new = State(
            state.secret,
            state.probes + probed.astype(jnp.int32),
            state.invalid + (probed & ~parsed).astype(jnp.int32),
            state.correct | correct,
        )
        return Observation(tokens, mask), new, correct.astype(jnp.float32), ~probed

    def success(self, state: State) -> jax.Array:
        return state.correct

    def metrics(self, state: State) -> dict[str, jax.Array]:
        """Probes per episode and how many of them were not numbers."""
        return {
            "tool/calls": state.probes.astype(jnp.float32),
            "tool/errors": state.invalid.astype(jnp.float32),
        }
