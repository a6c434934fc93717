"""XLA flags that must be set before ``jax`` is imported (entry points call this first).

On 2-core CPUs with jax 0.10.x, a large vmapped program (e.g. PPO with 16+ seeds under one jit)
can hang right after compiling; turning off the concurrency-optimized CPU scheduler avoids it.
This module imports nothing from jax on purpose.

Small RL programs on CPU. A DQN or PPO step on an MLP of ~100 units and batches of ~100 spends
its time launching hundreds of small ops, not in FLOPs, and XLA's intra-op thread pool then
costs more than it gives: on the project's 2-core CPU, purejaxrl's CartPole DQN takes 11% (one
seed) and 17% (eight seeds) less time on one thread than with XLA's default of one per core. To
use every core, rljax instead gives each core its own CPU device and shards the population of
seeds across them (``cpu_layout``), on a pool of one thread more than the devices
(``pool_threads``: with one thread per device the 8-seed PPO program deadlocks): on the 2-core
CPU, 8 PPO seeds train 1.6x and 8 DQN seeds 1.8x faster than on one default device.
Numbers: ``scripts/bench_ppo.py``, ``scripts/bench_dqn.py``, README and docs/benchmarks.md.
"""

import argparse
import os
import sys

CPU_SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"


def pool_threads(num_cpu_devices: int) -> int:
    """XLA:CPU thread-pool size for ``num_cpu_devices`` devices: 1 for one, one more than the
    devices for several.

    Every device of a launch runs on the one pool. Measured on the 2-core CPU with jax 0.10.2:
    8-seed CartPole PPO on 2 devices hangs after compiling with a 2-thread pool (XLA's default,
    one per core) and runs with 3 or 4 threads (13.0 s and 14.5 s, against 21 s on one device).
    The hang is in the sharded initialization (a flax ``MLP((64, 64))`` init hangs, one hidden
    layer or QR decompositions alone do not); its root cause was not found. The spare thread
    costs small programs time: 8 DQN seeds on 2 devices run in 47.8 s with 3 threads, 34.0 s
    with 2.
    """
    return 1 if num_cpu_devices == 1 else num_cpu_devices + 1


def cpu_layout(population: int, cores: int | None = None) -> tuple[int, int]:
    """CPU devices and threads for training ``population`` small agents in one process.

    Args:
      population: agents trained together (seeds × grid points), sharded over the devices.
      cores: cores to use (default: those this process may run on).

    Returns:
      ``(devices, threads)``: the largest divisor of ``population`` that is at most ``cores``
      (one device per core, each with a whole number of agents), and the thread-pool size
      ``pool_threads(devices)``.
    """
    if not isinstance(population, int) or population < 1:
        raise ValueError(f"population={population!r} is invalid; allowed: an integer >= 1")
    cores = cores or available_cores()
    devices = max(d for d in range(1, min(cores, population) + 1) if population % d == 0)
    return devices, pool_threads(devices)


def available_cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0))


def cpu_devices_arg(argv: list[str], default: int) -> int:
    """``--cpu_devices=N|auto`` from a command line, read before jax is imported (it fixes the
    devices). ``auto`` is one device per core (``available_cores``).

    Raises:
      ValueError: if N is neither ``auto`` nor an integer >= 1.
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--cpu_devices", default=None)
    text = parser.parse_known_args(argv)[0].cpu_devices
    if text is None:
        return default
    value = parse_cpu_devices(text)
    return available_cores() if value == "auto" else value


def parse_cpu_devices(text) -> int | str:
    """A ``--cpu_devices`` value: an integer >= 1, or the string ``auto``.

    Raises:
      ValueError: naming the flag, the value and what is allowed.
    """
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = None
    if value is None or value < 1:
        raise ValueError(f"--cpu_devices={text} is invalid; allowed: an integer >= 1 or auto")
    return value


# LLVM optimization level 1 instead of XLA's default 2 for the small control programs: CartPole
# PPO (classic setup, one seed) compiles in 2.8 s instead of 3.5 s and runs as fast (2.78-2.86 s
# vs 2.81-2.91 s, 976 updates, 2-core Xeon, jax 0.10.2); level 0 compiles in 2.2 s but runs 4.5x
# slower.
FAST_COMPILE_FLAG = "--xla_backend_optimization_level=1"


def set_flags(
    num_cpu_devices: int | None = None,
    cpu_threads: int | None = None,
    fast_compile: bool = False,
) -> None:
    """Adds the CPU scheduler flag (and optionally fake CPU devices) to ``XLA_FLAGS``.

    Args:
      num_cpu_devices: if given, expose this many host-platform (fake CPU) devices.
      cpu_threads: if given, the size of XLA's CPU thread pool (``PJRT_NPROC``). Default: for
        several devices ``pool_threads`` (one more than the devices, so they cannot deadlock)
        unless ``PJRT_NPROC`` is set already or jax is imported; otherwise XLA's default, one
        thread per core.
      fast_compile: ``FAST_COMPILE_FLAG`` (unless ``XLA_FLAGS`` sets an optimization level).

    Raises:
      RuntimeError: if jax was already imported, when the flags could no longer take effect.
    """
    pool_free = "PJRT_NPROC" not in os.environ and "jax" not in sys.modules
    if cpu_threads is None and (num_cpu_devices or 1) > 1 and pool_free:
        cpu_threads = pool_threads(num_cpu_devices)
    if cpu_threads is not None:
        if "jax" in sys.modules and os.environ.get("PJRT_NPROC") != str(cpu_threads):
            raise RuntimeError("rljax.xla_flags.set_flags() must run before jax is imported")
        if not isinstance(cpu_threads, int) or cpu_threads < 1:
            raise ValueError(f"cpu_threads={cpu_threads!r} is invalid; allowed: an integer >= 1")
        os.environ["PJRT_NPROC"] = str(cpu_threads)
    flags = os.environ.get("XLA_FLAGS", "").split()
    wanted = [CPU_SCHEDULER_FLAG]
    if num_cpu_devices is not None:
        wanted.append(f"--xla_force_host_platform_device_count={num_cpu_devices}")
    if fast_compile and not any(f.startswith("--xla_backend_optimization_level") for f in flags):
        wanted.append(FAST_COMPILE_FLAG)
    if all(f in flags for f in wanted):
        return  # already set (e.g. by an importing script): nothing to do
    if "jax" in sys.modules:
        raise RuntimeError("rljax.xla_flags.set_flags() must run before jax is imported")
    if num_cpu_devices is not None:
        flags = [f for f in flags if not f.startswith("--xla_force_host_platform_device_count")]
    flags += [f for f in wanted if f not in flags]
    os.environ["XLA_FLAGS"] = " ".join(flags)
