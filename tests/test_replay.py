"""Replay buffer: ring order, uniform sampling of consecutive rows, errors, vmap, n-step folding."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import replay
from rljax.types import Transition


def _row(t, num_envs=3):
    """Row t: obs[b] = 100 t + b, so a sample says which step and environment it came from."""
    return {"obs": 100.0 * t + jnp.arange(num_envs, dtype=jnp.float32), "t": jnp.full(num_envs, t)}


def test_ring_overwrites_oldest_and_tracks_size():
    buf = replay.init(_row(0), capacity=4)
    for t in range(6):
        buf = jax.jit(replay.add)(buf, _row(t))
    assert int(buf.size) == 4 and int(buf.index) == 6 % 4
    # rows 4 and 5 overwrote rows 0 and 1
    np.testing.assert_array_equal(np.sort(np.asarray(buf.data["t"][:, 0])), [2, 3, 4, 5])


def test_add_rows_equals_repeated_add():
    rows = jax.tree.map(lambda *x: jnp.stack(x), *[_row(t) for t in range(5)])
    a = jax.jit(replay.add_rows)(replay.init(_row(0), 3), rows)
    b = replay.init(_row(0), 3)
    for t in range(5):
        b = jax.jit(replay.add)(b, _row(t))
    chex.assert_trees_all_equal(a, b)


def test_sequences_are_consecutive_steps_of_one_env_and_cover_valid_starts():
    buf = replay.init(_row(0), capacity=8)
    for t in range(11):  # wrapped: rows hold t = 3..10
        buf = replay.add(buf, _row(t))
    seq = jax.jit(replay.sample_sequences, static_argnums=(2, 3))(
        buf, jax.random.PRNGKey(0), 4000, 3
    )
    t = np.asarray(seq["t"])
    obs = np.asarray(seq["obs"])
    np.testing.assert_array_equal(np.diff(t, axis=1), 1)  # consecutive, oldest first
    env = obs - 100 * t
    assert np.all(env == env[:, :1])  # one environment per run
    # starts are uniform over the 6 valid ones (3..8): runs never leave the written rows
    starts, counts = np.unique(t[:, 0], return_counts=True)
    np.testing.assert_array_equal(starts, np.arange(3, 9))
    assert counts.min() > 4000 / 6 * 0.8
    assert set(np.unique(env)) == {0, 1, 2}
    # jointly uniform over the 6 x 3 (start, env) pairs: a chi-square test at p ~ 1e-4
    _, pair_counts = np.unique(t[:, 0] * 3 + env[:, 0], return_counts=True)
    assert pair_counts.size == 18
    expected = 4000 / 18
    assert np.sum((pair_counts - expected) ** 2 / expected) < 45.0  # chi2(17) 99.99% = 44.8


def test_take_sequences_maps_bits_to_pairs_in_order():
    buf = replay.init(_row(0), capacity=4)
    for t in range(6):  # wrapped: rows hold t = 2..5, 3 envs; length 2 -> starts t = 2..4
        buf = replay.add(buf, _row(t))
    bits = jnp.arange(10, dtype=jnp.uint32)  # 9 pairs: pair p -> start 2 + p // 3, env p % 3
    seq = replay.take_sequences(buf, bits, 2)
    p = np.arange(10) % 9
    np.testing.assert_array_equal(np.asarray(seq["t"])[:, 0], 2 + p // 3)
    np.testing.assert_array_equal(np.asarray(seq["obs"])[:, 1], 100 * (3 + p // 3) + p % 3)


def test_sampling_before_enough_data_raises_eagerly():
    buf = replay.add(replay.init(_row(0), capacity=8), _row(0))
    with pytest.raises(ValueError, match="holds 1 row"):
        replay.sample_sequences(buf, jax.random.PRNGKey(0), 2, 3)
    assert not bool(replay.can_sample(buf, 3)) and bool(replay.can_sample(buf, 1))
    replay.sample(buf, jax.random.PRNGKey(0), 2)  # one row suffices for single steps


def test_vmapped_buffers_equal_per_seed_buffers():
    keys = jax.random.split(jax.random.PRNGKey(1), 2)

    def fill_and_sample(key):
        buf = replay.init(_row(0), capacity=5)
        for t in range(7):
            buf = replay.add(buf, jax.tree.map(lambda x: x + jax.random.uniform(key), _row(t)))
        return replay.sample(buf, key, 16)

    batched = jax.jit(jax.vmap(fill_and_sample))(keys)
    for i in range(2):
        solo = jax.jit(fill_and_sample)(keys[i])
        chex.assert_trees_all_close(jax.tree.map(lambda x, i=i: x[i], batched), solo)


def _brute_force_n_step(r, term, trunc, next_obs, gamma):
    """Plain Python reference: accumulate until the first episode end or n steps."""
    out = []
    for i in range(r.shape[0]):
        ret, disc, nxt = 0.0, 1.0, next_obs[i, 0]
        for k in range(r.shape[1]):
            ret += disc * r[i, k]
            disc *= gamma
            nxt = next_obs[i, k]
            if term[i, k]:
                disc = 0.0
                break
            if trunc[i, k]:
                break
        out.append((ret, disc, nxt))
    return out


def test_n_step_transition_matches_brute_force():
    rng = np.random.default_rng(0)
    n, count, gamma = 4, 64, 0.9
    term = rng.random((count, n)) < 0.2
    trunc = (rng.random((count, n)) < 0.15) & ~term
    seq = Transition(
        obs=rng.normal(size=(count, n, 2)).astype(np.float32),
        action=rng.integers(0, 3, (count, n)),
        reward=rng.normal(size=(count, n)).astype(np.float32),
        next_obs=rng.normal(size=(count, n, 2)).astype(np.float32),
        terminated=term,
        truncated=trunc,
        logp=np.zeros((count, n), np.float32),
        value=np.zeros((count, n), np.float32),
    )
    got = replay.n_step_transition(jax.tree.map(jnp.asarray, seq), gamma)
    want = _brute_force_n_step(seq.reward, term, trunc, seq.next_obs, gamma)
    np.testing.assert_allclose(got.reward, [w[0] for w in want], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.discount, [w[1] for w in want], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.next_obs, [w[2] for w in want])
    np.testing.assert_array_equal(got.action, seq.action[:, 0])
    one = replay.n_step_transition(jax.tree.map(lambda x: jnp.asarray(x[:, :1]), seq), gamma)
    np.testing.assert_allclose(one.discount, gamma * (1 - term[:, 0]), rtol=1e-6)
