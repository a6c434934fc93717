"""Orbax checkpoints of a whole training state plus a small JSON of host-side bookkeeping.

Orbax writes each step into a temporary directory and renames it when complete, so a killed
process never leaves a half-written checkpoint behind: the latest *finished* step is what
``latest_step`` returns.
"""

import os
from collections.abc import Callable
from typing import Any

import jax
import orbax.checkpoint as ocp


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
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def save(self, step: int, state: Any, meta: dict, *, force: bool = False) -> None:
        """Starts an asynchronous save of ``state`` (a pytree of arrays) and ``meta`` (JSON)."""
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta))
        self._manager.save(step, args=args, force=force)

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
        self._manager.wait_until_finished()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()
