"""How much memory a population of agents needs, known before anything is built or compiled.

``--config.num_seeds=100000000`` used to compile for a minute and then die inside XLA with an
out-of-memory error. The states of one agent have a fixed size (network, optimizer, replay
buffer, environments), known from ``jax.eval_shape`` of its ``init`` without computing
anything; the population needs that times its size, and a compiled chunk holds its input and
its output at once (``CHUNK_COPIES``). ``check_population`` refuses a population whose states
alone would not fit in the machine's memory, with one line that names the largest that fits.
"""

import functools
import os

import jax
import jax.numpy as jnp

from rljax import cli

CHUNK_COPIES = 2  # a chunk's input and output states are alive together


def physical_memory_bytes() -> int:
    """This machine's physical memory (0 if the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def agent_state_bytes(agent, agent_config, env) -> int:
    """Bytes of one agent's ``State`` (shapes only: nothing is computed or compiled)."""
    hparams = agent.Hparams(*(jnp.zeros((), jnp.float32) for _ in agent.Hparams._fields))
    init = functools.partial(agent.init, agent_config, env)
    shapes = jax.eval_shape(init, jax.random.PRNGKey(0), hparams)
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)))


def check_population(
    agent, agent_config, env, *, num_seeds: int, grid_points: int, available: int | None = None
) -> int:
    """Refuses a population whose states would not fit in memory; returns the estimate in bytes.

    Args:
      agent, agent_config, env: what ``agent.init`` takes.
      num_seeds: seeds per grid point (the field the message names).
      grid_points: hyperparameter grid points.
      available: bytes to compare with (default: ``physical_memory_bytes``; 0 = unknown, no check).

    Raises:
      cli.ConfigError: one line with the estimate, the memory and the largest ``num_seeds``
        that fits.
    """
    per_agent = agent_state_bytes(agent, agent_config, env)
    agents = num_seeds * grid_points
    need = CHUNK_COPIES * per_agent * agents
    available = physical_memory_bytes() if available is None else available
    if available and need > available:
        fits = available // max(1, CHUNK_COPIES * per_agent * grid_points)
        raise cli.ConfigError(
            f"num_seeds={num_seeds} is too large: {agents:,} agents need about "
            f"{need / 2**30:,.1f} GiB for their states ({per_agent / 2**20:.2f} MiB each, "
            f"x{CHUNK_COPIES} while a chunk runs), above this machine's "
            f"{available / 2**30:.1f} GiB; "
            f"allowed: num_seeds <= {fits:,} here"
        )
    return need
