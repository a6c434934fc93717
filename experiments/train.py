"""Trains an rljax agent on a gymnax environment.

    python experiments/train.py --config=configs/ppo.py:CartPole-v1 [--workdir=runs/x]
    python experiments/train.py --config=configs/ppo.py:CartPole-v1 --config.resume=True
    python experiments/train.py --config=configs/dqn.py:CartPole-v1 --cpu_devices=2

Writes metrics.jsonl/.csv, curves.png, summary.json and checkpoints/ into --workdir
(default: runs/<agent>_<env>).

``--cpu_devices=N`` (N > 1) gives the process N CPU devices and shards the
population (seeds × grid points, a multiple of N) across them: on a CPU host with N cores that
is the fast layout for small agents (``rljax.xla_flags.cpu_layout``; 8 DQN seeds train 2.2x
faster on 2 such devices than on one default device). It has to be known before jax starts,
so it is read from the command line first.
"""

import sys

from rljax import xla_flags

try:
    _NUM_CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=1)
except ValueError as e:
    sys.exit(f"error: {e}")
xla_flags.set_flags(num_cpu_devices=_NUM_CPU_DEVICES if _NUM_CPU_DEVICES > 1 else None)

import importlib.util  # noqa: E402
import os  # noqa: E402

from absl import app, flags, logging  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.agents import dqn, learner, ppo, sqirl  # noqa: E402
from rljax.parallel import mesh as mesh_lib  # noqa: E402
from rljax.train import experiment, sweep  # noqa: E402
from rljax.train.loop import NonFiniteLossError  # noqa: E402

# Agents whose populations were measured and trained on several CPU devices (--cpu_devices).
CPU_SHARDED_AGENTS = ("dqn", "sqirl")
# Agent name in the config -> (agent module, name of its config block).
AGENTS = {"ppo": (ppo, "ppo"), "dqn": (dqn, "dqn"), "sqirl": (sqirl, "sqirl")}

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory (default runs/<agent>_<env>).")
flags.DEFINE_integer("cpu_devices", 1, "CPU devices to shard the population over.")


def to_dataclasses(config):
    """ConfigDict -> (agent module, frozen agent Config, RunConfig); errors name the field."""
    if config.agent not in AGENTS:
        raise ValueError(f"agent={config.agent!r} is unknown; valid: {', '.join(AGENTS)}")
    module, block = AGENTS[config.agent]
    agent_config = learner.config_from_dict(module.Config, block, config[block].to_dict())
    workdir = _WORKDIR.value or os.path.join("runs", f"{config.agent}_{config.env_name}")
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
        hparams=tuple((k, float(v)) for k, v in config.hparams.items()),
        sweep=tuple((k, str(v)) for k, v in config.sweep.items()),
        mesh=mesh_lib.MeshConfig((_NUM_CPU_DEVICES,), ("seeds",)) if _NUM_CPU_DEVICES > 1 else None,
    )
    if _NUM_CPU_DEVICES > 1 and config.agent not in CPU_SHARDED_AGENTS:
        raise ValueError(
            f"--cpu_devices={_NUM_CPU_DEVICES} is supported for {', '.join(CPU_SHARDED_AGENTS)}; "
            f"the 8-seed {config.agent} program hung after compiling on 2 CPU devices (jax "
            "0.10.2); for PPO on a mesh use scripts/train_sharded.py"
        )
    if _NUM_CPU_DEVICES > 1:
        agents = run_config.num_seeds * len(
            sweep.grid(dict(run_config.hparams), dict(run_config.sweep))
        )  # noqa: E501
        if agents % _NUM_CPU_DEVICES:
            raise ValueError(
                f"--cpu_devices={_NUM_CPU_DEVICES} does not divide the population of {agents} "
                f"agents (num_seeds x grid points); allowed: a divisor of {agents}"
            )
    return module, agent_config, run_config


def _unknown_override(argv: list[str]) -> str | None:
    """Names the first ``--config.a.b=`` override that the config file does not define.

    ml_collections would only raise a bare ``AttributeError`` deep in flag parsing.
    """
    specs = [a.split("=", 1)[1] for a in argv if a.startswith("--config=")]
    if not specs:
        return None
    spec = specs[-1]
    path, _, arg = spec.partition(":")
    module_spec = importlib.util.spec_from_file_location("_config_file", path)
    config_module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(config_module)
    base = config_module.get_config(arg or None)
    for flag in argv:
        if not flag.startswith("--config."):
            continue
        node = base
        keys = flag[len("--config.") :].split("=", 1)[0].split(".")
        for depth, key in enumerate(keys):
            if not hasattr(node, "keys") or key not in node:
                where = ".".join(keys[:depth]) or "the top level"
                valid = ", ".join(sorted(node.keys())) if hasattr(node, "keys") else "(a leaf)"
                return f"--config.{'.'.join(keys)}: unknown key {key!r} at {where}; valid: {valid}"
            node = node[key]
    return None


def main(argv):
    logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
    del argv
    config = _CONFIG.value
    try:
        module, agent_config, run_config = to_dataclasses(config)
        _, summary = experiment.run(module, agent_config, run_config)
    except (ValueError, NonFiniteLossError) as e:
        sys.exit(f"error: {e}")
    print(summary.line(f"{config.agent} {run_config.env_name}"))
    print(f"outputs: {run_config.workdir}/(metrics.jsonl, metrics.csv, curves.png, checkpoints/)")


if __name__ == "__main__":
    if (problem := _unknown_override(sys.argv)) is not None:
        sys.exit(f"error: {problem}")
    app.run(main)
