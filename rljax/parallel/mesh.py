"""Device meshes from config: named axes built with ``jax.make_mesh``.

A mesh is a grid of devices with one name per axis. rljax uses four names:

* ``seeds``: independent RL agents of a population (seeds × hyperparameter grid points); no
  communication crosses this axis during training.
* ``data``: data parallelism (environments of one agent, or LM prompts of one batch); gradients
  are averaged over it.
* ``fsdp``: also splits the batch, and additionally shards parameters and optimizer state
  (fully-sharded data parallelism, ZeRO-3); XLA all-gathers weights where they are used.
* ``tensor``: splits the inner dimensions of large matrices (Megatron-style tensor parallelism).

The same jitted step runs on any mesh: on one device every axis has size 1. On several hosts the
mesh spans every process's devices (``jax.devices()`` is global after
``rljax.parallel.distributed.initialize``).
"""

import dataclasses
import math

import jax

AXIS_NAMES = ("seeds", "data", "fsdp", "tensor")


@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """Shape and axis names of a device mesh.

    One entry of ``shape`` may be ``-1``: that axis takes all the devices the others leave.
    """

    shape: tuple[int, ...] = (-1,)  # devices along each axis; -1 = the rest
    axes: tuple[str, ...] = ("seeds",)  # names from AXIS_NAMES, one per entry of shape


def validate(config: MeshConfig) -> None:
    """Checks names and shape entries without knowing the devices; a ``ValueError`` names the
    bad field, its value and what is allowed."""
    shape, axes = tuple(config.shape), tuple(config.axes)
    if len(shape) != len(axes) or not axes:
        raise ValueError(
            f"mesh.shape={shape!r} and mesh.axes={axes!r} must be non-empty and of equal length"
        )
    for name in axes:
        if name not in AXIS_NAMES:
            raise ValueError(f"mesh.axes has {name!r}; allowed: {', '.join(AXIS_NAMES)}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"mesh.axes={axes!r} repeats a name; allowed: distinct names")
    if any((not isinstance(s, int)) or (s < 1 and s != -1) for s in shape) or shape.count(-1) > 1:
        raise ValueError(f"mesh.shape={shape!r} is invalid; allowed: integers >= 1, at most one -1")


def resolve_shape(config: MeshConfig, num_devices: int) -> tuple[int, ...]:
    """The concrete mesh shape for ``num_devices``; a ``ValueError`` names the bad field."""
    validate(config)
    shape = tuple(config.shape)
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if num_devices % known:
            raise ValueError(
                f"mesh.shape={shape!r}: the fixed axes ({known} devices) do not divide the "
                f"{num_devices} available devices"
            )
        shape = tuple(num_devices // known if s == -1 else s for s in shape)
    if math.prod(shape) != num_devices:
        raise ValueError(
            f"mesh.shape={shape!r} needs {math.prod(shape)} devices but {num_devices} are used; "
            "allowed: shapes whose product is the device count (or use -1 for one axis)"
        )
    return shape


def make_mesh(config: MeshConfig, devices: list | None = None) -> jax.sharding.Mesh:
    """Builds the mesh with ``jax.make_mesh`` (every axis of type ``Auto``).

    Args:
      config: shape and axis names.
      devices: the devices to use (default: all of ``jax.devices()``, global on several hosts).

    Returns:
      A ``jax.sharding.Mesh`` whose axes are ``config.axes``.
    """
    devices = list(jax.devices()) if devices is None else list(devices)
    shape = resolve_shape(config, len(devices))
    axis_types = (jax.sharding.AxisType.Auto,) * len(shape)
    return jax.make_mesh(shape, tuple(config.axes), axis_types=axis_types, devices=devices)


def devices_for(config: MeshConfig, devices: list | None = None) -> list:
    """The devices a mesh of ``config`` takes from ``devices`` (default: ``jax.devices()``).

    With a ``-1`` axis, all of them; with a fixed shape, the first ``prod(shape)`` (a
    one-device mesh on a host of eight). On several processes every process runs the same
    program, so the mesh must span all the devices.

    Raises:
      ValueError: naming ``mesh.shape``, if it needs more devices than there are, or fewer than
        all on several processes.
    """
    validate(config)
    devices = list(jax.devices()) if devices is None else list(devices)
    if -1 in config.shape:
        return devices
    need = math.prod(config.shape)
    processes = len({d.process_index for d in devices})
    if need > len(devices) or (processes > 1 and need != len(devices)):
        allowed = "a product of" if processes > 1 else "a product of at most"
        raise ValueError(
            f"mesh.shape={tuple(config.shape)!r} needs {need} devices but {len(devices)} are "
            f"available on {processes} process(es); allowed: {allowed} {len(devices)} (or -1 "
            "for one axis)"
        )
    return devices[:need]


def axis_size(mesh: jax.sharding.Mesh, axes) -> int:
    """Number of devices along ``axes`` (a name, a tuple of names or ``None``)."""
    if axes is None:
        return 1
    if isinstance(axes, str):
        axes = (axes,)
    return math.prod(mesh.shape[a] for a in axes)
