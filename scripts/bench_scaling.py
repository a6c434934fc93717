"""Benchmark: PPO population throughput versus device count (agents on the "seeds" mesh axis).

    PYTHONPATH=$PWD python scripts/bench_scaling.py [--devices=1,2,4,8] [--agents=8]
        [--agents_per_device=2] [--chunk_updates=4] [--repeats=3] [--out=runs/bench_scaling]

For each device count d it builds a (d,) "seeds" mesh on the first d devices and times the
jitted, sharded PPO chunk (classic CartPole setup: 4 envs x 128 steps, 4 epochs, 4 minibatches,
64x64 tanh MLP) for

* strong scaling: a fixed population of ``--agents`` agents, split over d devices;
* weak scaling: ``--agents_per_device`` x d agents.

On a CPU-only machine the devices are fake (``--cpu_devices``, default 8) and share the same
cores, so the numbers measure the overhead of partitioning, not a speed-up; run it on a machine
with several GPUs or a TPU slice for real scaling. Writes results.md, results.json and
scaling.png to --out. About 2-4 minutes on a 2-core CPU.
"""

import argparse
import sys

from rljax import cli, prng_kernel, xla_flags

try:
    _CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=8)
except ValueError as _e:
    cli.fail(_e)
xla_flags.set_flags(num_cpu_devices=_CPU_DEVICES)  # only affects the CPU platform
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rljax import envs, machine  # noqa: E402
from rljax.agents import ppo  # noqa: E402
from rljax.parallel import learner_axis  # noqa: E402
from rljax.parallel import mesh as mesh_lib  # noqa: E402
from rljax.train import experiment  # noqa: E402

HPARAMS = (
    ("lr", 2.5e-4),
    ("clip_eps", 0.2),
    ("ent_coef", 0.01),
    ("vf_coef", 0.5),
    ("gamma", 0.99),
    ("gae_lambda", 0.95),
)


def parse_args(argv=None) -> argparse.Namespace:
    p = cli.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu_devices", type=int, default=8, help="fake CPU devices (CPU only)")
    p.add_argument("--devices", default="1,2,4,8", help="device counts to measure")
    p.add_argument("--agents", type=int, default=8, help="population size, strong scaling")
    p.add_argument("--agents_per_device", type=int, default=2, help="weak scaling")
    p.add_argument("--chunk_updates", type=int, default=4, help="PPO updates per compiled call")
    p.add_argument("--repeats", type=int, default=3, help="timed calls after one warm-up call")
    p.add_argument("--out", default="runs/bench_scaling")
    return p.parse_args(argv)


def measure(num_devices: int, num_agents: int, args) -> dict:
    """Compile time and env steps per second of the sharded chunk on ``num_devices`` devices."""
    config = ppo.Config(num_updates=args.chunk_updates * (args.repeats + 1))
    run = experiment.RunConfig(
        env_name="CartPole-v1", workdir="", num_seeds=num_agents, hparams=HPARAMS
    )
    env = envs.make(run.env_name)
    points = experiment.validate_run(run, ppo, config)
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((num_devices,), ("seeds",)),
                              jax.devices()[:num_devices])  # fmt: skip
    states, shardings = experiment.init_on_mesh(
        ppo, config, env, run, points, mesh, learner_axis.SEEDS
    )
    fn = experiment.make_chunk_fn(ppo, config, env, args.chunk_updates, shardings)
    t0 = time.perf_counter()
    compiled = fn.lower(states).compile()
    compile_s = time.perf_counter() - t0
    states, metrics = compiled(states)  # warm-up
    jax.block_until_ready(metrics)
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        states, metrics = compiled(states)
    jax.block_until_ready((states, metrics))
    run_s = time.perf_counter() - t0
    steps = num_agents * args.repeats * args.chunk_updates * ppo.env_steps_per_update(config)
    return {
        "devices": num_devices,
        "agents": num_agents,
        "compile_s": round(compile_s, 2),
        "run_s": round(run_s, 3),
        "env_steps_per_s": round(steps / run_s),
    }


def main() -> None:
    cli.quiet_logs()
    args = parse_args()
    for name in ("agents", "agents_per_device", "chunk_updates", "repeats"):
        cli.check_int(f"--{name}", getattr(args, name), low=1)
    cli.check_workdir("--out", args.out)
    try:
        requested = [int(d) for d in args.devices.split(",")]
    except ValueError:
        raise cli.ConfigError(
            f"--devices={args.devices!r} is not comma-separated integers"
        ) from None
    for d in requested:
        cli.check_int("--devices entry", d, low=1)
    counts = [d for d in requested if d <= jax.device_count()]
    if not counts:
        cli.check_devices("--devices", min(requested), jax.device_count())
    if len(counts) < len(requested):
        print(f"[bench_scaling] only {jax.device_count()} devices: measuring {counts}")
    for d in counts:
        if args.agents % d:
            raise cli.ConfigError(f"--agents={args.agents} is not divisible by {d} devices")
    os.makedirs(args.out, exist_ok=True)
    fake = jax.devices()[0].platform == "cpu"
    print(f"[bench_scaling] {machine.describe()}")
    rows = []
    for mode, agents_of in (
        ("strong", lambda d: args.agents),
        ("weak", lambda d: args.agents_per_device * d),
    ):
        for d in counts:
            row = {"mode": mode, **measure(d, agents_of(d), args)}
            rows.append(row)
            print(f"[bench_scaling] {row}")
    result = {"machine": machine.describe(), "fake_cpu_devices": fake, "rows": rows}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = [
        f"Machine: {result['machine']}",
        "",
        "| scaling | devices | agents | env steps/s | compile s |",
        "|---|---|---|---|---|",
        *(
            f"| {r['mode']} | {r['devices']} | {r['agents']} | {r['env_steps_per_s']:,} | "
            f"{r['compile_s']} |"
            for r in rows
        ),
    ]
    if fake:
        lines += [
            "",
            "Fake CPU devices share the same cores: this measures partitioning overhead, "
            "not a speed-up.",
        ]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for mode in ("strong", "weak"):
        sel = [r for r in rows if r["mode"] == mode]
        ax.plot([r["devices"] for r in sel], [r["env_steps_per_s"] for r in sel], "o-", label=mode)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("devices")
    ax.set_ylabel("env steps / s (all agents)")
    ax.set_title(
        "PPO population, agents on the seeds axis" + (" (fake CPU devices)" if fake else "")
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "scaling.png"), dpi=120)
    print("\n".join(lines))
    print(f"[bench_scaling] wrote {args.out}/results.md, results.json, scaling.png")


if __name__ == "__main__":
    cli.main(main)
