"""The devices of a math RLVR run: its mesh fields checked, then the mesh built for this job.

A run names a mesh (`mesh_shape` x `mesh_axes`, axes from `rljax.parallel.mesh.AXIS_NAMES`) and
how a learner's weights split on it (`rules`, a key of `RULES`). The learners (presets x seeds)
are split over `seeds`; `fsdp` / `tensor` split each learner's weights (`rljax.train.lm_sharding`).
`check` needs no devices, so the entry point runs it before `jax.distributed` starts;
`check_processes` and `check_learners` run once the job's devices are known, before anything
compiles (the mesh itself is the pipeline's, `rljax.train.population.make_mesh`).
"""

from __future__ import annotations

import jax

from rljax.parallel import distributed, steps
from rljax.parallel import mesh as mesh_lib

# `rules` -> the transformer's sharding rules (rljax.parallel.steps).
RULES = {"fsdp": steps.LM_FSDP, "fsdp_tensor": steps.LM_FSDP_TENSOR}


def _divides(shape: tuple[int, ...], seeds: int, learners: int) -> None:
    if learners % seeds:
        raise ValueError(
            f"mesh_shape={shape} puts {seeds} devices on 'seeds', which does not divide the "
            f"population of {learners} learners (presets x num_seeds); allowed: a 'seeds' size "
            f"dividing {learners}"
        )


def check(shape, axes, rules: str, learners: int) -> None:
    """The mesh fields, and the population against a fixed `seeds` size (no devices needed).

    Raises:
      ValueError: naming `mesh_shape` / `mesh_axes` / `rules`, the value and what is allowed.
    """
    config = mesh_lib.MeshConfig(tuple(shape), tuple(axes))
    try:
        mesh_lib.validate(config)
    except ValueError as e:
        raise ValueError(f"mesh_shape / mesh_axes: {e}") from None
    if rules not in RULES:
        raise ValueError(f"rules={rules!r} is unknown; allowed: {', '.join(RULES)}")
    seeds = dict(zip(config.axes, config.shape, strict=True)).get("seeds", 1)
    if seeds != -1:
        _divides(config.shape, seeds, learners)


def check_processes(dist: distributed.DistributedConfig) -> None:
    """Refuses a job whose `distributed` fields name more processes than JAX runs.

    Raises:
      ValueError: the entry point did not initialize them (`rljax.parallel.distributed`).
    """
    if not dist.auto_detect and dist.num_processes != jax.process_count():
        raise ValueError(
            f"distributed.num_processes={dist.num_processes} but JAX runs "
            f"{jax.process_count()} process(es): call rljax.parallel.distributed.initialize "
            "before anything touches a device (experiments/train_math.py does)"
        )


def check_learners(mesh: jax.sharding.Mesh, learners: int) -> None:
    """Refuses a built mesh whose `seeds` size does not divide the population."""
    _divides(tuple(mesh.shape.values()), mesh.shape.get("seeds", 1), learners)
