"""Test-wide JAX set-up: 8 fake CPU devices and the scheduler flag that avoids the 2-core hang.

Both flags must be in XLA_FLAGS before jax is imported, so they are set here, at the top of the
first module pytest imports.
"""

import os

_FLAGS = (
    "--xla_force_host_platform_device_count=8",
    "--xla_cpu_enable_concurrency_optimized_scheduler=false",
)
_existing = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join([_existing, *(f for f in _FLAGS if f not in _existing)]).strip()
