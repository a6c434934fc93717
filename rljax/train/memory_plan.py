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

Models: `SHAPES` holds the fields of each public checkpoint's `config.json` that change the
computation, read by the same `rljax.lm.model.hf.config.from_hf` a loaded checkpoint goes through,
so
each plan row is the decoder rljax would run for that checkpoint: grouped-query attention,
SwiGLU MLP, Qwen2's q/k/v biases, Qwen3's q/k norms, tied or untied embeddings; its parameter
count equals the checkpoint's (`num_params`; `tests/parallel/test_memory_plan.py`). Parameters
and AdamW moments are float32 (masters); `PlanConfig.model.dtype="bfloat16"` runs the forward
and backward passes in bf16.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rljax.agents import grpo
from rljax.agents.grpo import presets
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.hf.config import from_hf
from rljax.lm.tasks import device_reward
from rljax.parallel import sharding
from rljax.train import lm_sharding, population


def _hf(arch, hidden, inter, heads, kv, layers, vocab, tie, theta, **extra) -> dict:
    return {
        "architectures": [arch], "hidden_size": hidden, "intermediate_size": inter,
        "num_attention_heads": heads, "num_key_value_heads": kv, "num_hidden_layers": layers,
        "vocab_size": vocab, "tie_word_embeddings": tie, "rope_theta": theta, **extra,
    }  # fmt: skip


# Each checkpoint's config.json fields (Hugging Face hub, read 2026-11); `PARAMS`: the
# checkpoint's own parameter count, for the check that the plan's model is that model.
QWEN2, LLAMA, QWEN3 = "Qwen2ForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM"
SHAPES = {
    "qwen2.5-0.5b": _hf(QWEN2, 896, 4864, 14, 2, 24, 151936, True, 1e6, attention_bias=True),
    "qwen2.5-1.5b": _hf(QWEN2, 1536, 8960, 12, 2, 28, 151936, True, 1e6, attention_bias=True),
    "llama-3.2-1b": _hf(
        LLAMA,
        2048,
        8192,
        32,
        8,
        16,
        128256,
        True,
        5e5,
        head_dim=64,
        rms_norm_eps=1e-5,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    ),  # fmt: skip
    "qwen2.5-7b": _hf(QWEN2, 3584, 18944, 28, 4, 28, 152064, False, 1e6, attention_bias=True),
    "qwen3-8b": _hf(QWEN3, 4096, 12288, 32, 8, 36, 151936, False, 1e6, head_dim=128),
}
PARAMS = {
    "qwen2.5-0.5b": 494_032_768,
    "qwen2.5-1.5b": 1_543_714_304,
    "llama-3.2-1b": 1_235_814_400,
    "qwen2.5-7b": 7_615_616_512,
    "qwen3-8b": 8_190_735_360,
}


def model_config(
    hf: dict,
    max_len: int,
    *,
    n_layers: int = 0,
    dtype: str = "float32",
    remat: bool = False,
    logits_chunk: int = 0,
) -> TransformerConfig:
    """The decoder of a checkpoint's `config.json` fields `hf` (`SHAPES[name]`), at `max_len`
    tokens; `n_layers` > 0 overrides the depth (a shallower probe of the same widths);
    `remat` and `logits_chunk` as in `TransformerConfig`."""
    cfg = from_hf(hf, max_len=max_len, dtype=dtype)
    return dataclasses.replace(
        cfg, n_layers=n_layers or cfg.n_layers, remat=remat, logits_chunk=logits_chunk
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
    split_rows: bool = True  # the step's rows over data / fsdp (`parallel.lm`'s jit functions)
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


def _hparams(plan: PlanConfig) -> grpo.Hparams:
    values = presets.hparam_values(
        presets.resolve(plan.preset, num_epochs=1, num_minibatches=plan.micro_batches)
    )
    return grpo.make_hparams(values)


def abstract_inputs(plan: PlanConfig, num_problems: int = 64):
    """`(state, data)` of one learner as `jax.ShapeDtypeStruct` trees: nothing is allocated."""
    config = learner_config(plan)
    hparams = _hparams(plan)
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
    update, _, _ = lm_sharding.jit_learner_update(
        mesh, config, state, data, state_rules=plan.rules, split_rows=plan.split_rows
    )
    return update.lower(state, data).compile()


def compile_population(mesh: jax.sharding.Mesh, plan: PlanConfig, learners: int):
    """`learners` whole RLVR steps as the pipeline trains them: one chunk of one update of
    `rljax.train.population` (the learners on the mesh's ``seeds`` axis, each one's state split
    by `plan.rules`, the base shared and split by them too), compiled on shapes."""
    config, _, data = abstract_inputs(plan)
    if plan.split_rows:
        config = dataclasses.replace(config, row_sharding=lm_sharding.row_sharding(mesh, config))
    spec = population.Spec(
        learner=grpo, config=config, env=data,
        hparams=jax.tree.map(lambda x: np.asarray(x)[None], _hparams(plan)),
        num_updates=1, chunk_updates=1, num_seeds=learners, env_as_argument=True,
        member_rules=plan.rules, env_rules=plan.rules, unbatch_one=False,
    )  # fmt: skip
    states = population.init(spec, abstract=True)
    shardings = population.state_shardings(spec, mesh, states)
    chunk = population.chunk_fn(spec, 1, shardings)
    placed = sharding.abstract(states, shardings[0])
    env = sharding.abstract(data, population.env_shardings(spec, mesh))
    return chunk.lower(placed, env).compile()


def compile_sampler(mesh: jax.sharding.Mesh, plan: PlanConfig):
    """The KV-cache sampler for all B x G rows of a step, compiled on `mesh`."""
    params = jax.eval_shape(lambda: init_params(plan.model, jax.random.PRNGKey(0)))
    sample, _ = lm_sharding.jit_sample(
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
    """Parameters of the decoder `model` (counted from shapes only)."""
    params = jax.eval_shape(lambda: init_params(model, jax.random.PRNGKey(0)))
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(params)))
