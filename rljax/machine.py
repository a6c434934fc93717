"""One line describing the machine a benchmark ran on (CPU model, cores, jax, devices)."""

import os
import platform

import jax

CPUINFO = "/proc/cpuinfo"  # the Linux kernel's CPU description (absent elsewhere)


def _cpuinfo() -> str:
    try:
        with open(CPUINFO) as f:
            return f.read()
    except OSError:
        return ""


def cpu_model() -> str:
    """The CPU's model name from the kernel's cpuinfo (or what ``platform`` knows)."""
    names = [
        line.split(":", 1)[1].strip() for line in _cpuinfo().splitlines() if "model name" in line
    ]
    return names[0] if names else (platform.processor() or platform.machine())


def cpu_mhz_and_avx512() -> tuple[float, bool]:
    """The highest core clock in MHz the kernel reports (0 if unknown), and AVX-512 support."""
    info = _cpuinfo()
    mhz = [float(line.split(":")[1]) for line in info.splitlines() if line.startswith("cpu MHz")]
    return max(mhz, default=0.0), "avx512f" in info


def describe() -> str:
    """``"<cpu> | <n> cores | jax <version> | <platform>:<device kind> x<count>"``."""
    device = jax.devices()[0]
    return (
        f"{cpu_model()} | {os.cpu_count()} cores | jax {jax.__version__} | "
        f"{device.platform}:{device.device_kind} x{jax.device_count()}"
    )
