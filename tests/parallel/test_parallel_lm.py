"""The small-LM RLVR trainer sharded (data parallel + FSDP [+ tensor]) == one device.

8 fake CPU devices. A tiny transformer samples G completions for B prompts (sharded sampler),
rewards are fixed, and two GRPO updates run with parameters, reference parameters and optimizer
state sharded by rljax.parallel.steps rules and the rows split over data x fsdp.

The optimizer is swapped for SGD with momentum: Adam's first step is lr * sign(g), which turns
float-rounding differences in near-zero gradient entries (summation order differs when sharded)
into lr-sized parameter differences, so Adam would only allow a loose comparison. Everything
else (log-probs, advantages, KL, minibatch scan, gradient clipping) is the trainer's own code.
"""

import chex
import jax
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

pytest.importorskip("rljax.lm.rlvr")  # lands on main from its own branch

from rljax.lm import presets, rlvr, sampling
from rljax.lm.data import completion_length, encode_prompts
from rljax.lm.model import TransformerConfig, init_params
from rljax.lm.tasks import TASKS, make_split
from rljax.parallel import lm as parallel_lm
from rljax.parallel import mesh as mesh_lib
from rljax.parallel import sharding, steps

TASK = TASKS["arithmetic"]
MODEL = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=24)
NUM_PROMPTS, GROUP = 8, 2
MESHES = [
    ((2, 4), ("data", "fsdp"), steps.LM_FSDP),
    ((2, 2, 2), ("data", "fsdp", "tensor"), steps.LM_FSDP_TENSOR),
]


def _sgd(cfg):
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.sgd(0.05, momentum=0.9))


@pytest.fixture(autouse=True)
def sgd_optimizer(monkeypatch):
    monkeypatch.setattr(rlvr, "make_optimizer", _sgd)


@pytest.fixture(scope="module")
def setup():
    problems = make_split(TASK, num_per_level=8, seed=0)[:NUM_PROMPTS]
    tokens, mask = encode_prompts(TASK, problems)
    tokens, mask = np.repeat(tokens, GROUP, 0), np.repeat(mask, GROUP, 0)
    # Host copies: donated state buffers must never alias the shared fixture.
    params = jax.tree.map(np.asarray, init_params(MODEL, jax.random.key(0)))
    cfg, _ = presets.make_rl_config("grpo", completion_length=completion_length(TASK))
    return params, tokens, mask, cfg


def _sample_kwargs():
    return dict(max_new_tokens=8, temperature=1.0, top_p=1.0)


def _batch(prompt_tokens, prompt_mask, completions):
    rng = np.random.default_rng(0)
    rewards = rng.integers(0, 2, size=(NUM_PROMPTS, GROUP)).astype(np.float32)
    return rlvr.RolloutBatch(
        prompt_tokens, prompt_mask, np.asarray(completions.tokens), np.asarray(completions.mask),
        rewards, np.ones((NUM_PROMPTS, GROUP), np.float32),
    )  # fmt: skip


def _reference(setup):
    params, tokens, mask, cfg = setup
    completions = jax.jit(
        lambda p, t, m, k: sampling.sample(p, MODEL, t, m, k, **_sample_kwargs())
    )(params, tokens, mask, jax.random.key(1))
    batch = _batch(tokens, mask, completions)
    update = jax.jit(lambda s, b, k: rlvr.update(s, b, k, cfg=cfg, model_cfg=MODEL))
    state, metrics = rlvr.init(cfg, params), []
    for i in range(2):
        state, m = update(state, batch, jax.random.key(10 + i))
        metrics.append(jax.device_get(m))
    return completions, state, metrics


@pytest.fixture(scope="module")
def reference(setup):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rlvr, "make_optimizer", _sgd)
        return _reference(setup)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("shape, axes, rules", MESHES)
def test_sharded_sampling_and_rl_step_match_single_device(
    setup, reference, shape, axes, rules, monkeypatch
):
    chex.clear_trace_counter()
    monkeypatch.setattr(rlvr, "update", chex.assert_max_traces(rlvr.update, n=1))
    params, tokens, mask, cfg = setup
    ref_completions, ref_state, ref_metrics = reference
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig(shape, axes))

    sample, param_shardings = parallel_lm.jit_sample(
        mesh, params, model_cfg=MODEL, param_rules=rules, **_sample_kwargs()
    )
    completions = sample(sharding.shard(params, param_shardings), tokens, mask, jax.random.key(1))
    rows = tuple(a for a in ("data", "fsdp") if a in axes)
    assert completions.tokens.sharding.spec == P(rows if len(rows) > 1 else rows[0])
    np.testing.assert_array_equal(np.asarray(completions.tokens), ref_completions.tokens)
    np.testing.assert_array_equal(np.asarray(completions.mask), ref_completions.mask)

    batch = _batch(tokens, mask, completions)
    state = rlvr.init(cfg, params)
    update, state_shardings, _ = parallel_lm.jit_rl_update(
        mesh, state, batch, cfg=cfg, model_cfg=MODEL, state_rules=rules
    )
    state = sharding.shard(state, state_shardings)
    metrics = []
    for i in range(2):
        state, m = update(state, batch, jax.random.key(10 + i))
        metrics.append(jax.device_get(m))

    mlp_in = state.params["block_0"]["mlp_in"]["kernel"]  # [D=32, F=64]
    mu = state.opt_state[1][0].trace["block_0"]["mlp_in"]["kernel"]  # momentum
    want = P(None, "fsdp") if "tensor" not in axes else P("fsdp", "tensor")
    assert mlp_in.sharding.spec == want and mu.sharding.spec == want
    assert state.ref_params["block_0"]["mlp_in"]["kernel"].sharding.spec == want
    for got, want_m in zip(metrics, ref_metrics, strict=True):
        for key in want_m:
            np.testing.assert_allclose(got[key], want_m[key], rtol=1e-4, atol=1e-6, err_msg=key)
    for (path, want_leaf), got in zip(
        jax.tree_util.tree_leaves_with_path(jax.device_get(ref_state)),
        jax.tree.leaves(jax.device_get(state)),
        strict=True,
    ):
        np.testing.assert_allclose(got, want_leaf, rtol=1e-4, atol=1e-6, err_msg=str(path))
