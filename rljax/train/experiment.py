"""Runs one agent family on one environment: a population of seeds × hyperparameter grid points.

An agent module (``rljax.agents.ppo``, ``rljax.agents.dqn``, ...) provides ``Config``, ``Hparams``,
``HPARAM_RULES``, ``validate``, ``init``, ``train_chunk`` and ``env_steps_per_update``. This module
validates everything, builds the vmapped, jitted chunk and hands it to the host loop.
"""

import dataclasses
import functools
import math
import types

import jax
import numpy as np

from rljax import envs
from rljax.io import fingerprint, workdir_lock
from rljax.parallel import mesh as mesh_lib
from rljax.parallel import population, sharding
from rljax.train import loop, memory, sweep


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Settings of a run that are not the agent's."""

    env_name: str  # one of rljax.envs.SUPPORTED_ENVS
    workdir: str  # where outputs go
    seed: int = 0  # base seed; agent a uses fold_in(PRNGKey(seed), a)
    num_seeds: int = 1  # seeds per grid point
    total_timesteps: int = 500_000  # env steps per agent
    chunk_updates: int = 0  # updates per compiled call (0: about num_updates / 16)
    checkpoint_every: int = 4  # chunks between periodic checkpoints
    resume: bool = False  # continue from the latest checkpoint in workdir
    progress: bool = True  # progress bar
    hparams: tuple[tuple[str, float], ...] = ()  # default value of every swept-able field
    sweep: tuple[tuple[str, str], ...] = ()  # field -> "v1,v2,..." ("" = not swept)
    mesh: mesh_lib.MeshConfig | None = None  # device mesh (None: default device, no sharding)
    sharding_rules: sharding.Rules = population.SEEDS  # agent-state rules when mesh is set


# The only fields of a run that may change when it resumes (the budget, how often it checkpoints,
# and what it shows); any other change is refused before anything compiles (rljax.io.fingerprint).
RESUMABLE_FIELDS = (
    "total_timesteps", "checkpoint_every", "progress",
    "mesh", "sharding_rules",  # checkpoints restore onto meshes of other shapes (tested)
)  # fmt: skip


def config_fingerprint(agent: types.ModuleType, agent_config, run: RunConfig) -> dict:
    """The run's whole config as a flat dict in the config files' names (``"hparams.lr"``, ...).

    ``workdir`` and ``resume`` are where and how it runs, not what; the agent config's
    ``num_updates`` follows from ``total_timesteps``.
    """
    block = agent.__name__.rsplit(".", 1)[-1]
    flat = {"agent": block}
    for field in dataclasses.fields(run):
        if field.name in ("workdir", "resume", "hparams", "sweep"):
            continue
        value = getattr(run, field.name)
        flat[field.name] = repr(value) if field.name in ("mesh", "sharding_rules") else value
    flat.update({f"hparams.{k}": float(v) for k, v in run.hparams})
    flat.update({f"sweep.{k}": str(v) for k, v in run.sweep})
    for field in dataclasses.fields(agent_config):
        if field.name != "num_updates":
            flat[f"{block}.{field.name}"] = getattr(agent_config, field.name)
    return flat


def _positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}={value!r} is invalid; allowed: an integer >= 1")


def validate_run(run: RunConfig, agent: types.ModuleType, agent_config) -> list[dict]:
    """Validates the run and returns the hyperparameter grid. Raises ``ValueError``."""
    if run.env_name not in envs.SUPPORTED_ENVS:
        raise ValueError(
            f"env_name={run.env_name!r} is unknown; valid: {', '.join(envs.SUPPORTED_ENVS)}"
        )
    _positive_int("num_seeds", run.num_seeds)
    _positive_int("total_timesteps", run.total_timesteps)
    _positive_int("checkpoint_every", run.checkpoint_every)
    if not isinstance(run.chunk_updates, int) or run.chunk_updates < 0:
        raise ValueError(f"chunk_updates={run.chunk_updates!r} is invalid; allowed: >= 0")
    try:  # the agent checks its settings against the run's length (e.g. DQN's learning_starts)
        updates = run.total_timesteps // agent.env_steps_per_update(agent_config)
    except (ZeroDivisionError, TypeError):  # a bad setting: agent.validate names it
        updates = 0
    if updates > 0 and any(f.name == "num_updates" for f in dataclasses.fields(agent_config)):
        agent_config = dataclasses.replace(agent_config, num_updates=updates)
    agent.validate(agent_config)
    points = sweep.grid(dict(run.hparams), dict(run.sweep))
    for point in points:
        for name, value in point.items():
            check, allowed = agent.HPARAM_RULES[name]
            if not (math.isfinite(value) and check(value)):
                raise ValueError(f"hparams.{name}={value!r} is invalid; allowed: {allowed}")
    per_update = agent.env_steps_per_update(agent_config)
    if run.total_timesteps < per_update:
        raise ValueError(
            f"total_timesteps={run.total_timesteps} is below one update's {per_update} env steps"
        )
    return points


def num_updates(run: RunConfig, agent: types.ModuleType, agent_config) -> int:
    """Whole updates that fit in ``total_timesteps``."""
    return run.total_timesteps // agent.env_steps_per_update(agent_config)


def chunk_size(total: int, requested: int) -> int:
    """The largest divisor of ``total`` not above ``requested`` (``0``: about ``total / 16``)."""
    target = requested or max(1, round(total / 16))
    return max(d for d in range(1, min(target, total) + 1) if total % d == 0)


