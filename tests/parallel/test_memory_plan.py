"""The memory plan compiles the RLVR step, the sampler and a population from shapes alone on 8
fake devices, and reports exactly the compiled programs' memory analysis; its models are the
checkpoints' own (parameter counts equal)."""

import jax
import pytest

from rljax.parallel import mesh as mesh_lib
from rljax.parallel import steps
from rljax.train import lm_sharding
from rljax.train import memory_plan as mp

# A Qwen2-layout config.json at a tiny size: grouped-query attention (4 heads, 2 kv heads).
SMALL = mp._hf(mp.QWEN2, 64, 64, 4, 2, 1, 256, True, 1e6, attention_bias=True)


def test_plan_models_are_the_checkpoints_own():
    """Every plan model, built from config.json fields, has its checkpoint's parameter count."""
    for name, hf in mp.SHAPES.items():
        model = mp.model_config(hf, 1280)
        assert mp.num_params(model) == mp.PARAMS[name], name
        assert model.kv_heads < model.n_heads, name  # grouped-query attention
    assert mp.model_config(mp.SHAPES["qwen3-8b"], 64, n_layers=2).n_layers == 2
    assert mp.model_config(SMALL, 24, dtype="bfloat16", remat=True).remat


def plan(rules, micro_batches=1):
    return mp.PlanConfig(
        mp.model_config(SMALL, 24),
        prompts=8,
        group_size=2,
        prompt_length=8,
        completion_length=16,
        micro_batches=micro_batches,
        rules=rules,
    )


@pytest.mark.slow  # ~70 s of CPU: it compiles the whole RLVR step and the sampler
@pytest.mark.timeout(900)
def test_reported_bytes_are_the_compiled_programs_memory_analysis():
    """Step and sampler compiled from shapes alone on an 8-way FSDP mesh; the plan's bytes are
    the compiled programs' own, and the state's shards are an eighth of it (norms aside)."""
    assert jax.device_count() == 8
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((8,), ("fsdp",)))
    p = plan(steps.LM_FSDP)
    _, state, data = mp.abstract_inputs(p)
    assert all(isinstance(x, jax.ShapeDtypeStruct) for x in jax.tree.leaves((state, data)))
    step, sampler = mp.compile_step(mesh, p), mp.compile_sampler(mesh, p)
    for compiled in (step, sampler):
        stats = compiled.memory_analysis()
        memory = mp.memory_of(compiled)
        assert memory == (
            stats.argument_size_in_bytes,
            stats.output_size_in_bytes,
            stats.alias_size_in_bytes,
            stats.temp_size_in_bytes,
        )
        assert memory.peak == memory.argument + memory.output - memory.alias + memory.temp
        assert memory.temp > 0
    # Step arguments: params + 2 Adam moments + the base = 4 float32 copies of the parameters,
    # each split 8 ways, plus the small replicated problem table and norms.
    whole = 4 * 4 * mp.num_params(p.model)
    assert whole / 8 < mp.memory_of(step).argument < whole / 4
    # The state is donated: the new state is written over the old one.
    assert mp.memory_of(step).alias > 0


@pytest.mark.slow  # ~40 s of CPU: a vmapped population of two RLVR steps
@pytest.mark.timeout(900)
def test_population_puts_learners_on_seeds_and_splits_each_by_the_rules():
    """Two learners on (seeds=2, fsdp=4): each device holds half the learners' states, split 4
    ways, and a quarter of the shared base: about one float32 copy of the parameters, twice the
    single learner's share on 8-way FSDP (half a copy)."""
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2, 4), ("seeds", "fsdp")))
    p = plan(steps.LM_FSDP)
    population = mp.memory_of(mp.compile_population(mesh, p, learners=2))
    one_copy = 4 * mp.num_params(p.model)
    assert 0.8 * one_copy < population.argument < 1.5 * one_copy
    assert population.alias > 0 and population.temp > 0


def test_rows_that_do_not_divide_over_the_mesh_fail_naming_the_counts():
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((8,), ("fsdp",)))
    p = mp.PlanConfig(mp.model_config(SMALL, 24), prompts=3, group_size=2, completion_length=8)
    with pytest.raises(ValueError, match="6 rows cannot be split.*multiple of 8"):
        lm_sharding.row_sharding(mesh, mp.learner_config(p))


@pytest.mark.slow  # ~40 s of CPU: the step compiled twice
@pytest.mark.timeout(900)
def test_splitting_the_rows_cuts_the_steps_temporaries():
    """64 rows x 160 tokens of a 2-layer, 4,096-token-vocabulary model on 8-way FSDP: with the
    rows constrained to fsdp each device runs an eighth of the batch; without, XLA's propagation
    keeps the whole batch's activations on every device (measured 2026-11-28: 350 MB vs 169 MB)."""
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((8,), ("fsdp",)))
    hf = mp._hf(mp.QWEN2, 256, 512, 4, 2, 2, 4096, True, 1e6, attention_bias=True)
    temp = {}
    for split in (False, True):
        p = mp.PlanConfig(
            mp.model_config(hf, 160), prompts=8, group_size=8, prompt_length=32,
            completion_length=128, rules=steps.LM_FSDP, split_rows=split,
        )  # fmt: skip
        temp[split] = mp.memory_of(mp.compile_step(mesh, p)).temp
    assert temp[True] < 0.7 * temp[False]
