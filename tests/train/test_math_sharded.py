"""Math RLVR on a mesh: the mesh / rules / distributed fields refused before anything compiles,
the population's shardings, and runs split over 8 fake CPU devices (learners over `seeds`, each
learner's weights over `fsdp`, or over `fsdp` and `tensor`) equal to the one-device run."""

import dataclasses
import json
import os

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec
from test_math_rlvr import sample_files  # the GSM8K-layout sample files, written the same way

from rljax.parallel import distributed, learner_axis, steps
from rljax.parallel import mesh as mesh_lib
from rljax.train import lm_mesh, math_experiment, population

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = math_experiment.MathRunConfig("none.jsonl", "none.jsonl", "unused")


def test_validate_refuses_bad_mesh_fields_before_loading():
    for change, message in [
        (dict(mesh_axes=("learners",)), "mesh.axes has 'learners'; allowed: seeds, data"),
        (dict(mesh_shape=(2, 2)), r"mesh_shape / mesh_axes: mesh.shape=\(2, 2\) and mesh.axes"),
        (dict(mesh_shape=(-1, -1), mesh_axes=("seeds", "fsdp")), "at most one -1"),
        (dict(rules="zero3"), "rules='zero3' is unknown; allowed: fsdp, fsdp_tensor"),
        (dict(dtype="fp16"), "dtype='fp16' is unknown; valid: float32, bfloat16"),
        (dict(logits_chunk=-1), "logits_chunk=-1 is invalid; allowed: an integer >= 0"),
        (dict(micro_batches=0), "micro_batches=0 is invalid; allowed: an integer >= 1"),
        (
            dict(mesh_shape=(4,), presets=("grpo", "dr_grpo"), num_seeds=3),
            r"puts 4 devices on 'seeds', which does not divide the population of 6 learners",
        ),
        (
            dict(distributed=distributed.DistributedConfig("h:1", 2, 2)),
            "distributed.process_id=2 is invalid; allowed: 0..1",
        ),
    ]:
        with pytest.raises(ValueError, match=message):
            math_experiment.validate(dataclasses.replace(BASE, **change))


def test_the_pipelines_mesh_and_the_checks_of_devices_and_processes():
    one = population.make_mesh(mesh_lib.MeshConfig((1,), ("seeds",)))
    assert dict(one.shape) == {"seeds": 1} and list(one.devices.flat) == jax.devices()[:1]
    full = population.make_mesh(mesh_lib.MeshConfig((-1, 2), ("seeds", "fsdp")))
    assert dict(full.shape) == {"seeds": 4, "fsdp": 2}
    lm_mesh.check_learners(full, 4)
    with pytest.raises(ValueError, match=r"mesh.shape=\(16,\) needs 16 devices but 8 are"):
        population.make_mesh(mesh_lib.MeshConfig((16,), ("fsdp",)))
    eight = population.make_mesh(mesh_lib.MeshConfig((-1,), ("seeds",)))
    with pytest.raises(ValueError, match="puts 8 devices on 'seeds', which does not divide the"):
        lm_mesh.check_learners(eight, 2)
    lm_mesh.check_processes(distributed.DistributedConfig())
    with pytest.raises(ValueError, match="num_processes=2 but JAX runs 1 process"):
        lm_mesh.check_processes(distributed.DistributedConfig("h:1", 2, 0))


def test_member_shardings_put_learners_on_seeds_and_weights_on_fsdp():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("seeds", "fsdp")))
    tree = {
        "params": {"mlp_in": {"kernel": jax.ShapeDtypeStruct((4, 6, 8), np.float32)}},
        "step": jax.ShapeDtypeStruct((4,), np.int32),
    }
    got = learner_axis.member_shardings(mesh, tree, steps.LM_FSDP)
    assert got["params"]["mlp_in"]["kernel"].spec == PartitionSpec("seeds", None, "fsdp")
    assert got["step"].spec == PartitionSpec("seeds")
    odd = jax.tree.map(lambda x: jax.ShapeDtypeStruct((3, *x.shape[1:]), x.dtype), tree)
    with pytest.raises(ValueError, match="population of 3 learners cannot be split over"):
        learner_axis.member_shardings(mesh, odd, steps.LM_FSDP)
    fsdp_only = mesh_lib.make_mesh(mesh_lib.MeshConfig((8,), ("fsdp",)))
    got = learner_axis.member_shardings(fsdp_only, tree, steps.LM_FSDP)
    assert got["params"]["mlp_in"]["kernel"].spec == PartitionSpec(None, None, "fsdp")


