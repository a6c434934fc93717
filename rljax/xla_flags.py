"""XLA flags that must be set before ``jax`` is imported (entry points call this first).

On 2-core CPUs with jax 0.10.x, a large vmapped program (e.g. PPO with 16+ seeds under one jit)
can hang right after compiling; turning off the concurrency-optimized CPU scheduler avoids it.
This module imports nothing from jax on purpose.
"""

import os
import sys

CPU_SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"


def set_flags(num_cpu_devices: int | None = None) -> None:
    """Adds the CPU scheduler flag (and optionally fake CPU devices) to ``XLA_FLAGS``.

    Args:
      num_cpu_devices: if given, expose this many host-platform (fake CPU) devices.

    Raises:
      RuntimeError: if jax was already imported, when the flags could no longer take effect.
    """
    if "jax" in sys.modules:
        raise RuntimeError("rljax.xla_flags.set_flags() must run before jax is imported")
    flags = os.environ.get("XLA_FLAGS", "").split()
    wanted = [CPU_SCHEDULER_FLAG]
    if num_cpu_devices is not None:
        flags = [f for f in flags if not f.startswith("--xla_force_host_platform_device_count")]
        wanted.append(f"--xla_force_host_platform_device_count={num_cpu_devices}")
    flags += [f for f in wanted if f not in flags]
    os.environ["XLA_FLAGS"] = " ".join(flags)
