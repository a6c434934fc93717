"""Sharding of RL populations: agents on the ``seeds`` axis, environments on ``data``.

``rljax.train.experiment`` stacks all agents of a run (seeds × hyperparameter grid points) on a
leading axis ``A`` and trains them with one ``jax.vmap``-ed, jitted chunk. Splitting ``A`` over
the ``seeds`` mesh axis runs a slice of the population on each device with no communication at
all: the same program, only partitioned by XLA (GSPMD). Splitting an agent's environments
(``[A, B, ...]`` leaves of its rollout state) over ``data`` as well makes the rollout data
parallel within one agent; XLA inserts the collectives the minibatch shuffle and the gradient
need.

The rules below are defaults; a run can pass its own (see ``rljax.parallel.sharding``).
"""

from typing import Any

import jax

from rljax.parallel import sharding

# Every leaf of every agent state: split the leading agent axis over ``seeds``.
SEEDS: sharding.Rules = ((".*", ("seeds",)),)

# PPO / any agent whose ``State.env`` is a ``rljax.envs.RolloutState``: environment leaves
# ``[A, B, ...]`` are split over ``seeds`` and ``data``; parameters, optimizer state, observation
# statistics and keys are split over ``seeds`` only (replicated over ``data``).
SEEDS_AND_ENVS: sharding.Rules = (
    (r"^env/env/", ("seeds", "data")),
    (".*", ("seeds",)),
)


# DQN-style agents with a replay buffer (``State.buffer``, ``rljax.replay.Buffer`` with data
# leaves ``[A, C, B, ...]``): the buffer's environment axis B is split like the environments, so
# each device stores the transitions of its own environments.
SEEDS_ENVS_AND_REPLAY: sharding.Rules = (
    (r"^env/env/", ("seeds", "data")),
    (r"^buffer/data/", ("seeds", None, "data")),
    (".*", ("seeds",)),
)


def shardings(mesh: jax.sharding.Mesh, states: Any, rules: sharding.Rules) -> tuple[Any, Any]:
    """Shardings of a population's states and of the chunk's metrics.

    Args:
      mesh: the device mesh.
      states: agent states with leaves ``[A, ...]`` (arrays or ``jax.ShapeDtypeStruct``s).
      rules: sharding rules for the states, e.g. ``SEEDS`` or ``SEEDS_AND_ENVS``.

    Returns:
      ``(state_shardings, metrics_sharding)``. Metrics ``[A, n]`` are small and replicated, so
      every process can read them (``jax.device_get``) without further collectives.

    Raises:
      ValueError: if ``A`` (or an environment axis) is not divisible by its mesh axes.
    """
    return sharding.tree_shardings(mesh, states, rules), sharding.replicated(mesh)
