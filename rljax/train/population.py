"""One pipeline for every learner: a population spec in, trained states and evaluations out.

A population is ``G`` grid points × ``S`` seeds of one learner module (an
``rljax.agents.Learner``), laid out grid-major on one leading axis (learner ``a`` is grid point
``a // S``, seed ``a % S``) and trained by one vmapped, jitted chunk of ``train_chunk`` that the
host loop (``rljax.train.loop``) calls, optionally sharded over a device mesh. The front ends
(``rljax.train.experiment`` for gymnax control, ``rljax.train.lm_experiment`` for RLVR, the
reproduction scripts) only build a ``Spec``.

Keys follow the one rule of ``rljax.agents.learner``: seed ``s`` of every grid point starts from
``learner_key(seed, s)``; the per-chunk evaluation hook gets ``fold_in(eval_key(seed), update)``,
on a branch no training key reaches.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from rljax import agents
from rljax.agents import learner as learner_lib
from rljax.agents.learner import check_grid, grid_hparams  # noqa: F401 (the pipeline's API)
from rljax.parallel import learner_axis, sharding
from rljax.parallel import mesh as mesh_lib
from rljax.train import loop


@dataclasses.dataclass(frozen=True)
class Spec:
    """Everything that determines what a population computes."""

    learner: agents.Learner  # the learner module
    config: Any  # its static Config, complete (num_updates set where it has one)
    env: Any  # what it acts in: a gymnax Env, the RLVR task data, an offline dataset
    hparams: Any  # the learner's Hparams with leaves [G]: one value per grid point
    num_updates: int  # updates per learner
    chunk_updates: int  # updates per compiled call; divides num_updates
    num_seeds: int = 1  # S learners per grid point
    seed: int = 0  # the run's seed: learner s of every grid point uses learner_key(seed, s)
    grid: tuple[dict, ...] = ({},)  # the G grid points' names and values (rows, plots, messages)
    # True: `env` is a pytree of arrays handed to every chunk call (replicated on a mesh, e.g.
    # the LM task data with its base model); False: it is part of the compiled program.
    env_as_argument: bool = False
    mesh: mesh_lib.MeshConfig | None = None  # device mesh (None: the default device)
    sharding_rules: sharding.Rules = learner_axis.SEEDS  # learner-state rules on the mesh
    # Rules of one learner's own leaves [...] (e.g. rljax.parallel.steps.LM_FSDP): the learner
    # axis A goes on `seeds`, each learner's weights split over fsdp / tensor by these rules, and
    # the vmapped step keeps A on `seeds` (spmd_axis_name). None: `sharding_rules` place [A, ...].
    member_rules: sharding.Rules | None = None
    # How `env` is placed with env_as_argument (e.g. an LM base by member_rules, its problem
    # tables replicated: rules match on paths such as "base_params/.../kernel", "train/...").
    env_rules: sharding.Rules = sharding.REPLICATED
    # Optional hook after every chunk, its results in Result.evaluations: "learner" (its own
    # `evaluate`, all learners on the chunk's one key), or jittable (states[A], key) -> [A, ...].
    evaluate: str | Callable[[Any, jax.Array], Any] | None = None
    keep_metrics: bool = False  # True: every training metric comes back in Result.metrics
    learner_map: str = "vmap"  # vmap | sequential (rljax.parallel.learner_axis.map_learners)
    # True: a population of one runs unbatched (faster on XLA:CPU); False: vmapped over one,
    # rounded as each learner of a population sharded one per device (map_learners).
    unbatch_one: bool = True

    def __post_init__(self):
        learner_axis.check_learner_map(self.learner_map)

    @property
    def num_learners(self) -> int:
        return len(self.grid) * self.num_seeds


@dataclasses.dataclass
class Result:
    """A finished (or interrupted) population run, in memory."""

    states: Any  # final learner states, leaves [A, ...]
    summary: loop.Summary
    evaluations: Any = None  # the hook's outputs stacked [A, chunks run, ...] (None: no hook)
    eval_updates: tuple[int, ...] = ()  # the update after which each evaluation ran
    metrics: dict | None = None  # with spec.keep_metrics: {key: [A, updates run here]}


def keys(spec: Spec) -> jax.Array:
    """Root keys of the ``A`` learners: ``learner_key(seed, a % S)`` (grid points share them)."""
    seeds = np.arange(spec.num_learners) % spec.num_seeds
    return jax.vmap(lambda s: learner_lib.learner_key(spec.seed, s))(seeds)


def learner_hparams(spec: Spec) -> Any:
    """Per-learner ``Hparams`` ``[A]``: each grid point's values repeated for its seeds."""
    return jax.tree.map(lambda h: np.repeat(np.asarray(h), spec.num_seeds, axis=0), spec.hparams)


