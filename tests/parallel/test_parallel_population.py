"""Sharded PPO population == single device, and the sharded chunk compiles once.

8 fake CPU devices; mesh (8,) "seeds" (one learner per device) and (4, 2) "seeds" x "data" (two
agents per device pair, each learner's environments split over the pair).
"""

import re
import types

import chex
import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from rljax import envs
from rljax.agents import ppo
from rljax.parallel import learner_axis
from rljax.parallel import mesh as mesh_lib
from rljax.train import experiment

pytestmark = pytest.mark.slow  # a shared fixture and three mesh compiles: ~55 s on 2 cores

CONFIG = ppo.Config(
    num_envs=4, num_steps=16, num_epochs=2, num_minibatches=2, num_updates=4, hidden=(16, 16)
)
HPARAMS = (
    ("lr", 2.5e-4),
    ("clip_eps", 0.2),
    ("ent_coef", 0.01),
    ("vf_coef", 0.5),
    ("gamma", 0.99),
    ("gae_lambda", 0.95),
)
RUN = experiment.RunConfig(
    env_name="CartPole-v1", workdir="", num_seeds=4, hparams=HPARAMS, sweep=(("lr", "1e-3,3e-4"),)
)


def _counted_agent():
    """PPO whose ``train_chunk`` fails on a second trace (a silent recompile)."""
    return types.SimpleNamespace(
        init=ppo.init, Hparams=ppo.Hparams, train_chunk=chex.assert_max_traces(ppo.train_chunk, n=1)
    )


def _train(mesh_config, rules, num_chunks=2):
    """Runs ``num_chunks`` chunks of 1 update of 8 agents (2 lr values x 4 seeds)."""
    chex.clear_trace_counter()
    env = envs.make(RUN.env_name)
    points = experiment.validate_run(RUN, ppo, CONFIG)
    learner = _counted_agent()
    mesh = None if mesh_config is None else mesh_lib.make_mesh(mesh_config)
    states, shardings = experiment.init_on_mesh(learner, CONFIG, env, RUN, points, mesh, rules)
    chunk_fn = experiment.make_chunk_fn(learner, CONFIG, env, 1, shardings)
    metrics = []
    for _ in range(num_chunks):
        states, m = chunk_fn(states)
        metrics.append(jax.device_get(m))
    return states, metrics, chunk_fn


@pytest.fixture(scope="module")
def reference():
    states, metrics, _ = _train(None, None)
    return states, metrics


def _assert_close(states, metrics, reference):
    ref_states, ref_metrics = reference
    for got, want in zip(metrics, ref_metrics, strict=True):
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_allclose(got[key], want[key], rtol=2e-5, atol=2e-6, err_msg=key)
    flat_ref = jax.tree_util.tree_leaves_with_path(jax.device_get(ref_states))
    flat = jax.tree.leaves(jax.device_get(states))
    for (path, want), got in zip(flat_ref, flat, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=str(path))


@pytest.mark.timeout(240)
def test_seeds_sharded_ppo_matches_single_device(reference):
    cfg = mesh_lib.MeshConfig((8,), ("seeds",))
    states, metrics, chunk_fn = _train(cfg, learner_axis.SEEDS)
    # Agents never talk to each other: the only collectives gather the [A=8, 1] metrics.
    hlo = chunk_fn.lower(states).compile().as_text()
    assert not re.search(r"all-reduce\(|all-to-all\(|collective-permute\(", hlo)
    assert set(re.findall(r"= (\S+) all-gather\(", hlo)) == {"f32[8,1]{1,0}"}
    kernel = states.params["params"]["MLP_0"]["Dense_0"]["kernel"]
    assert kernel.sharding.spec == P("seeds")
    assert {s.data.shape[0] for s in kernel.addressable_shards} == {1}  # one learner per device
    _assert_close(states, metrics, reference)


@pytest.mark.timeout(240)
def test_seeds_and_envs_sharded_ppo_matches_single_device(reference):
    cfg = mesh_lib.MeshConfig((4, 2), ("seeds", "data"))
    states, metrics, _ = _train(cfg, learner_axis.SEEDS_AND_ENVS)
    obs = states.env.env.obs  # [A=8, B=4, 4]
    assert obs.sharding.spec == P("seeds", "data")
    assert {s.data.shape[:2] for s in obs.addressable_shards} == {(2, 2)}
    assert states.params["params"]["MLP_1"]["Dense_0"]["kernel"].sharding.spec == P("seeds")
    _assert_close(states, metrics, reference)


def test_population_not_divisible_by_mesh_is_a_clear_error():
    env = envs.make(RUN.env_name)
    points = experiment.validate_run(RUN, ppo, CONFIG)
    shapes = experiment.init_population(ppo, CONFIG, env, RUN, points, abstract=True)
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((1, 8), ("seeds", "data")))
    with pytest.raises(ValueError, match="dimension 1 of size 4 cannot be split over .*'data'"):
        learner_axis.shardings(mesh, shapes, learner_axis.SEEDS_AND_ENVS)  # B=4 envs on 8 devices
    mesh3 = mesh_lib.make_mesh(mesh_lib.MeshConfig((-1,), ("seeds",)), jax.devices()[:3])
    with pytest.raises(ValueError, match="dimension 0 of size 8 cannot be split"):
        learner_axis.shardings(mesh3, shapes, learner_axis.SEEDS)
