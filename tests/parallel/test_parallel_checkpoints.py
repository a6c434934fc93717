"""A sharded checkpoint saved on a (4, 2) mesh restores on (8,) and (2, 4) meshes."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from rljax import envs
from rljax.agents import ppo
from rljax.io.checkpoints import Checkpointer
from rljax.parallel import learner_axis, sharding
from rljax.parallel import mesh as mesh_lib
from rljax.train import experiment

CONFIG = ppo.Config(num_envs=4, num_steps=8, num_minibatches=2, num_updates=2, hidden=(8,))
RUN = experiment.RunConfig(
    env_name="CartPole-v1",
    workdir="",
    num_seeds=8,
    hparams=(
        ("lr", 2.5e-4),
        ("clip_eps", 0.2),
        ("ent_coef", 0.01),
        ("vf_coef", 0.5),
        ("gamma", 0.99),
        ("gae_lambda", 0.95),
    ),
)


def _restore_on_mesh(ckpt, step, like, mesh, rules):
    """What a resumed run does (``rljax.train.loop``): restore onto the target shardings."""
    return ckpt.restore(step, sharding.abstract(like, sharding.tree_shardings(mesh, like, rules)))


def _assert_same_values(restored, saved):
    for (path, want), got in zip(
        jax.tree_util.tree_leaves_with_path(saved), jax.tree.leaves(restored), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=str(path))


@pytest.mark.timeout(120)
def test_population_checkpoint_restores_on_other_mesh_shapes(tmp_path):
    env = envs.make(RUN.env_name)
    points = experiment.validate_run(RUN, ppo, CONFIG)
    shapes = experiment.init_population(ppo, CONFIG, env, RUN, points, abstract=True)
    save_mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((4, 2), ("seeds", "data")))
    save_shardings, _ = learner_axis.shardings(save_mesh, shapes, learner_axis.SEEDS_AND_ENVS)
    states = experiment.init_population(ppo, CONFIG, env, RUN, points, save_shardings)
    assert states.env.env.obs.sharding.spec == P("seeds", "data")
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    ckpt.save(3, states, {"note": "saved on (4, 2)"})
    ckpt.wait()

    targets = [
        (mesh_lib.MeshConfig((8,), ("seeds",)), learner_axis.SEEDS, P("seeds"), (1, 4)),
        (
            mesh_lib.MeshConfig((2, 4), ("seeds", "data")),
            learner_axis.SEEDS_AND_ENVS,
            P("seeds", "data"),
            (4, 1),
        ),
    ]
    for config, rules, obs_spec, obs_shard in targets:
        mesh = mesh_lib.make_mesh(config)
        restored, meta = _restore_on_mesh(ckpt, 3, shapes, mesh, rules)
        assert meta == {"note": "saved on (4, 2)"}
        obs = restored.env.env.obs  # [A=8, B=4, 4]
        assert obs.sharding.mesh.shape == mesh.shape and obs.sharding.spec == obs_spec
        assert {s.data.shape[:2] for s in obs.addressable_shards} == {obs_shard}
        assert restored.params["params"]["MLP_0"]["Dense_0"]["kernel"].sharding.spec == P("seeds")
        _assert_same_values(restored, states)
    ckpt.close()


FSDP_RULES = (
    (r"(^|/)params/", "largest:fsdp"),  # weights and their Adam moments, split once
    (r".*", ()),  # counts and scalars: replicated
)


def test_fsdp_params_and_adam_state_restore_on_other_mesh_shapes(tmp_path):
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {  # flax layout: weights under "params", so Adam moments match the same rule
        "params": {
            "embed": jax.random.normal(keys[0], (64, 16)),
            "mlp": {"w_in": jax.random.normal(keys[1], (16, 48)), "b_in": jnp.zeros(48)},
            "head": jax.random.normal(keys[2], (16, 64)),
        }
    }
    opt_state = optax.adam(1e-3).init(params)
    opt_state = jax.tree.map(lambda x: x + 0.5, opt_state)  # non-trivial moments
    tree = {"params": params, "opt_state": opt_state}
    save_mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((4, 2), ("data", "fsdp")))
    tree = sharding.shard(tree, sharding.tree_shardings(save_mesh, tree, FSDP_RULES))
    assert tree["params"]["params"]["embed"].sharding.spec == P("fsdp", None)
    assert tree["opt_state"][0].mu["params"]["mlp"]["w_in"].sharding.spec == P(None, "fsdp")
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    ckpt.save(1, tree, {})
    ckpt.wait()
    like = jax.eval_shape(lambda t: t, tree)
    for config, fsdp in [(mesh_lib.MeshConfig((8,), ("fsdp",)), 8), ((2, 4), 4)]:
        if isinstance(config, tuple):
            config = mesh_lib.MeshConfig(config, ("data", "fsdp"))
        mesh = mesh_lib.make_mesh(config)
        restored, _ = _restore_on_mesh(ckpt, 1, like, mesh, FSDP_RULES)
        w_in = restored["opt_state"][0].nu["params"]["mlp"]["w_in"]
        assert w_in.sharding.mesh.shape == mesh.shape and w_in.sharding.spec == P(None, "fsdp")
        assert {s.data.shape for s in w_in.addressable_shards} == {(16, 48 // fsdp)}
        assert restored["params"]["params"]["embed"].sharding.spec == P("fsdp", None)
        assert restored["opt_state"][0].count.sharding.is_fully_replicated
        _assert_same_values(restored, tree)
    ckpt.close()
