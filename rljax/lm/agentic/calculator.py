"""The calculator tool as a text environment, on device: the policy writes an expression and the
call token `;`, the environment answers "=<value>" (or "=error" for a call that does not parse,
has a number of more than 9 digits or an intermediate value of magnitude >= 10^9), and the policy
goes on. A turn ending with EOS is the answer: the integer after its last '=' (arithmetic's rule),
reward 1 if it is the problem's value, else 0. A turn that ends without EOS or `;` (the turn
budget) ends the episode with reward 0. The task and its demonstrations:
`rljax.lm.tasks.calculator`.

    prompt  347*29+51=      (the problem table's prompt)
    turn 1  347*29+51;      policy: a tool call
    obs 1   =10114          calculator
    turn 2  10114<eos>      policy: the answer

Everything here is pure jax on `[A]` token arrays with the character tokenizer.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rljax.lm.agentic import env as env_lib
from rljax.lm.agentic import host_tool
from rljax.lm.agentic.env import EnvSpec, Observation
from rljax.lm.model import tokenizer
from rljax.lm.tasks import calculator as task_lib
from rljax.lm.tasks import device_reward

CALL = tokenizer.encode(task_lib.CALL)[0]  # the tool-call stop token
_DIGIT0 = tokenizer.encode("0")[0]
_PLUS, _MINUS, _TIMES, _EQUALS = (tokenizer.encode(c)[0] for c in "+-*=")
_ERROR = tokenizer.encode("=error")
_MAX_DIGITS = 9  # operands and results stay below 10^9 (int32)
_LIMIT = 10**9


class _Scan(NamedTuple):
    acc: jax.Array  # the completed terms' sum
    term: jax.Array  # the current product, before its last number
    num: jax.Array  # the number being read
    digits: jax.Array  # its digits so far
    sign: jax.Array  # +1 / -1: the current term's sign
    ok: jax.Array  # no error so far
    done: jax.Array  # the call token (or the end) was reached


def evaluate(tokens: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The value of the expression in `tokens [A]` before the first call token (`mask` 1 = real),
    with `*` before `+` / `-` and an optional leading '-'. Linear scan, never raises.

    Returns:
      (value int32, ok bool): not ok for an empty or malformed expression, a number of more than 9
      digits or any intermediate value of magnitude >= 10^9.
    """

    def step(s: _Scan, x):
        token, real, first = x
        live = real & ~s.done
        is_digit = (token >= _DIGIT0) & (token <= _DIGIT0 + 9)
        is_op = (token == _PLUS) | (token == _MINUS) | (token == _TIMES)
        lead_minus = first & (token == _MINUS)
        stop = token == CALL
        # a digit extends the number (at most 9 digits)
        num = jnp.where(is_digit, s.num * 10 + (token - _DIGIT0), s.num)
        digits = jnp.where(is_digit, s.digits + 1, s.digits)
        bad = (is_digit & (digits > _MAX_DIGITS)) | (~is_digit & ~is_op & ~stop)
        # an operator (or the end) closes the number into the product
        closes = (is_op & ~lead_minus) | stop
        bad = bad | (closes & (s.digits == 0))
        product = s.term.astype(jnp.float32) * s.num.astype(jnp.float32)
        bad = bad | (closes & (jnp.abs(product) >= _LIMIT))
        term = jnp.where(closes, s.term * s.num, s.term)
        adds = closes & (token != _TIMES)
        acc = jnp.where(adds, s.acc + s.sign * term, s.acc)
        bad = bad | (adds & (jnp.abs(acc.astype(jnp.float32)) >= _LIMIT))
        sign = jnp.where(adds, jnp.where(token == _MINUS, -1, 1), s.sign)
        sign = jnp.where(lead_minus, -1, sign)
        term = jnp.where(adds, 1, term)
        num = jnp.where(closes, 0, num)
        digits = jnp.where(closes, 0, digits)
        new = _Scan(acc, term, num, digits, sign, s.ok & ~bad, s.done | stop)
        return jax.tree.map(lambda a, b: jnp.where(live, a, b), new, s), None

    one, zero = jnp.asarray(1, jnp.int32), jnp.asarray(0, jnp.int32)
    init = _Scan(zero, one, zero, zero, one, jnp.asarray(True), jnp.asarray(False))
    first = jnp.arange(tokens.shape[0]) == 0
    s, _ = jax.lax.scan(step, init, (tokens.astype(jnp.int32), mask.astype(bool), first))
    # at the call token the value is in `acc`; an expression that ran to the end of the action
    # without it closes there
    product = s.term.astype(jnp.float32) * s.num.astype(jnp.float32)
    closing_ok = (s.digits > 0) & (jnp.abs(product) < _LIMIT)
    value = jnp.where(s.done, s.acc, s.acc + s.sign * s.term * s.num)
    ok = s.ok & (s.done | closing_ok) & (jnp.abs(value.astype(jnp.float32)) < _LIMIT)
    return jnp.where(ok, value, 0), ok


