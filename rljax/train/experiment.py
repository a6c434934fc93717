"""The gymnax control front end of the population pipeline (``rljax.train.population``).

One learner module (an ``rljax.agents.Learner``: ``ppo``, ``dqn``, ``sqirl``, ...) on one
environment, a population of seeds × hyperparameter grid points: this module validates the run,
turns it into a ``population.Spec`` and adds what a control run on disk needs (the config
fingerprint, resuming, chunk sizes that land on the budget and on a checkpoint).
"""

import dataclasses
import math

import jax

from rljax import agents, checks, envs
from rljax.io import fingerprint, workdir_lock
from rljax.parallel import learner_axis, sharding
from rljax.parallel import mesh as mesh_lib
from rljax.train import loop, population, sweep


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Settings of a run that are not the learner's."""

    env_name: str  # one of rljax.envs.SUPPORTED_ENVS
    workdir: str  # where outputs go
    seed: int = 0  # seed s of every grid point uses learner_key(seed, s) (rljax.agents.learner)
    num_seeds: int = 1  # seeds per grid point
    total_timesteps: int = 500_000  # env steps per learner
    chunk_updates: int = 0  # updates per compiled call (0: about num_updates / 16)
    checkpoint_every: int = 4  # chunks between periodic checkpoints
    resume: bool = False  # continue from the latest checkpoint in workdir
    progress: bool = True  # progress bar
    hparams: tuple[tuple[str, float], ...] = ()  # default value of every swept-able field
    sweep: tuple[tuple[str, str], ...] = ()  # field -> "v1,v2,..." ("" = not swept)
    mesh: mesh_lib.MeshConfig | None = None  # device mesh (None: default device, no sharding)
    sharding_rules: sharding.Rules = learner_axis.SEEDS  # learner-state rules when mesh is set


# The only fields of a run that may change when it resumes (the budget, how often it checkpoints,
# and what it shows); any other change is refused before anything compiles (rljax.io.fingerprint).
RESUMABLE_FIELDS = (
    "total_timesteps", "checkpoint_every", "progress",
    "mesh", "sharding_rules",  # checkpoints restore onto meshes of other shapes (tested)
)  # fmt: skip


def config_fingerprint(learner: agents.Learner, learner_config, run: RunConfig) -> dict:
    """The run's whole config as a flat dict in the config files' names (``"hparams.lr"``, ...).

    ``workdir`` and ``resume`` are where and how it runs, not what; the learner config's
    ``num_updates`` follows from ``total_timesteps``.
    """
    block = learner.__name__.rsplit(".", 1)[-1]
    flat = {"learner": block}
    for field in dataclasses.fields(run):
        if field.name in ("workdir", "resume", "hparams", "sweep"):
            continue
        value = getattr(run, field.name)
        flat[field.name] = repr(value) if field.name in ("mesh", "sharding_rules") else value
    flat.update({f"hparams.{k}": float(v) for k, v in run.hparams})
    flat.update({f"sweep.{k}": str(v) for k, v in run.sweep})
    for field in dataclasses.fields(learner_config):
        if field.name != "num_updates":
            flat[f"{block}.{field.name}"] = getattr(learner_config, field.name)
    return flat


def validate_run(run: RunConfig, learner: agents.Learner, learner_config) -> list[dict]:
    """Validates the run and returns the hyperparameter grid. Raises ``ValueError``."""
    if run.env_name not in envs.SUPPORTED_ENVS:
        raise ValueError(f"env_name={run.env_name!r} is unknown; valid: {envs.valid_names()}")
    for name in ("num_seeds", "total_timesteps", "checkpoint_every"):
        checks.check_int(name, getattr(run, name), low=1)
    checks.check_int("chunk_updates", run.chunk_updates, low=0)
    try:  # the learner checks its settings against the run's length (e.g. DQN's learning_starts)
        updates = run.total_timesteps // learner.env_steps_per_update(learner_config)
    except (ZeroDivisionError, TypeError):  # a bad setting: learner.validate names it
        updates = 0
    if updates > 0 and any(f.name == "num_updates" for f in dataclasses.fields(learner_config)):
        learner_config = dataclasses.replace(learner_config, num_updates=updates)
    learner.validate(learner_config)
    # Every control learner says which action spaces it acts in (a new one without
    # validate_env fails here, and in the registry-wide test, never silently).
    learner.validate_env(learner_config, envs.make(run.env_name))
    points = sweep.grid(dict(run.hparams), dict(run.sweep))
    population.check_grid(learner, points)
    per_update = learner.env_steps_per_update(learner_config)
    if run.total_timesteps < per_update:
        raise ValueError(
            f"total_timesteps={run.total_timesteps} is below one update's {per_update} env steps"
        )
    check_learning_starts(run, learner, learner_config)
    return points


