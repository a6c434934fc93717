"""The small-LM RLVR trainer on a mesh: sharded sampling and a sharded RL update.

Parameters, the frozen reference model and the AdamW moments are placed by the transformer rules
of ``rljax.parallel.steps`` (``LM_FSDP`` by default: each weight split once over ``fsdp``); the
sampler's prompt/completion rows are split over ``("data", "fsdp")``. ``rljax.agents.grpo.update``
and ``rljax.lm.sampling.sample`` run unchanged: only their ``jax.jit`` carries shardings.
"""

import functools
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from rljax.agents import grpo
from rljax.lm import sampling
from rljax.lm.model import TransformerConfig
from rljax.parallel import sharding, steps

# Axes the rows of a batch (prompts x samples) are split over.
ROW_AXES = ("data", "fsdp")


def jit_learner_update(
    mesh: jax.sharding.Mesh,
    config: grpo.Config,
    state: grpo.State,
    data: grpo.TaskData,
    *,
    state_rules: sharding.Rules = steps.LM_FSDP,
):
    """One learner's whole RLVR step ``grpo.update(config, data, state)`` jitted on ``mesh``.

    The learner's parameters and AdamW moments, and the base (reference) parameters in
    ``data``, are placed by ``state_rules`` (FSDP / tensor parallel); the problem tables and the
    counters are replicated; the state is donated. Populations of small learners are sharded
    over a ``seeds`` axis instead (``rljax.train.lm_experiment``).

    Returns:
      ``(update, state_shardings, data_shardings)`` with ``update(state, data)``.
    """
    state_shardings = sharding.tree_shardings(mesh, state, state_rules)
    replicated = sharding.replicated(mesh)
    data_shardings = grpo.TaskData(
        sharding.tree_shardings(mesh, data.base_params, state_rules),
        jax.tree.map(lambda _: replicated, data.train),
        jax.tree.map(lambda _: replicated, data.eval),
    )
    jitted = jax.jit(
        lambda s, d: grpo.update(config, d, s),
        in_shardings=(state_shardings, data_shardings),
        out_shardings=(state_shardings, replicated),
        donate_argnums=(0,),
    )
    return jitted, state_shardings, data_shardings


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