def init(
    spec: Spec, shardings=None, *, abstract: bool = False, rows: slice | None = None, env=None
):
    """Initial states of all learners, stacked on a leading axis (grid-major).

    Optional: ``shardings`` places the states on a mesh as they are created; ``abstract=True``
    returns only their shapes and dtypes, computing nothing; ``rows`` creates only the learners
    ``rows`` (a process's share on several hosts); ``env`` replaces ``spec.env`` (the same
    data placed on the mesh). With ``env_as_argument`` the env is an argument of the compiled
    init, never a constant baked into it (an LM base of a billion weights).
    """
    root_keys, hparams = keys(spec), learner_hparams(spec)
    if rows is not None:
        root_keys, hparams = root_keys[rows], jax.tree.map(lambda h: h[rows], hparams)
    env = spec.env if env is None else env
    if spec.env_as_argument:
        fn = jax.vmap(functools.partial(spec.learner.init, spec.config), in_axes=(None, 0, 0))
        args = (env, root_keys, hparams)
    else:
        fn = jax.vmap(functools.partial(spec.learner.init, spec.config, env))
        args = (root_keys, hparams)
    if abstract:
        return jax.eval_shape(fn, *args)
    return jax.jit(fn, out_shardings=shardings)(*args)


def make_mesh(config: mesh_lib.MeshConfig) -> jax.sharding.Mesh:
    """The run's mesh: ``config`` over this job's devices (a fixed shape takes the first ones,
    ``-1`` the rest). The one place a population's mesh is built; a front end that must place
    data before the run (an LM base loaded onto the mesh) calls it too and gets the same mesh."""
    return mesh_lib.make_mesh(config, mesh_lib.devices_for(config))


def state_shardings(spec: Spec, mesh, states) -> tuple[Any, Any]:
    """``(state_shardings, metrics_sharding)`` of ``states`` (leaves ``[A, ...]``, arrays or
    shapes) on ``mesh``: by ``spec.member_rules`` per learner with ``A`` on ``seeds``, else by
    ``spec.sharding_rules``. Raises ValueError (naming the leaf) for a split that does not fit."""
    if spec.member_rules is None:
        return learner_axis.shardings(mesh, states, spec.sharding_rules)
    members = learner_axis.member_shardings(mesh, states, spec.member_rules)
    return members, sharding.replicated(mesh)


def env_shardings(spec: Spec, mesh) -> Any:
    """Where ``spec.env`` lives on ``mesh`` (``env_as_argument``): by ``spec.env_rules``."""
    return sharding.tree_shardings(mesh, spec.env, spec.env_rules)


def init_on_mesh(spec: Spec, mesh=None, env=None):
    """Initial states created in place on ``mesh`` (``None``: the default device, unsharded).

    Returns:
      ``(states, shardings)``; ``shardings`` is ``(state_shardings, metrics_sharding)`` for
      ``chunk_fn`` (the rules checked on the states' shapes before anything compiles), or
      ``None`` without a mesh.
    """
    if mesh is None:
        return init(spec, env=env), None
    shardings = state_shardings(spec, mesh, init(spec, abstract=True, env=env))
    return init(spec, shardings[0], env=env), shardings