def check_learning_starts(run: RunConfig, learner: agents.Learner, learner_config) -> None:
    """Refuses a run that ends before its learner's first gradient step.

    Every learner whose gradient steps wait for a number of env steps calls that field
    ``learning_starts`` (``dqn``, ``sac``, ``td3``, ``mpo``; ``rljax.agents``), so one rule covers
    them all, and the next. Update ``i`` (from 0) learns once its env steps ``(i + 1) * n``
    reach ``learning_starts``, so the run's last update learns iff ``learning_starts`` is at
    most the env steps of its whole updates; beyond that the run would collect data and exit 0
    having learned nothing. (A first leg that only collects, resumed with a larger budget, is
    refused too: give the leg at least one learning update.)
    """
    if "learning_starts" not in {f.name for f in dataclasses.fields(learner_config)}:
        return
    block = learner.__name__.rsplit(".", 1)[-1]
    run_steps = num_updates(run, learner, learner_config) * learner.env_steps_per_update(
        learner_config
    )
    if learner_config.learning_starts > run_steps:
        raise ValueError(
            f"{block}.learning_starts={learner_config.learning_starts} is invalid; allowed: at "
            f"most the run's {run_steps} env steps per agent (total_timesteps), or no update "
            "ever learns"
        )


def num_updates(run: RunConfig, learner: agents.Learner, learner_config) -> int:
    """Whole updates that fit in ``total_timesteps``."""
    return run.total_timesteps // learner.env_steps_per_update(learner_config)


def spec(learner, learner_config, env, run: RunConfig, points: list[dict], total=1, updates=1):
    """The run's ``population.Spec`` (``total`` updates in chunks of ``updates``)."""
    hparams = population.grid_hparams(learner, points)
    return population.Spec(
        learner, learner_config, env, hparams, total, updates, run.num_seeds, run.seed,
        grid=tuple(points), mesh=run.mesh, sharding_rules=run.sharding_rules,
    )  # fmt: skip


def init_population(learner, learner_config, env, run, points, shardings=None, **kwargs):
    """Initial states of all ``G × S`` agents (``population.init``: ``abstract``, ``rows``)."""
    return population.init(spec(learner, learner_config, env, run, points), shardings, **kwargs)


def init_on_mesh(learner, learner_config, env, run: RunConfig, points: list[dict], mesh, rules):
    """Initial states created in place on ``mesh`` by ``rules`` (``population.init_on_mesh``)."""
    population_spec = spec(learner, learner_config, env, run, points)
    return population.init_on_mesh(dataclasses.replace(population_spec, sharding_rules=rules), mesh)


def make_chunk_fn(learner, learner_config, env, updates: int, shardings=None):
    """The jitted, vmapped chunk ``states[A] -> (states, metrics[A, updates])``; donates states."""
    chunk_spec = population.Spec(learner, learner_config, env, None, updates, updates)
    return population.chunk_fn(chunk_spec, updates, shardings)


def run(learner: agents.Learner, learner_config, run_config: RunConfig):
    """Validates, builds and trains; returns ``(final states, loop.Summary)``.

    The learner config's ``num_updates`` is set from ``total_timesteps``. With ``resume``, the
    config is first checked against the one that made the checkpoints
    (``rljax.io.fingerprint``; only ``RESUMABLE_FIELDS`` may differ) before anything is built or
    compiled; a run that already finished returns ``(None, its summary)`` having done nothing.
    """
    points = validate_run(run_config, learner, learner_config)
    total = num_updates(run_config, learner, learner_config)
    config = config_fingerprint(learner, learner_config, run_config)
    start = fingerprint.resume_point(
        run_config.workdir, config, mutable=RESUMABLE_FIELDS, num_updates=total,
        resume=run_config.resume,
    )  # fmt: skip
    if start == total:  # finished already: nothing to build, compile or run
        return None, loop.load_summary(run_config.workdir, total)
    # One run per workdir, refused before anything compiles; given back however the run ends.
    with workdir_lock.holding(run_config.workdir, primary=jax.process_index() == 0):
        return _train(learner, learner_config, run_config, points, total, start, config)


def _train(learner, learner_config, run_config: RunConfig, points, total: int, start: int, config):
    learner_config = dataclasses.replace(learner_config, num_updates=total)
    # A resumed run's chunks must land on its checkpoint and on the (possibly extended) budget.
    updates = loop.chunk_size(total, run_config.chunk_updates)
    if start and start % updates:
        updates = loop.chunk_size(math.gcd(total, start), updates)
    env = envs.make(run_config.env_name)
    learner_axis.check_population(  # a population that cannot fit is refused before compiling
        learner, learner_config, env, num_seeds=run_config.num_seeds, grid_points=len(points)
    )
    result = population.run(
        spec(learner, learner_config, env, run_config, points, total, updates),
        workdir=run_config.workdir, resume=run_config.resume, progress=run_config.progress,
        title=f"{learner.__name__.rsplit('.', 1)[-1]} {run_config.env_name}",
        checkpoint_every=run_config.checkpoint_every, fingerprint=config,
    )  # fmt: skip
    return result.states, result.summary
