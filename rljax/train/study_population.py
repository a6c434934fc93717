"""The classic-control studies' populations: train one in a program, evaluate it, read its curves.

A population is ``len(points) × seeds`` agents of one agent module, a ``rljax.train.population``
spec (grid-major; seed ``s`` of every grid point starts from ``learner_key(seed, s)``) trained by
one jitted, vmapped program, optionally sharded over the process's CPU devices (one per core,
``rljax.xla_flags.cpu_layout``). The studies (``experiments/*.py``, ``rljax.train.study``) call
``rljax.xla_flags.set_flags(num_cpu_devices=...)`` before importing this module.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np

from rljax import envs
from rljax.agents import dqn, learner
from rljax.parallel import mesh as mesh_lib
from rljax.train import population, study, verdicts


def make_env(name: str, **kwargs):
    """An ``rljax.envs.Env`` for any discrete-action gymnax environment (``rljax.envs.make``
    covers classic control and MinAtar; this also builds e.g. ``Catch-bsuite`` or
    ``DeepSea-bsuite`` with ``size=...``). The display ``name`` gets the kwargs appended."""
    import gymnax

    if name in envs.SUPPORTED_ENVS and not kwargs:
        return envs.make(name)
    env, params = gymnax.make(name, **kwargs)
    space = env.action_space(params)
    if not hasattr(space, "n"):
        raise ValueError(f"env {name!r} has a continuous action space; allowed: discrete")
    suffix = "".join(f"-{v}" for v in kwargs.values())
    return envs.Env(
        name=name + suffix,
        env=env,
        params=params,
        obs_shape=tuple(env.observation_space(params).shape),
        discrete=True,
        num_actions=int(space.n),
        action_low=0.0,
        action_high=0.0,
        max_steps=int(params.max_steps_in_episode),
    )


def dqn_for_budget(c, steps: int, overrides: dict | None = None, buffer_size: int | None = None):
    """``configs/dqn.py``'s ``c`` fitted to a run of ``steps`` env steps per agent: (Config,
    hyperparameters). ``overrides`` replace fields of its dqn block (e.g. the head).

    Short runs: ε reaches its floor by mid-run, learning starts after at most a tenth of the run,
    the target updates at least 20 times, and the buffer holds at most half the run (or
    ``buffer_size`` transitions).
    """
    config = learner.config_from_dict(dqn.Config, "dqn", {**c.dqn.to_dict(), **(overrides or {})})
    hp = {k: float(v) for k, v in c.hparams.items()}
    hp["eps_decay_steps"] = min(hp["eps_decay_steps"], steps / 2)
    n = config.num_envs
    if buffer_size is None:
        buffer_size = max(config.n_step + 1, min(config.buffer_size, steps // 2) // n) * n
    return dataclasses.replace(
        config,
        buffer_size=buffer_size,
        learning_starts=max(config.batch_size, min(config.learning_starts, steps // 10)),
        target_update_every=max(n, min(config.target_update_every, steps // 20) // n * n),
    ), hp


def greedy_returns(env, policy, key: jax.Array, num_envs: int, length: int) -> jax.Array:
    """Mean return of the first episode in ``num_envs`` fresh environments under ``policy``.

    ``policy(obs [B, ...]) -> actions [B]`` (greedy, deterministic). Each environment runs
    ``length`` steps; the return counts rewards until its first episode ends (or ``length``).
    """
    reset_key, run_key = jax.random.split(key)
    state = envs.reset(env, reset_key, num_envs)

    def body(carry, k):
        state, ret, alive = carry
        state, res = envs.step(env, k, state, policy(state.obs))
        ret = ret + alive * res.reward
        return (state, ret, alive * (1.0 - res.done.astype(jax.numpy.float32))), None

    zeros = jax.numpy.zeros((num_envs,), jax.numpy.float32)
    (_, ret, _), _ = jax.lax.scan(
        body, (state, zeros, zeros + 1.0), jax.random.split(run_key, length)
    )
    return ret.mean()


def train_with_evals(
    module,
    config,
    env,
    points: list[dict],
    seeds: int,
    steps: int,
    seed: int,
    num_evals: int,
    evaluate,
) -> dict:
    """Trains the population in ``num_evals`` equal chunks, evaluating after each.

    ``evaluate(states, key) -> [A, ...]`` (jitted by the caller) runs on the whole population;
    evaluation ``c`` gets ``fold_in(eval_key(seed), c)``, a key no learner's training reaches.
    Returns ``{"evals" [A, num_evals, ...], "steps_at" [num_evals], "ret", "cnt", "seconds"}``
    (``ret``/``cnt``: the training-episode metrics ``[A, U]``).
    """
    per_update = module.env_steps_per_update(config)
    per_chunk = steps // per_update // num_evals
    if per_chunk < 1:
        raise ValueError(f"steps={steps} is below {num_evals} updates of {per_update} env steps")
    updates = per_chunk * num_evals
    config = dataclasses.replace(config, num_updates=updates)
    module.validate(config)
    spec = _spec(module, config, env, points, seeds, seed, updates, per_chunk)
    t0 = time.perf_counter()
    states, chunk = population.init(spec), population.chunk_fn(spec, per_chunk)
    eval_root, evals, rets, cnts = learner.eval_key(seed), [], [], []
    for c in range(num_evals):
        states, metrics = chunk(states)
        rets.append(np.asarray(metrics["episode/return"], np.float64))
        cnts.append(np.asarray(metrics["episode/count"], np.float64))
        key = jax.random.fold_in(eval_root, c)
        evals.append(np.asarray(evaluate(states, key), np.float64))
    return {
        "state": states,
        "config": config,
        "evals": np.stack(evals, 1),
        "steps_at": np.arange(1, num_evals + 1) * per_chunk * per_update,
        "ret": np.concatenate(rets, 1),
        "cnt": np.concatenate(cnts, 1),
        "seconds": time.perf_counter() - t0,
    }


def train_population(
    module,
    config,
    env_name: str,
    points: list[dict],
    seeds: int,
    steps: int,
    seed: int,
    *,
    devices: int = 1,
) -> dict:
    """Trains ``len(points) × seeds`` agents for ``steps`` env steps each in one program.

    Args:
      module: agent module (``rljax.agents.dqn``, ...).
      config: its static ``Config`` (``num_updates`` is set here).
      env_name: gymnax environment.
      points: hyperparameter grid points (each a full ``Hparams`` dict).
      seeds: seeds per point.
      steps: env steps per agent (rounded down to whole updates).
      seed: the run's seed; seed ``s`` of every point starts from ``learner_key(seed, s)``.
      devices: CPU devices to shard the population over (must divide it; 1 = default device).

    Returns:
      ``{"state", "ret" [A, U], "cnt" [A, U], "per_update", "updates", "seconds"}`` with the
      metrics as float64 NumPy arrays; ``A = len(points) * seeds``.
    """
    per_update = module.env_steps_per_update(config)
    updates = steps // per_update
    if updates < 1:
        raise ValueError(f"steps={steps} is below one update's {per_update} env steps")
    config = dataclasses.replace(config, num_updates=updates)
    module.validate(config)
    spec = _spec(module, config, envs.make(env_name), points, seeds, seed, updates, updates)
    devices = devices if spec.num_learners % devices == 0 else 1
    mesh = None
    if devices > 1:
        mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((devices,), ("seeds",)))
    t0 = time.perf_counter()
    states, shardings = population.init_on_mesh(spec, mesh)
    states, metrics = population.chunk_fn(spec, updates, shardings)(states)
    ret = np.asarray(metrics["episode/return"], np.float64)
    cnt = np.asarray(metrics["episode/count"], np.float64)
    jax.block_until_ready(states)
    return {
        "state": states,
        "config": config,
        "ret": ret,
        "cnt": cnt,
        "per_update": per_update,
        "updates": updates,
        "seconds": time.perf_counter() - t0,
    }


def _spec(module, config, env, points, seeds, seed, updates, per_chunk) -> population.Spec:
    hparams = population.grid_hparams(module, points)
    return population.Spec(
        module, config, env, hparams, updates, per_chunk, seeds, seed, grid=tuple(points)
    )


def episode_mean(ret: np.ndarray, cnt: np.ndarray, window: slice) -> np.ndarray:
    """Per agent: mean return of the episodes that ended in ``window`` of updates (``[A]``).

    ``ret[a, u]`` is the mean return of the ``cnt[a, u]`` episodes that ended at update u (NaN
    when none did); agents with no episode in the window get NaN.
    """
    r, c = np.nan_to_num(ret[:, window]), cnt[:, window]
    total = c.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (r * c).sum(1) / np.maximum(total, 1), np.nan)


def final_and_auc(ret: np.ndarray, cnt: np.ndarray, final_frac: float = 0.1) -> dict:
    """Final return (episodes ending in the last ``final_frac`` of updates) and AUC per agent.

    AUC is the mean over 20 equal windows of updates of each window's episode-mean return: the
    normalized area under the learning curve (a window with no finished episode repeats the
    previous window's value, or the first finished one's at the start).
    """
    u = ret.shape[1]
    final = episode_mean(ret, cnt, slice(int((1 - final_frac) * u), None))
    curve, _ = binned_curve(ret, cnt, 20)
    return {"final": final, "auc": curve.mean(1)}


def binned_curve(ret: np.ndarray, cnt: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Episode-mean return in ``bins`` equal windows of updates: ``([A, bins], update ends)``.

    Windows with no finished episode are filled forward (backward at the start), so every entry
    is finite for agents that finish at least one episode.
    """
    chunks = np.array_split(np.arange(ret.shape[1]), bins)
    curve = np.stack([episode_mean(ret, cnt, slice(c[0], c[-1] + 1)) for c in chunks], 1)
    for a in range(curve.shape[0]):
        row = curve[a]
        ok = np.flatnonzero(np.isfinite(row))
        if ok.size == 0:
            continue
        idx = np.maximum.accumulate(np.where(np.isfinite(row), np.arange(len(row)), 0))
        idx[: ok[0]] = ok[0]
        curve[a] = row[idx]
    return curve, np.array([c[-1] + 1 for c in chunks])


