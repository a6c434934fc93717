"""Low-rank adapters (LoRA) on the decoder's projections, applied unmerged or merged.

A target projection with kernel W (inputs flattened to `[n_in]`, outputs to `[n_out]`) computes

    y = x W + (α / r) (x A) B,        A: [n_in, r] ~ N(0, 1/n_in),   B: [r, n_out] = 0

(Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"). B starts at zero, so a
fresh adapter leaves the base model's outputs exactly unchanged; only A and B are trained.

Unmerged (`Adapted`, what `rljax.lm.model.decoder.forward` accepts in place of parameters): the base
product x W runs as is and the low-rank path is added by a flax method interceptor, so the base
is never copied. Under `jax.vmap` over learners with the base unbatched (`in_axes=None`), the
batching rule of `x W` folds the learner axis into the rows: one large product against the one
base instead of K products against K copies. `merge` folds the adapters into W for export and
merged sampling: W' = W + (α / r) A B reshaped to W's shape.

Projection names (`rljax.lm.model.decoder`): tiny `qkv`, `out`, `mlp_in`, `mlp_out`; llama / qwen2 /
qwen3 `q`, `k`, `v`, `out`, `gate`, `up`, `down`. `targets` may name them or the groups
`attention` and `mlp`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import flax.linen as nn
import jax
import jax.numpy as jnp

# Projection name -> number of leading kernel axes that are inputs (the rest are outputs).
PROJECTIONS = {
    "qkv": 1, "q": 1, "k": 1, "v": 1, "out": 2,
    "mlp_in": 1, "mlp_out": 1, "gate": 1, "up": 1, "down": 1,
}  # fmt: skip
GROUPS = {
    "attention": ("qkv", "q", "k", "v", "out"),
    "mlp": ("mlp_in", "mlp_out", "gate", "up", "down"),
}


@dataclasses.dataclass(frozen=True)
class LoraConfig:
    """Which projections get adapters, of what rank and scale."""

    rank: int = 8  # r
    alpha: float = 16.0  # the low-rank path is scaled by alpha / rank
    targets: tuple[str, ...] = ("attention", "mlp")  # projection names or groups (module doc)
    seed: int = 0  # A's initial values (shared by every learner, like the base)

    def __post_init__(self):
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"lora.rank={self.rank!r} is invalid; allowed: an int >= 1")
        if not (isinstance(self.alpha, int | float) and math.isfinite(self.alpha)) or (
            self.alpha <= 0
        ):
            raise ValueError(f"lora.alpha={self.alpha!r} is invalid; allowed: > 0")
        valid = (*GROUPS, *PROJECTIONS)
        bad = [t for t in self.targets if t not in valid]
        if bad or not self.targets:
            raise ValueError(
                f"lora.targets={self.targets!r} is invalid; allowed: a non-empty tuple "
                f"of {', '.join(valid)}"
            )

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    @property
    def projections(self) -> frozenset[str]:
        out = set()
        for t in self.targets:
            out.update(GROUPS.get(t, (t,)))
        return frozenset(out)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Adapted:
    """A frozen base plus adapters: what `model.forward` runs unmerged.

    `adapters` mirrors the base's tree down to each adapted projection, whose node is
    `{"lora_a": [n_in, r], "lora_b": [r, n_out]}`."""

    base: dict
    adapters: dict
    scale: float = dataclasses.field(metadata=dict(static=True), default=1.0)


def from_fields(fields: dict) -> LoraConfig | None:
    """The config's `lora` fields (rank, alpha, targets as "a,b") -> a config; None for rank 0
    or no fields (full-parameter learners)."""
    fields = dict(fields)
    if not fields.get("rank"):
        return None
    targets = tuple(t.strip() for t in str(fields.pop("targets", "attention,mlp")).split(","))
    return LoraConfig(**fields, targets=targets)


def with_base(cfg: LoraConfig | None, base: dict, params):
    """`params` themselves (`cfg` None: full parameters) or `Adapted(base, params)`."""
    return params if cfg is None else Adapted(base, params, cfg.scale)


def _targets(base: dict, cfg: LoraConfig):
    """(path, kernel) of every adapted projection of `base`, in tree order."""
    found = []

    def walk(node, path):
        for name, child in node.items():
            if not isinstance(child, dict):
                continue
            if name in cfg.projections and "kernel" in child:
                found.append(((*path, name), child["kernel"]))
            else:
                walk(child, (*path, name))

    walk(base, ())
    return found


def _split(name: str, shape) -> tuple[int, int]:
    n_in = PROJECTIONS[name]
    return math.prod(shape[:n_in]), math.prod(shape[n_in:])


def _nest(pairs) -> dict:
    out: dict = {}
    for path, value in pairs:
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def init_adapters(base: dict, cfg: LoraConfig) -> dict:
    """Fresh adapters for `base`: A ~ N(0, 1/n_in) from `cfg.seed`, B = 0 (so base == start).

    Raises ValueError when no projection of `base` matches `cfg.targets`."""
    targets = _targets(base, cfg)
    if not targets:
        raise ValueError(
            f"lora.targets={cfg.targets!r} match no projection of the model; its "
            f"projections are among {', '.join(PROJECTIONS)}"
        )
    key = jax.random.PRNGKey(cfg.seed)
    pairs = []
    for i, (path, kernel) in enumerate(targets):
        n_in, n_out = _split(path[-1], kernel.shape)
        a = jax.random.normal(jax.random.fold_in(key, i), (n_in, cfg.rank), jnp.float32)
        pairs.append(
            (path, {"lora_a": a / math.sqrt(n_in), "lora_b": jnp.zeros((cfg.rank, n_out))})
        )
    return _nest(pairs)


def abstract_adapters(base_shapes: dict, cfg: LoraConfig) -> dict:
    """`init_adapters`' shapes and dtypes (`jax.ShapeDtypeStruct`s) for an abstract base."""
    return jax.eval_shape(lambda b: init_adapters(b, cfg), base_shapes)


