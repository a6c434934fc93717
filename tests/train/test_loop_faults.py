"""Host-loop faults: NaN stops write honest outputs, corrupted checkpoints fall back, divergence
is a warning, signals set the exit code; the config fingerprint refuses changed resumes."""

import json
import os
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import cli, envs
from rljax.agents import ppo
from rljax.io import checkpoints, fingerprint
from rljax.train import experiment, loop, records

TINY = ppo.Config(
    num_envs=4, num_steps=16, num_epochs=1, num_minibatches=2, hidden=(16,), num_updates=8
)
HPARAMS = tuple(zip(ppo.Hparams._fields, (3e-4, 0.2, 0.01, 0.5, 0.99, 0.95), strict=True))


_CACHE = {}


def _setup(workdir, resume=False):
    """Loop config, fresh initial states and the chunk function, compiled once per module."""
    if not _CACHE:
        run = experiment.RunConfig(
            env_name="CartPole-v1",
            workdir=str(workdir),
            num_seeds=2,
            total_timesteps=8 * 64,
            chunk_updates=2,
            progress=False,
            hparams=HPARAMS,
        )
        points = experiment.validate_run(run, ppo, TINY)
        env = envs.make("CartPole-v1")
        states = experiment.init_population(ppo, TINY, env, run, points)
        fn = experiment.make_chunk_fn(ppo, TINY, env, 2)
        _CACHE.update(points=points, states=states, compiled=fn.lower(states).compile())
    cfg = loop.LoopConfig(
        workdir=str(workdir),
        title="test",
        num_updates=8,
        chunk_updates=2,
        checkpoint_every=1,
        env_steps_per_update=64,
        num_seeds=2,
        grid=tuple(_CACHE["points"]),
        resume=resume,
        progress=False,
        fingerprint={"seed": 0, "total_timesteps": 512},
    )
    states = jax.tree.map(jnp.copy, _CACHE["states"])  # the chunk donates its input
    compiled = _CACHE["compiled"]
    return cfg, states, lambda s: compiled(s)


def _poisoned(chunk, at_call, edit):
    calls = {"n": 0}

    def fn(states):
        calls["n"] += 1
        states, metrics = chunk(states)
        if calls["n"] >= at_call:
            metrics = {**metrics, "loss/value": edit(metrics["loss/value"])}
        return states, metrics

    return fn


@pytest.mark.slow  # over ~12 s on the 2-core CPU
@pytest.mark.parametrize("at_call, last_checkpoint", [(3, 4), (1, None)])
def test_nan_stop_writes_outputs_and_claims_only_real_checkpoints(
    tmp_path, at_call, last_checkpoint
):
    cfg, states, chunk = _setup(tmp_path)
    bad = _poisoned(chunk, at_call, lambda v: v.at[1, 0].set(jnp.nan))
    with pytest.raises(loop.NonFiniteLossError) as info:
        loop.run(cfg, states, bad)
    message = str(info.value)
    if last_checkpoint is None:
        assert "no checkpoint was written" in message
        assert checkpoints.latest_step(str(tmp_path / "checkpoints")) is None
    else:
        assert f"the last good checkpoint is update {last_checkpoint}" in message
        assert checkpoints.latest_step(str(tmp_path / "checkpoints")) == last_checkpoint
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "nonfinite" and summary["last_checkpoint"] == last_checkpoint
    assert (
        "loss/value became nan for learner 1 (grid point 0: no sweep; seed 1)" in summary["error"]
    )
    assert (tmp_path / "metrics.csv").read_text().count("\n") == 1 + 2 * at_call  # header + rows
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert json.loads((tmp_path / "config.json").read_text()) == {"seed": 0, "total_timesteps": 512}


def test_divergence_without_nan_is_a_warning_in_the_summary(tmp_path):
    cfg, states, chunk = _setup(tmp_path)
    exploding = _poisoned(chunk, 3, lambda v: v * 1e7)
    _, summary = loop.run(cfg, states, exploding)
    assert summary.updates_done == 8 and not summary.interrupted
    assert len(summary.warnings) == 1 and "loss/value diverged" in summary.warnings[0]
    assert "warning: loss/value diverged" in summary.line("t")
    assert json.loads((tmp_path / "summary.json").read_text())["warnings"] == list(summary.warnings)


