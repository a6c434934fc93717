"""Sharding of RL populations: agents on the ``seeds`` axis, environments on ``data``.

``rljax.train.experiment`` stacks all agents of a run (seeds × hyperparameter grid points) on a
leading axis ``A`` and trains them with one ``jax.vmap``-ed, jitted chunk. Splitting ``A`` over
the ``seeds`` mesh axis runs a slice of the population on each device with no communication at
all: the same program, only partitioned by XLA (GSPMD). Splitting a learner's environments
(``[A, B, ...]`` leaves of its rollout state) over ``data`` as well makes the rollout data
parallel within one learner; XLA inserts the collectives the minibatch shuffle and the gradient
need.

The rules below are defaults; a run can pass its own (see ``rljax.parallel.sharding``).

How much memory a population needs is known before anything is built or compiled: one learner's
states have a fixed size (network, optimizer, replay buffer, environments), read from
``jax.eval_shape`` of its ``init``; the population needs that times its size, and a compiled chunk
holds its input and its output at once (``CHUNK_COPIES``). ``check_population`` refuses a
population whose states alone would not fit in the machine's memory (``num_seeds=100000000``
used to compile for a minute and then die inside XLA), naming the largest that fits.
"""

import functools
import os
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from rljax import cli
from rljax.parallel import sharding

# Every leaf of every learner state: split the leading learner axis over ``seeds``.
SEEDS: sharding.Rules = ((".*", ("seeds",)),)

# PPO / any learner whose ``State.env`` is a ``rljax.envs.RolloutState``: environment leaves
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
      states: learner states with leaves ``[A, ...]`` (arrays or ``jax.ShapeDtypeStruct``s).
      rules: sharding rules for the states, e.g. ``SEEDS`` or ``SEEDS_AND_ENVS``.

    Returns:
      ``(state_shardings, metrics_sharding)``. Metrics ``[A, n]`` are small and replicated, so
      every process can read them (``jax.device_get``) without further collectives.

    Raises:
      ValueError: if ``A`` (or an environment axis) is not divisible by its mesh axes.
    """
    return sharding.tree_shardings(mesh, states, rules), sharding.replicated(mesh)


def member_shardings(
    mesh: jax.sharding.Mesh, tree: Any, rules: sharding.Rules, *, axis: str = "seeds"
) -> Any:
    """Shardings of a population's trees with leaves ``[A, ...]``: the learner axis ``A`` over
    ``axis`` (when the mesh has it), each learner's ``[...]`` by ``rules`` (e.g. the transformer's
    ``rljax.parallel.steps.LM_FSDP``): learners side by side, each one's weights split over the
    devices of its ``seeds`` slice.

    Raises:
      ValueError: if ``A`` is not divisible by the ``axis`` size, or a rule's split does not
        divide a learner's dimension (naming the leaf).
    """
    lead = axis if axis in mesh.shape else None
    size = mesh.shape[axis] if lead else 1
    for leaf in jax.tree.leaves(tree):
        if leaf.shape[0] % size:
            raise ValueError(
                f"a population of {leaf.shape[0]} learners cannot be split over the mesh's "
                f"{axis!r} axis of size {size}; allowed: populations divisible by {size}"
            )
    one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), tree)
    specs = sharding.partition_specs(mesh, one, rules)
    return jax.tree.map(
        lambda s: NamedSharding(mesh, PartitionSpec(lead, *s)),
        specs,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


CHUNK_COPIES = 2  # a chunk's input and output states are alive together


def physical_memory_bytes() -> int:
    """This machine's physical memory (0 if the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def learner_state_bytes(learner, learner_config, env) -> int:
    """Bytes of one learner's ``State`` (shapes only: nothing is computed or compiled)."""
    hparams = learner.Hparams(*(jnp.zeros((), jnp.float32) for _ in learner.Hparams._fields))
    init = functools.partial(learner.init, learner_config, env)
    shapes = jax.eval_shape(init, jax.random.PRNGKey(0), hparams)
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes)))


