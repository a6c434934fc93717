"""One run per work directory: an exclusive lock that the OS releases when the process dies.

Two runs started on one workdir would both write its metrics, checkpoints and summary (every
update twice in ``metrics.jsonl``). A run takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on a small
lock file beside its workdir (``<parent>/.<name>.lock``; beside, not inside, because a fresh run
moves an earlier workdir aside) before it builds or compiles anything, and a second run on the
same workdir is refused with one line. The lock belongs to the open file, so it is released when
the run ends, crashes or is killed (SIGKILL included): no stale lock can outlive its process.
Within one process the lock is re-entrant (a resume in the same process is allowed). The lock
is keyed on the workdir's real path (``os.path.realpath``: symbolic links, ``..``, a trailing
slash and a relative spelling all name one lock), so a second run that reaches the same folder
by another spelling is refused too, a resume included; the run then writes to that real path
(`rljax.train.loop` moves an earlier run aside by its real path, so a workdir given as a
symbolic link keeps pointing at the folder the lock names). Front ends hold it with
``with holding(workdir):``, which gives it back however the run ends.

A folder that several runs may fill with the same content (the SFT base cache of
`rljax.train.lm_base`) is held with ``holding(path, wait=True)`` instead: the second run waits
for the first to finish writing (one line says whom it waits for) and then reads what it wrote.
"""

import contextlib
import fcntl
import os
from collections.abc import Callable

_HELD: dict[str, int] = {}  # real workdir path -> open lock-file descriptor (this process)


class WorkdirInUseError(ValueError):
    """Another live process holds the workdir's lock."""


def _key(workdir: str) -> str:
    """The workdir's real absolute path (symbolic links resolved, even to a folder not made yet)."""
    return os.path.realpath(os.path.expanduser(workdir)).rstrip(os.sep)


def lock_path(workdir: str) -> str:
    """The lock file of ``workdir``: ``<parent>/.<name>.lock``."""
    path = _key(workdir)
    parent, name = os.path.split(path)
    return os.path.join(parent, f".{name}.lock")


def _owner(fd: int) -> str:
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"


def acquire(workdir: str, *, wait: bool = False, log: Callable[[str], None] = print) -> bool:
    """Takes the workdir's lock for this process (a no-op if this process holds it already).

    Args:
      wait: block until the other process gives the lock back (saying so in one line to `log`)
        instead of refusing.

    Returns:
      True if this call took it, False if this process held it already.

    Raises:
      WorkdirInUseError: another process holds it (and not `wait`); the message names the
        workdir and its pid.
    """
    key = _key(workdir)
    if key in _HELD:
        return False
    path = lock_path(workdir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _owner(fd)
        if not wait:
            os.close(fd)
            raise WorkdirInUseError(
                f"--workdir={key} is in use by another run (pid {owner}, lock {path}); allowed: "
                "a workdir no running process writes (wait for that run to end, or pick another)"
            ) from None
        log(f"[rljax] {key} is being written by pid {owner}; waiting for it (lock {path})")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[key] = fd
    return True


def release(workdir: str) -> None:
    """Gives the lock back (a no-op if this process does not hold it)."""
    fd = _HELD.pop(_key(workdir), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def held(workdir: str) -> bool:
    """Whether this process holds ``workdir``'s lock."""
    return _key(workdir) in _HELD


@contextlib.contextmanager
def holding(
    workdir: str, *, primary: bool = True, wait: bool = False, log: Callable[[str], None] = print
):
    """The workdir's lock for the ``with`` block, given back on any exit (an error included).

    ``primary=False`` (the other processes of a multi-host job, which write nothing) takes no
    lock. A lock this process held before the block stays held after it (re-entrant). ``wait``:
    wait for another holder instead of refusing (`acquire`).
    """
    took = acquire(workdir, wait=wait, log=log) if primary else False
    try:
        yield
    finally:
        if took:
            release(workdir)
