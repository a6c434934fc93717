"""Math RLVR on local GSM8K / MATH files: (SFT) -> GRPO-family learners -> pass@k.

    python experiments/train_math.py --config=configs/grpo_math.py:gsm8k,tiny \
        --config.data.train_path=data/gsm8k/train.jsonl \
        --config.data.test_path=data/gsm8k/test.jsonl [--workdir=runs/math_gsm8k] [--cpu_devices=N]

A front end of the one population pipeline (`rljax.train.math_experiment`): every learner
(`config.sweep.preset` or `config.preset`, x `config.num_seeds`) trains in one vmapped, jitted
program whose rewards come from the math-verify checker (rljax.lm.tasks.math_checker) through
`jax.pure_callback`, on the mesh `config.mesh.shape` x `config.mesh.axes` (learners over `seeds`,
each learner's weights over `fsdp` / `tensor`), with checkpoints, `--config.resume=True` and the
workdir lock. Several processes (hosts) run this same command, each told who it is by
`config.distributed.*` or the RLJAX_COORDINATOR_ADDRESS / RLJAX_NUM_PROCESSES / RLJAX_PROCESS_ID
environment (RLJAX_AUTO_DETECT=1: SLURM, TPU pod slices, Open MPI); process 0 writes the files.
`--cpu_devices=N` gives this process N fake CPU devices (read before jax starts). Writes
metrics.jsonl/csv, curves.png, summary.json, checkpoints/ and results.json (pass@k per learner)
into --workdir. Bad input is one line (`error: ...`, exit 2; `--debug` for a traceback).
docs/math.md has the GPU commands.
"""

import sys

from rljax import cli, prng_kernel, xla_flags

try:  # the device count must be fixed before jax starts
    _CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=None)
except ValueError as _e:
    cli.fail(_e)
xla_flags.set_flags(num_cpu_devices=_CPU_DEVICES)  # None keeps a count the launcher set

from absl import flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.parallel import distributed  # noqa: E402  (imports nothing that touches a device)

EXAMPLE = "--config=configs/grpo_math.py:gsm8k,tiny"


def make_flags(argv: list[str]) -> flags.FlagValues:
    fv = flags.FlagValues()
    config_flags.DEFINE_config_file(
        "config", None, "Config file.", lock_config=True, flag_values=fv, sys_argv=argv
    )
    flags.DEFINE_string("workdir", None, "Output directory.", flag_values=fv)
    flags.DEFINE_integer("cpu_devices", None, "Fake CPU devices of this process.", flag_values=fv)
    flags.DEFINE_boolean("debug", False, "Tracebacks instead of one-line errors.", flag_values=fv)
    return fv


def distributed_config(c) -> distributed.DistributedConfig:
    """`config.distributed`, overridden by the RLJAX_* environment, validated."""
    d = c.distributed
    base = distributed.DistributedConfig(
        coordinator_address=d.coordinator_address,
        num_processes=d.num_processes,
        process_id=d.process_id,
        auto_detect=d.auto_detect,
    )
    config = distributed.from_env(base=base)
    distributed.validate(config)
    return config


def _math_rlvr():
    """rljax.train.math_experiment, imported only once `jax.distributed` has started: its imports
    (gymnax) create arrays, after which JAX can no longer join other processes."""
    from rljax.train import math_experiment  # noqa: PLC0415

    return math_experiment


def from_config(c, workdir: str | None, dist: distributed.DistributedConfig):
    """The frozen run config (`math_experiment.MathRunConfig`) of a parsed
    `configs/grpo_math.py`."""
    fields = tuple((k, v) for k, v in c.data.fields.items() if v)
    # "--config.mesh.axes=seeds,fsdp" arrives as ("seeds,fsdp",)
    axes = tuple(a for entry in c.mesh.axes for a in str(entry).split(","))
    from rljax.train import sweep  # noqa: PLC0415  (after `initialize`, as _math_rlvr)

    swept = sweep.parse_values("preset", c.sweep.preset, str)  # an empty item is refused
    return _math_rlvr().MathRunConfig(
        train_path=c.data.train_path,
        test_path=c.data.test_path,
        workdir=workdir or f"runs/math_{c.data.layout}",
        layout=c.data.layout,
        fields=fields,
        answer_modes=tuple(c.data.answer_modes.split(",")),
        model=c.model.path or "tiny",
        tokenizer=c.model.tokenizer,
        chat_template=c.model.chat_template,
        d_model=c.model.d_model,
        n_layers=c.model.n_layers,
        n_heads=c.model.n_heads,
        d_ff=c.model.d_ff,
        dtype=c.model.dtype,
        remat=c.model.remat,
        logits_chunk=c.model.logits_chunk,
        micro_batches=c.run.micro_batches,
        prompt_length=c.run.prompt_length,
        completion_length=c.run.completion_length,
        prompts_per_step=c.run.prompts_per_step,
        group_size=c.run.group_size,
        steps=c.run.steps,
        chunk_steps=c.run.chunk_steps,
        checkpoint_every=c.run.checkpoint_every,
        eval_problems=c.run.eval_problems,
        resume=c.resume,
        progress=c.progress,
        presets=tuple(swept or [c.preset]),
        rl=tuple((k, v) for k, v in c.rl.items() if v is not None),
        sweep=tuple((k, str(v)) for k, v in c.sweep.items() if k != "preset" and str(v).strip()),
        num_seeds=c.num_seeds,
        seed=c.seed,
        sft_steps=c.sft.steps,
        sft_learning_rate=c.sft.learning_rate,
        temperature=c.run.temperature,
        format_weight=c.run.format_weight,
        checker_timeout_s=c.checker.timeout_s,
        checker_workers=c.checker.workers,
        final_problems=c.eval.num_problems,
        final_samples=c.eval.num_samples,
        mesh_shape=tuple(c.mesh.shape),
        mesh_axes=axes,
        rules=c.mesh.rules,
        distributed=dist,
    )


def _checked(fn, *args):
    """`fn(*args)`, a bad field's error as one line (`error: ...`, exit 2)."""
    try:
        return fn(*args)
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise cli.ConfigError(cli.one_line(e)) from None


def run_config(fv, dist: distributed.DistributedConfig):
    """The validated run config of parsed flags (imports math_rlvr: after `initialize`)."""
    run = from_config(fv["config"].value, fv["workdir"].value, dist)
    _math_rlvr().validate(run)
    return run


def parse(argv: list[str]):
    """Parses and validates a command line; nothing is initialized, built or compiled."""
    fv = cli.parse_config_flags(argv, make_flags, EXAMPLE)
    dist = _checked(distributed_config, fv["config"].value)
    return _checked(run_config, fv, dist)


def main(argv: list[str]) -> int:
    fv = cli.parse_config_flags(argv, make_flags, EXAMPLE)
    dist = _checked(distributed_config, fv["config"].value)
    distributed.initialize(dist)  # before anything touches a device; one process: nothing
    prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)
    run = _checked(run_config, fv, dist)
    try:
        results = _math_rlvr().run(run)
    except ValueError as e:  # a bad data file (file and row), or a mesh that does not fit
        raise cli.ConfigError(cli.one_line(e)) from None
    for name, summary in results["learners"].items():
        n = summary["num_samples"]
        print(f"{name}: pass@1 {summary['pass@1']:.3f}, pass@{n} {summary[f'pass@{n}']:.3f}")
    print(f"checker: {results['checker']}")
    if results["learners"]:  # process 0
        print(f"outputs: {run.workdir}/(metrics.jsonl, results.json)")
    return 0


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv))
