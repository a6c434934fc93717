"""Trains an rljax learner on a gymnax environment.

    python experiments/train.py --config=configs/ppo.py:CartPole-v1 [--workdir=runs/x]
    python experiments/train.py --config=configs/ppo.py:CartPole-v1 --config.resume=True
    python experiments/train.py --config=configs/dqn.py:CartPole-v1 --cpu_devices=1

Writes metrics.jsonl/.csv, curves.png, summary.json, config.json and checkpoints/ into --workdir
(default: runs/<learner>_<env>).

``--cpu_devices=N`` (N > 1) gives the process N CPU devices and shards the
population (seeds × grid points, a multiple of N) across them: on a CPU host with N cores that
is the fast layout for small agents (``rljax.xla_flags.cpu_layout``; on 2 cores 8 DQN seeds
train 2.2x and 8 PPO seeds 1.6x faster than on one device). The default, ``auto``, gives the
process one device per core and uses as many as divide the population. It has to be known
before jax starts, so it is read from the command line first.

Every bad flag or config value stops before anything compiles with one line naming it (a
traceback only with ``--debug``). Exit codes: 0 done (or nothing left to do), 1 failed (NaN
loss, full disk), 2 bad input, 128 + signal when stopped by SIGINT/SIGTERM (after a checkpoint).
"""

import sys

from rljax import cli, prng_kernel, xla_flags

if "jax" not in sys.modules:  # run as the entry point: the CPU devices are this script's to fix
    try:
        _NUM_CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], xla_flags.available_cores())
    except ValueError as e:
        cli.fail(e)
    xla_flags.set_flags(
        num_cpu_devices=_NUM_CPU_DEVICES if _NUM_CPU_DEVICES > 1 else None, fast_compile=True
    )
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

import os  # noqa: E402

from absl import flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.agents import dqn, learner, mpo, ppo, ppo_rnn, pqn, sac, sqirl, td3  # noqa: E402
from rljax.parallel import learner_axis  # noqa: E402
from rljax.parallel import mesh as mesh_lib  # noqa: E402
from rljax.train import experiment, sweep  # noqa: E402
from rljax.train.loop import NonFiniteLossError  # noqa: E402

# Learner name in the config -> (learner module, name of its config block).
LEARNERS = {"ppo": (ppo, "ppo"), "dqn": (dqn, "dqn"), "sqirl": (sqirl, "sqirl")}
LEARNERS.update(sac=(sac, "sac"), td3=(td3, "td3"), mpo=(mpo, "mpo"))  # off-policy actor-critic
LEARNERS["pqn"] = (pqn, "pqn")  # parallel Q-learning (IQN is dqn with the iqn head)
LEARNERS["ppo_rnn"] = (ppo_rnn, "ppo_rnn")  # recurrent PPO (GRU core, truncated BPTT)
# Population sharding rules a config names in `mesh.rules` (rljax.parallel.learner_axis).
SHARDING_RULES = {
    "seeds": learner_axis.SEEDS,
    "seeds_and_envs": learner_axis.SEEDS_AND_ENVS,
    "seeds_envs_and_replay": learner_axis.SEEDS_ENVS_AND_REPLAY,
}
# Top-level fields of every config file and what each must be.
RUN_FIELDS = {
    "seed": dict(low=0, high=2**32 - 1),
    "num_seeds": dict(low=1),
    "total_timesteps": dict(low=1),
    "chunk_updates": dict(low=0),
    "checkpoint_every": dict(low=1),
}


def make_flags(argv: list[str]) -> flags.FlagValues:
    """A fresh set of this script's flags for ``argv`` (so tests can parse many command lines)."""
    fv = flags.FlagValues()
    config_flags.DEFINE_config_file(
        "config", None, "Config file.", lock_config=True, flag_values=fv, sys_argv=argv
    )
    flags.DEFINE_string(
        "workdir", None, "Output directory (default runs/<learner>_<env>).", flag_values=fv
    )
    flags.DEFINE_string(
        "cpu_devices",
        "auto",
        "CPU devices to shard the population over: N, or auto (one per core, as many as divide "
        "the population).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "debug", False, "Show tracebacks instead of one-line errors.", flag_values=fv
    )
    return fv


def parse(argv: list[str]):
    """Parses and validates a command line; nothing is built or compiled.

    Returns:
      ``(learner module, learner Config, RunConfig)``.

    Raises:
      cli.ConfigError / ValueError: one line naming the flag or field, the value and what is
        allowed.
    """
    fv = cli.parse_config_flags(argv, make_flags, "--config=configs/ppo.py:CartPole-v1")
    try:
        return to_dataclasses(fv["config"].value, fv["workdir"].value, fv["cpu_devices"].value)
    except ValueError as e:  # validation: bad input, found before anything ran
        raise cli.ConfigError(cli.one_line(e)) from None


