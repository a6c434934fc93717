"""jit_step: data-parallel and FSDP steps == single device, one compile (8 fake CPU devices)."""

from typing import NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from rljax.parallel import mesh as mesh_lib
from rljax.parallel import sharding, steps


class _State(NamedTuple):
    params: dict
    opt_state: optax.OptState
    step: jax.Array


class _Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Dense(32)(x))
        return nn.Dense(1)(x)[..., 0]


OPT = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-2, weight_decay=0.01))


def _step(state: _State, batch: dict, key: jax.Array):
    noise = 0.01 * jax.random.normal(jax.random.fold_in(key, state.step), batch["y"].shape)

    def loss(params):
        return jnp.mean(jnp.square(_Net().apply(params, batch["x"]) - batch["y"] - noise))

    value, grads = jax.value_and_grad(loss)(state.params)
    updates, opt_state = OPT.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return _State(params, opt_state, state.step + 1), {"loss": value}


def _init():
    params = _Net().init(jax.random.PRNGKey(0), jnp.zeros((1, 16)))
    return _State(params, OPT.init(params), jnp.zeros((), jnp.int32))


def _batches(n=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 64, 16)).astype(np.float32)
    return [{"x": x[i], "y": np.sin(x[i].sum(-1))} for i in range(n)]


def _run(mesh_config):
    chex.clear_trace_counter()
    step = chex.assert_max_traces(_step, n=1)
    state, batches, key = _init(), _batches(), jax.random.PRNGKey(1)
    if mesh_config is None:
        fn = jax.jit(step, donate_argnums=0)
    else:
        mesh = mesh_lib.make_mesh(mesh_config)
        fn, state_sh, batch_sh = steps.jit_step(
            step, mesh, state, batches[0], state_rules=steps.LM_FSDP, num_rest=1
        )
        state = sharding.shard(state, state_sh)
    losses = []
    for batch in batches:
        state, metrics = fn(state, batch, key)
        losses.append(float(metrics["loss"]))
    return state, losses


@pytest.fixture(scope="module")
def reference():
    return _run(None)


@pytest.mark.parametrize(
    "shape, axes, kernel_spec",
    [((8,), ("fsdp",), P(None, "fsdp")), ((2, 4), ("data", "fsdp"), P(None, "fsdp"))],
)
def test_sharded_step_matches_single_device(reference, shape, axes, kernel_spec):
    state, losses = _run(mesh_lib.MeshConfig(shape, axes))
    ref_state, ref_losses = reference
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    kernel = state.params["params"]["Dense_0"]["kernel"]  # [16, 32]: split on 32
    assert kernel.sharding.spec == kernel_spec
    assert state.opt_state[1][0].mu["params"]["Dense_0"]["kernel"].sharding.spec == kernel_spec
    for (path, want), got in zip(
        jax.tree_util.tree_leaves_with_path(jax.device_get(ref_state)),
        jax.tree.leaves(jax.device_get(state)),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(path))


def test_batch_rows_split_over_data_and_fsdp():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("data", "fsdp")))
    batch = {"tokens": jnp.zeros((16, 5), jnp.int32), "mask": jnp.zeros((16, 5))}
    specs = sharding.partition_specs(mesh, batch, steps.BATCH)
    assert specs == {"tokens": P(("data", "fsdp")), "mask": P(("data", "fsdp"))}
    with pytest.raises(ValueError, match="dimension 0 of size 4 cannot be split"):
        sharding.partition_specs(mesh, {"tokens": jnp.zeros((4, 5))}, steps.BATCH)
