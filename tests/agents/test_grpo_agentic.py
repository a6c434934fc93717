"""The GRPO learner on episodes of a text environment: one turn without a tool is the
single-turn learner bit for bit; observation tokens reach no loss and no gradient."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.agents import grpo
from rljax.agents.grpo import presets
from rljax.lm.agentic import calculator
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import calculator as calculator_task
from rljax.lm.tasks import device_reward
from rljax.lm.tasks.batches import prompt_length

_UPDATE = jax.jit(grpo.update, static_argnums=0)
SEMI = tokenizer.encode(";")[0]


def _setup(env, bias=0.0):
    rng = np.random.default_rng(0)
    problems = [calculator_task.generate(rng, 1 + i % 2) for i in range(8)]
    length = env.spec.episode_length()
    model = TransformerConfig(
        d_model=16, n_layers=1, n_heads=2, d_ff=32,
        max_len=prompt_length(calculator_task.TASK) + length,
    )  # fmt: skip
    config = grpo.Config(
        model=model, reward_kind="final_int", completion_length=length, prompts_per_step=2,
        group_size=2, max_epochs=1, max_minibatches=1, env=env,
    )  # fmt: skip
    grpo.validate(config)
    table = jax.tree.map(jnp.asarray, device_reward.make_table(calculator_task.TASK, problems))
    params = init_params(model, jax.random.key(0))
    params["head"]["kernel"] = params["head"]["kernel"].at[:, SEMI].add(bias)
    return config, grpo.TaskData(params, table, table)


def _state(config, data, **fields):
    fields = dict(num_epochs=1, num_minibatches=1, **fields)
    values = presets.hparam_values(presets.resolve("grpo", **fields))
    return grpo.init(config, data, jax.random.key(1), grpo.make_hparams(values))


def test_one_turn_without_tool_is_the_single_turn_learner_bit_for_bit():
    config, data = _setup(calculator.CalculatorEnv.make(action_tokens=6, tool=False))
    plain = dataclasses.replace(config, env=None)
    a, b = _state(config, data), _state(plain, data)
    for _ in range(2):
        a, ma = _UPDATE(config, data, a)
        b, mb = _UPDATE(plain, data, b)
    a, b = (s._replace(key=jax.random.key_data(s.key)) for s in (a, b))
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert set(ma) - set(mb) == {"episode/turns", "tool/calls", "tool/errors", "tool/truncated"}
    for k in mb:
        np.testing.assert_array_equal(ma[k], mb[k], err_msg=k)
    assert float(ma["tool/calls"]) == 0.0 and float(ma["episode/turns"]) == 1.0


def test_observation_tokens_reach_no_gradient(monkeypatch):
    env = calculator.CalculatorEnv.make(max_turns=3, action_tokens=6, observation_tokens=6)
    config, data = _setup(env, bias=4.0)  # ';' likely: tool calls and observations
    # rewards are all 0 for this untrained model: the entropy bonus and the KL give the gradient
    state = _state(config, data, entropy_coef=0.01, kl_coef=0.1)
    k_prompts, k_sample, *_ = jax.random.split(jax.random.fold_in(state.key, state.step), 4)
    ro = grpo._rollout(config, data, state, k_prompts, k_sample)
    env_tokens = np.asarray(ro.completion_mask) * (1 - np.asarray(ro.mask))
    assert env_tokens.sum() > 0 and float(ro.metrics["tool/calls"]) > 0
    _, m0 = _UPDATE(config, data, state)
    real = grpo.completion_token_stats

    def perturbed(*args, **kwargs):  # noise where the environment wrote: what logits say there
        stats = real(*args, **kwargs)
        tokens = args[4]
        if tokens.shape != ro.tokens.shape:
            return stats
        noise = jnp.asarray(env_tokens, jnp.float32) * 7.0
        return tuple(x + noise * (i + 1) for i, x in enumerate(stats))

    monkeypatch.setattr(grpo, "completion_token_stats", perturbed)
    _, m1 = jax.jit(grpo.update, static_argnums=0)(config, data, state)
    for k in ("grad_norm", "loss/total", "loss/policy", "entropy", "kl/k3", "tool/calls"):
        np.testing.assert_array_equal(m0[k], m1[k], err_msg=k)
    assert float(m0["grad_norm"]) > 0


@pytest.mark.parametrize(
    "field,value,match",
    [("completion_length", 5, "episode length"), ("reference_samples", 2, "reference_samples")],
)
def test_env_config_errors_name_the_field(field, value, match):
    config, _ = _setup(calculator.CalculatorEnv.make(max_turns=2, action_tokens=4))
    with pytest.raises(ValueError, match=match):
        grpo.validate(dataclasses.replace(config, **{field: value}))
