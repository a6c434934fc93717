"""SFT trace mixture, noise, base-model cache; SFT in the host loop, resumed after a kill."""

import os
import signal

import chex
import jax
import numpy as np
import pytest

from rljax.agents import sft
from rljax.io.metrics import MetricsWriter
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.tasks import TASKS, make_split
from rljax.train import lm_base


def test_direct_and_corrupt():
    assert sft.direct("3+8=11") == "11" and sft.direct("42") == "42"
    rng = np.random.default_rng(0)
    for answer in ["3+8=11", "-14", "abcde", "(12+3)*4"]:
        noisy = sft.corrupt(answer, rng)
        assert len(noisy) == len(answer) and noisy != answer
        diff = [i for i, (a, b) in enumerate(zip(answer, noisy, strict=True)) if a != b]
        assert len(diff) == 1 and answer[diff[0]].isdigit() == noisy[diff[0]].isdigit()
    assert sft.corrupt("+-", rng) == "+-"  # nothing to corrupt


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="direct_noise=1.5"):
        sft.SFTConfig(direct_noise=1.5)
    with pytest.raises(ValueError, match="steps=0"):
        sft.SFTConfig(steps=0)
    with pytest.raises(ValueError, match="warmup_steps=5 with steps=5"):
        sft.SFTConfig(steps=5, warmup_steps=5)  # no decay step left: optax would fail later


@pytest.mark.slow  # over ~12 s on the 2-core CPU
@pytest.mark.timeout(120)
def test_sft_lowers_nll_and_base_is_cached(tmp_path):
    task = TASKS["equation"]
    problems = make_split(task, num_per_level=20, seed=0)
    model = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=24)
    short = sft.SFTConfig(steps=2, warmup_steps=1, learning_rate=3e-3)
    longer = sft.SFTConfig(steps=40, warmup_steps=1, learning_rate=3e-3)
    _, m_short = lm_base.train(short, model, task, problems)
    params, info = lm_base.train_or_load(model, longer, task, problems, str(tmp_path))
    assert not info["cached"] and info["sft_metrics"]["loss/nll"] < m_short["loss/nll"]
    again, info2 = lm_base.train_or_load(model, longer, task, problems, str(tmp_path))
    assert info2["cached"] and info2["path"] == info["path"]
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    other = lm_base.cache_key(model, sft.SFTConfig(steps=41), task, problems)
    assert other != lm_base.cache_key(model, longer, task, problems)
    # a base trained on other problems (e.g. another level range) never shares the cache
    assert lm_base.cache_key(model, longer, task, problems[:-1]) != lm_base.cache_key(
        model, longer, task, problems
    )


class _SignalSecond:
    """A feed that sends SIGTERM to this process when the loop asks it for the second chunk (the
    first is fetched to compile, before the loop handles signals)."""

    def __init__(self, feed):
        self.feed, self.calls = feed, 0

    def __call__(self, first, n):
        self.calls += 1
        if self.calls == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return self.feed(first, n)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sft_runs_in_the_loop_and_a_killed_sft_resumes_to_the_same_base(tmp_path, monkeypatch):
    task = TASKS["equation"]
    problems = make_split(task, num_per_level=20, seed=0)
    model = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=24)
    cfg = sft.SFTConfig(steps=12, warmup_steps=1, learning_rate=3e-3, noise=0.3, direct_frac=0.3)
    monkeypatch.setattr(lm_base, "CHUNK_STEPS", 4)  # 3 chunks of 4 steps
    straight, metrics = lm_base.train(cfg, model, task, problems, str(tmp_path / "straight"))
    # the loop's chunks equal plain per-step updates on the same batches
    state = sft.init(cfg, model, jax.random.key(cfg.seed))
    (batches,) = sft.TraceFeed(cfg, task, problems)(0, cfg.steps)
    step = jax.jit(lambda s, b: sft.update(s, b, cfg=cfg, model_cfg=model))
    for i in range(cfg.steps):
        state, last = step(state, jax.tree.map(lambda x, i=i: x[i], batches))
    chex.assert_trees_all_close(state.params, straight, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(metrics["loss/nll"], float(last["loss/nll"]), rtol=1e-6)
    # killed during its second chunk: the loop checkpoints, nothing is returned; a rerun resumes
    real_feed = sft.TraceFeed
    monkeypatch.setattr(sft, "TraceFeed", lambda *a: _SignalSecond(real_feed(*a)))
    with pytest.raises(lm_base.SFTInterrupted, match="after step 8 of 12"):
        lm_base.train(cfg, model, task, problems, str(tmp_path / "killed"))
    monkeypatch.setattr(sft, "TraceFeed", real_feed)
    resumed, _ = lm_base.train(cfg, model, task, problems, str(tmp_path / "killed"))
    for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(a, b)
    rows = MetricsWriter(str(tmp_path / "killed")).read()
    assert [r["update"] for r in rows] == list(range(1, cfg.steps + 1))
    assert os.path.exists(tmp_path / "killed" / "curves.png")
