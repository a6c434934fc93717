"""A PPO population trained on a device mesh that may span several processes (hosts).

    # one process, 8 fake CPU devices, agents on "seeds", each learner's envs on "data":
    PYTHONPATH=$PWD python scripts/train_sharded.py --cpu_devices=8 --mesh_shape=4,2 \\
        --mesh_axes=seeds,data --num_seeds=8 --out=runs/sharded
    # two processes on this machine, 2 fake devices each (gloo collectives):
    PYTHONPATH=$PWD python scripts/launch_multiprocess.py --num_processes=2 \\
        --devices_per_process=2 -- python scripts/train_sharded.py --mesh_shape=2,2 \\
        --mesh_axes=seeds,data --num_seeds=4 --out=runs/sharded_2proc

Every process runs this same script. Each one initializes only the agents whose rows its
devices hold, and ``rljax.parallel.distributed.host_local_to_global`` assembles them into global
arrays; then one jitted chunk with explicit in/out shardings trains the whole population.
Process 0 writes ``result.npz`` (final parameters, flattened, and metrics) and ``result.json``.
Takes about a minute on a 2-core CPU with the defaults. ``--cpu_devices=N`` gives this one
process N fake CPU devices (read before jax starts); without it the process keeps the devices
it has (e.g. those the launcher set). Bad flags stop in one line before anything compiles
(``--debug`` for a traceback).
"""

import sys

from rljax import cli, prng_kernel, xla_flags

try:  # the device count must be fixed before jax is imported
    _CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=None)
except ValueError as _e:
    cli.fail(_e)
xla_flags.set_flags(num_cpu_devices=_CPU_DEVICES)  # None keeps a count the launcher set
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

from rljax.parallel import distributed  # noqa: E402  (imports nothing that touches a device)

# Before any import that creates arrays (gymnax does): JAX must not have a backend yet.
distributed.initialize(distributed.from_env())

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax import envs  # noqa: E402
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
# --rules name -> the population sharding rules it uses.
RULES = {"seeds": learner_axis.SEEDS, "seeds_and_envs": learner_axis.SEEDS_AND_ENVS}


