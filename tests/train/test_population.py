"""rljax.train.population: every learner module (and a new one) trains through the one pipeline;
the per-chunk evaluation hook; grid points share their seeds' keys (a member equals its solo
run); the key rule keeps evaluation keys off every training key."""

import dataclasses
import importlib
import sys
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import agents, envs, offline_data
from rljax.agents import learner, offline, ppo
from rljax.io.metrics import MetricsWriter
from rljax.train import population

CARTPOLE = envs.make("CartPole-v1")


def _bandit(n=256) -> offline_data.Dataset:
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    action = rng.integers(0, 2, n)
    reward = (action == (obs[:, 0] > 0)).astype(np.float32)
    return offline_data.Dataset(
        obs=jnp.asarray(obs), action=jnp.asarray(action, jnp.int32),
        reward=jnp.asarray(reward), next_obs=jnp.asarray(obs), terminated=jnp.ones(n),
        episode_return=jnp.asarray(reward), cdf=jnp.arange(1, n + 1) / n,
    )  # fmt: skip


def _spec(name: str) -> population.Spec:
    """A two-grid-point, two-seed population of learner `name`, two chunks of two updates."""
    if name == "offline":
        config = offline.Config(algo="cql", num_actions=2, batch_size=16, hidden=(8,))
        env, points = (
            _bandit(),
            [
                dict(lr=3e-3, gamma=0.9, cql_alpha=a, bcq_threshold=0.3, crr_beta=1.0)
                for a in (0.1, 1.0)
            ],
        )
    else:
        env = CARTPOLE
        config = ppo.Config(num_envs=2, num_steps=8, num_epochs=1, num_minibatches=2, hidden=(8,))
        defaults = importlib.import_module(f"configs.{name}").get_config().hparams.to_dict()
        points = [{**defaults, "lr": lr} for lr in (1e-3, 3e-4)]
    config = dataclasses.replace(config, num_updates=4)
    module = sys.modules[f"rljax.agents.{name}"]
    points = [{k: p[k] for k in module.Hparams._fields} for p in points]
    return population.Spec(
        module, config, env, population.grid_hparams(module, points), 4, 2, num_seeds=2,
        grid=tuple(points),
    )  # fmt: skip


def _steps_seen(states, key):
    """An evaluation that reads the states and the key: each learner's step count, and a key
    draw (the same for all learners: the evaluation key is shared)."""
    draw = jax.random.uniform(key)
    return {"step": states.step.astype(jnp.float32), "draw": jnp.full(states.step.shape, draw)}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["ppo", "offline"])  # every module: tests/agents/test_contract
def test_populations_train_through_the_pipeline(name, tmp_path):
    spec = dataclasses.replace(_spec(name), evaluate=_steps_seen)
    module: agents.Learner = spec.learner
    module.validate(spec.config)
    result = population.run(
        spec, workdir=str(tmp_path), title=name, checkpoint_every=1, resume=False,
        progress=False, count_key=None,
        score_key="loss/total" if name == "offline" else "episode/return",
    )  # fmt: skip
    assert result.summary.updates_done == 4 and result.eval_updates == (2, 4)
    np.testing.assert_array_equal(result.evaluations["step"], [[2, 4]] * 4)
    root = learner.eval_key(spec.seed)
    want = [float(jax.random.uniform(jax.random.fold_in(root, u))) for u in (2, 4)]
    np.testing.assert_allclose(result.evaluations["draw"], [want] * 4)
    leaves = jax.tree.leaves(result.states.params)
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in leaves)
    start = jax.tree.leaves(population.init(spec).params)
    assert any(not np.allclose(a, b) for a, b in zip(leaves, start, strict=True))  # trained


def _toy_update(config, env, state):
    """A learner added without touching the pipeline: x ← x − lr·(x − target) + noise."""
    noise = config.noise * jax.random.normal(jax.random.fold_in(state.key, state.step))
    x = state.params - state.hparams.lr * (state.params - env) + noise
    new = state._replace(params=x, step=state.step + 1)
    return new, {"loss/total": (x - env) ** 2, "episode/return": -((x - env) ** 2)}


