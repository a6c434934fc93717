"""The meta-RL gridworld lifetime: a hidden goal fixed for the lifetime or redrawn per episode."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import envs
from rljax.envs import meta_grid

FIXED, REDRAW = "MetaGrid-4x4-v0", "MetaGrid-4x4-Redraw-v0"
UP, DOWN, LEFT, RIGHT = range(4)


def _start(name, goals):
    """Lifetimes of ``name`` whose goals are ``goals`` (a list of cells)."""
    env = envs.make(name)
    state = envs.reset(env, jax.random.PRNGKey(0), len(goals))
    goal = jnp.asarray(goals, jnp.int32)
    return env, state._replace(env_state=state.env_state.replace(goal=goal))


@functools.cache
def _step(env):
    return jax.jit(lambda k, s, a: envs.step(env, k, s, a))


def _play(env, state, actions, key=0):
    """Steps every env with ``actions [T]`` (the same for every env); per-step records."""
    rows = []
    for t, a in enumerate(actions):
        action = jnp.full(state.obs.shape[:1], a, jnp.int32)
        before = state
        state, res = _step(env)(jax.random.fold_in(jax.random.PRNGKey(key), t), state, action)
        rows.append((before, state, res))
    return state, rows


def test_names_are_supported_and_described():
    for name, (side, episodes, length, _) in meta_grid.NAMES.items():
        env = envs.make(name)
        assert name in envs.SUPPORTED_ENVS and name in envs.META_GRID
        assert env.discrete and env.num_actions == 4
        assert env.obs_shape == (2 * side * side + 4,)
        assert env.max_steps == episodes * length


def test_moves_and_walls():
    # 4 x 4: cell 0 is the top-left corner, 5 is (row 1, col 1).
    cells = jnp.asarray([5, 5, 5, 5, 0, 0, 15, 15])
    acts = jnp.asarray([UP, DOWN, LEFT, RIGHT, UP, LEFT, DOWN, RIGHT])
    np.testing.assert_array_equal(meta_grid.move(cells, acts, 4), [1, 9, 4, 6, 0, 0, 15, 15])


def test_reaching_the_goal_pays_one_and_restarts_the_episode_not_the_lifetime():
    env, state = _start(FIXED, [2])  # two moves right of START
    state, rows = _play(env, state, [RIGHT, RIGHT])
    (_, s1, r1), (_, s2, r2) = rows
    assert float(r1.reward[0]) == 0.0 and int(s1.env_state.cell[0]) == 1
    assert float(r2.reward[0]) == 1.0 and not bool(r2.done[0])
    es = s2.env_state
    assert int(es.cell[0]) == meta_grid.START and int(es.reached[0]) == 2
    assert int(es.episode[0]) == 1 and int(es.step[0]) == 0 and int(es.goal[0]) == 2
    # The next episode: the same goal is paid again by the same two moves.
    state, rows = _play(env, state, [RIGHT, RIGHT], key=1)
    assert float(rows[-1][2].reward[0]) == 1.0 and int(state.env_state.episode[0]) == 2


def test_an_episode_times_out_after_l_moves_and_the_lifetime_after_e_episodes():
    side, episodes, length, _ = meta_grid.NAMES[FIXED]
    env, state = _start(FIXED, [15])  # never reached by moving up
    state, rows = _play(env, state, [UP] * (episodes * length))
    rewards = [float(r.reward[0]) for _, _, r in rows]
    dones = [bool(r.terminated[0]) for _, _, r in rows]
    episode = [int(s.env_state.episode[0]) for _, s, _ in rows]
    assert sum(rewards) == 0.0
    assert dones == [False] * (episodes * length - 1) + [True]  # the lifetime: E · L moves
    for t in range(episodes * length - 1):  # episode k ends after move k · L
        assert episode[t] == (t + 1) // length, t
    # After the lifetime the next one starts: new goal draw, no episode done, START.
    assert int(state.env_state.episode[0]) == 0 and int(state.env_state.time[0]) == 0


def test_lifetime_of_e_goal_reaches_is_e_moves_when_the_goal_is_next_to_start():
    _, episodes, _, _ = meta_grid.NAMES[FIXED]
    env, state = _start(FIXED, [1])
    _, rows = _play(env, state, [RIGHT] * episodes)
    assert [float(r.reward[0]) for _, _, r in rows] == [1.0] * episodes
    assert [bool(r.terminated[0]) for _, _, r in rows] == [False] * (episodes - 1) + [True]


def _goal_changes(name, num_envs=256, moves=200):
    """Random moves; (goal changes at episode ends, episode ends, changes inside episodes)."""
    env = envs.make(name)

    def body(state, key):
        a_key, e_key = jax.random.split(key)
        a = jax.random.randint(a_key, (num_envs,), 0, 4)
        new, res = envs.step(env, e_key, state, a)
        ended = (new.env_state.episode != state.env_state.episode) & ~res.done
        changed = new.env_state.goal != state.env_state.goal
        return new, jnp.stack(
            [(ended & changed).sum(), ended.sum(), (~ended & ~res.done & changed).sum()]
        )

    state = envs.reset(env, jax.random.PRNGKey(3), num_envs)
    keys = jax.random.split(jax.random.PRNGKey(4), moves)
    counts = jax.jit(lambda s, k: jax.lax.scan(body, s, k)[1])(state, keys)
    return (int(c) for c in np.asarray(counts).sum(0))


def test_structure_on_keeps_the_goal_for_the_lifetime():
    at_end, ends, inside = _goal_changes(FIXED)
    assert ends > 1000 and at_end == 0 and inside == 0


def test_structure_off_redraws_the_goal_at_every_episode_end():
    at_end, ends, inside = _goal_changes(REDRAW)
    assert inside == 0  # never inside an episode
    # Independent uniform draws over the 15 non-start cells: a new cell 14/15 of the time.
    assert ends > 1000 and abs(at_end / ends - 14 / 15) < 0.03


def test_goals_are_uniform_over_the_cells_other_than_start():
    env = envs.make(FIXED)
    goals = np.asarray(envs.reset(env, jax.random.PRNGKey(5), 15_000).env_state.goal)
    counts = np.bincount(goals, minlength=16)
    assert counts[meta_grid.START] == 0
    np.testing.assert_allclose(counts[1:] / 15_000, 1 / 15, atol=0.01)


def test_observation_holds_cell_reached_cell_reward_and_time_but_no_goal():
    side, episodes, length, _ = meta_grid.NAMES[FIXED]
    n = side * side
    env, state = _start(FIXED, [2, 3])  # the same moves: the first env hits its goal, not the 2nd
    np.testing.assert_array_equal(state.obs[:, n : 2 * n], 0.0)  # nothing reached yet
    np.testing.assert_array_equal(state.obs[:, 2 * n :], [[0, 1, 0, 0]] * 2)
    state, rows = _play(env, state, [RIGHT, RIGHT])
    obs = np.asarray(state.obs)
    np.testing.assert_array_equal(obs[:, :n].argmax(-1), [meta_grid.START, 2])
    np.testing.assert_array_equal(obs[:, n : 2 * n].argmax(-1), [2, 2])
    np.testing.assert_allclose(obs[:, 2 * n :], [[1, 1, 0, 1 / episodes], [0, 0, 2 / length, 0]])
    # Same history, different goals: the observations are the same until a reward differs.
    env, state = _start(FIXED, [15, 12])
    _, rows = _play(env, state, [RIGHT, DOWN, RIGHT])
    for _, s, _ in rows:
        np.testing.assert_array_equal(s.obs[0], s.obs[1])


def test_sweep_and_shortest_path_references():
    order = np.asarray(meta_grid.snake_order(4))
    assert sorted(order.tolist()) == list(range(16)) and order[0] == meta_grid.START
    rows, cols = order // 4, order % 4
    assert (np.abs(np.diff(rows)) + np.abs(np.diff(cols)) == 1).all()  # neighbours
    # Shortest paths: every goal reached in its Manhattan distance of moves.
    goals = jnp.arange(1, 16)
    cell = jnp.zeros(15, jnp.int32)
    for _ in range(6):
        a = meta_grid.shortest_path_action(cell, goals, 4)
        cell = jnp.where(cell == goals, cell, meta_grid.move(cell, a, 4))
    np.testing.assert_array_equal(cell, goals)
    # The sweep walks the snake while nothing is known, and to the goal once it is.
    visited = jnp.zeros((1, 16), bool).at[0, :4].set(True)  # row 0 done, now on cell 3
    a = meta_grid.sweep_action(jnp.asarray([3]), visited, jnp.asarray([False]), jnp.zeros(1), 4)
    assert int(a[0]) == DOWN  # to cell 7, the snake's next
    a = meta_grid.sweep_action(jnp.asarray([3]), visited, jnp.asarray([True]), jnp.asarray([1]), 4)
    assert int(a[0]) == LEFT


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="meta_grid.side=1 is invalid"):
        meta_grid.MetaGrid(1, 4, 8, False)
    with pytest.raises(ValueError, match="meta_grid.length=0 is invalid"):
        meta_grid.MetaGrid(4, 4, 0, False)