def number_tokens(value: jax.Array, length: int) -> tuple[jax.Array, jax.Array]:
    """ "=<value>" as `[length]` tokens and mask (|value| < 10^9: at most 11 tokens)."""
    magnitude = jnp.abs(value)
    powers = 10 ** jnp.arange(_MAX_DIGITS - 1, -1, -1, dtype=jnp.int32)
    digits = (magnitude // powers) % 10  # [9] most significant first
    width = jnp.maximum(jnp.sum(jnp.cumsum(digits > 0) > 0), 1)  # at least "0"
    lead = 1 + (value < 0).astype(jnp.int32)  # "=" and maybe "-"
    idx = jnp.arange(length)
    digit_at = jnp.take(digits, jnp.clip(idx - lead + (_MAX_DIGITS - width), 0, _MAX_DIGITS - 1))
    tokens = jnp.where(idx == 0, _EQUALS, _DIGIT0 + digit_at)
    tokens = jnp.where((idx == 1) & (value < 0), _MINUS, tokens)
    mask = idx < lead + width
    return jnp.where(mask, tokens, tokenizer.PAD).astype(jnp.int32), mask.astype(jnp.int32)


def _error_tokens(length: int) -> tuple[jax.Array, jax.Array]:
    text = np.full(length, tokenizer.PAD, np.int32)
    text[: min(length, len(_ERROR))] = _ERROR[:length]
    mask = (np.arange(length) < len(_ERROR)).astype(np.int32)
    return jnp.asarray(text), jnp.asarray(mask)


class State(NamedTuple):
    target: jax.Array  # int32: the problem's value
    calls: jax.Array  # int32: tool calls made
    errors: jax.Array  # int32: calls answered "=error"
    correct: jax.Array  # bool: the final answer was right
    truncated: jax.Array  # int32: tool answers cut to the observation slot


@dataclasses.dataclass(frozen=True)
class CalculatorEnv:
    """The calculator environment (module docstring). `tool=False`: the same episodes without
    the tool (one turn: the no-tool baseline, exactly single-turn RLVR). `host`: a
    `rljax.lm.agentic.host_tool.HostTool` answers the calls in place of the device calculator
    (any Python function; its failures and timeouts become "error:..." observations)."""

    spec: EnvSpec
    tool: bool = True
    host: Any = None

    @classmethod
    def make(cls, *, max_turns: int = 3, action_tokens: int = 16, observation_tokens: int = 12,
             tool: bool = True, host=None) -> CalculatorEnv:  # fmt: skip
        if not tool:
            return cls(EnvSpec(1, action_tokens, 0), tool=False)
        spec = EnvSpec(max_turns, action_tokens, observation_tokens, (CALL,))
        return cls(spec, tool=True, host=host)

    def reset(self, key, problem) -> State:
        """`problem`: the rows' `device_reward.ProblemTable` fields (`target_int` read)."""
        del key
        zero = jnp.asarray(0, jnp.int32)
        target = problem.target_int.astype(jnp.int32)
        return State(target, zero, zero, jnp.asarray(False), zero)

    def step(self, state: State, action, action_mask):
        real = action_mask.astype(bool)
        last_token = env_lib.last_token(action, action_mask, tokenizer.PAD)
        answered = last_token == tokenizer.EOS
        called = (last_token == CALL) & self.tool
        # the answer: the integer after the last '=' of the turn, before EOS
        answer, parsed = parse_int(action, real & (action != tokenizer.EOS))
        correct = answered & parsed & (answer == state.target)
        length = self.spec.observation_tokens
        truncated = jnp.asarray(False)
        if self.host is not None and length:  # the call's text, without the call token
            tokens, mask, status = self.host(action, real & (action != CALL), called, length)
            obs, ok = Observation(tokens, mask), status != host_tool.FAILED
            truncated = status == host_tool.TRUNCATED
        elif length:
            value, ok = evaluate(action, real)
            good_t, good_m = number_tokens(value, length)
            err_t, err_m = _error_tokens(length)
            obs = Observation(jnp.where(ok, good_t, err_t), jnp.where(ok, good_m, err_m))
        else:
            obs = Observation(jnp.zeros((0,), jnp.int32), jnp.zeros((0,), jnp.int32))
            ok = jnp.asarray(True)
        calls = state.calls + called.astype(jnp.int32)
        errors = state.errors + (called & ~ok).astype(jnp.int32)
        cut = state.truncated + (called & truncated).astype(jnp.int32)
        new = State(state.target, calls, errors, state.correct | correct, cut)
        done = ~called  # an answer, or a turn that ran out of budget
        return obs, new, correct.astype(jnp.float32), done

    def success(self, state: State) -> jax.Array:
        return state.correct

    def metrics(self, state: State) -> dict[str, jax.Array]:
        """Tool calls per episode, how many were answered with an error, how many cut short."""
        return {
            "tool/calls": state.calls.astype(jnp.float32),
            "tool/errors": state.errors.astype(jnp.float32),
            "tool/truncated": state.truncated.astype(jnp.float32),
        }


def parse_int(tokens: jax.Array, real: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`grammar.parse_int` of the real text (`real [A]`, a prefix of the turn) after the last '='
    of `tokens [A]` (`-?[0-9]{1,9}`): (value int32, ok bool), by
    `device_reward.parse_int_span`."""
    idx = jnp.arange(tokens.shape[0])
    start = jnp.max(jnp.where(real & (tokens == _EQUALS), idx, -1)) + 1
    stop = jnp.max(jnp.where(real, idx, -1)) + 1
    return device_reward.parse_int_span(tokens, start, stop)