def check_population(
    learner, learner_config, env, *, num_seeds: int, grid_points: int, available: int | None = None
) -> int:
    """Refuses a population whose states would not fit in memory; returns the estimate in bytes.

    Args:
      learner, learner_config, env: what ``learner.init`` takes.
      num_seeds: seeds per grid point (the field the message names).
      grid_points: hyperparameter grid points.
      available: bytes to compare with (default: ``physical_memory_bytes``; 0 = unknown, no check).

    Raises:
      cli.ConfigError: one line with the estimate, the memory and the largest ``num_seeds``
        that fits.
    """
    per_learner = learner_state_bytes(learner, learner_config, env)
    agents = num_seeds * grid_points
    need = CHUNK_COPIES * per_learner * agents
    available = physical_memory_bytes() if available is None else available
    if available and need > available:
        fits = available // max(1, CHUNK_COPIES * per_learner * grid_points)
        raise cli.ConfigError(
            f"num_seeds={num_seeds} is too large: {agents:,} agents need about "
            f"{need / 2**30:,.1f} GiB for their states ({per_learner / 2**20:.2f} MiB each, "
            f"x{CHUNK_COPIES} while a chunk runs), above this machine's "
            f"{available / 2**30:.1f} GiB; "
            f"allowed: num_seeds <= {fits:,} here"
        )
    return need


LEARNER_MAPS = ("vmap", "sequential")  # how a population's learners share their devices


def check_learner_map(value: str) -> None:
    """Raises a ``ValueError`` naming the field unless ``value`` is one of ``LEARNER_MAPS``."""
    if value not in LEARNER_MAPS:
        raise ValueError(f"learner_map={value!r} is unknown; allowed: {', '.join(LEARNER_MAPS)}")


def map_learners(
    fn,
    states: Any,
    *shared: Any,
    groups: int = 1,
    mode: str = "vmap",
    unbatch_one: bool = True,
    spmd_axis_name: str | None = None,
):
    """``fn`` applied to every learner of ``states`` (leaves ``[A, ...]``); ``shared`` unbatched.

    ``fn(state, *shared) -> (state, extras)`` is one learner's. ``"vmap"`` runs all ``A`` at
    once (the base's products over all learners' stacked activations, all activations alive
    together). ``"sequential"`` splits ``A`` into ``groups`` contiguous blocks (a device's share
    of ``A`` split over ``groups`` devices; learner ``a`` is block ``a // (A / groups)``) and runs
    the blocks side by side, one learner of each at a time (a ``fori_loop`` of a vmap over
    ``groups``): one learner's activations per device, its state updated in place in the
    (donated) population's buffers. Same keys, so the same numbers up to the rounding of a batch.

    With ``unbatch_one``, a population of one (``A = 1``) runs unbatched, its axis dropped and
    put back: XLA:CPU reduces over a leading axis of size 1 several times slower than without it
    (a LayerNorm's forward and backward pass on ``[128, 64]``: 132 µs vmapped over one learner,
    20 µs alone, 46 µs for two; PQN's 1-seed CartPole run of ``scripts/bench_rejax.py``: 2.10 s
    vmapped, 0.94 s alone, best of three each in two invocations an hour apart; 2-core Intel
    Xeon, jax 0.10.2, 2026-11-28). A learner trained alone gets the numbers of the same learner
    in a larger population up to the rounding of a batch, as before; but a population sharded
    one learner per device still runs each vmapped over one, so only without ``unbatch_one``
    does it round as the learner alone does (the LM populations keep that:
    ``rljax.train.population.Spec.unbatch_one``).

    ``spmd_axis_name`` (e.g. ``"seeds"``) keeps the learner axis on that mesh axis inside the
    vmapped ``fn``, so the sharding constraints a learner's step sets on its own arrays (an LM
    step's rows over ``data`` / ``fsdp``) leave ``A`` where the population lives.

    Returns:
      ``(states, extras)``, leaves ``[A, ...]``.
    """
    if unbatch_one and jax.tree.leaves(states)[0].shape[0] == 1 and mode == "vmap":
        squeeze = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731
        return jax.tree.map(lambda x: x[None], fn(squeeze(states), *shared))
    batched = jax.vmap(fn, in_axes=(0, *(None,) * len(shared)), spmd_axis_name=spmd_axis_name)
    if mode == "vmap":
        return batched(states, *shared)
    check_learner_map(mode)
    split = jax.tree.map(lambda x: x.reshape(groups, -1, *x.shape[1:]), states)
    take = lambda tree, i: jax.tree.map(  # noqa: E731
        lambda x: jax.lax.dynamic_index_in_dim(x, i, axis=1, keepdims=False), tree
    )
    extras = jax.eval_shape(batched, take(split, 0), *shared)[1]
    per = jax.tree.leaves(split)[0].shape[1]
    extras = jax.tree.map(lambda x: jnp.zeros((groups, per, *x.shape[1:]), x.dtype), extras)

    def body(i, carry):
        new = batched(take(carry[0], i), *shared)
        put = lambda x, y: jax.lax.dynamic_update_index_in_dim(x, y, i, axis=1)  # noqa: E731
        return jax.tree.map(put, carry, new)

    out = jax.lax.fori_loop(0, per, body, (split, extras))
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), out)
