"""LM populations: a member equals its single-learner run; a killed run resumes to the same
numbers; a NaN in one learner stops the run naming it; config errors fail before compiling."""

import dataclasses
import os
import signal

import chex
import jax
import numpy as np
import pytest

from configs import grpo as grpo_config
from rljax.agents.grpo import presets
from rljax.io.metrics import MetricsWriter
from rljax.train import lm_experiment, loop, population

STEPS = 10


def _config(tmp, name, **changes):
    c = grpo_config.get_config("equation,tiny")
    c.data_dir = str(tmp / "data")
    c.base_cache_dir = str(tmp / "base")
    c.sft.steps = 150  # a base that is right sometimes, so rewards vary within groups
    c.run.steps, c.run.chunk_steps = STEPS, 5  # two chunks
    c.run.format_weight = 0.5
    c.run.eval_problems = 16
    c.eval.num_problems, c.eval.num_samples = 8, 2
    c.progress = False
    for key, value in changes.items():
        node = c
        *path, leaf = key.split(".")
        for p in path:
            node = node[p]
        node[leaf] = value
    return lm_experiment.from_config(c, str(tmp / name))


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("lm")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_population_member_equals_single_learner_run(tmp):
    """grpo and rloo alone vs inside a population with dapo and dph_js: the population draws 2x
    the groups (dynamic sampling), base samples (JS), 2 epochs and 2 minibatches for all; rloo
    accumulates two micro-batches per step and skips the second epoch."""
    pop_cfg = _config(tmp, "pop", **{"sweep.preset": "grpo,rloo,dapo,dph_js"})
    pop_states, _, _ = lm_experiment.run(pop_cfg)
    pop_rows = MetricsWriter(pop_cfg.workdir).read()
    moved = 0.0
    for index, preset in enumerate(("grpo", "rloo")):
        cfg = _config(tmp, preset, preset=preset)
        states, _, _ = lm_experiment.run(cfg)
        rows = MetricsWriter(cfg.workdir).read()
        member = [r for r in pop_rows if r["grid"] == index]
        assert len(rows) == len(member) == STEPS
        for want, got in zip(rows, member, strict=True):
            for key in ("reward/mean", "correct/mean", "loss/total", "grad_norm", "entropy"):
                np.testing.assert_allclose(got[key], want[key], rtol=2e-4, atol=1e-6, err_msg=key)
        single = jax.tree.map(lambda x: np.asarray(x)[0], jax.device_get(states.params))
        pop = jax.tree.map(lambda x, i=index: np.asarray(x)[i], jax.device_get(pop_states.params))
        # Parameters within 10x the learner's float floor (scripts/check_preset_equality.py's
        # rule): the learner alone again, started one float32 ulp up. 10 steps of Adam turn
        # rounding into moves of near-zero-gradient entries (grpo: member 5.6e-5, floor 8.5e-5;
        # 2-core AMD EPYC, slow-tier XLA flags, 2026-11-28).
        nudged, _ = _train(_config(tmp, preset + "_nudged", preset=preset), nudge=True)
        floor = _gap(jax.tree.map(lambda x: np.asarray(x)[0], nudged.params), single)
        assert 0 < floor and _gap(pop, single) <= max(10 * floor, 2e-5), (preset, floor)
        moved += sum(r["grad_norm"] for r in rows)
        assert len({r["reward/mean"] for r in rows}) > 1  # rewards that vary: a real run
    assert moved > 0


class _SignalAfter:
    def __init__(self, fn, n):
        self.fn, self.n, self.calls = fn, n, 0  # no .lower: the loop calls this wrapper

    def __call__(self, *args):
        self.calls += 1
        out = self.fn(*args)
        if self.calls == self.n:
            os.kill(os.getpid(), signal.SIGTERM)
        return out


def _gap(a, b) -> float:
    """The largest entry-wise difference of two parameter trees."""
    return max(jax.tree.leaves(jax.tree.map(lambda x, y: float(np.max(np.abs(x - y))), a, b)))