def init_population(
    agent,
    agent_config,
    env,
    run: RunConfig,
    points: list[dict],
    shardings=None,
    *,
    abstract: bool = False,
    rows: slice | None = None,
):
    """Initial states of all ``G × S`` agents, stacked on a leading axis (grid-major).

    Optional: ``shardings`` places the states on a mesh as they are created; ``abstract=True``
    returns only their shapes and dtypes (``jax.ShapeDtypeStruct``s), computing nothing; ``rows``
    creates only the agents ``rows`` of the population (a process's share on several hosts).
    """
    hp = sweep.stack(points, run.num_seeds)
    hparams = agent.Hparams(**{k: hp[k] for k in agent.Hparams._fields})
    base = jax.random.PRNGKey(run.seed)
    keys = jax.vmap(lambda a: jax.random.fold_in(base, a))(np.arange(len(points) * run.num_seeds))
    if rows is not None:
        keys, hparams = keys[rows], jax.tree.map(lambda h: h[rows], hparams)
    init = jax.vmap(functools.partial(agent.init, agent_config, env))
    if abstract:
        return jax.eval_shape(init, keys, hparams)
    if shardings is None:
        return jax.jit(init)(keys, hparams)
    return jax.jit(init, out_shardings=shardings)(keys, hparams)


def init_on_mesh(agent, agent_config, env, run: RunConfig, points: list[dict], mesh, rules):
    """Initial states created in place on ``mesh`` (``None``: the default device, unsharded).

    The shardings follow ``rules`` (``rljax.parallel.population``) and are checked on the
    states' shapes before anything compiles.

    Returns:
      ``(states, shardings)``; ``shardings`` is ``(state_shardings, metrics_sharding)`` for
      ``make_chunk_fn``, or ``None`` without a mesh.
    """
    if mesh is None:
        return init_population(agent, agent_config, env, run, points), None
    shapes = init_population(agent, agent_config, env, run, points, abstract=True)
    shardings = population.shardings(mesh, shapes, rules)
    return init_population(agent, agent_config, env, run, points, shardings[0]), shardings


def make_chunk_fn(agent, agent_config, env, updates: int, shardings=None):
    """The jitted, vmapped chunk ``states[A] -> (states, metrics[A, updates])``; donates states.

    ``shardings`` (optional): ``(state_shardings, metrics_sharding)`` from
    ``rljax.parallel.population.shardings``, used as the explicit in/out shardings.
    """
    chunk = functools.partial(agent.train_chunk, agent_config, env, num_updates=updates)
    if shardings is None:
        return jax.jit(jax.vmap(chunk), donate_argnums=0)
    state_shardings, metrics_sharding = shardings
    return jax.jit(
        jax.vmap(chunk),
        in_shardings=(state_shardings,),
        out_shardings=(state_shardings, metrics_sharding),
        donate_argnums=0,
    )


def run(agent: types.ModuleType, agent_config, run_config: RunConfig):
    """Validates, builds and trains; returns ``(final states, loop.Summary)``.

    The agent config's ``num_updates`` is set from ``total_timesteps``. With ``resume``, the
    config is first checked against the one that made the checkpoints
    (``rljax.io.fingerprint``; only ``RESUMABLE_FIELDS`` may differ) before anything is built or
    compiled; a run that already finished returns ``(None, its summary)`` having done nothing.
    """
    points = validate_run(run_config, agent, agent_config)
    total = num_updates(run_config, agent, agent_config)
    config = config_fingerprint(agent, agent_config, run_config)
    start = fingerprint.resume_point(
        run_config.workdir,
        config,
        mutable=RESUMABLE_FIELDS,
        num_updates=total,
        resume=run_config.resume,
    )
    if start == total:  # finished already: nothing to build, compile or run
        return None, loop.load_summary(run_config.workdir, total)
    if jax.process_index() == 0:  # one run per workdir, refused before anything compiles
        workdir_lock.acquire(run_config.workdir)
    agent_config = dataclasses.replace(agent_config, num_updates=total)
    env = envs.make(run_config.env_name)
    memory.check_population(  # a population that cannot fit is refused before it compiles
        agent, agent_config, env, num_seeds=run_config.num_seeds, grid_points=len(points)
    )
    mesh = None if run_config.mesh is None else mesh_lib.make_mesh(run_config.mesh)
    states, shardings = init_on_mesh(
        agent, agent_config, env, run_config, points, mesh, run_config.sharding_rules
    )
    # A resumed run's chunks must land on its checkpoint and on the (possibly extended) budget.
    updates = chunk_size(total, run_config.chunk_updates)
    if start and start % updates:
        updates = chunk_size(math.gcd(total, start), updates)
    loop_config = loop.LoopConfig(
        workdir=run_config.workdir,
        title=f"{agent.__name__.rsplit('.', 1)[-1]} {run_config.env_name}",
        num_updates=total,
        chunk_updates=updates,
        checkpoint_every=run_config.checkpoint_every,
        env_steps_per_update=agent.env_steps_per_update(agent_config),
        num_seeds=run_config.num_seeds,
        grid=tuple(points),
        resume=run_config.resume,
        progress=run_config.progress,
        fingerprint=config,
    )
    chunk_fn = make_chunk_fn(agent, agent_config, env, updates, shardings)
    try:
        return loop.run(loop_config, states, chunk_fn)
    finally:
        workdir_lock.release(run_config.workdir)
