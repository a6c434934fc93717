"""One line describing the machine a benchmark ran on (CPU model, cores, jax, devices)."""

import os
import platform
import sys
import time

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


def run_record(script: str, argv: list[str] | None, started: float) -> dict:
    """What a study's results file records about its run: the wall seconds since ``started``
    (a ``time.perf_counter()`` value), the load average at the end, the machine (``describe``),
    the UTC date, and the command that reproduces it (``script`` with ``argv``, or this process's
    own arguments when ``argv`` is None)."""
    args = sys.argv[1:] if argv is None else argv
    return {
        "seconds": time.perf_counter() - started,
        "load": "load average at the end: " + ", ".join(f"{v:.1f}" for v in os.getloadavg()),
        "machine": describe(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": " ".join(["python", script, *args]),
    }
