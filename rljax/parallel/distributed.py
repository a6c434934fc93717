"""Several processes, one program: JAX's multi-controller runtime, configured from config or env.

Every process runs the same script. ``initialize`` connects them through
``jax.distributed.initialize``; afterwards ``jax.devices()`` lists the devices of all processes,
a mesh built from it spans every host, and a jitted step partitions over all of them while each
process feeds and reads only its own shards. There is no rljax-specific distribution layer.

Where the processes learn who they are:

* ``DistributedConfig`` fields (from a config file), or
* the environment: ``RLJAX_COORDINATOR_ADDRESS`` (``host:port`` of process 0),
  ``RLJAX_NUM_PROCESSES`` and ``RLJAX_PROCESS_ID`` (``scripts/launch_multiprocess.py`` sets them
  for processes on one machine), or
* ``auto_detect=True`` (``RLJAX_AUTO_DETECT=1``): JAX reads them from the cluster (Cloud TPU pod
  slices, SLURM, Open MPI, Kubernetes).

On CPU, cross-process collectives use gloo (``cpu_collectives``).
"""

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

ENV_COORDINATOR = "RLJAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "RLJAX_NUM_PROCESSES"
ENV_PROCESS_ID = "RLJAX_PROCESS_ID"
ENV_AUTO_DETECT = "RLJAX_AUTO_DETECT"
CPU_COLLECTIVES = ("gloo", "mpi")


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    """Who this process is among several. The default is a single process (nothing to do)."""

    coordinator_address: str = ""  # "host:port" of process 0; "" = single process
    num_processes: int = 1  # processes in the job
    process_id: int = 0  # this process, in [0, num_processes)
    auto_detect: bool = False  # let JAX read all of the above from the cluster environment
    cpu_collectives: str = "gloo"  # cross-process collectives on CPU: gloo | mpi
    timeout_s: int = 300  # how long to wait for every process to connect


def from_env(
    environ: Mapping[str, str] | None = None, base: DistributedConfig | None = None
) -> DistributedConfig:
    """``base`` (default: single process) overridden by the ``RLJAX_*`` environment variables."""
    environ = os.environ if environ is None else environ
    config = base or DistributedConfig()
    updates: dict[str, Any] = {}
    if ENV_COORDINATOR in environ:
        updates["coordinator_address"] = environ[ENV_COORDINATOR]
    for var, field in ((ENV_NUM_PROCESSES, "num_processes"), (ENV_PROCESS_ID, "process_id")):
        if var in environ:
            try:
                updates[field] = int(environ[var])
            except ValueError:
                raise ValueError(
                    f"{var}={environ[var]!r} is invalid; allowed: an integer"
                ) from None
    if ENV_AUTO_DETECT in environ:
        updates["auto_detect"] = environ[ENV_AUTO_DETECT] not in ("", "0", "false", "False")
    return dataclasses.replace(config, **updates)


def validate(config: DistributedConfig) -> None:
    """Raises a ``ValueError`` naming the bad field, its value and what is allowed."""
    if config.cpu_collectives not in CPU_COLLECTIVES:
        raise ValueError(
            f"distributed.cpu_collectives={config.cpu_collectives!r} is invalid; "
            f"allowed: {', '.join(CPU_COLLECTIVES)}"
        )
    if config.auto_detect:
        return
    if not isinstance(config.num_processes, int) or config.num_processes < 1:
        raise ValueError(
            f"distributed.num_processes={config.num_processes!r} is invalid; allowed: >= 1"
        )
    if not 0 <= config.process_id < config.num_processes:
        raise ValueError(
            f"distributed.process_id={config.process_id!r} is invalid; allowed: "
            f"0..{config.num_processes - 1}"
        )
    if config.num_processes > 1:
        host, _, port = config.coordinator_address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(
                f"distributed.coordinator_address={config.coordinator_address!r} is invalid; "
                "allowed: 'host:port' of process 0"
            )


def initialize(config: DistributedConfig) -> None:
    """Connects this process to the others; a no-op for a single process.

    Must run before anything touches a JAX device (so before any array is created).
    """
    validate(config)
    if not config.auto_detect and config.num_processes == 1:
        return
    # Only used by CPU devices; harmless on GPU/TPU.
    jax.config.update("jax_cpu_collectives_implementation", config.cpu_collectives)
    if config.auto_detect:
        jax.distributed.initialize(initialization_timeout=config.timeout_s)
        return
    jax.distributed.initialize(
        coordinator_address=config.coordinator_address,
        num_processes=config.num_processes,
        process_id=config.process_id,
        initialization_timeout=config.timeout_s,
    )


def local_rows(sharding: jax.sharding.Sharding, global_shape: tuple[int, ...]) -> slice:
    """The block of the leading axis whose data this process holds under ``sharding``.

    Raises:
      ValueError: if this process's devices hold a non-contiguous set of rows, or only part of a
        trailing dimension (then process-local data is not a block of whole rows).
    """
    indices = sharding.addressable_devices_indices_map(tuple(global_shape)).values()
    covered = [set() for _ in global_shape]  # per dimension: what this process's devices hold
    for index in indices:
        for dim, sl in enumerate(index):
            covered[dim].update(range(*sl.indices(global_shape[dim])[:2]))
    for dim in range(1, len(global_shape)):
        if len(covered[dim]) != global_shape[dim]:
            raise ValueError(
                f"process {jax.process_index()} holds part of dimension {dim} of an array of "
                f"shape {tuple(global_shape)}; process-local rows need whole trailing dimensions"
            )
    rows = covered[0] if global_shape else {0}
    lo, hi = min(rows), max(rows) + 1
    if len(rows) != hi - lo:
        raise ValueError(f"process {jax.process_index()} holds non-contiguous rows {sorted(rows)}")
    return slice(lo, hi)


def host_local_to_global(local_tree: Any, shardings: Any, global_shapes: Any) -> Any:
    """Assembles each process's block of rows into global arrays sharded by ``shardings``.

    Args:
      local_tree: this process's data: every leaf is the rows ``local_rows(sharding, shape)`` of
        the global array (NumPy or a local ``jax.Array``).
      shardings: ``NamedSharding`` per leaf, over a mesh that spans all processes.
      global_shapes: tree of global shapes (or arrays / ``jax.ShapeDtypeStruct``s with
        ``.shape``).

    Returns:
      A tree of global ``jax.Array``s; each device holds its shard, no data crosses processes.
    """
    return jax.tree.map(
        lambda x, s, g: jax.make_array_from_process_local_data(s, np.asarray(x), tuple(g.shape)),
        local_tree,
        shardings,
        global_shapes,
    )


def to_host(tree: Any) -> Any:
    """The full value of every (global, possibly sharded) leaf as NumPy, on every process."""
    return multihost_utils.process_allgather(tree, tiled=True)
