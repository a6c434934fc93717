"""A compiled Threefry kernel for XLA:CPU: the same random numbers, fewer kernels to compile.

jax lowers every random draw (``jax.random.*``, key splits, fold-ins) on CPU to a rolled loop
of Threefry-2x32's 20 rounds, and XLA compiles that loop afresh at each call site. A learner's
program has 20 to 40 of them, a third of its fused kernels. ``install()`` registers a CPU
lowering that calls one compiled kernel instead (``rljax/csrc/threefry2x32.cc`` through jax's
FFI), bit for bit the numbers of jax's own lowering (``tests/test_prng_kernel.py`` checks the
Random123 known answer and every kind of draw against it). At one seed on a 2-core Intel Xeon
it cut XLA's compile of the PPO, DQN, PQN, SAC and TD3 programs by 20-45% (two A/B pairs each,
2026-11-29), with the same run time; see docs/learners_offpolicy.md#rljax-beside-rejax.

Importing rljax installs nothing: each entry point (``experiments/*.py``, ``scripts/*.py``, the
test suite's ``conftest.py``) calls ``prng_kernel.install()`` once, after ``xla_flags.set_flags``
and before it builds a program; a notebook or script of your own does the same to get the
faster compile (without it, draws keep jax's lowering: the same numbers). The first call on a
machine builds the kernel with
the system C++ compiler (``$CXX``, else ``c++``; about 3 s) into ``$RLJAX_CACHE_DIR`` (default
``~/.cache/rljax``), keyed on the source, the jaxlib version, the compiler and the machine;
later processes load it. Without a compiler, or if the build fails, jax's own lowering stays
(the same numbers, a slower compile) and one warning says why.
``RLJAX_THREEFRY_KERNEL=0`` turns the kernel off. Programs partitioned over several devices
and programs lowered for ``jax.export`` keep jax's lowering: the partitioner would gather a
custom call's operands onto every device, and exported programs may only call jax's own
targets.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import warnings

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc", "threefry2x32.cc")
TARGET = "rljax_threefry2x32"  # the FFI target's name in compiled programs
SWITCH = "RLJAX_THREEFRY_KERNEL"  # "0": off

_lock = threading.Lock()
_status: str | None = None  # None until install() ran: then "active" or why it is not
_use = True  # read at lowering time; use_kernel(False) compiles with jax's lowering


def status() -> str | None:
    """``"active"``, why the kernel is not in use, or None before ``install()``."""
    return _status


@contextlib.contextmanager
def use_kernel(enabled: bool):
    """Programs lowered inside use the kernel (True) or jax's own lowering (False)."""
    global _use
    previous, _use = _use, enabled
    try:
        yield
    finally:
        _use = previous


def install() -> str:
    """Registers the kernel as the CPU lowering of jax's threefry (once per process).

    Returns:
      ``status()``: ``"active"``, or the reason jax's lowering stays (a warning says it too,
      unless ``RLJAX_THREEFRY_KERNEL=0`` asked for it).
    """
    global _status
    with _lock:
        if _status is None:
            try:
                _status = _install()
            except Exception as e:  # noqa: BLE001 (any failure leaves jax's lowering in place)
                _status = f"the kernel could not be registered ({type(e).__name__}: {e})"
            if _status != "active" and not _status.startswith(SWITCH):
                warnings.warn(
                    f"rljax.prng_kernel: {_status}; random draws keep jax's lowering (the same "
                    f"numbers, a slower compile). {SWITCH}=0 silences this.",
                    stacklevel=2,
                )
    return _status


def compiler() -> str | None:
    """The C++ compiler the kernel is built with: ``$CXX``, else ``c++`` or ``g++`` (None: none)."""
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")


def cache_dir() -> str:
    """Where built kernels are kept: ``$RLJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/rljax``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("RLJAX_CACHE_DIR") or os.path.join(base, "rljax")


def _install() -> str:
    if os.environ.get(SWITCH, "1") == "0":
        return f"{SWITCH}=0"
    import jax
    import jaxlib
    from jax._src.interpreters import mlir
    from jax._src.random import threefry2x32 as threefry

    cxx = compiler()
    if not cxx:
        return "no C++ compiler found (set CXX)"
    key = hashlib.sha256()
    with open(SOURCE, "rb") as f:
        key.update(f.read())
    for part in (jaxlib.__version__, cxx, platform.machine()):
        key.update(part.encode())
    path = os.path.join(cache_dir(), f"threefry2x32-{key.hexdigest()[:16]}.so")
    if not os.path.exists(path):
        error = _build(path, cxx, jax.ffi.include_dir())
        if error:
            return error
    library = ctypes.CDLL(path)
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(library.RljaxThreefry2x32), "cpu")
    fallback = threefry._threefry2x32_cpu_lowering_rule  # jax's own: the rolled loop
    rule = functools.partial(_lowering, fallback=fallback, call=jax.ffi.ffi_lowering(TARGET))
    mlir.register_lowering(threefry.threefry2x32_p, rule, platform="cpu")
    return "active"


def _build(path: str, compiler: str, include_dir: str) -> str | None:
    """Compiles SOURCE into ``path`` (atomically, one process at a time); None or the error."""
    try:
        import fcntl
    except ImportError:  # no POSIX file locks: concurrent builds still end in one atomic rename
        fcntl = None
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path + ".lock", "w") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it
            if os.path.exists(path):
                return None
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=folder)
            os.close(fd)
            try:
                cmd = [compiler, "-O3", "-std=c++17", "-shared", "-fPIC", "-w"]
                cmd += ["-I", include_dir, SOURCE, "-o", tmp]
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                if done.returncode:
                    tail = " ".join(done.stderr.strip().splitlines()[-3:])
                    return f"building {SOURCE} with {compiler} failed: {tail}"
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
    except (OSError, subprocess.SubprocessError) as e:
        return f"building {SOURCE} into {folder} failed ({type(e).__name__}: {e})"
    return None


def _lowering(ctx, key0, key1, count0, count1, *, fallback, call):
    """threefry2x32's CPU lowering: the kernel on one device, jax's rolled loop otherwise."""
    from jax._src.interpreters import mlir

    out = ctx.avals_out[0]
    single_device = getattr(ctx.module_context.axis_context, "num_devices", None) == 1
    params = getattr(ctx.module_context, "lowering_parameters", None)
    if not _use or not single_device or getattr(params, "for_export", False) or 0 in out.shape:
        return fallback(ctx, key0, key1, count0, count1)
    one_key = ctx.avals_in[0].size == 1 and ctx.avals_in[1].size == 1
    operands, avals = [], []
    for i, (value, aval) in enumerate(zip((key0, key1, count0, count1), ctx.avals_in, strict=True)):
        if aval.shape != out.shape and not (i < 2 and one_key):  # broadcast to the output
            dims = range(out.ndim - aval.ndim, out.ndim)
            value, aval = mlir.broadcast_in_dim(ctx, value, out, broadcast_dimensions=dims), out
        operands.append(value)
        avals.append(aval)
    return call(ctx.replace(avals_in=tuple(avals)), *operands)