def parse_args(argv=None) -> argparse.Namespace:
    p = cli.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu_devices", type=int, default=None, help="fake CPU devices (1 process)")
    p.add_argument("--mesh_shape", default="-1", help="comma-separated, e.g. 2,2 (-1 = rest)")
    p.add_argument("--mesh_axes", default="seeds", help="comma-separated names, e.g. seeds,data")
    p.add_argument("--rules", default="seeds_and_envs", choices=sorted(RULES))
    p.add_argument("--env_name", default="CartPole-v1")
    p.add_argument("--num_seeds", type=int, default=4, help="agents in the population")
    p.add_argument("--num_envs", type=int, default=4)
    p.add_argument("--num_steps", type=int, default=16)
    p.add_argument("--num_epochs", type=int, default=2)
    p.add_argument("--num_minibatches", type=int, default=2)
    p.add_argument("--hidden", default="16,16")
    p.add_argument("--chunk_updates", type=int, default=1, help="updates per compiled call")
    p.add_argument("--num_chunks", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/train_sharded")
    return p.parse_args(argv)


def validate(args: argparse.Namespace, num_devices: int) -> tuple[int, ...]:
    """Checks every flag before anything is built or compiled; returns the concrete mesh shape.

    Raises:
      cli.ConfigError: one line naming the flag, the value and what is allowed.
    """
    for name in ("num_seeds", "num_envs", "num_steps", "num_epochs", "num_minibatches"):
        cli.check_int(f"--{name}", getattr(args, name), low=1)
    cli.check_int("--chunk_updates", args.chunk_updates, low=1)
    cli.check_int("--num_chunks", args.num_chunks, low=1)
    cli.check_int("--seed", args.seed, low=0, high=2**32 - 1)
    cli.check_choice("--env_name", args.env_name, envs.SUPPORTED_ENVS)
    try:
        hidden = tuple(int(h) for h in args.hidden.split(","))
        shape = tuple(int(s) for s in args.mesh_shape.split(","))
    except ValueError:
        raise cli.ConfigError(
            f"--hidden={args.hidden!r} / --mesh_shape={args.mesh_shape!r} must be comma-separated "
            "integers, e.g. 16,16 and 4,2"
        ) from None
    if any(h < 1 for h in hidden):
        raise cli.ConfigError(f"--hidden={args.hidden} is invalid; allowed: positive widths")
    cli.check_workdir("--out", args.out)
    mesh_config = mesh_lib.MeshConfig(shape, tuple(args.mesh_axes.split(",")))
    try:
        shape = mesh_lib.resolve_shape(mesh_config, num_devices)
    except ValueError as e:
        raise cli.ConfigError(f"--mesh_shape/--mesh_axes: {e}") from None
    try:
        ppo.validate(configs(args)[0])
    except ValueError as e:
        raise cli.ConfigError(cli.one_line(e)) from None
    seeds = dict(zip(mesh_config.axes, shape, strict=True)).get("seeds", 1)
    if args.num_seeds % seeds:
        raise cli.ConfigError(
            f"--num_seeds={args.num_seeds} is not a multiple of the mesh's seeds axis ({seeds}); "
            f"allowed: a multiple of {seeds}"
        )
    return shape


def configs(args) -> tuple[ppo.Config, experiment.RunConfig]:
    """The PPO config and run config of this script's flags (shared with the tests)."""
    config = ppo.Config(
        num_envs=args.num_envs,
        num_steps=args.num_steps,
        num_epochs=args.num_epochs,
        num_minibatches=args.num_minibatches,
        num_updates=args.chunk_updates * args.num_chunks,
        hidden=tuple(int(h) for h in args.hidden.split(",")),
    )
    run = experiment.RunConfig(
        env_name=args.env_name,
        workdir=args.out,
        seed=args.seed,
        num_seeds=args.num_seeds,
        hparams=HPARAMS,
    )
    return config, run


def main(argv=None) -> None:
    cli.quiet_logs()
    args = parse_args(argv)
    shape = validate(args, jax.device_count())
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig(shape, tuple(args.mesh_axes.split(","))))
    config, run = configs(args)
    points = experiment.validate_run(run, ppo, config)
    env = envs.make(run.env_name)
    shapes = experiment.init_population(ppo, config, env, run, points, abstract=True)
    state_shardings, metrics_sharding = learner_axis.shardings(mesh, shapes, RULES[args.rules])

    # This process creates only its own agents, then they become one global population.
    rows = {
        (r.start, r.stop)
        for s, x in zip(jax.tree.leaves(state_shardings), jax.tree.leaves(shapes), strict=True)
        for r in [distributed.local_rows(s, x.shape)]
    }
    if len(rows) != 1:
        raise ValueError(f"leaves of the population disagree on this process's agents: {rows}")
    local = slice(*rows.pop())
    local_states = experiment.init_population(ppo, config, env, run, points, rows=local)
    states = distributed.host_local_to_global(local_states, state_shardings, shapes)

    chunk_fn = experiment.make_chunk_fn(
        ppo, config, env, args.chunk_updates, (state_shardings, metrics_sharding)
    )
    t0 = time.perf_counter()
    compiled = chunk_fn.lower(states).compile()
    compile_s = time.perf_counter() - t0
    metrics = []
    t0 = time.perf_counter()
    for _ in range(args.num_chunks):
        states, m = compiled(states)
        metrics.append(jax.device_get(m))  # replicated: readable on every process
    jax.block_until_ready(states)
    run_s = time.perf_counter() - t0
    params = distributed.to_host(states.params)

    if jax.process_index() == 0:
        os.makedirs(args.out, exist_ok=True)
        flat = {
            "params/" + jax.tree_util.keystr(path): np.asarray(leaf)
            for path, leaf in jax.tree_util.tree_leaves_with_path(params)
        }
        for key in metrics[0]:
            flat["metrics/" + key] = np.concatenate([m[key] for m in metrics], axis=1)
        np.savez(os.path.join(args.out, "result.npz"), **flat)
        env_steps = args.num_seeds * args.num_chunks * args.chunk_updates * config.num_envs
        env_steps *= config.num_steps
        summary = {
            "processes": jax.process_count(),
            "devices": jax.device_count(),
            "mesh": dict(mesh.shape),
            "local_agents": [local.start, local.stop],
            "compile_s": compile_s,
            "run_s": run_s,
            "env_steps_per_s": env_steps / run_s,
        }
        with open(os.path.join(args.out, "result.json"), "w") as f:
            json.dump(summary, f, indent=1)
    print(
        f"process {jax.process_index()}/{jax.process_count()}: agents "
        f"{local.start}..{local.stop - 1} of {args.num_seeds} on mesh {dict(mesh.shape)}; "
        f"compile {compile_s:.1f} s, {args.num_chunks} chunks {run_s:.2f} s"
    )


if __name__ == "__main__":
    cli.main(main)