def _train(cfg, wrap=None, nudge=False):
    """`cfg`'s population through the host loop; `nudge`: every starting parameter one float32
    ulp up (one rounding of the start: the learner's float floor)."""
    points = lm_experiment.validate(cfg)
    agent_cfg, data, hparams, _, _, _ = lm_experiment.build(cfg, points)
    spec = lm_experiment.spec(cfg, agent_cfg, data, hparams, points)
    states, chunk = population.init(spec), population.chunk_fn(spec, cfg.chunk_steps)
    if nudge:
        states = states._replace(
            params=jax.tree.map(lambda x: jax.numpy.nextafter(x, jax.numpy.inf), states.params)
        )
    loop_cfg = loop.LoopConfig(
        workdir=cfg.workdir, title="t", num_updates=cfg.steps, chunk_updates=cfg.chunk_steps,
        checkpoint_every=1, env_steps_per_update=1, num_seeds=cfg.num_seeds, grid=tuple(points),
        resume=cfg.resume, progress=False, score_key="eval/pass@1", count_key=None,
        rows_per_learner=True,
    )  # fmt: skip
    return loop.run(loop_cfg, states, wrap(chunk) if wrap else chunk, data)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_killed_population_resumes_to_identical_metrics(tmp):
    changes = {"sweep.preset": "grpo,dapo", "num_seeds": 2, "run.steps": 6, "run.chunk_steps": 2}
    full_states, full = _train(_config(tmp, "straight", **changes))
    _, part = _train(_config(tmp, "killed", **changes), wrap=lambda f: _SignalAfter(f, 2))
    assert part.interrupted and part.updates_done == 4
    resumed_states, resumed = _train(_config(tmp, "killed", resume=True, **changes))
    assert resumed.updates_done == 6
    chex.assert_trees_all_equal(resumed_states.params, full_states.params)
    rows_full = MetricsWriter(str(tmp / "straight")).read()
    assert len(rows_full) == 6 * 4 and rows_full == MetricsWriter(str(tmp / "killed")).read()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_nan_in_one_learner_stops_the_run_naming_it(tmp):
    cfg = _config(tmp, "nan", **{"sweep.learning_rate": "1e-4,3e-4", "run.steps": 2,
                                 "run.chunk_steps": 2})  # fmt: skip
    points = lm_experiment.validate(cfg)
    agent_cfg, data, hparams, _, _, _ = lm_experiment.build(cfg, points)
    spec = lm_experiment.spec(cfg, agent_cfg, data, hparams, points)
    states = population.init(spec)
    bad = states.hparams._replace(learning_rate=states.hparams.learning_rate.at[1].set(np.nan))
    states = states._replace(hparams=bad)
    loop_cfg = loop.LoopConfig(
        workdir=cfg.workdir, title="t", num_updates=2, chunk_updates=2, checkpoint_every=1,
        env_steps_per_update=1, num_seeds=1, grid=tuple(points), resume=False, progress=False,
        score_key="eval/pass@1", count_key=None, rows_per_learner=True,
    )  # fmt: skip
    chunk = population.chunk_fn(spec, 2)
    with pytest.raises(loop.NonFiniteLossError, match=r"learner 1 \(grid point 1: learning_rate"):
        loop.run(loop_cfg, states, chunk, data)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"task": "algebra"}, "task='algebra' is unknown; valid: arithmetic"),
        ({"sweep.preset": "grpo,ppo9"}, "preset='ppo9' is unknown; valid: grpo"),
        ({"sweep.aggregation": "token_mean,mean"}, "rl.aggregation='mean' is unknown"),
        ({"sweep.eps_high": "0.2,x"}, "sweep.eps_high='0.2,x' is not a comma-separated list"),
        ({"rl.eps_low": -0.1}, "rl.eps_low=-0.1 is invalid"),
        ({"run.steps": 7}, "chunk_steps=5 does not divide steps=7"),
        ({"num_seeds": 0}, "num_seeds=0 is invalid"),
        ({"run.group_size": 1}, "group_size=1 is invalid"),
        ({"run.prompts_per_step": 3}, "prompts_per_step=3 is not divisible"),
        ({"max_level": 9}, "max_level=9 is invalid; allowed: 0..3"),
    ],
)
def test_bad_config_fails_before_anything_is_built(tmp, changes, message):
    cfg = _config(tmp, "bad", **changes)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lm_experiment.validate(cfg)
    assert not os.path.exists(cfg.workdir)


def test_default_workdir_names_the_first_swept_preset(tmp):
    c = grpo_config.get_config("arithmetic,tiny")
    c.sweep.preset = "dapo,grpo"
    assert lm_experiment.from_config(c).workdir == os.path.join("runs", "lm_arithmetic_dapo")
    assert dataclasses.replace(lm_experiment.from_config(c), num_seeds=3).num_seeds == 3


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_entry_point_trains_a_sharded_population(tmp):
    """experiments/train_lm.py as a user runs it: 2 learners sharded over 2 CPU devices."""
    import subprocess
    import sys

    out = tmp / "entry"
    cmd = [
        sys.executable, "experiments/train_lm.py", "--config=configs/grpo.py:equation,tiny",
        f"--workdir={out}", "--cpu_devices=2", "--config.num_seeds=2",
        f"--config.data_dir={tmp / 'data'}", f"--config.base_cache_dir={tmp / 'base'}",
        "--config.run.steps=2", "--config.progress=False",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=560)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| default |" in done.stdout and "2 seeds x 1 grid point" in done.stdout
    for name in ("results.md", "results.json", "metrics.csv", "curves.png", "pass_at_k.png"):
        assert (out / name).exists(), name
    bad = subprocess.run(cmd[:3] + ["--config.sweep.preset=grpo,nope"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    valid = ", ".join(presets.PRESETS)
    assert bad.stderr.strip().endswith(f"preset='nope' is unknown; valid: {valid}")


def test_an_error_while_building_gives_the_workdir_lock_back(tmp, monkeypatch):
    from rljax.io import workdir_lock

    cfg = _config(tmp, "broken")

    def broken_build(*args):
        assert workdir_lock.held(cfg.workdir)  # taken before anything is built
        raise ValueError("a data file is unreadable")

    monkeypatch.setattr(lm_experiment, "build", broken_build)
    with pytest.raises(ValueError, match="unreadable"):
        lm_experiment.train(cfg)
    assert not workdir_lock.held(cfg.workdir)
