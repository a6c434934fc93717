"""Host loop: SIGTERM writes a checkpoint, resume reproduces an uninterrupted run, NaN stops."""

import dataclasses
import os
import signal

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import envs
from rljax.agents import ppo
from rljax.io import checkpoints
from rljax.io.metrics import MetricsWriter
from rljax.train import experiment, loop

TINY = ppo.Config(
    num_envs=4, num_steps=16, num_epochs=1, num_minibatches=2, hidden=(16,), num_updates=8
)
HPARAMS = tuple(zip(ppo.Hparams._fields, (3e-4, 0.2, 0.01, 0.5, 0.99, 0.95), strict=True))


def _setup(workdir, resume=False):
    run = experiment.RunConfig(
        env_name="CartPole-v1",
        workdir=str(workdir),
        num_seeds=2,
        total_timesteps=8 * 64,
        chunk_updates=2,
        checkpoint_every=1,
        resume=resume,
        progress=False,
        hparams=HPARAMS,
    )
    points = experiment.validate_run(run, ppo, TINY)
    env = envs.make("CartPole-v1")
    states = experiment.init_population(ppo, TINY, env, run, points)
    cfg = loop.LoopConfig(
        workdir=run.workdir,
        title="test",
        num_updates=8,
        chunk_updates=2,
        checkpoint_every=1,
        env_steps_per_update=64,
        num_seeds=2,
        grid=tuple(points),
        resume=resume,
        progress=False,
    )
    return cfg, states, experiment.make_chunk_fn(ppo, TINY, env, 2)


class _SignalAfter:
    """Wraps a chunk function and sends SIGTERM to this process after ``n`` calls."""

    def __init__(self, fn, n):
        self.fn, self.n, self.calls = fn, n, 0

    def __call__(self, states):
        self.calls += 1
        out = self.fn(states)
        if self.calls == self.n:
            os.kill(os.getpid(), signal.SIGTERM)
        return out


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_sigterm_checkpoints_and_resume_matches_uninterrupted_run(tmp_path):
    cfg, states, chunk = _setup(tmp_path / "straight")
    full_states, full = loop.run(cfg, states, chunk)
    assert full.updates_done == 8 and not full.interrupted

    cfg, states, chunk = _setup(tmp_path / "killed")
    _, part = loop.run(cfg, states, _SignalAfter(chunk, 2))
    assert part.interrupted and part.updates_done == 4
    assert checkpoints.Checkpointer(str(tmp_path / "killed" / "checkpoints")).latest_step() == 4

    cfg, states, chunk = _setup(tmp_path / "killed", resume=True)
    resumed_states, resumed = loop.run(cfg, states, chunk)
    assert resumed.updates_done == 8
    chex.assert_trees_all_equal(resumed_states.params, full_states.params)
    chex.assert_trees_all_equal(resumed_states.opt_state, full_states.opt_state)
    rows_full = MetricsWriter(str(tmp_path / "straight")).read()
    rows_resumed = MetricsWriter(str(tmp_path / "killed")).read()
    assert len(rows_full) == 8 and rows_full == rows_resumed
    np.testing.assert_array_equal(resumed.final_score, full.final_score)
    for name in ("metrics.csv", "curves.png", "summary.json"):
        assert (tmp_path / "killed" / name).exists()


def test_fresh_run_moves_an_old_workdir_aside(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "old.txt").write_text("keep me")
    cfg, states, chunk = _setup(tmp_path / "run")
    loop.run(dataclasses.replace(cfg, num_updates=2), states, chunk)
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("run-prev-")]
    assert len(moved) == 1 and (moved[0] / "old.txt").read_text() == "keep me"


def test_nan_loss_stops_with_message_and_keeps_last_good_checkpoint(tmp_path):
    cfg, states, chunk = _setup(tmp_path)
    calls = {"n": 0}

    def poisoned(s):
        calls["n"] += 1
        s, m = chunk(s)
        if calls["n"] == 3:
            m = {**m, "loss/value": m["loss/value"].at[1, 0].set(jnp.nan)}
        return s, m

    with pytest.raises(
        loop.NonFiniteLossError,
        match=r"loss/value became nan for learner 1 \(grid point 0: no sweep; seed 1\)",
    ):
        loop.run(cfg, states, poisoned)
    assert checkpoints.Checkpointer(str(tmp_path / "checkpoints")).latest_step() == 4


def test_chunk_size_is_a_divisor():
    assert loop.chunk_size(976, 0) == 61
    assert loop.chunk_size(976, 50) == 16
    assert loop.chunk_size(7, 3) == 1
    assert 976 % loop.chunk_size(976, 100) == 0


def test_run_validation_errors_before_compiling(tmp_path):
    base = experiment.RunConfig(env_name="CartPole-v1", workdir=str(tmp_path), hparams=HPARAMS)
    cases = {
        "env_name='Pong'.*valid: CartPole-v1": dict(env_name="Pong"),
        r"hparams.lr=0.0 is invalid; allowed: > 0": dict(hparams=(("lr", 0.0), *HPARAMS[1:])),
        r"hparams.gamma=1.5 .*in \[0, 1\]": dict(
            hparams=(*HPARAMS[:4], ("gamma", 1.5), HPARAMS[5])
        ),
        r"total_timesteps=-5 is invalid; allowed: an integer >= 1": dict(total_timesteps=-5),
        r"num_seeds=0": dict(num_seeds=0),
        r"sweep.lr='1e-4,fast' is not a comma-separated list": dict(sweep=(("lr", "1e-4,fast"),)),
        r"hparams.lr=-0.001": dict(sweep=(("lr", "1e-4,-1e-3"),)),
    }
    for pattern, change in cases.items():
        with pytest.raises(ValueError, match=pattern):
            experiment.validate_run(dataclasses.replace(base, **change), ppo, ppo.Config())


def test_chunk_fn_compiles_once_across_chunks(tmp_path):
    _, states, _ = _setup(tmp_path)
    env = envs.make("CartPole-v1")

    @chex.assert_max_traces(n=1)
    def chunk(state):
        return ppo.train_chunk(TINY, env, state, num_updates=2)

    fn = jax.jit(jax.vmap(chunk))
    for _ in range(3):
        states, _ = fn(states)
