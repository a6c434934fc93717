"""Sharded checkpoints: save from any mesh, restore onto a mesh of any shape.

Orbax (``rljax.io.checkpoints.Checkpointer``) writes each array as a set of chunks plus its
global shape, from every process that holds a piece of it, so a checkpoint does not depend on the
mesh it was saved from. Restoring reads, on each device, exactly the slice that the *target*
sharding puts there: a population saved on a ``(4, 2)`` ``seeds × data`` mesh restores onto
``(8,)`` ``seeds`` or ``(2, 4)``, and fully-sharded LM parameters restore onto any ``fsdp`` size,
without gathering the whole state on one host.
"""

from typing import Any

import jax

from rljax.io.checkpoints import Checkpointer
from rljax.parallel import sharding


def restore_on_mesh(
    checkpointer: Checkpointer,
    step: int,
    like: Any,
    mesh: jax.sharding.Mesh,
    rules: sharding.Rules,
) -> tuple[Any, dict]:
    """Restores ``(state, meta)`` of ``step`` with each leaf placed on ``mesh`` by ``rules``.

    Args:
      checkpointer: the run's checkpointer (any mesh may have written the step).
      step: which checkpoint.
      like: the state's tree structure, shapes and dtypes (arrays or ``jax.ShapeDtypeStruct``s,
        e.g. from ``jax.eval_shape`` of the init function); values are not used.
      mesh: the mesh to restore onto.
      rules: sharding rules for the state on ``mesh`` (see ``rljax.parallel.sharding``).

    Returns:
      The restored state (global ``jax.Array``s sharded on ``mesh``) and the JSON metadata.
    """
    shardings = sharding.tree_shardings(mesh, like, rules)
    return checkpointer.restore(step, sharding.abstract(like, shardings))