def chunk_fn(spec: Spec, updates: int, shardings=None):
    """The jitted chunk ``(states[A], *env) -> (states, metrics[A, updates])`` (``learner_map``).

    Donates the states; ``env`` is an argument only with ``spec.env_as_argument``.
    """
    one = functools.partial(spec.learner.train_chunk, spec.config, num_updates=updates)
    if not spec.env_as_argument:
        one = functools.partial(one, spec.env)
    mesh = None if shardings is None else jax.tree.leaves(shardings[0])[0].mesh
    groups = 1 if mesh is None else mesh.shape.get("seeds", 1)  # devices along the learners
    # Sharded members keep their learner axis on `seeds` inside the vmapped step.
    spmd = "seeds" if spec.member_rules is not None and groups > 1 else None
    fn = functools.partial(  # one learner at a time per device or all at once (learner_map)
        learner_axis.map_learners, lambda state, *env: one(*env, state), groups=groups,
        mode=spec.learner_map, unbatch_one=spec.unbatch_one, spmd_axis_name=spmd,
    )  # fmt: skip
    if shardings is None:
        return jax.jit(fn, donate_argnums=0)
    # The states' shardings are explicit on the way in too (the task data's are its own).
    inputs = {} if spec.env_as_argument else {"in_shardings": (shardings[0],)}
    return jax.jit(fn, out_shardings=tuple(shardings), donate_argnums=0, **inputs)


def evaluate_fn(spec: Spec):
    """The jitted hook ``(states[A], key, *env) -> [A, ...]`` of ``spec.evaluate`` (or None)."""
    if spec.evaluate is None or callable(spec.evaluate):
        return spec.evaluate and jax.jit(lambda states, key, *_: spec.evaluate(states, key))
    if spec.evaluate != "learner":
        raise ValueError(f"evaluate={spec.evaluate!r}; allowed: None, 'learner', a callable")
    own = functools.partial(spec.learner.evaluate, spec.config)
    if spec.env_as_argument:  # the env (e.g. the LM task data) an argument, not a constant
        return jax.jit(jax.vmap(lambda states, key, env: own(env, states, key), (0, None, None)))
    return jax.jit(jax.vmap(functools.partial(own, spec.env), (0, None)))


def run(spec: Spec, **loop_options) -> Result:
    """Trains the population in the host loop; returns the final states and evaluations.

    Args:
      spec: the population.
      **loop_options: the remaining ``loop.LoopConfig`` fields (workdir, title,
        checkpoint_every, resume, progress, score and axis names, fingerprint).
    """
    evaluate, mesh = evaluate_fn(spec), None if spec.mesh is None else make_mesh(spec.mesh)
    env = spec.env
    if spec.env_as_argument and mesh is not None:  # shared data, placed by spec.env_rules
        env = jax.device_put(env, env_shardings(spec, mesh))
    states, shardings = init_on_mesh(spec, mesh, env)
    loop_cfg = loop.LoopConfig(
        num_updates=spec.num_updates, chunk_updates=spec.chunk_updates, num_seeds=spec.num_seeds,
        env_steps_per_update=spec.learner.env_steps_per_update(spec.config),
        grid=tuple(spec.grid), **loop_options,
    )  # fmt: skip
    evaluations, eval_updates, kept = [], [], []
    fn, args = chunk_fn(spec, spec.chunk_updates, shardings), (env,) if spec.env_as_argument else ()

    def hook(states, update, metrics):
        kept.extend([metrics] if spec.keep_metrics else [])
        if evaluate is not None:
            key = jax.random.fold_in(learner_lib.eval_key(spec.seed), update)
            evaluations.append(jax.device_get(evaluate(states, key, *args)))
            eval_updates.append(update)

    states, summary = loop.run(loop_cfg, states, fn, *args, after_chunk=hook)
    stacked = jax.tree.map(lambda *e: np.stack(e, 1), *evaluations) if evaluations else None
    metrics = {k: np.concatenate([m[k] for m in kept], 1) for k in kept[0]} if kept else None
    return Result(states, summary, stacked, tuple(eval_updates), metrics)
