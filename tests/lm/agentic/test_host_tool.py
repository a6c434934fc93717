"""rljax.lm.agentic.host_tool: a Python function as a tool inside the compiled rollout; whatever
it does (raise, return a non-string, sleep past its deadline, answer too long, answer text the
tokenizer cannot encode) the episode goes on with an "error:..." observation and the run never
crashes or hangs."""

import time

import jax
import numpy as np
import pytest

from rljax.lm.agentic import calculator
from rljax.lm.agentic.host_tool import FAILED, OK, TRUNCATED, HostTool
from rljax.lm.agentic.rollout import sample_episodes
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import calculator as task
from rljax.lm.tasks import device_reward
from rljax.lm.tasks.batches import encode_prompts
from rljax.lm.tasks.grammar import parse_expression


def _calculator(text: str) -> str:  # a host calculator: parses, never evaluates
    parsed = parse_expression(text)
    return "=error" if parsed is None else f"={parsed.value}"


def _sleeps(text: str) -> str:
    time.sleep(5.0)
    return "=1"


def _raises(text: str) -> str:
    raise RuntimeError("tool broke")


BEHAVIOURS = {
    "answers": (_calculator, OK, "=10114"),
    "raises": (_raises, FAILED, "error:ru"),
    "not a string": (lambda text: 10114, FAILED, "error:no"),
    "sleeps past its deadline": (_sleeps, FAILED, "error:ti"),
    "answers too long": (lambda text: "=" + "9" * 40, TRUNCATED, "=9999999"),
    "answers outside the alphabet": (lambda text: "= 1 ", FAILED, "error:no"),
}


def _step(tool, text="347*29+51;"):
    env = calculator.CalculatorEnv.make(action_tokens=14, observation_tokens=8, host=tool)
    ids = tokenizer.encode(text)
    action = np.zeros(14, np.int32)
    action[: len(ids)] = ids
    problem = device_reward.make_table(task.TASK, [task.Problem("347*29+51=", "10114", 2)])
    state = env.reset(jax.random.key(0), jax.tree.map(lambda x: x[0], problem))
    step = jax.jit(env.step)
    return step(state, action, (action > 0).astype(np.int32))


@pytest.mark.parametrize("name", sorted(BEHAVIOURS))
def test_every_tool_behaviour_is_an_observation(name):
    fn, status, shown = BEHAVIOURS[name]
    tool = HostTool(fn, deadline_s=0.5)
    start = time.monotonic()
    obs, state, reward, done = _step(tool)
    assert time.monotonic() - start < 4.0  # the deadline, not the tool, bounds the step
    text, _ = tokenizer.decode(np.asarray(obs.tokens)[np.asarray(obs.mask) > 0].tolist() + [2])
    assert text == shown and not bool(done) and float(reward) == 0.0
    assert int(state.calls) == 1 and int(state.errors) == (status == FAILED)
    assert int(state.truncated) == (status == TRUNCATED)


def test_host_calculator_equals_the_device_calculator_in_episodes():
    cfg = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=80)
    params = init_params(cfg, jax.random.key(0))
    semi = tokenizer.encode(";")[0]
    params["head"]["kernel"] = params["head"]["kernel"].at[:, semi].add(3.0)
    problems = [task.generate(np.random.default_rng(i), 1 + i % 2) for i in range(6)]
    tokens, mask = encode_prompts(task.TASK, problems)
    table = jax.tree.map(np.asarray, device_reward.make_table(task.TASK, problems))
    out = {}
    for name, host in (("device", None), ("host", HostTool(_calculator, deadline_s=2.0))):
        env = calculator.CalculatorEnv.make(action_tokens=14, observation_tokens=8, host=host)
        run = jax.jit(sample_episodes, static_argnums=(1, 2))
        out[name] = run(params, cfg, env, tokens, mask, table, jax.random.key(3))
    assert float(np.sum(out["device"].state.calls)) > 0
    for field in ("tokens", "mask", "policy_mask", "rewards", "turns"):
        np.testing.assert_array_equal(getattr(out["device"], field), getattr(out["host"], field))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_a_deadline_that_is_not_positive_is_refused(bad):
    with pytest.raises(ValueError, match="deadline_s"):
        HostTool(_calculator, deadline_s=bad)
