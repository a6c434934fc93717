"""One line describing the machine a benchmark ran on (CPU model, cores, jax, devices)."""

import os
import platform

import jax


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (or what ``platform`` knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def describe() -> str:
    """``"<cpu> | <n> cores | jax <version> | <platform>:<device kind> x<count>"``."""
    device = jax.devices()[0]
    return (
        f"{cpu_model()} | {os.cpu_count()} cores | jax {jax.__version__} | "
        f"{device.platform}:{device.device_kind} x{jax.device_count()}"
    )
