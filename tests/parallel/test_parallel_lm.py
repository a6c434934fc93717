"""The small-LM RLVR learner sharded (data parallel + FSDP [+ tensor]) == one device.

8 fake CPU devices. A tiny transformer samples completions (sharded sampler), and two whole
learner steps (sampling, device rewards, advantages, epochs x minibatches of updates) run with
parameters, base parameters and optimizer state sharded by rljax.parallel.steps rules.

The optimizer is swapped for SGD with momentum: Adam's first step is lr * sign(g), which turns
float-rounding differences in near-zero gradient entries (summation order differs when sharded)
into lr-sized parameter differences, so Adam would only allow a loose comparison. Everything
else is the learner's own code.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from rljax.agents import grpo
from rljax.agents.grpo import presets
from rljax.lm.model import sampling
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import TASKS, device_reward, make_split
from rljax.lm.tasks.batches import encode_prompts
from rljax.parallel import mesh as mesh_lib
from rljax.parallel import sharding, steps
from rljax.train import lm_sharding

TASK = TASKS["arithmetic"]
MODEL = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=24)
NUM_PROMPTS, GROUP = 8, 2
MESHES = [
    ((2, 4), ("data", "fsdp"), steps.LM_FSDP),
    ((2, 2, 2), ("data", "fsdp", "tensor"), steps.LM_FSDP_TENSOR),
]
CONFIG = grpo.Config(
    model=MODEL, reward_kind="final_int", completion_length=8, prompts_per_step=NUM_PROMPTS,
    group_size=GROUP,
)  # fmt: skip


def _sgd(config):
    return optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.sgd(1.0, momentum=0.9)
    )


@pytest.fixture(autouse=True)
def sgd_optimizer(monkeypatch):
    monkeypatch.setattr(grpo, "_optimizer", _sgd)


@pytest.fixture(scope="module")
def setup():
    problems = make_split(TASK, num_per_level=8, seed=0)
    tokens, mask = encode_prompts(TASK, problems[:NUM_PROMPTS])
    tokens, mask = np.repeat(tokens, GROUP, 0), np.repeat(mask, GROUP, 0)
    # Host copies: donated state buffers must never alias the shared fixture.
    base = jax.tree.map(np.asarray, init_params(MODEL, jax.random.key(0)))
    table = jax.tree.map(np.asarray, device_reward.make_table(TASK, problems))
    data = grpo.TaskData(base, table, jax.tree.map(lambda x: x[:8], table))
    values = presets.hparam_values(presets.resolve("grpo", entropy_coef=0.01))
    return tokens, mask, data, jax.tree.map(np.asarray, grpo.make_hparams(values))


def _state(data, hp):
    state = grpo.init(CONFIG, data, jax.random.PRNGKey(3), hp)
    # Move the policy off the base so the KL term has a gradient.
    noise = jax.tree.map(
        lambda p: 0.05 * jnp.sin(jnp.arange(p.size).reshape(p.shape)), state.params
    )
    params = jax.tree.map(jnp.add, state.params, noise)
    return state._replace(params=jax.tree.map(np.asarray, params))


def _sample_kwargs():
    return dict(max_new_tokens=8, temperature=1.0, top_p=1.0)


def _reference(setup):
    tokens, mask, data, hp = setup
    completions = jax.jit(
        lambda p, t, m, k: sampling.sample(p, MODEL, t, m, k, **_sample_kwargs())
    )(data.base_params, tokens, mask, jax.random.key(1))
    update = jax.jit(lambda s, d: grpo.update(CONFIG, d, s))
    state, metrics = _state(data, hp), []
    for _ in range(2):
        state, m = update(state, data)
        metrics.append(jax.device_get(m))
    return completions, state, metrics


@pytest.fixture(scope="module")
def reference(setup):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grpo, "_optimizer", _sgd)
        return _reference(setup)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("shape, axes, rules", MESHES)
def test_sharded_sampling_and_learner_step_match_single_device(
    setup, reference, shape, axes, rules, monkeypatch
):
    chex.clear_trace_counter()
    monkeypatch.setattr(grpo, "update", chex.assert_max_traces(grpo.update, n=1))
    tokens, mask, data, hp = setup
    ref_completions, ref_state, ref_metrics = reference
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig(shape, axes))

    sample, param_shardings = lm_sharding.jit_sample(
        mesh, data.base_params, model_cfg=MODEL, param_rules=rules, **_sample_kwargs()
    )
    base = sharding.shard(data.base_params, param_shardings)
    completions = sample(base, tokens, mask, jax.random.key(1))
    rows = tuple(a for a in ("data", "fsdp") if a in axes)
    assert completions.tokens.sharding.spec == P(rows if len(rows) > 1 else rows[0])
    np.testing.assert_array_equal(np.asarray(completions.tokens), ref_completions.tokens)
    np.testing.assert_array_equal(np.asarray(completions.mask), ref_completions.mask)

    state = _state(data, hp)
    update, state_shardings, data_shardings = lm_sharding.jit_learner_update(
        mesh, CONFIG, state, data, state_rules=rules
    )
    state = sharding.shard(state, state_shardings)
    placed = sharding.shard(data, data_shardings)
    metrics = []
    for _ in range(2):
        state, m = update(state, placed)
        metrics.append(jax.device_get(m))

    mlp_in = state.params["block_0"]["mlp_in"]["kernel"]  # [D=32, F=64]
    mu = state.opt_state[1][0].trace["block_0"]["mlp_in"]["kernel"]  # momentum
    want = P(None, "fsdp") if "tensor" not in axes else P("fsdp", "tensor")
    assert mlp_in.sharding.spec == want and mu.sharding.spec == want
    assert placed.base_params["block_0"]["mlp_in"]["kernel"].sharding.spec == want
    assert float(ref_metrics[0]["grad_norm"]) > 0  # a step that moved the parameters
    for got, want_m in zip(metrics, ref_metrics, strict=True):
        for key in want_m:
            np.testing.assert_allclose(got[key], want_m[key], rtol=1e-4, atol=1e-6, err_msg=key)
    for (path, want_leaf), got in zip(
        jax.tree_util.tree_leaves_with_path(jax.device_get(ref_state)),
        jax.tree.leaves(jax.device_get(state)),
        strict=True,
    ):
        np.testing.assert_allclose(got, want_leaf, rtol=1e-4, atol=1e-5, err_msg=str(path))