def train_arms(programs, agent_config, hparams: dict, args, on_arm=None) -> dict:
    """Trains each ``(module, env_name, {arm: gamma})`` of ``programs`` as one population (the
    arms as grid points of ``hparams`` with their gamma, ``args.seeds`` seeds each).

    ``on_arm(arm, module, config, first_state, env_name)``, if given, is called per arm with the
    state of its first seed. Returns ``{"states": {arm: (module, config, states [S])}, "curves":
    {arm: [S, bins]}, "seconds": {program label: s}}``.
    """
    out = {"states": {}, "curves": {}, "seconds": {}}
    for module, env_name, arms in programs:
        per_update = module.env_steps_per_update(agent_config(module, 1))
        config = agent_config(module, args.steps // per_update)
        points = [dict(hparams, gamma=g) for g in arms.values()]
        res = train_population(module, config, env_name, points, args.seeds, args.steps, args.seed)
        curve, _ = binned_curve(res["ret"], res["cnt"], min(10, res["ret"].shape[1]))
        for i, arm in enumerate(arms):
            rows = slice(i * args.seeds, (i + 1) * args.seeds)
            out["states"][arm] = (
                module,
                res["config"],
                jax.tree.map(lambda x, r=rows: x[r], res["state"]),
            )
            out["curves"][arm] = curve[rows].tolist()
            if on_arm is not None:
                first = jax.tree.map(lambda x, j=i * args.seeds: x[j], res["state"])
                on_arm(arm, module, res["config"], first, env_name)
        label = "+".join(arms)
        out["seconds"][label] = res["seconds"]
        print(f"trained {label} ({module.__name__.rsplit('.', 1)[-1]}, {env_name}): "
              f"{res['seconds']:.0f} s; last-tenth lifetime return "
              + ", ".join(f"{a} {np.mean(out['curves'][a], 0)[-1]:.2f}" for a in arms),
              flush=True)  # fmt: skip
    return out


# ---- the meta-RL studies (emergent exploration on bandits and gridworlds) --------------------


def meta_rl_spec(programs, agent_config, defaults: dict, quick: dict) -> dict:
    """The ``rljax.train.study.Study`` fields the meta-RL studies share: seeds, env steps per
    agent and ``--eval-tasks`` (new lifetimes for the test), flags left at 0 taking ``defaults``
    (or ``quick``); every program's static config is checked before anything compiles."""
    per_update = programs[0][0].env_steps_per_update(agent_config(programs[0][0], 1))

    def check(args):
        for module, _, _ in programs:
            module.validate(agent_config(module, max(1, args.steps // per_update)))

    def flags(p):
        p.add_argument("--eval-tasks", type=int, default=0, help="new lifetimes for the test")

    return dict(seeds=0, steps=0, defaults=defaults, quick=quick, flags=flags, check=check,
                low={"seeds": 3, "steps": per_update, "eval-tasks": 1})  # fmt: skip


def pretrain(train, state, evals: int, what: str, t0: float, *data) -> tuple:
    """``evals`` chunks of ``train(*data, state) -> (state, metrics)`` (the in-context studies'
    pretraining); returns the state and the seed-mean ``metrics["accuracy/last"]`` after each
    chunk, printed as ``what`` with the seconds since ``t0``."""
    curve = []
    for c in range(evals):
        state, metrics = train(*data, state)
        curve.append(float(np.mean(metrics["accuracy/last"])))
        print(f"chunk {c + 1}/{evals}: {what} {curve[-1]:.2f}, {time.perf_counter() - t0:.0f} s",
              flush=True)  # fmt: skip
    return state, curve


def log_evaluated(t0: float, what: str, values: dict) -> None:
    """The progress line after an evaluation: seconds since ``t0``, then ``what`` per arm."""
    shown = ", ".join(f"{k} {float(v):.2f}" for k, v in values.items())
    print(f"evaluated: {time.perf_counter() - t0:.0f} s; {what} {shown}", flush=True)


def seed_keys(seed: int, seeds: int) -> jax.Array:
    """``[seeds]`` evaluation keys, one per seed of the set: fold_in(fold_in(key(seed), 1), s)."""
    root = jax.random.fold_in(jax.random.PRNGKey(seed), 1)
    return jax.vmap(lambda s: jax.random.fold_in(root, s))(jax.numpy.arange(seeds))


def part(comparison: dict, rule) -> dict:
    """One part of a claim: a comparison (``diff``, ``diff_ci``) and its status by ``rule``."""
    return {**comparison, "status": rule(comparison["diff_ci"])}


def claims_of_parts(parts: dict, margin: float) -> dict:
    """``{claim: {"status", "per_arm", "margin"}}`` from ``{claim: {part name: part}}``: a claim
    holds when every part does (``verdicts.over_arms``)."""
    return {
        name: {"status": verdicts.over_arms(p["status"] for p in ps.values()), "per_arm": ps,
               "margin": margin}
        for name, ps in parts.items()
    }  # fmt: skip


def parts_text(claims: dict, texts: dict) -> tuple[str, list[str]]:
    """(the verdict's reason, results.md's bullets) of ``claims_of_parts``'s claims."""
    iv = lambda c: study.diff_text(c["diff"], c["diff_ci"])  # noqa: E731
    reason = "; ".join(
        f"{k}: {c['status']} (" + ", ".join(f"{p} {iv(d)}" for p, d in c["per_arm"].items()) + ")"
        for k, c in claims.items()
    )
    bullets = [
        f"* {texts[k]}: **{c['status']}**; "
        + ", ".join(f"{p} {iv(d)} ({d['status']})" for p, d in c["per_arm"].items())
        for k, c in claims.items()
    ]
    return reason, bullets