def to_dataclasses(config, workdir: str | None = None, cpu_devices: int = 1):
    """ConfigDict -> (learner module, frozen learner Config, RunConfig); errors name the field.

    ``cpu_devices`` is the ``--cpu_devices`` value (the process's devices were fixed from it
    before jax started): N, or ``auto`` for ``auto_cpu_devices``.
    """
    cpu_devices = xla_flags.parse_cpu_devices(cpu_devices)
    cli.check_choice("learner", config.learner, LEARNERS)
    for name, bounds in RUN_FIELDS.items():
        cli.check_int(name, config[name], **bounds)
    for name in ("resume", "progress"):
        if not isinstance(config[name], bool):
            raise cli.ConfigError(f"{name}={config[name]!r} is invalid; allowed: True or False")
    cli.check_keys("sweep", config.sweep.keys(), config.hparams.keys())
    for name, value in config.hparams.items():
        cli.check_number(f"hparams.{name}", value)
    module, block = LEARNERS[config.learner]
    learner_config = learner.config_from_dict(module.Config, block, config[block].to_dict())
    workdir = workdir or os.path.join("runs", f"{config.learner}_{config.env_name}")
    cli.check_workdir("--workdir", workdir)
    hparams = tuple((k, float(v)) for k, v in config.hparams.items())
    swept = tuple((k, str(v)) for k, v in config.sweep.items())
    agents = config.num_seeds * len(sweep.grid(dict(hparams), dict(swept)))
    if cpu_devices == "auto":
        cpu_devices = auto_cpu_devices(agents)
    elif agents % cpu_devices:
        raise ValueError(
            f"--cpu_devices={cpu_devices} does not divide the population of {agents} "
            f"agents (num_seeds x grid points); allowed: a divisor of {agents}"
        )
    mesh = mesh_lib.MeshConfig((cpu_devices,), ("seeds",)) if cpu_devices > 1 else None
    mesh, rules = mesh_from_config(config, mesh)
    run_config = experiment.RunConfig(
        env_name=config.env_name,
        workdir=workdir,
        seed=config.seed,
        num_seeds=config.num_seeds,
        total_timesteps=config.total_timesteps,
        chunk_updates=config.chunk_updates,
        checkpoint_every=config.checkpoint_every,
        resume=config.resume,
        progress=config.progress,
        hparams=hparams,
        sweep=swept,
        mesh=mesh,
        sharding_rules=rules,
    )
    experiment.validate_run(run_config, module, learner_config)
    return module, learner_config, run_config


def mesh_from_config(config, default: mesh_lib.MeshConfig | None):
    """The mesh and the population's sharding rules a config sets in its ``mesh`` block.

    ``mesh.shape`` / ``mesh.axes`` (e.g. ``(4, 2)`` / ``("seeds", "data")``; empty: ``default``,
    the layout ``--cpu_devices`` gives) span the process's devices; ``mesh.rules`` names the
    rules of ``SHARDING_RULES``. A config without a ``mesh`` block keeps ``default`` and
    ``seeds``.
    """
    if "mesh" not in config:
        return default, learner_axis.SEEDS
    cli.check_choice("mesh.rules", config.mesh.rules, SHARDING_RULES)
    if not config.mesh.shape:
        return default, SHARDING_RULES[config.mesh.rules]
    import jax

    mesh = mesh_lib.MeshConfig(tuple(config.mesh.shape), tuple(config.mesh.axes))
    mesh_lib.resolve_shape(mesh, jax.device_count())  # names mesh.shape / mesh.axes if wrong
    return mesh, SHARDING_RULES[config.mesh.rules]


def auto_cpu_devices(population: int) -> int:
    """``--cpu_devices=auto``: the most CPU devices of this process that divide the population
    and that its thread pool can serve (``xla_flags.pool_threads``).

    8 CartPole PPO seeds train 1.6x faster on the 2-core CPU's two devices than on one (README,
    benchmarks). One device when the default backend is not the CPU, and in a process whose
    pool was not sized for several devices (e.g. under pytest): there, several devices could
    deadlock.
    """
    import jax

    if jax.default_backend() != "cpu":
        return 1
    threads = int(os.environ.get("PJRT_NPROC") or 0)
    return max(
        d
        for d in range(1, jax.local_device_count() + 1)
        if population % d == 0 and (d == 1 or threads >= xla_flags.pool_threads(d))
    )


def main(argv: list[str]) -> int:
    """Parses, validates, trains; returns the exit code (0 done, 128 + signal if stopped)."""
    cli.quiet_logs()  # orbax logs every save at INFO
    if any(a in ("-h", "--help", "--helpfull") for a in argv[1:]):
        print(__doc__)
        print(make_flags([argv[0]]).get_help())
        return 0
    module, learner_config, run_config = parse(argv)
    try:
        _, summary = experiment.run(module, learner_config, run_config)
    except NonFiniteLossError as e:
        cli.fail(e, cli.EXIT_FAILED)
    print(summary.line(f"{run_config_title(module, run_config)}"))
    print(
        f"outputs: {run_config.workdir}/(metrics.jsonl, metrics.csv, curves.png, summary.json, "
        "config.json, checkpoints/)"
    )
    return cli.exit_code(summary.stop_signal if summary.interrupted else None)


def run_config_title(module, run_config) -> str:
    return f"{module.__name__.rsplit('.', 1)[-1]} {run_config.env_name}"


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv))
