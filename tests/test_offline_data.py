"""rljax.offline_data: episode cutting, return weights, sampling, TQ and coverage by hand."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import offline_data
from rljax.types import Transition


def _traj():
    # T = 5, B = 2. Column 0: episodes [0, 1] (terminated) and [2, 3] (truncated), tail [4].
    # Column 1: one episode [0..2], tail [3, 4].
    t, b = 5, 2
    obs = np.arange(t * b, dtype=np.float32).reshape(t, b, 1)
    return Transition(
        obs=obs, action=np.zeros((t, b), np.int32), reward=np.ones((t, b), np.float32) * [1, 2],
        next_obs=obs + 100, terminated=np.array([[0, 0], [1, 0], [0, 1], [0, 0], [0, 0]], bool),
        truncated=np.array([[0, 0], [0, 0], [0, 0], [1, 0], [0, 0]], bool),
        logp=np.zeros((t, b)), value=np.zeros((t, b)),
    )  # fmt: skip


def test_episodes_keep_complete_ones_in_column_then_time_order():
    traj = _traj()
    eps = offline_data.episodes(traj)
    assert [len(e["reward"]) for e in eps] == [2, 2, 3]
    assert [e["return"] for e in eps] == [2.0, 2.0, 6.0]
    np.testing.assert_array_equal(eps[1]["obs"][:, 0], [4.0, 6.0])
    np.testing.assert_array_equal(eps[1]["terminated"], [False, False])  # truncation
    d = offline_data.from_episodes(eps, 5)
    np.testing.assert_array_equal(d.episode_return, [2, 2, 2, 2, 6])
    np.testing.assert_allclose(d.cdf, [0.2, 0.4, 0.6, 0.8, 1.0])
    with pytest.raises(ValueError, match="hold 7 transitions; 8 were asked"):
        offline_data.from_episodes(eps, 8)


def test_return_weights_by_hand():
    p = offline_data.return_weights(np.array([0.0, 10.0, 10.0]), temperature=1.0)
    w = np.array([math.exp(-1), 1.0, 1.0])
    np.testing.assert_allclose(p, w / w.sum())
    np.testing.assert_allclose(offline_data.return_weights(np.ones(4), temperature=0.1), 0.25)
    with pytest.raises(ValueError, match="temperature=0"):
        offline_data.return_weights(np.ones(2), temperature=0)


def test_sampling_follows_the_probabilities():
    d = offline_data.from_episodes(offline_data.episodes(_traj()), 4)
    probs = np.array([0.1, 0.0, 0.6, 0.3])
    d = offline_data.with_probs(d, probs)
    idx = np.asarray(offline_data.sample_indices(d.cdf, jax.random.PRNGKey(0), 40_000))
    freq = np.bincount(idx, minlength=4) / idx.size
    np.testing.assert_allclose(freq, probs, atol=0.01)
    assert freq[1] == 0.0


def test_quality_and_coverage_by_hand():
    assert offline_data.trajectory_quality([10.0, 30.0], 10.0, 30.0) == 0.5
    edges = offline_data.grid_edges(np.linspace(0, 1, 1001)[:, None], 4)
    np.testing.assert_allclose(edges[0], [0.255, 0.5, 0.745], atol=1e-9)
    obs = np.array([[0.1], [0.2], [0.9], [0.9]])
    cells = offline_data.state_action_cells(obs, np.array([0, 0, 0, 1]), edges)
    assert cells == {(0, 0), (3, 0), (3, 1)}


def test_concat_is_uniform():
    d = offline_data.from_episodes(offline_data.episodes(_traj()), 3)
    both = offline_data.concat([d, d])
    assert both.reward.shape == (6,)
    np.testing.assert_allclose(both.cdf, jnp.arange(1, 7) / 6, rtol=1e-6)
