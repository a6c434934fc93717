"""One run per work directory: an exclusive lock that the OS releases when the process dies.

Two runs started on one workdir would both write its metrics, checkpoints and summary (every
update twice in ``metrics.jsonl``). A run takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on a small
lock file beside its workdir (``<parent>/.<name>.lock``; beside, not inside, because a fresh run
moves an earlier workdir aside) before it builds or compiles anything, and a second run on the
same workdir is refused with one line. The lock belongs to the open file, so it is released when
the run ends, crashes or is killed (SIGKILL included): no stale lock can outlive its process.
Within one process the lock is re-entrant (a resume in the same process is allowed).
"""

import fcntl
import os

_HELD: dict[str, int] = {}  # absolute workdir -> open lock-file descriptor (this process)


class WorkdirInUseError(ValueError):
    """Another live process holds the workdir's lock."""


def lock_path(workdir: str) -> str:
    """The lock file of ``workdir``: ``<parent>/.<name>.lock``."""
    path = os.path.abspath(os.path.expanduser(workdir)).rstrip(os.sep)
    parent, name = os.path.split(path)
    return os.path.join(parent, f".{name}.lock")


def acquire(workdir: str) -> None:
    """Takes the workdir's lock for this process (a no-op if this process holds it already).

    Raises:
      WorkdirInUseError: another process holds it; the message names the workdir and its pid.
    """
    key = os.path.abspath(os.path.expanduser(workdir))
    if key in _HELD:
        return
    path = lock_path(workdir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise WorkdirInUseError(
            f"--workdir={key} is in use by another run (pid {owner}, lock {path}); allowed: a "
            "workdir no running process writes (wait for that run to end, or pick another)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[key] = fd


def release(workdir: str) -> None:
    """Gives the lock back (a no-op if this process does not hold it)."""
    fd = _HELD.pop(os.path.abspath(os.path.expanduser(workdir)), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def held(workdir: str) -> bool:
    """Whether this process holds ``workdir``'s lock."""
    return os.path.abspath(os.path.expanduser(workdir)) in _HELD
