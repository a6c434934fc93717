"""Hugging Face safetensors folders <-> rljax parameters, placed on a mesh tensor by tensor.

A folder holds `config.json` and either `model.safetensors` or shards named by
`model.safetensors.index.json` (`{"weight_map": {tensor name: file}}`). `load` reads one tensor at
a time from the memory-mapped files, turns it into the rljax layout (`mapping`) and hands each
device only its own slice (`jax.make_array_from_callback`), so the whole model never sits on
one device, nor in host memory as a second copy. `save` writes the same layout back
(`max_shard_bytes` splits it into shards with an index), readable by transformers'
`from_pretrained`. A file that does not read (an empty, truncated or garbled safetensors file, an
index that is not JSON or names a shard that is missing or lacks the tensor) is a one-line
ValueError naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os

import jax
import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy, so bf16 checkpoints read)
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.hf import config as hf_config
from rljax.lm.model.hf import mapping
from rljax.parallel import sharding

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"


@contextlib.contextmanager
def _open(file: str):
    """`safe_open(file)`, its header checked against the file's size; a damaged file is a
    ValueError naming it (safetensors' own message names neither the file nor the folder)."""
    try:
        f = safe_open(file, "numpy")
    except (SafetensorError, OSError) as e:
        raise ValueError(
            f"{file} is not a readable safetensors file ({e}); a download cut short or a damaged "
            "file: fetch it again"
        ) from None
    with f as handle:
        yield handle


def tensor_files(path: str) -> dict[str, str]:
    """Tensor name -> the safetensors file that holds it; every file's header is read (an index,
    a shard or a single file that does not read is a ValueError naming it)."""
    index = os.path.join(path, INDEX)
    if os.path.exists(index):
        weight_map = hf_config.read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not all(
            isinstance(v, str) for v in weight_map.values()
        ):
            raise ValueError(
                f"{index} has no weight_map of tensor names to files; allowed: "
                '{"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors"}}'
            )
        files = {name: os.path.join(path, file) for name, file in weight_map.items()}
        for file in sorted(set(files.values())):
            if not os.path.isfile(file):
                raise ValueError(f"{index} names {os.path.basename(file)}, which is not in {path}")
            with _open(file) as f:
                held = set(f.keys())
            for name in (n for n, where in files.items() if where == file and n not in held):
                raise ValueError(f"{index} puts tensor {name!r} in {file}, which does not hold it")
        return files
    single = os.path.join(path, SINGLE)
    if not os.path.exists(single):
        raise ValueError(f"model.path={path!r} has neither {SINGLE} nor {INDEX}")
    with _open(single) as f:
        return {name: single for name in f.keys()}


def _leaves(tree, is_leaf=None) -> dict[str, object]:
    flat, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    return {sharding.path_str(path): leaf for path, leaf in flat}


def _nest(flat: dict[str, object]) -> dict:
    tree: dict = {}
    for path, leaf in flat.items():
        *parents, last = path.split("/")
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = leaf
    return tree


def expected_shapes(cfg: TransformerConfig) -> dict[str, jax.ShapeDtypeStruct]:
    """rljax path -> shape/dtype of every parameter of `cfg` (nothing is allocated)."""
    return _leaves(jax.eval_shape(lambda key: init_params(cfg, key), jax.random.key(0)))


def load(
    path: str,
    *,
    mesh: jax.sharding.Mesh | None = None,
    rules: sharding.Rules = sharding.REPLICATED,
    param_dtype=np.float32,
    max_len: int | None = None,
    dtype: str = "float32",
):
    """Reads a Hugging Face folder into rljax parameters on `mesh`.

    Args:
      path: the folder (config.json and safetensors).
      mesh: where the parameters go (default: a one-device mesh of the first device).
      rules: sharding rules (`rljax.parallel.sharding`), e.g. `steps.LM_FSDP`.
      param_dtype: the stored parameters' dtype (float32 masters for training; bfloat16 to sample
        a large model in half the memory).
      max_len, dtype: passed to `config.from_hf`.

    Returns:
      (params, TransformerConfig). Raises one-line errors naming the tensor for a missing or
      unexpected tensor and for a shape that does not match config.json.
    """
    cfg = hf_config.read(path, max_len=max_len, dtype=dtype)
    mesh = mesh or jax.sharding.Mesh(np.asarray(jax.devices()[:1]), ("data",))
    files = tensor_files(path)
    shapes = expected_shapes(cfg)
    wanted = {}
    for rljax_path in shapes:
        name, rule = mapping.hf_name(rljax_path)
        if name not in files:
            raise KeyError(f"{path}: tensor {name!r} (for {rljax_path}) is missing")
        wanted[name] = (rljax_path, rule)
    for name in files:
        tied = name == "lm_head.weight" and cfg.tie_embeddings
        if name not in wanted and not tied and not mapping.IGNORED.match(name):
            raise KeyError(f"{path}: tensor {name!r} is not used by a {cfg.family} model")
    specs = sharding.partition_specs(mesh, shapes, rules)
    flat_specs = _leaves(specs, is_leaf=_is_spec)
    out = {}
    for file in sorted(set(files[n] for n in wanted)):
        with _open(file) as f:
            for name in (n for n in wanted if files[n] == file):
                rljax_path, rule = wanted[name]
                shape = tuple(shapes[rljax_path].shape)
                try:
                    x = f.get_tensor(name)
                except (SafetensorError, TypeError, ValueError) as e:  # e.g. an unknown dtype
                    raise ValueError(f"{file}: tensor {name!r} does not read ({e})") from None
                if tuple(x.shape) != mapping.hf_shape(shape, rule):
                    raise ValueError(
                        f"{file}: tensor {name!r} has shape {list(x.shape)}, config.json implies "
                        f"{list(mapping.hf_shape(shape, rule))}"
                    )
                x = mapping.to_rljax(x, rule, shape).astype(param_dtype)
                target = NamedSharding(mesh, flat_specs[rljax_path])
                out[rljax_path] = jax.make_array_from_callback(shape, target, lambda i, x=x: x[i])
    return _nest(out), cfg


def _is_spec(x) -> bool:
    return isinstance(x, PartitionSpec)


def hf_tensors(params, cfg: TransformerConfig) -> dict[str, np.ndarray]:
    """Hugging Face name -> host array of every parameter (the export's contents)."""
    hf_config.to_hf(cfg)  # a one-line error for families without a Hugging Face layout
    out = {}
    for rljax_path, leaf in _leaves(params).items():
        name, rule = mapping.hf_name(rljax_path)
        out[name] = np.ascontiguousarray(mapping.to_hf(np.asarray(leaf), rule))
    return out


def save(path: str, params, cfg: TransformerConfig, *, max_shard_bytes: int | None = None):
    """Writes `params` as a Hugging Face folder: config.json and safetensors (shards + index
    when the tensors exceed `max_shard_bytes`). Tensors keep their dtype."""
    tensors = hf_tensors(params, cfg)
    os.makedirs(path, exist_ok=True)
    dtype = {np.dtype(np.float32): "float32"}.get(next(iter(tensors.values())).dtype, "bfloat16")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(hf_config.to_hf(cfg, torch_dtype=dtype), f, indent=2)
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name, x in tensors.items():
        if max_shard_bytes and shards[-1] and size + x.nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = x
        size += x.nbytes
    meta = {"format": "pt"}
    if len(shards) == 1:
        save_file(shards[0], os.path.join(path, SINGLE), metadata=meta)
        return
    weight_map = {}
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, os.path.join(path, file), metadata=meta)
        weight_map.update({name: file for name in shard})
    total = sum(x.nbytes for x in tensors.values())
    with open(os.path.join(path, INDEX), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
