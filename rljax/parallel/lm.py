"""The small-LM RLVR trainer on a mesh: sharded sampling and a sharded RL update.

Parameters, the frozen reference model and the AdamW moments are placed by the transformer rules
of ``rljax.parallel.steps`` (``LM_FSDP`` by default: each weight split once over ``fsdp``); the
prompt/completion rows are split over ``("data", "fsdp")``. ``rljax.lm.rlvr.update`` and
``rljax.lm.sampling.sample`` run unchanged: only their ``jax.jit`` carries explicit shardings.
"""

import functools
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from rljax.lm import rlvr, sampling
from rljax.lm.model import TransformerConfig
from rljax.parallel import sharding, steps

# Axes the rows of a batch (prompts x samples) are split over.
ROW_AXES = ("data", "fsdp")


def jit_rl_update(
    mesh: jax.sharding.Mesh,
    state: rlvr.RLState,
    batch: rlvr.RolloutBatch,
    *,
    cfg: rlvr.RLConfig,
    model_cfg: TransformerConfig,
    state_rules: sharding.Rules = steps.LM_FSDP,
    batch_rules: sharding.Rules = steps.BATCH,
):
    """``rlvr.update(state, batch, key)`` jitted on ``mesh``; the state is donated.

    Args:
      mesh: the device mesh.
      state: an ``RLState`` (arrays or shape structs) giving structure and shapes.
      batch: a ``RolloutBatch`` of the shape every call uses; its B prompts (and so its B * G
        rows) must be divisible by the size of the ``data`` x ``fsdp`` axes.
      cfg: the RL config.
      model_cfg: the transformer config.
      state_rules: placement of params, reference params and optimizer state.
      batch_rules: placement of the batch (default: rows over ``data`` and ``fsdp``).

    Returns:
      ``(update, state_shardings, batch_shardings)``, ``update(state, batch, key)``.
    """
    step = functools.partial(rlvr.update, cfg=cfg, model_cfg=model_cfg)
    return steps.jit_step(
        step, mesh, state, batch, state_rules=state_rules, batch_rules=batch_rules, num_rest=1
    )


def jit_sample(
    mesh: jax.sharding.Mesh,
    params: Any,
    *,
    model_cfg: TransformerConfig,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    param_rules: sharding.Rules = steps.LM_FSDP,
):
    """``sampling.sample`` jitted on ``mesh``: prompts split by rows, parameters by the rules.

    Returns:
      ``(sample, param_shardings)``; ``sample(params, prompt_tokens, prompt_mask, key)`` returns
      ``Completions`` ``[B, A]`` split by rows like the prompts. The random draws do not depend
      on the sharding (JAX's partitionable threefry), so the tokens equal a one-device run.
    """
    param_shardings = sharding.tree_shardings(mesh, params, param_rules)
    row_axes = tuple(a for a in ROW_AXES if a in mesh.shape)
    rows = NamedSharding(mesh, PartitionSpec(row_axes) if row_axes else PartitionSpec())
    fn = functools.partial(
        _sample,
        model_cfg=model_cfg,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
    )
    jitted = jax.jit(
        fn,
        in_shardings=(param_shardings, rows, rows, sharding.replicated(mesh)),
        out_shardings=rows,
    )
    return jitted, param_shardings


def _sample(params, prompt_tokens, prompt_mask, key, *, model_cfg, **kwargs):
    return sampling.sample(params, model_cfg, prompt_tokens, prompt_mask, key, **kwargs)