def num_adapter_params(adapters: dict) -> int:
    return int(sum(x.size for x in jax.tree.leaves(adapters)))


def _lookup(tree: dict, path: tuple):
    node = tree
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) and "lora_a" in node else None


@contextlib.contextmanager
def applied(params: Adapted):
    """Inside this context, every adapted Dense / DenseGeneral of a flax `apply` adds its
    low-rank path, `(α / r) (x A) B`, to the base output (`x` flattened over its input axes)."""

    def interceptor(next_fun, args, kwargs, context):
        out = next_fun(*args, **kwargs)
        module = context.module
        if context.method_name != "__call__" or not isinstance(module, nn.Dense | nn.DenseGeneral):
            return out
        node = _lookup(params.adapters, module.path)
        if node is None:
            return out
        x = args[0]
        n_in = PROJECTIONS[module.path[-1]]
        flat = x.reshape(*x.shape[: x.ndim - n_in], -1)
        a, b = node["lora_a"].astype(x.dtype), node["lora_b"].astype(x.dtype)
        delta = (flat @ a) @ (b * jnp.asarray(params.scale, x.dtype))
        return out + delta.reshape(out.shape).astype(out.dtype)

    with nn.intercept_methods(interceptor):
        yield


def merge(base: dict, adapters: dict, cfg: LoraConfig) -> dict:
    """The base with every adapter folded in: W' = W + (α / r) A B, in W's shape and dtype."""

    def fold(path, leaf):
        keys = tuple(p.key for p in path)
        if keys[-1] != "kernel":
            return leaf
        node = _lookup(adapters, keys[:-1])
        if node is None:
            return leaf
        delta = (node["lora_a"] @ node["lora_b"]) * cfg.scale
        return (leaf + delta.reshape(leaf.shape)).astype(leaf.dtype)

    return jax.tree_util.tree_map_with_path(fold, base)
