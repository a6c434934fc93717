"""Starts N copies of one command as the processes of a JAX job on this machine.

Each copy gets ``RLJAX_COORDINATOR_ADDRESS=127.0.0.1:<free port>``, ``RLJAX_NUM_PROCESSES`` and
``RLJAX_PROCESS_ID`` (read by ``rljax.parallel.distributed.from_env``) and, on CPU, its own number
of fake devices. This is for tests and for trying multi-host code on one machine; on a cluster the
scheduler (SLURM, a TPU pod slice, Kubernetes) starts the processes instead (see
``docs/scaling.md``).
"""

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from rljax.parallel import distributed

_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(
    process_id: int, num_processes: int, port: int, devices_per_process: int | None, base=None
) -> dict[str, str]:
    """The environment of process ``process_id``."""
    env = dict(os.environ if base is None else base)
    env[distributed.ENV_COORDINATOR] = f"127.0.0.1:{port}"
    env[distributed.ENV_NUM_PROCESSES] = str(num_processes)
    env[distributed.ENV_PROCESS_ID] = str(process_id)
    if devices_per_process is not None:
        flags = [
            f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(_DEVICE_COUNT_FLAG)
        ]
        flags.append(f"{_DEVICE_COUNT_FLAG}={devices_per_process}")
        env["XLA_FLAGS"] = " ".join(flags)
        env["JAX_PLATFORMS"] = "cpu"
    return env


def _relay(stream, prefix: str, sink) -> None:
    for line in iter(stream.readline, ""):
        sink.write(f"{prefix}{line}")
        sink.flush()
    stream.close()


def launch_local(
    argv: Sequence[str],
    num_processes: int,
    *,
    devices_per_process: int | None = None,
    port: int = 0,
    timeout_s: float | None = None,
    sink=None,
) -> int:
    """Runs ``argv`` as ``num_processes`` cooperating processes; returns the worst exit code.

    Args:
      argv: the command each process runs (the same for all), e.g. ``[python, script, flags]``.
      num_processes: how many processes.
      devices_per_process: fake CPU devices per process (``None``: leave the platform alone).
      port: coordinator port (0: pick a free one).
      timeout_s: kill all processes after this long (``None``: wait forever).
      sink: where the prefixed output lines go (default ``sys.stdout``).

    Returns:
      0 if every process exited with 0; otherwise the first non-zero code (124 on timeout). When
      one process fails the others are terminated, since they would wait for it forever.
    """
    if num_processes < 1:
        raise ValueError(f"num_processes={num_processes!r} is invalid; allowed: >= 1")
    sink = sys.stdout if sink is None else sink
    port = port or free_port()
    procs, relays = [], []
    for i in range(num_processes):
        p = subprocess.Popen(
            list(argv),
            env=process_env(i, num_processes, port, devices_per_process),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        t = threading.Thread(target=_relay, args=(p.stdout, f"[p{i}] ", sink), daemon=True)
        t.start()
        procs.append(p)
        relays.append(t)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    code = 0
    while [p.poll() for p in procs].count(None):  # poll every process, no short-circuit
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        late = deadline is not None and time.monotonic() > deadline
        if failed or late:
            code = failed[0] if failed else 124
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            break
        time.sleep(0.1)
    for t in relays:
        t.join(5)
    if code == 0:
        code = next((p.returncode for p in procs if p.returncode), 0)
    return code
