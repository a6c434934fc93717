"""experiment.run on a mesh end to end: sharded run, checkpoint, resume on a different mesh."""

import dataclasses

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from rljax.agents import ppo
from rljax.parallel import learner_axis
from rljax.parallel import mesh as mesh_lib
from rljax.train import experiment

CONFIG = ppo.Config(num_envs=4, num_steps=8, num_epochs=1, num_minibatches=2, hidden=(8,))
PER_UPDATE = ppo.env_steps_per_update(CONFIG)


def _run_config(workdir, **kwargs):
    return experiment.RunConfig(
        env_name="CartPole-v1",
        workdir=str(workdir),
        num_seeds=8,
        chunk_updates=1,
        checkpoint_every=1,
        progress=False,
        hparams=(
            ("lr", 2.5e-4),
            ("clip_eps", 0.2),
            ("ent_coef", 0.01),
            ("vf_coef", 0.5),
            ("gamma", 0.99),
            ("gae_lambda", 0.95),
        ),
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_run_on_mesh_then_resume_on_another_mesh(tmp_path, capsys):
    first = _run_config(
        tmp_path,
        total_timesteps=2 * PER_UPDATE,
        mesh=mesh_lib.MeshConfig((4, 2), ("seeds", "data")),
        sharding_rules=learner_axis.SEEDS_AND_ENVS,
    )
    states, summary = experiment.run(ppo, CONFIG, first)
    assert summary.updates_done == 2
    assert states.env.env.obs.sharding.spec == P("seeds", "data")
    assert (tmp_path / "metrics.jsonl").exists() and (tmp_path / "summary.json").exists()

    # Same run, longer budget, resumed on an (8,) "seeds" mesh from the (4, 2) checkpoint.
    second = dataclasses.replace(
        first,
        total_timesteps=3 * PER_UPDATE,
        resume=True,
        mesh=mesh_lib.MeshConfig((8,), ("seeds",)),
        sharding_rules=learner_axis.SEEDS,
    )
    resumed, summary = experiment.run(ppo, CONFIG, second)
    assert "resumed from update 2" in capsys.readouterr().out
    assert summary.updates_done == 3
    assert np.asarray(jax.device_get(resumed.step)).tolist() == [3] * 8
    kernel = resumed.params["params"]["MLP_0"]["Dense_0"]["kernel"]
    assert kernel.sharding.spec == P("seeds") and kernel.sharding.mesh.shape == {"seeds": 8}


def test_bad_mesh_fails_before_compiling(tmp_path):
    run = _run_config(
        tmp_path,
        total_timesteps=PER_UPDATE,
        mesh=mesh_lib.MeshConfig((1, 8), ("seeds", "data")),  # 4 envs cannot split 8 ways
        sharding_rules=learner_axis.SEEDS_AND_ENVS,
    )
    with pytest.raises(ValueError, match=r"'env/env/\S+' dimension 1 of size 4 cannot be split"):
        experiment.run(ppo, CONFIG, run)
