"""Orbax checkpoints of a whole training state plus a small JSON of host-side bookkeeping.

Orbax writes each step into a temporary directory and renames it when complete, so a killed
process never leaves a half-written checkpoint behind: the latest *finished* step is what
``latest_step`` returns.
"""

import os
from typing import Any

import jax
import orbax.checkpoint as ocp


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

    def wait(self) -> None:
        """Blocks until pending asynchronous saves are on disk."""
        self._manager.wait_until_finished()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()
