"""Hugging Face checkpoint folders in and out: the mapping table, round trips, shards, errors."""

import json
import os
import shutil

import jax
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from rljax.lm.model import decoder
from rljax.lm.model.hf import checkpoint, mapping
from rljax.lm.model.hf import config as hf_config
from rljax.parallel import steps

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "hf")
FAMILIES = ("llama", "qwen2", "qwen3")


def _tensors(folder: str) -> dict[str, np.ndarray]:
    files = checkpoint.tensor_files(folder)
    out = {}
    for name, file in files.items():
        with safe_open(file, "numpy") as f:
            out[name] = f.get_tensor(name)
    return out


def _bits_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_table_rules_are_inverse_pairs():
    rng = np.random.default_rng(0)
    cases = {
        "copy": (5,),
        "T": (3, 7),
        "heads": (4, 6),
        "in_heads": (8, 4, 6),
        "out_heads": (4, 6, 8),
    }
    for rule, shape in cases.items():
        x = rng.standard_normal(shape).astype(np.float32)
        hf = mapping.to_hf(x, rule)
        assert hf.shape == mapping.hf_shape(shape, rule)
        assert _bits_equal(mapping.to_rljax(hf, rule, shape), x)
    # Names: every row maps to its partner and back, with the layer index carried.
    for hf_template, path_template, rule in mapping.TABLE:
        name, path = hf_template.format(11), path_template.format(11)
        assert mapping.rljax_path(name) == (path, rule)
        assert mapping.hf_name(path) == (name, rule)
    with pytest.raises(KeyError, match="model.layers.0.mlp.fc1.weight"):
        mapping.rljax_path("model.layers.0.mlp.fc1.weight")


@pytest.mark.parametrize("family", FAMILIES)
def test_import_then_export_is_bit_identical(family, tmp_path):
    folder = os.path.join(FIXTURES, family)
    params, cfg = checkpoint.load(folder)
    checkpoint.save(str(tmp_path), params, cfg)
    original, exported = _tensors(folder), _tensors(str(tmp_path))
    assert sorted(original) == sorted(exported)
    assert all(_bits_equal(original[k], exported[k]) for k in original)
    # config.json describes the same model.
    assert hf_config.read(str(tmp_path)) == cfg


@pytest.mark.parametrize(
    "family", ["qwen2", *(pytest.param(f, marks=pytest.mark.slow) for f in ("llama", "qwen3"))]
)
def test_export_then_import_is_bit_identical_with_shards(family, tmp_path):
    cfg = hf_config.read(os.path.join(FIXTURES, family))
    params = jax.jit(decoder.init_params, static_argnums=0)(cfg, jax.random.key(3))
    checkpoint.save(str(tmp_path), params, cfg, max_shard_bytes=16_000)
    with open(tmp_path / checkpoint.INDEX) as f:
        shards = set(json.load(f)["weight_map"].values())
    assert len(shards) > 2 and not (tmp_path / checkpoint.SINGLE).exists()
    loaded, cfg2 = checkpoint.load(str(tmp_path))
    assert cfg2 == cfg
    same = jax.tree.map(_bits_equal, params, loaded)
    assert jax.tree.all(same) and len(jax.tree.leaves(same)) == len(jax.tree.leaves(params))


def test_tensors_are_placed_on_the_mesh_as_they_load():
    mesh = Mesh(np.asarray(jax.devices()[:8]).reshape(8), ("fsdp",))
    params, _ = checkpoint.load(os.path.join(FIXTURES, "qwen3"), mesh=mesh, rules=steps.LM_FSDP)
    reference, _ = checkpoint.load(os.path.join(FIXTURES, "qwen3"))
    kernel = params["block_0"]["gate"]["kernel"]  # [32, 64]: the 64 split over 8 devices
    assert kernel.sharding.spec == PartitionSpec(None, "fsdp")
    assert {s.data.shape for s in kernel.addressable_shards} == {(32, 8)}
    assert params["final_norm"]["scale"].sharding.spec == PartitionSpec()
    assert jax.tree.all(jax.tree.map(lambda a, b: _bits_equal(a, b), params, reference))


def test_bf16_checkpoints_load(tmp_path):
    folder = os.path.join(FIXTURES, "qwen2")
    shutil.copy(os.path.join(folder, "config.json"), tmp_path)
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    half = {k: v.astype(ml_dtypes.bfloat16) for k, v in tensors.items()}
    save_file(half, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    params, _ = checkpoint.load(str(tmp_path), param_dtype=ml_dtypes.bfloat16)
    embedding = params["embed"]["embedding"]
    assert embedding.dtype == ml_dtypes.bfloat16
    assert _bits_equal(embedding, half["model.embed_tokens.weight"])


def _broken(tmp_path, family: str, edit) -> str:
    folder = os.path.join(FIXTURES, family)
    with open(os.path.join(folder, "config.json")) as f:
        conf = json.load(f)
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    edit(conf, tensors)
    with open(tmp_path / "config.json", "w") as f:
        json.dump(conf, f)
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    return str(tmp_path)


@pytest.mark.parametrize(
    "edit,error,match",
    [
        (lambda c, t: t.pop("model.layers.1.mlp.up_proj.weight"), KeyError, "up_proj.weight"),
        (
            lambda c, t: t.update({"model.norm.weight": np.ones(7, np.float32)}),
            ValueError,
            r"'model.norm.weight' has shape \[7\], config.json implies \[32\]",
        ),
        (
            lambda c, t: t.update({"model.extra.weight": np.ones(2, np.float32)}),
            KeyError,
            "extra",
        ),
        (
            lambda c, t: c.update(architectures=["MistralForCausalLM"]),
            ValueError,
            "MistralForCausalLM.*allowed",
        ),
        (lambda c, t: c.update(hidden_act="gelu"), ValueError, "hidden_act='gelu'"),
    ],
)
def test_bad_checkpoints_are_one_line_errors_naming_the_key(tmp_path, edit, error, match):
    path = _broken(tmp_path, "llama", edit)
    with pytest.raises(error, match=match) as info:
        checkpoint.load(path)
    assert "\n" not in str(info.value)


def test_tiny_family_has_no_hf_layout(tmp_path):
    cfg = decoder.TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64)
    with pytest.raises(ValueError, match="family='tiny' has no Hugging Face layout"):
        checkpoint.save(str(tmp_path), {}, cfg)


def test_generation_config_adds_stop_tokens(tmp_path):
    folder = os.path.join(FIXTURES, "qwen2")
    shutil.copy(os.path.join(folder, "config.json"), tmp_path)
    with open(tmp_path / "generation_config.json", "w") as f:
        json.dump({"eos_token_id": [7, 1]}, f)
    assert hf_config.read(folder).eos_ids == (1,)
    assert hf_config.read(str(tmp_path)).eos_ids == (1, 7)
