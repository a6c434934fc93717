"""Memory plan: per-device bytes of the RLVR step and the sampler at real model sizes, on paper.

    PYTHONPATH=$PWD python scripts/memory_plan.py \
        [--models=qwen2.5-0.5b,qwen2.5-1.5b,llama-3.2-1b,qwen2.5-7b,qwen3-8b] \
        [--mesh_shape=8 --mesh_axes=fsdp] [--rules=fsdp|fsdp_tensor] \
        [--prompts=8 --group_size=8 --prompt_length=256 --completion_length=1024] \
        [--micro_batches=1] [--programs=step,sampler,population] [--learners=2]
        [--dtype=float32|bfloat16] [--remat] [--logits_chunk=0] [--no_split_rows] [--device_gb=80]
        [--out=runs/memory_plan]
    PYTHONPATH=$PWD python scripts/memory_plan.py --config=configs/grpo_math.py:gsm8k,qwen3-8b

Each row compiles the whole RLVR step (`rljax.agents.grpo.update`: sampling with the KV cache,
the answer checker's callback, old / reference log-probs, one epoch of AdamW in
`--micro_batches` accumulation steps), the sampler alone, or `--learners` steps as one population
(`vmap`, the learners over the mesh's ``seeds`` axis), with `jax.ShapeDtypeStruct` inputs
on 8 fake CPU devices (`--cpu_devices`), and prints each device's argument / output / temp bytes
from `compiled.memory_analysis()` against `--device_gb`. No weights are allocated; compiling a
7-8B step takes minutes (the model's layers are unrolled). Rows are appended to
`<out>/plan.jsonl` as they finish; `<out>/plan.md` is the table (docs/scaling.md).
Models are each checkpoint's own decoder (its config.json fields through
rljax.lm.model.hf.config.from_hf; rljax.train.memory_plan), float32 parameters and moments,
activations in `--dtype`, `--remat` checkpointing every block.
"""

import sys

from rljax import cli, prng_kernel, xla_flags

try:
    _CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=8)
except ValueError as _e:
    cli.fail(_e)
xla_flags.set_flags(num_cpu_devices=_CPU_DEVICES)
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

import datetime  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

from rljax import machine  # noqa: E402
from rljax.parallel import mesh as mesh_lib  # noqa: E402
from rljax.parallel import steps  # noqa: E402
from rljax.train import memory_plan as mp  # noqa: E402

RULES = {"fsdp": steps.LM_FSDP, "fsdp_tensor": steps.LM_FSDP_TENSOR}
PROGRAMS = ("step", "sampler", "population")
DTYPES = ("float32", "bfloat16")
GB = 1e9
# integer flag -> its least allowed value
INT_FLAGS = {"prompts": 1, "group_size": 1, "prompt_length": 1, "completion_length": 1,
             "micro_batches": 1, "learners": 1, "logits_chunk": 0, "n_layers": 0}  # fmt: skip


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(
            f"--{name}={text!r} is invalid; allowed: comma-separated integers"
        ) from None


def _from_config(args) -> None:
    """Model, lengths, batch, mesh and rules from a `configs/grpo_math.py:<dataset>,<model>`."""
    path, _, arg = args.config.partition(":")
    if not os.path.isfile(path):
        raise ValueError(f"--config={args.config!r}: no file {path!r}")
    spec = importlib.util.spec_from_file_location("plan_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    c = module.get_config(arg) if arg else module.get_config()
    model = arg.partition(",")[2]
    if model not in mp.SHAPES:
        raise ValueError(
            f"--config model {model!r} has no plan shape; valid: {', '.join(mp.SHAPES)}"
        )
    args.models, args.rules = model, c.mesh.rules
    args.prompts, args.group_size = c.run.prompts_per_step, c.run.group_size
    args.prompt_length, args.completion_length = c.run.prompt_length, c.run.completion_length
    args.mesh_shape = ",".join(str(s) for s in c.mesh.shape)
    args.mesh_axes = ",".join(c.mesh.axes)


def parse(argv):
    p = cli.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(mp.SHAPES))
    p.add_argument("--mesh_shape", default="8")
    p.add_argument("--mesh_axes", default="fsdp")
    p.add_argument("--rules", default="fsdp")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group_size", type=int, default=8)
    p.add_argument("--prompt_length", type=int, default=256)
    p.add_argument("--completion_length", type=int, default=1024)
    p.add_argument("--micro_batches", type=int, default=1)
    p.add_argument("--programs", default="step,sampler")
    p.add_argument("--learners", type=int, default=2, help="learners of the population program")
    p.add_argument("--dtype", default="float32", help="activations: float32 or bfloat16")
    p.add_argument("--remat", action="store_true", help="checkpoint every block (backward pass)")
    p.add_argument(
        "--logits_chunk", type=int, default=0,
        help="completion log-probs apply the head this many tokens at a time (0: all at once)",
    )  # fmt: skip
    p.add_argument(
        "--no_split_rows", action="store_true",
        help="step, population: leave the rows to XLA's propagation (each device then holds "
        "the whole batch)",
    )  # fmt: skip
    p.add_argument("--n_layers", type=int, default=0, help="override the depth (0: the model's)")
    p.add_argument("--device_gb", type=float, default=80.0)
    p.add_argument("--cpu_devices", default="8", help="fake CPU devices: N >= 1 or auto")
    p.add_argument("--out", default="runs/memory_plan")
    p.add_argument("--config", default=None, help="configs/grpo_math.py:<dataset>,<model>")
    args = p.parse_args(argv)
    args.cpu_devices = _CPU_DEVICES  # read (and checked) before jax started
    if args.config:
        _from_config(args)
    for name in args.models.split(","):
        if name not in mp.SHAPES:
            raise ValueError(f"--models has {name!r}; valid: {', '.join(mp.SHAPES)}")
    if args.rules not in RULES:
        raise ValueError(f"--rules={args.rules!r} is unknown; valid: {', '.join(RULES)}")
    for name in args.programs.split(","):
        if name not in PROGRAMS:
            raise ValueError(f"--programs has {name!r}; valid: {', '.join(PROGRAMS)}")
    if args.dtype not in DTYPES:
        raise ValueError(f"--dtype={args.dtype!r} is unknown; valid: {', '.join(DTYPES)}")
    for name, low in INT_FLAGS.items():
        cli.check_int(f"--{name}", getattr(args, name), low=low)
    cli.check_number("--device_gb", args.device_gb, low=0, low_open=True)
    if args.prompts % args.micro_batches:
        raise ValueError(
            f"--micro_batches={args.micro_batches} must divide --prompts={args.prompts}"
        )
    shape = _ints(args.mesh_shape, "mesh_shape")
    axes = tuple(args.mesh_axes.split(","))
    mesh_lib.resolve_shape(mesh_lib.MeshConfig(shape, axes), args.cpu_devices)
    return args, mesh_lib.MeshConfig(shape, axes)


