"""The small-LM RLVR trainer on a mesh: sharded sampling and a sharded RL update.

Parameters, the frozen reference model and the AdamW moments are placed by the transformer rules
of ``rljax.parallel.steps`` (``LM_FSDP`` by default: each weight split once over ``fsdp``); the
sampler's prompt/completion rows are split over ``("data", "fsdp")``. ``rljax.agents.grpo.update``
and ``rljax.lm.model.sampling.sample`` run unchanged: only their ``jax.jit`` carries shardings.
A population of such learners is a ``rljax.train.population.Spec`` with ``member_rules``: its
learners on ``seeds``, each one's weights split by the same rules
(``rljax.parallel.learner_axis.member_shardings``), trained by the pipeline's one chunk.
"""

import dataclasses
import functools
import math
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from rljax.agents import grpo
from rljax.lm.model import sampling
from rljax.lm.model.decoder import TransformerConfig
from rljax.parallel import mesh as mesh_lib
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
    split_rows: bool = True,
):
    """One learner's whole RLVR step ``grpo.update(config, data, state)`` jitted on ``mesh``.

    The learner's parameters and AdamW moments, and the base (reference) parameters in
    ``data``, are placed by ``state_rules`` (FSDP / tensor parallel); the problem tables and the
    counters are replicated; the state is donated. With ``split_rows`` the step's rows (prompts,
    completions, each micro-batch) are constrained to the mesh's ``data`` and ``fsdp`` axes
    (``row_sharding``), so each device runs the forward and backward passes of its share of the
    rows, as FSDP intends; without it XLA's propagation decides, and in practice every device
    holds the whole batch's activations. Populations of small learners are sharded over a
    ``seeds`` axis instead (``rljax.train.lm_experiment``).

    Raises:
      ValueError: with ``split_rows``, if the rows of a micro-batch do not divide over the axes.

    Returns:
      ``(update, state_shardings, data_shardings)`` with ``update(state, data)``.
    """
    if split_rows:
        config = dataclasses.replace(config, row_sharding=row_sharding(mesh, config))
    state_shardings = sharding.tree_shardings(mesh, state, state_rules)
    replicated = sharding.replicated(mesh)
    data_shardings = task_data_shardings(mesh, data, state_rules)
    jitted = jax.jit(
        lambda s, d: grpo.update(config, d, s),
        in_shardings=(state_shardings, data_shardings),
        out_shardings=(state_shardings, replicated),
        donate_argnums=(0,),
    )
    return jitted, state_shardings, data_shardings


def row_sharding(mesh: jax.sharding.Mesh, config: grpo.Config) -> NamedSharding:
    """The sharding that splits a step's rows over the mesh's ``ROW_AXES`` (``grpo.Config.
    row_sharding``); every row count the step uses must divide over them."""
    axes = tuple(a for a in ROW_AXES if a in mesh.shape)
    size = math.prod(mesh.shape[a] for a in axes)
    groups_per_micro = config.prompts_per_step // config.max_minibatches
    for name, rows in (
        ("prompts_per_step x group_size", config.prompts_per_step * config.group_size),
        ("a micro-batch's rows", groups_per_micro * config.group_size),
    ):
        if rows % size:
            raise ValueError(
                f"{name} = {rows} rows cannot be split over the mesh's {axes} axes of size "
                f"{size}; allowed: a multiple of {size} (or split_rows=False)"
            )
    return NamedSharding(mesh, PartitionSpec(axes or None))


def task_data_shardings(mesh: jax.sharding.Mesh, data: grpo.TaskData, rules: sharding.Rules):
    """The shared task data on ``mesh``: the base parameters by ``rules``, the tables replicated."""
    replicated = sharding.replicated(mesh)
    return grpo.TaskData(
        sharding.tree_shardings(mesh, data.base_params, rules),
        jax.tree.map(lambda _: replicated, data.train),
        jax.tree.map(lambda _: replicated, data.eval),
    )


def jit_learner_sample(
    mesh: jax.sharding.Mesh,
    param_shardings: Any,
    *,
    model_cfg: TransformerConfig,
    max_new_tokens: int,
    num_rows: int,
    temperature: float = 1.0,
):
    """``sampling.sample`` with learner ``i``'s parameters, taken from the population's
    ``[A, ...]`` (placed by ``param_shardings``) inside the program.

    The ``num_rows`` prompt rows are split over ``("data", "fsdp")`` where that size divides
    them (else replicated); the completions come back replicated, so every process can decode
    them. The draws do not depend on the sharding (partitionable threefry).

    Returns:
      ``(sample, rows)``: ``sample(params [A, ...], i, prompt_tokens, prompt_mask, key) ->
      Completions``, and the prompts' sharding (on several processes, place host prompts with
      ``jax.make_array_from_callback``: jit refuses split NumPy inputs there).
    """
    row_axes = tuple(a for a in ROW_AXES if a in mesh.shape)
    split = row_axes and num_rows % mesh_lib.axis_size(mesh, row_axes) == 0
    rows = NamedSharding(mesh, PartitionSpec(row_axes) if split else PartitionSpec())
    replicated = sharding.replicated(mesh)

    def fn(params, i, prompt_tokens, prompt_mask, key):
        one = jax.tree.map(lambda x: x[i], params)
        return sampling.sample(
            one, model_cfg, prompt_tokens, prompt_mask, key, max_new_tokens=max_new_tokens,
            temperature=temperature,
        )  # fmt: skip

    jitted = jax.jit(
        fn,
        in_shardings=(param_shardings, replicated, rows, rows, replicated),
        out_shardings=replicated,
    )
    return jitted, rows


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
