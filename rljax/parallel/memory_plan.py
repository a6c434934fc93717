"""Per-device memory of the whole RLVR step and the sampler, from compiled programs, no weights.

The plan answers "does this model, at this batch and length, fit on this mesh?" before anyone
rents an accelerator. The learner's state (parameters, AdamW moments), the frozen base and the
problem table enter `jax.jit(...).lower(...)` as `jax.ShapeDtypeStruct`s, so nothing of the
model's size is ever allocated; XLA partitions the program for the mesh (GSPMD) and
`compiled.memory_analysis()` reports, per device,

  argument bytes  the inputs' shards (state + base + table for the step; params + prompts for
                  the sampler),
  output bytes    the results' shards,
  alias bytes     outputs written into donated inputs (the step donates its state),
  temp bytes      everything else live at the peak of XLA's buffer assignment (activations, the
                  KV cache, logits, gradients, the all-gathered FSDP weights).

peak = argument + output − alias + temp is what one device must hold.

Model shapes: `SHAPES` gives the widths, depths and vocabularies of public checkpoints, built
with `rljax.lm.model` as it is: multi-head attention stands in for grouped-query attention (more
attention weights than the real model), the GELU MLP's hidden width is 1.5x the SwiGLU width
(the same MLP weight count with two matrices instead of three), no q/k/v biases, an untied
output head and float32 everywhere. The parameter count of each approximation is reported
next to the real one.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rljax.agents import grpo
from rljax.lm import device_reward, presets
from rljax.lm.model import TransformerConfig, init_params
from rljax.parallel import lm as parallel_lm
from rljax.parallel import sharding


class ModelShape(NamedTuple):
    """A public checkpoint's shape: `d_ff` is its SwiGLU width, `params` its real count."""

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    vocab_size: int
    params: float  # the checkpoint's own parameter count (for comparison)


# From each checkpoint's config.json (hidden_size, num_hidden_layers, num_attention_heads,
# intermediate_size, vocab_size).
SHAPES = {
    "qwen2.5-0.5b": ModelShape(896, 24, 14, 4864, 151936, 0.49e9),
    "qwen2.5-1.5b": ModelShape(1536, 28, 12, 8960, 151936, 1.54e9),
    "llama-3.2-1b": ModelShape(2048, 16, 32, 8192, 128256, 1.24e9),
    "qwen2.5-7b": ModelShape(3584, 28, 28, 18944, 152064, 7.62e9),
    "qwen3-8b": ModelShape(4096, 36, 32, 12288, 151936, 8.19e9),
}


def model_config(shape: ModelShape, max_len: int) -> TransformerConfig:
    """The present decoder at `shape`'s width, depth and vocabulary (see the module docstring)."""
    return TransformerConfig(
        vocab_size=shape.vocab_size,
        d_model=shape.d_model,
        n_layers=shape.n_layers,
        n_heads=shape.n_heads,
        d_ff=shape.d_ff * 3 // 2,
        max_len=max_len,
    )


@dataclasses.dataclass(frozen=True)
class PlanConfig:
    """One row of the plan: a model, a batch, lengths and a sharding."""

    model: TransformerConfig
    prompts: int = 8  # B, prompts per step
    group_size: int = 8  # G, completions per prompt
    prompt_length: int = 256  # P
    completion_length: int = 1024  # A
    micro_batches: int = 1  # gradient-accumulation steps per update: B / this prompts each
    preset: str = "grpo"  # the GRPO-family preset (its KL term keeps the base model resident)
    rules: sharding.Rules = (  # how state and base are split (rljax.parallel.steps)
        (r"(embedding|kernel)$", "largest:fsdp"),
        (r".*", ()),
    )


class Memory(NamedTuple):
    """Per-device bytes of one compiled program (`compiled.memory_analysis()`)."""

    argument: int
    output: int
    alias: int
    temp: int

    @property
    def peak(self) -> int:
        return self.argument + self.output - self.alias + self.temp


def memory_of(compiled) -> Memory:
    """The per-device byte counts of a compiled program."""
    stats = compiled.memory_analysis()
    return Memory(
        int(stats.argument_size_in_bytes),
        int(stats.output_size_in_bytes),
        int(stats.alias_size_in_bytes),
        int(stats.temp_size_in_bytes),
    )


def _never_called(tokens, problem):
    """Stands in for the answer checker: compiling a `pure_callback` never calls it."""
    raise AssertionError("the memory plan compiles the step; it never runs it")


def learner_config(plan: PlanConfig) -> grpo.Config:
    """The learner's static config for `plan` (one epoch; `micro_batches` accumulation steps)."""
    return grpo.Config(
        model=plan.model,
        reward_kind="host",
        completion_length=plan.completion_length,
        prompts_per_step=plan.prompts,
        group_size=plan.group_size,
        max_epochs=1,
        max_minibatches=plan.micro_batches,
        host_scorer=_never_called,
    )


def abstract_inputs(plan: PlanConfig, num_problems: int = 64):
    """`(state, data)` of one learner as `jax.ShapeDtypeStruct` trees: nothing is allocated."""
    config = learner_config(plan)
    values = presets.hparam_values(
        presets.resolve(plan.preset, num_epochs=1, num_minibatches=plan.micro_batches)
    )
    hparams = grpo.make_hparams(values)
    params = jax.eval_shape(lambda: init_params(plan.model, jax.random.PRNGKey(0)))
    n, p, a = num_problems, plan.prompt_length, plan.completion_length
    i32 = lambda *s: jax.ShapeDtypeStruct(s, jnp.int32)  # noqa: E731
    table = device_reward.ProblemTable(
        i32(n, p), i32(n, p), i32(n), i32(n, a), i32(n), i32(n), i32(n)
    )
    data = grpo.TaskData(params, table, table)
    state = jax.eval_shape(
        lambda d, h: grpo.init(config, d, jax.random.PRNGKey(0), h),
        data,
        hparams,
    )
    return config, state, data


def compile_step(mesh: jax.sharding.Mesh, plan: PlanConfig):
    """The whole RLVR step (sample, score, log-probs, AdamW) compiled on `mesh`."""
    config, state, data = abstract_inputs(plan)
    update, _, _ = parallel_lm.jit_learner_update(mesh, config, state, data, state_rules=plan.rules)
    return update.lower(state, data).compile()


def compile_sampler(mesh: jax.sharding.Mesh, plan: PlanConfig):
    """The KV-cache sampler for all B x G rows of a step, compiled on `mesh`."""
    params = jax.eval_shape(lambda: init_params(plan.model, jax.random.PRNGKey(0)))
    sample, _ = parallel_lm.jit_sample(
        mesh,
        params,
        model_cfg=plan.model,
        max_new_tokens=plan.completion_length,
        param_rules=plan.rules,
    )
    rows = plan.prompts * plan.group_size
    prompt = jax.ShapeDtypeStruct((rows, plan.prompt_length), jnp.int32)
    key = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    return sample.lower(params, prompt, prompt, key).compile()


def num_params(model: TransformerConfig) -> int:
    """Parameters of the present decoder at `model`'s shape (counted from shapes only)."""
    params = jax.eval_shape(lambda: init_params(model, jax.random.PRNGKey(0)))
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(params)))