def row(name: str, program: str, plan: mp.PlanConfig, mesh_cfg, args, memory, seconds):
    return {
        "model": name,
        "program": program,
        "params_plan": mp.num_params(plan.model),
        "params_checkpoint": mp.PARAMS[name],
        "dtype": plan.model.dtype,
        "remat": plan.model.remat,
        "logits_chunk": plan.model.logits_chunk,
        "split_rows": plan.split_rows and program in ("step", "population"),
        "learners": args.learners if program == "population" else 1,
        "mesh": "x".join(f"{a}={s}" for a, s in zip(mesh_cfg.axes, mesh_cfg.shape, strict=True)),
        "rules": args.rules,
        "batch": f"{plan.prompts}x{plan.group_size}",
        "prompt_length": plan.prompt_length,
        "completion_length": plan.completion_length,
        "micro_batches": plan.micro_batches,
        "argument_bytes": memory.argument,
        "output_bytes": memory.output,
        "alias_bytes": memory.alias,
        "temp_bytes": memory.temp,
        "peak_bytes": memory.peak,
        "fits": memory.peak <= args.device_gb * GB,
        "compile_s": round(seconds, 1),
    }


def markdown(rows, device_gb: float) -> str:
    lines = [
        f"| model | program | params (plan / checkpoint) | mesh | rules | batch | P+A | micro "
        f"| activations | rows split | argument GB | output GB | temp GB | peak GB "
        f"| fits {device_gb:g} GB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        program = r["program"] + (f" ({r['learners']} learners)" if r["learners"] > 1 else "")
        lines.append(
            f"| {r['model']} | {program} | {r['params_plan'] / 1e9:.2f}B / "
            f"{r['params_checkpoint'] / 1e9:.2f}B | {r['mesh']} | {r['rules']} | {r['batch']} | "
            f"{r['prompt_length']}+{r['completion_length']} | {r['micro_batches']} | "
            f"{r['dtype']}{', remat' if r['remat'] else ''}"
            f"{f', logits chunk {c}' if (c := r['logits_chunk']) else ''} | "
            f"{'yes' if r['split_rows'] else 'no'} | "
            f"{r['argument_bytes'] / GB:.2f} | {r['output_bytes'] / GB:.2f} | "
            f"{r['temp_bytes'] / GB:.2f} | {r['peak_bytes'] / GB:.2f} | "
            f"{'yes' if r['fits'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv) -> int:
    try:
        args, mesh_cfg = parse(argv)
    except ValueError as e:  # a bad flag: one line, exit 2, before anything compiles
        raise cli.ConfigError(cli.one_line(e)) from None
    mesh = mesh_lib.make_mesh(mesh_cfg)
    os.makedirs(args.out, exist_ok=True)
    stamp = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine.describe(),
    }
    rows = []
    for name in args.models.split(","):
        length = args.prompt_length + args.completion_length
        # --n_layers: a shallower probe of the same widths (depth scales the layers' share)
        model = mp.model_config(
            mp.SHAPES[name], length, n_layers=args.n_layers, dtype=args.dtype, remat=args.remat,
            logits_chunk=args.logits_chunk,
        )  # fmt: skip
        name_shown = f"{name} ({args.n_layers} layers)" if args.n_layers else name
        plan = mp.PlanConfig(
            model,
            prompts=args.prompts,
            group_size=args.group_size,
            prompt_length=args.prompt_length,
            completion_length=args.completion_length,
            micro_batches=args.micro_batches,
            rules=RULES[args.rules],
            split_rows=not args.no_split_rows,
        )
        for program in args.programs.split(","):
            start = time.perf_counter()
            if program == "population":
                compiled = mp.compile_population(mesh, plan, args.learners)
            else:
                compiled = (mp.compile_step if program == "step" else mp.compile_sampler)(
                    mesh, plan
                )
            memory = mp.memory_of(compiled)
            r = row(name, program, plan, mesh_cfg, args, memory, time.perf_counter() - start)
            r["model"] = name_shown
            rows.append(r)
            with open(os.path.join(args.out, "plan.jsonl"), "a") as f:
                f.write(json.dumps({**r, **stamp}) + "\n")
            print(markdown([r], args.device_gb).splitlines()[-1], flush=True)
    table = markdown(rows, args.device_gb)
    with open(os.path.join(args.out, "plan.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv[1:]))
