"""The one place where name-pattern sharding rules become ``NamedSharding``s.

A rule is ``(pattern, spec)``. ``pattern`` is a regular expression searched in a leaf's path
(``"params/params/Dense_0/kernel"``, ``"opt_state/1/0/mu/params/Dense_0/kernel"``; see
``path_str``); the first rule that matches decides. ``spec`` is one of

* a tuple with one entry per leading dimension (fewer entries leave the trailing dimensions
  whole): ``None`` (not split), an axis name, or a tuple of axis names (split over their
  product), exactly like ``jax.sharding.PartitionSpec``;
* the string ``"largest:<axes>"`` (``<axes>`` is one name or several joined by ``+``): split the
  largest dimension that the axes' size divides, else replicate. This is the fully-sharded (ZeRO-3)
  placement of big_vision's ``fsdp`` strategy: every weight is split once, wherever it fits.

Axis names that the mesh lacks count as size 1, so one rule set serves every mesh, from one CPU
to a pod slice. A leaf that no rule matches is an error (end the rules with ``(".*", ())`` to
replicate the rest), and so is an explicit split that does not divide the dimension.

Rules are plain tuples of strings, so configs can set them: the control configs'
``mesh`` block (``configs/ppo.py``, ``dqn.py``, ``sqirl.py``) sets the mesh's shape and axes and
names the population's rule set (``experiments/train.py`` ``SHARDING_RULES``, the sets of
``rljax.parallel.learner_axis``), per run, from the command line too
(``--config.mesh.shape=4,2 --config.mesh.axes=seeds,data --config.mesh.rules=seeds_and_envs``).
"""

import re
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from rljax.parallel.mesh import axis_size

Rules = tuple[tuple[str, Any], ...]

# Replicate everything: the default when no rules are given.
REPLICATED: Rules = ((".*", ()),)


def path_str(path) -> str:
    """A key path as ``"a/b/0/c"``: dict keys, attribute names and sequence indices."""
    parts = []
    for entry in path:
        if isinstance(entry, jax.tree_util.DictKey):
            parts.append(str(entry.key))
        elif isinstance(entry, jax.tree_util.GetAttrKey):
            parts.append(entry.name)
        elif isinstance(entry, jax.tree_util.SequenceKey):
            parts.append(str(entry.idx))
        elif isinstance(entry, jax.tree_util.FlattenedIndexKey):
            parts.append(str(entry.key))
        else:
            parts.append(str(entry))
    return "/".join(parts)


def _present(mesh: jax.sharding.Mesh, axes):
    """Drops names the mesh does not have; ``None`` if nothing is left."""
    if axes is None:
        return None
    names = (axes,) if isinstance(axes, str) else tuple(axes)
    kept = tuple(a for a in names if a in mesh.shape)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else kept


def _largest(mesh, path: str, shape: tuple[int, ...], axes_text: str) -> PartitionSpec:
    axes = _present(mesh, tuple(axes_text.split("+")))
    size = axis_size(mesh, axes)
    if axes is None or size == 1:
        return PartitionSpec()
    # Largest dimension first; ties go to the earlier dimension.
    for dim in sorted(range(len(shape)), key=lambda d: (-shape[d], d)):
        if shape[dim] % size == 0:
            entries = [None] * len(shape)
            entries[dim] = axes
            return PartitionSpec(*entries)
    return PartitionSpec()


def spec_for(mesh: jax.sharding.Mesh, path: str, shape: tuple[int, ...], spec) -> PartitionSpec:
    """The ``PartitionSpec`` of one leaf under one rule's ``spec`` (see the module docstring).

    Raises:
      ValueError: naming the leaf, if the spec has more entries than the leaf has dimensions or
        a split does not divide its dimension.
    """
    if isinstance(spec, str):
        if not spec.startswith("largest:"):
            raise ValueError(
                f"sharding rule spec {spec!r} for {path!r} is invalid; allowed: a tuple or "
                "'largest:<axis>[+<axis>...]'"
            )
        return _largest(mesh, path, shape, spec.removeprefix("largest:"))
    spec = tuple(spec)
    if len(spec) > len(shape):
        raise ValueError(
            f"sharding rule spec {spec!r} has {len(spec)} entries but {path!r} has shape {shape}"
        )
    entries = []
    for dim, axes in enumerate(spec):
        axes = _present(mesh, axes)
        size = axis_size(mesh, axes)
        if shape[dim] % size:
            raise ValueError(
                f"{path!r} dimension {dim} of size {shape[dim]} cannot be split over mesh axes "
                f"{axes!r} of size {size}; allowed: sizes divisible by {size}"
            )
        entries.append(axes)
    return PartitionSpec(*entries)


def partition_specs(mesh: jax.sharding.Mesh, tree: Any, rules: Rules) -> Any:
    """``PartitionSpec`` of every leaf of ``tree`` (arrays or ``jax.ShapeDtypeStruct``s)."""
    compiled = [(re.compile(pattern), spec) for pattern, spec in rules]

    def _leaf(path, leaf):
        name = path_str(path)
        for pattern, spec in compiled:
            if pattern.search(name):
                return spec_for(mesh, name, tuple(leaf.shape), spec)
        raise ValueError(
            f"no sharding rule matches {name!r}; add a rule (e.g. ('.*', ()) to replicate)"
        )

    return jax.tree_util.tree_map_with_path(_leaf, tree)


def tree_shardings(mesh: jax.sharding.Mesh, tree: Any, rules: Rules) -> Any:
    """``NamedSharding`` of every leaf of ``tree``: what ``jax.jit`` and ``device_put`` take."""
    specs = partition_specs(mesh, tree, rules)
    return jax.tree.map(
        lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda x: isinstance(x, PartitionSpec)
    )


def replicated(mesh: jax.sharding.Mesh) -> NamedSharding:
    """A sharding that keeps a full copy on every device (for metrics and scalars)."""
    return NamedSharding(mesh, PartitionSpec())


def abstract(tree: Any, shardings: Any) -> Any:
    """``jax.ShapeDtypeStruct``s of ``tree`` with ``shardings``: a restore or compile target."""
    return jax.tree.map(
        lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tree, shardings
    )


def shard(tree: Any, shardings: Any) -> Any:
    """Places ``tree`` (same value on every process) on the mesh with ``shardings``."""
    return jax.device_put(tree, shardings)