def test_entry_point_reads_the_mesh_and_the_rljax_environment(load_entry, monkeypatch):
    from rljax import cli

    entry = load_entry("experiments/train_math.py")
    monkeypatch.chdir(ROOT)
    argv = ["train_math.py", "--config=configs/grpo_math.py:gsm8k,tiny"]
    argv += ["--config.mesh.shape=2,-1", "--config.mesh.axes=seeds,fsdp", "--config.num_seeds=2"]
    run = entry.parse(argv)
    assert (run.mesh_shape, run.mesh_axes, run.rules) == ((2, -1), ("seeds", "fsdp"), "fsdp")
    assert run.distributed == distributed.DistributedConfig()
    monkeypatch.setenv(distributed.ENV_COORDINATOR, "10.0.0.1:1234")
    monkeypatch.setenv(distributed.ENV_NUM_PROCESSES, "4")
    monkeypatch.setenv(distributed.ENV_PROCESS_ID, "3")
    dist = entry.parse(argv + ["--config.distributed.num_processes=2"]).distributed
    assert (dist.coordinator_address, dist.num_processes, dist.process_id) == (
        "10.0.0.1:1234",
        4,
        3,
    )
    monkeypatch.setenv(distributed.ENV_PROCESS_ID, "4")
    with pytest.raises(cli.ConfigError, match="process_id=4 is invalid; allowed: 0..3"):
        entry.parse(argv)
    monkeypatch.delenv(distributed.ENV_PROCESS_ID)
    monkeypatch.delenv(distributed.ENV_NUM_PROCESSES)
    monkeypatch.delenv(distributed.ENV_COORDINATOR)
    with pytest.raises(cli.ConfigError, match="does not divide the population of 3 learners"):
        entry.parse(argv[:2] + ["--config.mesh.shape=2,4", "--config.mesh.axes=seeds,fsdp",
                                "--config.num_seeds=3"])  # fmt: skip


def _rows(workdir):
    with open(os.path.join(workdir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_sharded_run_equals_the_one_device_run(tmp_path):
    train, test = sample_files(tmp_path)
    one = math_experiment.MathRunConfig(
        train_path=train, test_path=test, workdir=str(tmp_path / "one"), prompt_length=64,
        completion_length=8, prompts_per_step=2, group_size=4, steps=2, presets=("grpo",),
        num_seeds=2, sft_steps=30, format_weight=0.5, final_problems=4, final_samples=2,
        checker_workers=1,
    )  # fmt: skip
    want = math_experiment.run(one)
    assert want["mesh"] == {"seeds": 1}
    for shape, axes, rules in (
        ((2, 4), ("seeds", "fsdp"), "fsdp"),
        ((2, 2, 2), ("seeds", "fsdp", "tensor"), "fsdp_tensor"),  # tensor parallel end to end
    ):
        sharded = dataclasses.replace(
            one, workdir=str(tmp_path / rules), mesh_shape=shape, mesh_axes=axes, rules=rules
        )
        got = math_experiment.run(sharded)
        assert got["mesh"] == dict(zip(axes, shape, strict=True))
        _same_run(one, want, sharded, got)


def _same_run(one, want, sharded, got):
    want_rows, got_rows = _rows(one.workdir), _rows(sharded.workdir)
    assert len(want_rows) == len(got_rows) == 2 * 2
    # The fine-tuned base finishes some answers: the rewards are not all zero, and the learners'
    # samples (hence rewards) are the same on 8 devices as on one.
    assert max(r["reward/mean"] for r in want_rows) > 0
    for w, g in zip(want_rows, got_rows, strict=True):
        assert (w["update"], w["grid"], w["seed"]) == (g["update"], g["grid"], g["seed"])
        for key in ("reward/mean", "correct/mean"):
            assert w[key] == g[key], (key, w, g)
        for key in w:  # float floor; Adam's first step is lr * sign(g)
            np.testing.assert_allclose(g[key], w[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert got["learners"] == want["learners"]  # pass@k of every learner, texts included
    assert got["checker"]["checked"] == want["checker"]["checked"] > 0


def test_micro_batches_accumulate_within_each_presets_minibatch():
    """micro_batches multiplies the schedule's micro-batches: a preset with M minibatches then
    accumulates micro_batches equal micro-batches per AdamW step (grpo's exact accumulation)."""
    values = math_experiment.learner_values(dataclasses.replace(BASE, presets=("grpo", "dr_grpo")))
    m = [int(v["num_minibatches"]) for v in values]
    for micro in (1, 4):
        run = dataclasses.replace(BASE, micro_batches=micro, prompts_per_step=16)
        cfg = math_experiment.agent_config(run, values, None, None)
        assert cfg.max_minibatches == np.lcm.reduce(m) * micro
        assert all(cfg.max_minibatches // k == cfg.max_minibatches / k for k in m)
