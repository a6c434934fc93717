"""The memory plan compiles the RLVR step and the sampler from shapes alone on 8 fake devices,
and reports exactly the compiled programs' memory analysis."""

import jax
import pytest

from rljax.parallel import memory_plan as mp
from rljax.parallel import mesh as mesh_lib
from rljax.parallel import steps

SMALL = mp.ModelShape(d_model=64, n_layers=1, n_heads=4, d_ff=64, vocab_size=256, params=0)


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