@dataclasses.dataclass(frozen=True)
class _ToyConfig:
    noise: float = 0.1


def _toy_module():
    from typing import NamedTuple

    class Hparams(NamedTuple):
        lr: jax.Array

    class State(NamedTuple):
        params: jax.Array
        key: jax.Array
        step: jax.Array
        hparams: Hparams

    toy = types.ModuleType("toy")
    toy.Config, toy.Hparams, toy.State = _ToyConfig, Hparams, State
    toy.HPARAM_RULES = {"lr": (lambda v: 0 < v <= 1, "in (0, 1]")}
    toy.validate = lambda config: None
    toy.env_steps_per_update = lambda config: 1
    toy.init = lambda config, env, key, hparams: State(
        jnp.zeros(()), key, jnp.zeros((), int), hparams
    )
    toy.act = lambda config, env, state, obs, key, greedy=False: state.params
    toy.evaluate = lambda config, env, state, key: {"params": state.params}
    toy.update = _toy_update
    toy.train_chunk = lambda config, env, state, num_updates: learner.train_chunk(
        _toy_update, config, env, state, num_updates
    )
    return toy


def test_a_new_learner_module_plugs_in_and_its_grid_shares_seed_keys(tmp_path):
    """A module with the contract's members runs as is; its members equal their solo runs:
    grid point g, seed s starts from learner_key(seed, s) whatever the grid."""
    toy = _toy_module()
    for member in agents.MEMBERS:
        assert hasattr(toy, member), member
    points = [{"lr": 0.1}, {"lr": 0.5}]
    spec = population.Spec(
        toy, _ToyConfig(), jnp.asarray(3.0), population.grid_hparams(toy, points), 6, 3,
        num_seeds=3, seed=11, grid=tuple(points),
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"hparams.lr=2.0 is invalid; allowed: in \(0, 1\]"):
        population.check_grid(toy, [{"lr": 2.0}])
    opts = dict(title="toy", checkpoint_every=1, resume=False, progress=False, count_key=None)
    kept = dataclasses.replace(spec, keep_metrics=True)
    pop = population.run(kept, workdir=str(tmp_path / "pop"), **opts)
    assert pop.metrics["loss/total"].shape == (6, 6)  # every learner's every update, in memory
    rows = MetricsWriter(str(tmp_path / "pop")).read()  # what the loop wrote: grid-point means
    written = [[r["loss/total"] for r in rows if r["grid"] == g] for g in range(2)]
    in_memory = pop.metrics["loss/total"].reshape(2, 3, 6).mean(1)
    np.testing.assert_allclose(in_memory, written, rtol=1e-6)
    for g, point in enumerate(points):
        solo_spec = dataclasses.replace(
            spec, hparams=population.grid_hparams(toy, [point]), grid=(point,)
        )
        solo = population.run(solo_spec, workdir=str(tmp_path / f"solo{g}"), **opts)
        chex.assert_trees_all_equal(pop.states.params[g * 3 : g * 3 + 3], solo.states.params)
    assert len(set(np.asarray(pop.states.params).round(6).tolist())) == 6  # noise differs


def test_evaluation_keys_are_never_training_keys():
    """Over many seeds, learners and steps: no learner root key, no per-step key derived from
    one, equals an evaluation key (of any seed, at any evaluation index)."""
    seeds, learners, steps = range(0, 40), range(0, 8), range(0, 6)
    as_int = lambda k: tuple(np.asarray(jax.random.key_data(k)).ravel().tolist())  # noqa: E731
    train, evals = set(), set()
    for seed in seeds:
        for s in learners:
            root = learner.learner_key(seed, s)
            train.add(as_int(root))
            train.update(as_int(jax.random.fold_in(root, t)) for t in steps)
        root = learner.eval_key(seed)
        evals.add(as_int(root))
        evals.update(as_int(jax.random.fold_in(root, t)) for t in steps)
    assert len(train) == len(seeds) * len(learners) * (1 + len(steps))
    assert len(evals) == len(seeds) * (1 + len(steps))
    assert not train & evals
