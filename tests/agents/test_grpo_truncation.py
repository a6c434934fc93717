"""The learner's `mask_truncated_completions`: completions that never emitted a stop token
train nothing, while they still count as sequences and keep their rewards and advantages."""

import jax
import jax.numpy as jnp
import numpy as np

from rljax.agents import grpo
from rljax.agents.grpo import objective, presets
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import TASKS, arithmetic, device_reward
from rljax.lm.tasks.batches import prompt_length

_UPDATE = jax.jit(grpo.update, static_argnums=0)


def _setup():
    """A one-layer untrained model sampling two tokens: every completion is cut off."""
    task = TASKS["arithmetic"]
    model = TransformerConfig(
        d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=prompt_length(task) + 2
    )
    config = grpo.Config(
        model=model, reward_kind=device_reward.KINDS["arithmetic"], completion_length=2,
        prompts_per_step=2, group_size=2, max_epochs=1, max_minibatches=1,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    table = device_reward.make_table(task, [arithmetic.generate(rng, 1) for _ in range(8)])
    table = jax.tree.map(jnp.asarray, table)
    return config, grpo.TaskData(init_params(model, jax.random.key(0)), table, table)


def _state(config, data, **fields):
    values = presets.hparam_values(presets.resolve("grpo", **fields))
    return grpo.init(config, data, jax.random.key(1), grpo.make_hparams(values))


def test_truncated_completions_train_nothing_and_keep_their_rewards():
    config, data = _setup()
    # rewards are all 0 (advantages 0) and π = π_ref: the entropy bonus gives the gradient
    fields = dict(num_epochs=1, num_minibatches=1, entropy_coef=0.01)
    plain, masked = (_state(config, data, mask_truncated_completions=m, **fields) for m in (0, 1))
    # The step's rollout, drawn with the step's own keys: every completion is truncated.
    k_prompts, k_sample, *_ = jax.random.split(jax.random.fold_in(plain.key, plain.step), 4)
    ro = grpo._rollout(config, data, plain, k_prompts, k_sample)
    kept = objective.loss_rows(jnp.asarray(1), ro.tokens, ro.completion_mask, config.model.eos_ids)
    np.testing.assert_array_equal(kept, 0.0)
    _, m0 = _UPDATE(config, data, plain)
    _, m1 = _UPDATE(config, data, masked)
    assert float(m0["grad_norm"]) > 0 and float(m0["loss/total"]) != 0
    assert float(m1["grad_norm"]) == 0.0 and float(m1["loss/total"]) == 0.0
    # sampling, rewards and advantages do not depend on the option
    for key in ("reward/mean", "adv/abs_mean", "response/length", "tokens/generated"):
        assert float(m0[key]) == float(m1[key]), key
