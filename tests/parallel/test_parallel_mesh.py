"""Meshes from config and name-pattern rules -> NamedSharding (8 fake CPU devices)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from rljax.parallel import mesh as mesh_lib
from rljax.parallel import sharding


def test_eight_fake_devices():
    assert jax.device_count() == 8


@pytest.mark.parametrize(
    "shape, axes, want",
    [
        ((-1,), ("seeds",), (8,)),
        ((4, 2), ("seeds", "data"), (4, 2)),
        ((2, -1), ("data", "fsdp"), (2, 4)),
        ((1, 2, 2, 2), ("seeds", "data", "fsdp", "tensor"), (1, 2, 2, 2)),
    ],
)
def test_make_mesh_shapes(shape, axes, want):
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig(shape, axes))
    assert tuple(mesh.shape.values()) == want
    assert mesh.axis_names == axes
    assert all(t == jax.sharding.AxisType.Auto for t in mesh.axis_types)


def test_make_mesh_on_a_subset_of_devices():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((-1,), ("seeds",)), jax.devices()[:2])
    assert mesh.shape["seeds"] == 2 and mesh.devices.size == 2


@pytest.mark.parametrize(
    "shape, axes, match",
    [
        ((3,), ("seeds",), "needs 3 devices"),
        ((3, -1), ("seeds", "data"), "do not divide"),
        ((8,), ("batch",), "allowed: seeds, data, fsdp, tensor"),
        ((2, 4), ("data",), "equal length"),
        ((2, 4), ("data", "data"), "repeats"),
        ((-1, -1), ("data", "fsdp"), "at most one -1"),
        ((0, 8), ("data", "fsdp"), "integers >= 1"),
    ],
)
def test_bad_mesh_config_names_the_field(shape, axes, match):
    with pytest.raises(ValueError, match=match):
        mesh_lib.make_mesh(mesh_lib.MeshConfig(shape, axes))


def _tree():
    return {
        "params": {
            "embed": jnp.zeros((32, 8)),
            "dense": {"kernel": jnp.zeros((8, 24)), "bias": jnp.zeros((24,))},
            "odd": jnp.zeros((3, 5)),
        },
        "step": jnp.zeros((), jnp.int32),
    }


def test_rules_first_match_wins_and_paths():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("data", "fsdp")))
    rules = (
        (r"embed$", ("fsdp", None)),
        (r"dense/kernel", (None, ("data", "fsdp"))),
        (r"params/", "largest:fsdp"),
        (r".*", ()),
    )
    specs = sharding.partition_specs(mesh, _tree(), rules)
    assert specs["params"]["embed"] == P("fsdp", None)
    assert specs["params"]["dense"]["kernel"] == P(None, ("data", "fsdp"))
    assert specs["params"]["dense"]["bias"] == P("fsdp")  # 24 % 4 == 0
    assert specs["params"]["odd"] == P()  # nothing divisible by 4: replicated
    assert specs["step"] == P()


def test_largest_picks_the_largest_divisible_dimension():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("data", "fsdp")))
    tree = {"a": jnp.zeros((4, 12)), "b": jnp.zeros((8, 6)), "c": jnp.zeros((16, 16))}
    specs = sharding.partition_specs(mesh, tree, ((".*", "largest:fsdp"),))
    assert specs == {"a": P(None, "fsdp"), "b": P("fsdp", None), "c": P("fsdp", None)}
    both = sharding.partition_specs(mesh, tree, ((".*", "largest:data+fsdp"),))
    assert both["c"] == P(("data", "fsdp"), None) and both["b"] == P(("data", "fsdp"), None)
    assert both["a"] == P()  # neither 4 nor 12 divisible by 8


def test_axes_missing_from_the_mesh_count_as_size_one():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((-1,), ("seeds",)))
    rules = ((r".*", (("data", "fsdp"), "tensor")),)
    specs = sharding.partition_specs(mesh, {"x": jnp.zeros((3, 5))}, rules)
    assert specs["x"] == P(None, None)


@pytest.mark.parametrize(
    "rules, match",
    [
        (((r"embed", ("data",)),), "no sharding rule matches"),
        (((r".*", ("fsdp",)),), "cannot be split over mesh axes 'fsdp' of size 4"),
        (((r".*", (None, None, None)),), "has 3 entries"),
        (((r".*", "biggest:fsdp"),), "allowed: a tuple or 'largest"),
    ],
)
def test_bad_rules_name_the_leaf(rules, match):
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("data", "fsdp")))
    with pytest.raises(ValueError, match=match):
        sharding.partition_specs(mesh, {"odd": jnp.zeros((3, 5))}, rules)


def test_tree_shardings_place_data_and_keep_values():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("data", "fsdp")))
    tree = {"w": jnp.arange(64.0).reshape(8, 8), "b": jnp.arange(8.0)}
    rules = ((r"^w$", ("data", "fsdp")), (".*", ()))
    shardings = sharding.tree_shardings(mesh, tree, rules)
    placed = sharding.shard(tree, shardings)
    assert placed["w"].sharding.spec == P("data", "fsdp")
    assert {s.data.shape for s in placed["w"].addressable_shards} == {(4, 2)}
    assert len(placed["b"].addressable_shards) == 8 and placed["b"].sharding.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(placed["w"]), np.asarray(tree["w"]))
    shapes = sharding.abstract(tree, shardings)
    assert shapes["w"].sharding == shardings["w"] and shapes["w"].shape == (8, 8)


def test_path_str_names_namedtuple_fields_and_indices():
    from typing import NamedTuple

    class S(NamedTuple):
        params: dict
        opt: tuple

    tree = S({"Dense_0": {"kernel": jnp.zeros(2)}}, (jnp.zeros(1), {"mu": jnp.zeros(1)}))
    paths = [sharding.path_str(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    assert paths == ["params/Dense_0/kernel", "opt/0", "opt/1/mu"]
