"""Tests for rljax.losses.reduce: hand values, NumPy loop, masking == slicing, gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from rljax.losses import reduce

LOSS = jnp.array([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0], [9.0, 9.0, 9.0, 9.0]])
MASK = jnp.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], jnp.float32)


def test_by_hand():
    np.testing.assert_allclose(reduce.token_mean(LOSS, MASK), 10.0 / 4)
    np.testing.assert_allclose(reduce.seq_mean_token_mean(LOSS, MASK), (2.0 + 4.0) / 2)
    np.testing.assert_allclose(reduce.seq_mean_token_sum(LOSS, MASK), (6.0 + 4.0) / 2)
    np.testing.assert_allclose(
        reduce.seq_mean_token_sum_norm(LOSS, MASK, max_len=4), (6.0 + 4.0) / 2 / 4
    )
    np.testing.assert_allclose(reduce.masked_mean(LOSS, MASK), 2.5)
    np.testing.assert_allclose(reduce.masked_mean(LOSS, MASK, axis=1), [2.0, 4.0, 0.0])
    np.testing.assert_allclose(
        reduce.masked_std(jnp.array([1.0, 3.0, 100.0]), jnp.array([1, 1, 0])), 1.0
    )


def _ragged(seed=0, b=6, l_max=7):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, l_max + 1, size=b)
    lens[0] = 0
    loss = rng.normal(size=(b, l_max)).astype(np.float32)
    mask = (np.arange(l_max)[None] < lens[:, None]).astype(np.float32)
    return loss, mask, lens


def test_match_numpy_loop_over_ragged_sequences():
    loss, mask, lens = _ragged()
    seqs = [loss[i, :n] for i, n in enumerate(lens) if n > 0]
    np.testing.assert_allclose(
        reduce.token_mean(loss, mask), np.concatenate(seqs).mean(), rtol=1e-5
    )
    np.testing.assert_allclose(
        reduce.seq_mean_token_mean(loss, mask), np.mean([s.mean() for s in seqs]), rtol=1e-5
    )
    np.testing.assert_allclose(
        reduce.seq_mean_token_sum(loss, mask), np.mean([s.sum() for s in seqs]), rtol=1e-5
    )
    np.testing.assert_allclose(
        reduce.seq_mean_token_sum_norm(loss, mask, max_len=16.0),
        np.mean([s.sum() / 16 for s in seqs]),
        rtol=1e-5,
    )


@pytest.mark.parametrize(
    "fn",
    [
        reduce.token_mean,
        reduce.seq_mean_token_mean,
        reduce.seq_mean_token_sum,
        lambda x, m: reduce.seq_mean_token_sum_norm(x, m, max_len=8.0),
        reduce.masked_mean,
    ],
)
def test_masking_equals_slicing(fn):
    loss, mask, lens = _ragged(1)
    keep = lens > 0
    l_used = int(lens.max())
    full = fn(jnp.asarray(loss), jnp.asarray(mask))
    sliced = fn(jnp.asarray(loss[keep, :l_used]), jnp.asarray(mask[keep, :l_used]))
    np.testing.assert_allclose(full, sliced, rtol=1e-6)
    # Garbage in padded positions must not leak.
    noisy = np.where(mask > 0, loss, 1e6).astype(np.float32)
    np.testing.assert_allclose(fn(jnp.asarray(noisy), jnp.asarray(mask)), full, rtol=1e-6)


def test_gradient_check():
    loss, mask, _ = _ragged(2)
    with jax.enable_x64(True):
        m = jnp.asarray(mask, jnp.float64)
        for fn in (reduce.token_mean, reduce.seq_mean_token_mean, reduce.seq_mean_token_sum):
            check_grads(lambda x, fn=fn: fn(x, m), [jnp.asarray(loss, jnp.float64)], order=1)


def test_bad_max_len():
    with pytest.raises(ValueError, match="max_len"):
        reduce.seq_mean_token_sum_norm(LOSS, MASK, max_len=0)
