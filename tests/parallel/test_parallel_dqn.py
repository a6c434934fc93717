"""Sharded DQN population == single device; the sharded chunk compiles once (8 fake devices).

Mesh (4, 2) "seeds" x "data": two agents per device pair, each learner's environments and its
replay buffer's environment axis split over the pair (seeds-only sharding is the PPO test's).
"""

import types

import chex
import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

pytest.importorskip("rljax.agents.dqn")  # lands on main from its own branch

from rljax import envs
from rljax.agents import dqn
from rljax.parallel import learner_axis
from rljax.parallel import mesh as mesh_lib
from rljax.train import experiment

CONFIG = dqn.Config(
    num_envs=4,
    buffer_size=64,
    batch_size=8,
    learning_starts=8,
    target_update_every=8,
    hidden=(16,),
    num_updates=8,
)
RUN = experiment.RunConfig(
    env_name="CartPole-v1",
    workdir="",
    num_seeds=8,
    hparams=(
        ("lr", 1e-3),
        ("gamma", 0.99),
        ("eps_start", 1.0),
        ("eps_end", 0.05),
        ("eps_decay_steps", 16.0),
        ("hl_sigma", 0.75),
        ("reward_noise", 0.0),
    ),
)


def _train(mesh_config, rules):
    """Two chunks of 4 updates of 8 agents; learning starts within the first chunk."""
    chex.clear_trace_counter()
    learner = types.SimpleNamespace(
        init=dqn.init, Hparams=dqn.Hparams, train_chunk=chex.assert_max_traces(dqn.train_chunk, n=1)
    )
    env = envs.make(RUN.env_name)
    points = experiment.validate_run(RUN, dqn, CONFIG)
    mesh = None if mesh_config is None else mesh_lib.make_mesh(mesh_config)
    states, shardings = experiment.init_on_mesh(learner, CONFIG, env, RUN, points, mesh, rules)
    chunk_fn = experiment.make_chunk_fn(learner, CONFIG, env, 4, shardings)
    metrics = []
    for _ in range(2):
        states, m = chunk_fn(states)
        metrics.append(jax.device_get(m))
    return states, metrics


@pytest.fixture(scope="module")
def reference():
    return _train(None, None)


@pytest.mark.timeout(240)
def test_sharded_dqn_matches_single_device(reference):
    config = mesh_lib.MeshConfig((4, 2), ("seeds", "data"))
    states, metrics = _train(config, learner_axis.SEEDS_ENVS_AND_REPLAY)
    obs_rows = jax.tree.leaves(states.buffer.data)[0]  # [A=8, C=16, B=4, ...]
    assert obs_rows.sharding.spec == P("seeds", None, "data")
    assert {s.data.shape[:3] for s in obs_rows.addressable_shards} == {(2, 16, 2)}
    assert states.env.env.obs.sharding.spec == P("seeds", "data")
    ref_states, ref_metrics = reference
    for got, want_m in zip(metrics, ref_metrics, strict=True):
        for key in want_m:
            np.testing.assert_allclose(got[key], want_m[key], rtol=2e-5, atol=2e-6, err_msg=key)
    for (path, want_leaf), got in zip(
        jax.tree_util.tree_leaves_with_path(jax.device_get(ref_states)),
        jax.tree.leaves(jax.device_get(states)),
        strict=True,
    ):
        np.testing.assert_allclose(got, want_leaf, rtol=2e-5, atol=2e-6, err_msg=str(path))
