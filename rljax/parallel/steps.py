"""Jitted training steps with explicit shardings: data parallel, FSDP and tensor parallel.

A step is ``step(state, batch, *rest) -> (state, metrics)``. ``jit_step`` compiles it once for a
mesh: the state (parameters, optimizer state, counters) is placed by name-pattern rules, the batch
rows are split over the data axes, the remaining arguments (keys, scalars) are replicated, the
state is donated, and the scalar metrics come back replicated so every process can read them.
XLA (GSPMD) inserts the all-gathers of FSDP weights and the reductions of gradients; the step's
code does not change between one CPU and a pod slice.

The rules for the rljax transformer (``rljax.lm.model.decoder``) are here too; a config may replace
them.
"""

from collections.abc import Callable
from typing import Any

import jax

from rljax.parallel import sharding

# Rows of every batch leaf ([B, ...]) split over the data-parallel axes; FSDP is data parallel too.
BATCH: sharding.Rules = ((".*", (("data", "fsdp"),)),)

# Fully-sharded data parallel (ZeRO-3) for the transformer: each weight matrix, and its Adam
# moments (same names under opt_state/...), split once over ``fsdp`` along its largest dimension
# that fits; norms, biases and counters (small) replicated.
LM_FSDP: sharding.Rules = (
    (r"(embedding|kernel)$", "largest:fsdp"),
    (r".*", ()),
)

# FSDP plus Megatron-style tensor parallelism (Shoeybi et al. 2019): attention split by heads,
# the MLP by its hidden units, each matrix's other dimension over ``fsdp``. Shapes of
# rljax.lm.model.decoder: the tiny family's qkv [D, 3, H, Dh] and mlp_in [D, F] / mlp_out [F, D];
# the
# Llama / Qwen families' q [D, H, Dh], k and v [D, Hkv, Dh] (+ biases [H, Dh] for Qwen2), gate
# and up [D, F], down [F, D]; out [H, Dh, D], embedding [V, D], head [D, V] for all. Needs H,
# Hkv and F divisible by the ``tensor`` size. Norm scales (Qwen3's per-head q/k norms included)
# are replicated.
LM_FSDP_TENSOR: sharding.Rules = (
    (r"(^|/)qkv/kernel$", ("fsdp", None, "tensor", None)),
    (r"(^|/)(q|k|v)/kernel$", ("fsdp", "tensor", None)),
    (r"(^|/)(q|k|v)/bias$", ("tensor", None)),
    (r"(^|/)out/kernel$", ("tensor", None, "fsdp")),
    (r"(^|/)(mlp_in|gate|up)/kernel$", ("fsdp", "tensor")),
    (r"(^|/)mlp_in/bias$", ("tensor",)),
    (r"(^|/)(mlp_out|down)/kernel$", ("tensor", "fsdp")),
    (r"(^|/)embedding$", (None, "fsdp")),
    (r"(^|/)head/kernel$", ("fsdp", None)),
    (r".*", ()),
)


def jit_step(
    step: Callable[..., tuple[Any, dict]],
    mesh: jax.sharding.Mesh,
    state: Any,
    batch: Any,
    *,
    state_rules: sharding.Rules,
    batch_rules: sharding.Rules = BATCH,
    num_rest: int = 0,
    donate: bool = True,
):
    """``jax.jit(step)`` with explicit in/out shardings on ``mesh``.

    Args:
      step: ``(state, batch, *rest) -> (state, metrics)``, pure.
      mesh: the device mesh.
      state: the state (arrays or ``jax.ShapeDtypeStruct``s): tree structure and shapes.
      batch: a batch of the shape every call will use (arrays or shape structs).
      state_rules: sharding rules of the state, e.g. ``LM_FSDP``.
      batch_rules: sharding rules of the batch (default: rows over ``data`` and ``fsdp``).
      num_rest: number of further arguments (keys, scalars): replicated.
      donate: donate the input state's buffers to the output state.

    Returns:
      ``(jitted_step, state_shardings, batch_shardings)``; place the initial state with
      ``sharding.shard(state, state_shardings)`` (or create it with ``out_shardings``).
    """
    state_shardings = sharding.tree_shardings(mesh, state, state_rules)
    batch_shardings = sharding.tree_shardings(mesh, batch, batch_rules)
    rest = (sharding.replicated(mesh),) * num_rest
    jitted = jax.jit(
        step,
        in_shardings=(state_shardings, batch_shardings, *rest),
        out_shardings=(state_shardings, sharding.replicated(mesh)),
        donate_argnums=(0,) if donate else (),
    )
    return jitted, state_shardings, batch_shardings
