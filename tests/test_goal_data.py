"""rljax.goal_data: the rooms' geometry, the walker's region, the unseen split and relabelling."""

import numpy as np
import pytest

from rljax import goal_data


@pytest.fixture(scope="module")
def env():
    return goal_data.rooms(4, 3)


def test_rooms_geometry(env):
    # 4 rooms of 9 cells and 3 doors; every move stays on a free cell.
    assert env.num_states == 4 * 9 + 3
    assert sorted(np.unique(env.room).tolist()) == [-3, -2, -1, 0, 1, 2, 3]
    assert env.next_state.min() >= 0 and env.next_state.max() < env.num_states
    # Moving right then left from a cell inside a room returns to it.
    s = 4  # centre of room 0 (column-major order: column 1, row 1)
    assert tuple(env.coords[s]) == (1, 1)
    assert env.next_state[env.next_state[s, 1], 3] == s


def test_distances_match_manhattan_inside_a_room(env):
    d = goal_data.distances(env.next_state)
    room0 = np.flatnonzero(env.room == 0)
    for s in room0:
        for g in room0:
            assert d[s, g] == np.abs(env.coords[s] - env.coords[g]).sum()
    # Through the door: from room 0's bottom-left corner to the first cell of room 1 behind the
    # (top-row) door: 2 up + 4 right.
    a = int(np.flatnonzero((env.coords == (2, 0)).all(1))[0])
    b = int(np.flatnonzero((env.coords == (0, 4)).all(1))[0])
    assert d[a, b] == 6


def test_walker_stays_in_its_region_and_reaches_its_goal(env):
    rng = np.random.default_rng(0)
    trajs = goal_data.collect(env, rng, 30, eps=0.3, max_len=200)
    assert len(trajs) == 3 * 30
    for k in range(3):
        region = goal_data.region(env, k)
        for t in trajs[30 * k : 30 * (k + 1)]:
            assert region[t[:, 0]].all()
            # consistent with the dynamics
            assert (env.next_state[t[:-1, 0], t[:-1, 1]] == t[1:, 0]).all()


def test_unseen_pairs_never_co_occur_and_seen_pairs_do(env):
    rng = np.random.default_rng(1)
    trajs = goal_data.collect(env, rng, 50, eps=0.2, max_len=200)
    unseen = goal_data.unseen_pairs(env)
    assert len(unseen) == 2 * (2 * 9 * 9) + 2 * 9 * 9  # rooms (0,2), (1,3) and (0,3), both ways
    assert not goal_data.co_occurring(trajs, unseen).any()
    seen = goal_data.seen_pairs(trajs, rng, 100)
    assert goal_data.co_occurring(trajs, seen).all()
    # A trajectory crossing rooms makes its pair "co-occurring" (the check can fire).
    cross = np.asarray([[trajs[0][0, 0], trajs[0][-1, 0]]])
    assert goal_data.co_occurring(trajs, cross).all()


def test_relabelling_schemes(env):
    rng = np.random.default_rng(2)
    trajs = goal_data.collect(env, rng, 50, eps=0.2, max_len=200)
    room = lambda s: env.room[s]  # noqa: E731
    future = goal_data.relabel(trajs, rng, 3000, "future")
    aug = goal_data.relabel(trajs, rng, 3000, "waypoint", p_aug=1.0)
    # Transitions follow the dynamics; a future goal never leaves its trajectory's region, so
    # it is never two rooms away, while waypoint goals through other trajectories sometimes are.
    for x in (future, aug):
        assert (env.next_state[x[:, 0], x[:, 1]] == x[:, 2]).all()
    far = lambda x: ((room(x[:, 0]) >= 0) & (room(x[:, 3]) >= 0)  # noqa: E731
                     & (np.abs(room(x[:, 0]) - room(x[:, 3])) >= 2))  # fmt: skip
    assert not far(future).any()
    # one hop joins two regions: rare in these short trajectories, never absent
    assert far(aug).mean() > 0.002
    with pytest.raises(ValueError, match="scheme"):
        goal_data.relabel(trajs, rng, 10, "nope")


def test_dataset_reward_and_success_of_the_optimal_policy(env):
    import jax.numpy as jnp

    samples = np.asarray([[0, 1, 3, 3], [0, 1, 3, 5]])
    data = goal_data.to_dataset(samples, env.num_states)
    assert data.obs.shape == (2, 2 * env.num_states)
    np.testing.assert_array_equal(data.reward, [1.0, 0.0])
    d = jnp.asarray(goal_data.distances(env.next_state))
    nxt = jnp.asarray(env.next_state)
    n = env.num_states

    def optimal(obs):  # greedy on the true distances
        s, g = jnp.argmax(obs[:, :n], -1), jnp.argmax(obs[:, n:], -1)
        return jnp.argmin(d[nxt[s], g[:, None]], -1)

    pairs = jnp.asarray(goal_data.unseen_pairs(env))
    assert bool(goal_data.success(nxt, optimal, pairs, 40).all())
    stay = lambda obs: jnp.zeros(obs.shape[0], jnp.int32)  # noqa: E731  # always "up"
    assert not bool(goal_data.success(nxt, stay, pairs, 40).any())