def test_corrupted_latest_checkpoint_falls_back_with_one_warning(tmp_path, capsys):
    cfg, states, chunk = _setup(tmp_path)
    _, first = loop.run(cfg, states, _signal_after(chunk, 3))
    assert first.interrupted and first.stop_signal == signal.SIGTERM
    assert cli.exit_code(first.stop_signal) == 128 + signal.SIGTERM
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "interrupted"
    ckpt_dir = tmp_path / "checkpoints"
    assert checkpoints.latest_step(str(ckpt_dir)) == 6
    for root, _, files in os.walk(ckpt_dir / "6"):  # truncate every file of the newest step
        for name in files:
            open(os.path.join(root, name), "w").close()
    capsys.readouterr()
    cfg, states, chunk = _setup(tmp_path, resume=True)
    _, resumed = loop.run(cfg, states, chunk)
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "checkpoint at update 6" in warnings[0]
    assert "falling back to update 4" in warnings[0]
    assert "resumed from update 4" in out
    assert resumed.updates_done == 8 and not resumed.interrupted
    assert checkpoints.latest_step(str(ckpt_dir)) == 8 and (ckpt_dir / "6.unreadable").is_dir()


def _signal_after(fn, n):
    calls = {"n": 0}

    def wrapped(states):
        calls["n"] += 1
        out = fn(states)
        if calls["n"] == n:
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    return wrapped


# ---- the config fingerprint (no jax needed) --------------------------------------------------

MUTABLE = ("total_timesteps", "progress")
CONFIG = {"seed": 0, "hparams.lr": 3e-4, "ppo.hidden": (64, 64), "total_timesteps": 1000}


def _workdir_with_checkpoint(tmp_path, step, config=CONFIG):
    (tmp_path / "checkpoints" / str(step)).mkdir(parents=True)
    fingerprint.save(str(tmp_path), config)
    return str(tmp_path)


def test_resume_with_changed_fields_lists_every_change(tmp_path):
    workdir = _workdir_with_checkpoint(tmp_path, 4)
    changed = {**CONFIG, "hparams.lr": 5e-4, "ppo.hidden": (32,), "extra": 1}
    with pytest.raises(fingerprint.ConfigChangedError) as info:
        fingerprint.resume_point(workdir, changed, mutable=MUTABLE, num_updates=10, resume=True)
    message = str(info.value)
    assert "\n" not in message and "3 field(s)" in message
    assert "hparams.lr: 0.0003 -> 0.0005" in message and "ppo.hidden: [64, 64] -> [32]" in message
    assert 'extra: "<absent>" -> 1' in message
    assert "Fields that may change on resume: progress, total_timesteps" in message


def test_resume_points(tmp_path):
    logs = []
    kw = dict(mutable=MUTABLE, resume=True, log=logs.append)
    workdir = _workdir_with_checkpoint(tmp_path / "a", 4)
    assert fingerprint.resume_point(workdir, CONFIG, num_updates=10, **kw) == 4
    grown = {**CONFIG, "total_timesteps": 5000, "progress": False}
    assert fingerprint.resume_point(workdir, grown, num_updates=50, **kw) == 4  # extends
    assert "total_timesteps: 1000 -> 5000" in logs[-1]
    assert fingerprint.resume_point(workdir, CONFIG, num_updates=4, **kw) == 4  # finished
    assert logs[-1].endswith("already finished (4 updates); nothing to do")
    with pytest.raises(ValueError, match="beyond the new budget of 3 updates"):
        fingerprint.resume_point(workdir, CONFIG, num_updates=3, **kw)
    empty = str(tmp_path / "empty")
    assert fingerprint.resume_point(empty, CONFIG, num_updates=10, **kw) is None
    assert "holds no checkpoint; starting a fresh run" in logs[-1]
    assert fingerprint.resume_point(workdir, {}, num_updates=10, **{**kw, "resume": False}) is None


def test_fingerprint_is_stable_for_functions_and_nan(tmp_path):
    config = {"fn": np.mean, "nan": float("nan"), "np": np.float32(0.5), "t": (1, 2)}
    fingerprint.save(str(tmp_path), config)
    assert fingerprint.changes(fingerprint.load(str(tmp_path)), config) == []


def test_divergence_watch_rules_on_synthetic_metrics():
    nan = np.nan
    watch = records.DivergenceWatch()
    calm = {
        "episode/return": np.array([[nan, 20.0], [15.0, nan]]),
        "loss/value": np.array([[50.0, 40.0], [60.0, 30.0]]),  # RMS ~10, returns ~20: fine
        "loss/policy": np.array([[0.1, -0.1], [0.0, 0.2]]),
    }
    watch.update(calm, 0)
    watch.update(calm, 2)
    assert watch.found == {}
    first = records.DivergenceWatch()  # blown up within the first update (CartPole, lr 1e3)
    first.update({**calm, "loss/value": np.array([[50.0, 40.0], [3e8, 2e8]])}, 0)
    assert "loss/value diverged for learner 1: RMS value error" in first.found["loss/value"]
    grown = {**calm, "loss/policy": np.array([[1e4, 1e4], [0.0, 0.2]])}  # 1e5-fold growth
    watch.update(grown, 6)
    assert "loss/policy diverged for learner 0" in watch.found["loss/policy"]
