"""SFT trace mixture, noise, base-model cache."""

import jax
import numpy as np
import pytest

from rljax.lm import base_model, sft
from rljax.lm.model import TransformerConfig
from rljax.lm.tasks import TASKS, make_split


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


@pytest.mark.timeout(120)
def test_sft_lowers_nll_and_base_is_cached(tmp_path):
    task = TASKS["equation"]
    problems = make_split(task, num_per_level=20, seed=0)
    model = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=24)
    short = sft.SFTConfig(steps=2, warmup_steps=1, learning_rate=3e-3)
    longer = sft.SFTConfig(steps=40, warmup_steps=1, learning_rate=3e-3)
    _, m_short = sft.train(short, model, task, problems)
    params, info = base_model.train_or_load(model, longer, task, problems, str(tmp_path))
    assert not info["cached"] and info["sft_metrics"]["sft/nll"] < m_short["sft/nll"]
    again, info2 = base_model.train_or_load(model, longer, task, problems, str(tmp_path))
    assert info2["cached"] and info2["path"] == info["path"]
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    other = base_model.cache_key(model, sft.SFTConfig(steps=41), task, problems)
    assert other != base_model.cache_key(model, longer, task, problems)
    # a base trained on other problems (e.g. another level range) never shares the cache
    assert base_model.cache_key(model, longer, task, problems[:-1]) != base_model.cache_key(
        model, longer, task, problems
    )
