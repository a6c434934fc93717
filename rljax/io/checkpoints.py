"""Orbax checkpoints of a whole training state plus a small JSON of host-side bookkeeping.

Orbax writes each step into a temporary directory and renames it when complete, so a killed
process never leaves a half-written checkpoint behind: the latest *finished* step is what
``latest_step`` returns.
"""

import contextlib
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import jax
import orbax.checkpoint as ocp

# tensorstore, under orbax, reports an OS error as text: "... File too large [os_error_code='27']"
_OS_ERROR_CODE = re.compile(r"os_error_code='(\d+)'")


class _OrbaxThreadErrors(logging.Filter):
    """Holds back the errors orbax's writer threads log with a traceback each (4 for one save
    of a tiny PPO state under a file-size limit, 2026-12-04) before the same exception reaches
    the thread that waits for the save, where ``Checkpointer`` turns it into one error. The
    first message is kept: a call that returns although its writers logged errors prints it as
    one warning line."""

    def __init__(self):
        super().__init__()
        self.held: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and f"{os.sep}orbax{os.sep}" in record.pathname:
            self.held.append(record.getMessage().splitlines()[0][:300])
            return False
        return True


_THREAD_ERRORS = _OrbaxThreadErrors()
_LATE_WRITES_IGNORED = False  # _ignore_late_write_callbacks ran (once per process)


def _ignore_late_write_callbacks() -> None:
    """When a save fails, tensorstore still completes the abandoned writes into event loops
    orbax has closed; each prints "RuntimeError: Event loop is closed" as an unraisable
    exception (0 to 33 of them for one failed save, by timing, before and after the error
    reaches the caller; 2026-12-04). Those alone are dropped; every other unraisable exception
    goes to the hook before."""
    global _LATE_WRITES_IGNORED
    if _LATE_WRITES_IGNORED:
        return
    _LATE_WRITES_IGNORED = True
    previous = sys.unraisablehook

    def hook(unraisable):
        late = isinstance(unraisable.exc_value, RuntimeError) and (
            str(unraisable.exc_value) == "Event loop is closed"
        )
        if not late:
            previous(unraisable)

    sys.unraisablehook = hook


def _as_os_error(e: BaseException, directory: str) -> OSError | None:
    """The ``OSError`` (errno, strerror, ``directory``) an orbax write error carries, if any."""
    while e is not None:
        if isinstance(e, OSError):
            return None  # already one: cli.os_error_line reads it
        match = _OS_ERROR_CODE.search(str(e))
        if match:
            code = int(match.group(1))
            return OSError(code, os.strerror(code), directory)
        e = e.__cause__ or e.__context__
    return None


def latest_step(directory: str) -> int | None:
    """The newest finished checkpoint's step in ``directory`` without opening orbax (or ``None``).

    Orbax renames a step's temporary directory to the bare step number once it is complete, so
    the integer-named subdirectories are the finished checkpoints.
    """
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    steps = [int(n) for n in names if n.isdigit() and os.path.isdir(os.path.join(directory, n))]
    return max(steps, default=None)


class Checkpointer:
    """Periodic and final checkpoints of ``(state, meta)`` under ``directory``."""

    def __init__(self, directory: str, max_to_keep: int = 3):
        self.directory = os.path.abspath(directory)
        logging.getLogger("absl").addFilter(_THREAD_ERRORS)  # once: the same filter object
        _ignore_late_write_callbacks()
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def _writing(self, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)``, an OS error of the writer threads (EFBIG, ENOSPC, ...)
        raised as one ``OSError`` naming the checkpoint folder, the orbax error as its cause."""
        _THREAD_ERRORS.held.clear()  # only what orbax logs during this call (not a restore's)
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            os_error = _as_os_error(e, self.directory)
            if os_error is None:
                raise
            raise os_error from e
        else:
            if _THREAD_ERRORS.held:  # held back, yet nothing reached this thread: say so
                print(f"[rljax] warning: checkpoint writer in {self.directory}: "
                      f"{_THREAD_ERRORS.held[0]}")  # fmt: skip
            return result
        finally:
            _THREAD_ERRORS.held.clear()

    def save(self, step: int, state: Any, meta: dict, *, force: bool = False) -> None:
        """Starts an asynchronous save of ``state`` (a pytree of arrays) and ``meta`` (JSON)."""
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta))
        self._writing(self._manager.save, step, args=args, force=force)

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or ``None``."""
        return self._manager.latest_step()

    def restore(self, step: int, like: Any) -> tuple[Any, dict]:
        """Restores ``(state, meta)``; ``like`` gives the tree structure, shapes and shardings."""
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        args = ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore()
        )
        restored = self._manager.restore(step, args=args)
        return restored["state"], restored["meta"]

    def restore_meta(self, step: int) -> dict:
        """The JSON bookkeeping of the checkpoint at ``step`` alone (no arrays are read)."""
        restored = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
        return restored["meta"]

    def restore_newest_readable(
        self, like: Any, log: Callable[[str], None] = print
    ) -> tuple[int, Any, dict] | None:
        """Restores the newest checkpoint that reads back, falling back past corrupted ones.

        Each unreadable checkpoint costs one warning line. Returns ``(step, state, meta)``, or
        ``None`` when there is no checkpoint at all.

        Raises:
          RuntimeError: there are checkpoints but none of them reads back.
        """
        steps = sorted(self._manager.all_steps(), reverse=True)
        for i, step in enumerate(steps):
            try:
                state, meta = self.restore(step, like)
            except Exception as e:  # noqa: BLE001 - any failure to read means "corrupted"
                older = f"falling back to update {steps[i + 1]}" if i + 1 < len(steps) else ""
                reason = str(e).strip().splitlines()[0][:120] if str(e).strip() else ""
                aside = f"{os.path.join(self.directory, str(step))}.unreadable"
                log(
                    f"[rljax] warning: checkpoint at update {step} in {self.directory} is "
                    f"unreadable ({type(e).__name__}: {reason}); moved to {aside}"
                    f"{'; ' + older if older else ''}"
                )
                # Out of orbax's way (it would refuse to save that step again), kept for a look.
                os.replace(os.path.join(self.directory, str(step)), aside)
                self._manager.reload()
                continue
            return step, state, meta
        if steps:
            raise RuntimeError(
                f"none of the checkpoints in {self.directory} ({', '.join(map(str, steps))}) "
                "reads back; start a fresh run (resume=False) or use another workdir"
            )
        return None

    def wait(self) -> None:
        """Blocks until pending asynchronous saves are on disk."""
        self._writing(self._manager.wait_until_finished)

    def close(self) -> None:
        try:
            self._writing(self._manager.wait_until_finished)
        except BaseException:
            # Close the manager's threads even so (left open, one prints a traceback at exit);
            # the save's own error is the one to report.
            with contextlib.suppress(Exception):
                self._manager.close()
            raise
        self._manager.close()
