"""rljax.darkroom: moves and walls by hand, labels against a breadth-first search, rewards and
returns of known policies, goal-free context actions, tokens that carry no goal."""

import collections
import functools

import jax
import jax.numpy as jnp
import numpy as np

from rljax import darkroom

SIDE = 4


def _bfs_distance(goal: int, side: int) -> dict:
    """Steps to ``goal`` from every cell, by breadth-first search over the four moves (written
    here in plain Python, independently of ``darkroom.step``)."""
    dist, queue = {goal: 0}, collections.deque([goal])
    while queue:
        c = queue.popleft()
        row, col = divmod(c, side)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= row + dr < side and 0 <= col + dc < side:
                n = (row + dr) * side + col + dc
                if n not in dist:
                    dist[n] = dist[c] + 1
                    queue.append(n)
    return dist


def test_step_moves_and_walls_by_hand():
    # cell 5 = (row 1, col 1) on a 4 x 4 grid: stay, up, down, left, right
    got = darkroom.step(jnp.full((5,), 5), jnp.arange(5), SIDE)
    np.testing.assert_array_equal(got, [5, 1, 9, 4, 6])
    # corner 0: up and left hit walls; corner 15: down and right do
    np.testing.assert_array_equal(darkroom.step(jnp.zeros(5, int), jnp.arange(5), SIDE),
                                  [0, 0, 4, 0, 1])  # fmt: skip
    np.testing.assert_array_equal(darkroom.step(jnp.full((5,), 15), jnp.arange(5), SIDE),
                                  [15, 11, 15, 14, 15])  # fmt: skip


def test_labels_are_optimal_against_bfs():
    n = SIDE * SIDE
    cells, goals = (x.ravel() for x in jnp.meshgrid(jnp.arange(n), jnp.arange(n)))
    a = darkroom.optimal_action(cells, goals, SIDE)
    d0 = np.asarray(darkroom.distance(cells, goals, SIDE))
    d1 = np.asarray(darkroom.distance(darkroom.step(cells, a, SIDE), goals, SIDE))
    bfs = {g: _bfs_distance(g, SIDE) for g in range(n)}
    want = np.asarray([bfs[int(g)][int(c)] for c, g in zip(cells, goals, strict=True)])
    np.testing.assert_array_equal(d0, want)
    np.testing.assert_array_equal(d1, np.maximum(want - 1, 0))  # one step closer, or stays
    np.testing.assert_array_equal(np.asarray(a)[np.asarray(cells == goals)], 0)  # stay on it
    # the tie-break: column first (right), then row (down)
    assert int(darkroom.optimal_action(jnp.asarray(0), jnp.asarray(5), SIDE)) == 4
    assert int(darkroom.optimal_action(jnp.asarray(1), jnp.asarray(5), SIDE)) == 2


def test_snake_visits_every_cell_once():
    cell, seen = jnp.asarray(darkroom.START), []
    for _ in range(SIDE * SIDE):
        seen.append(int(cell))
        cell = darkroom.step(cell, darkroom.snake_action(cell, SIDE), SIDE)
    assert sorted(seen) == list(range(SIDE * SIDE))
    assert int(cell) == seen[-1]  # stays on the last cell


def test_returns_of_oracle_sweep_and_reward_rule():
    h, k = SIDE * SIDE, 2
    goal = jnp.arange(SIDE * SIDE)
    key = jax.random.PRNGKey(0)
    pol = functools.partial(darkroom.oracle, goal=goal, side=SIDE)
    _, ret = darkroom.run_online(pol, goal, key, SIDE, h, k)
    d = np.asarray(darkroom.distance(jnp.zeros_like(goal), goal, SIDE))
    np.testing.assert_array_equal(ret, np.repeat((h - np.maximum(d - 1, 0))[:, None], k, 1))
    sweep = functools.partial(darkroom.sweep, side=SIDE, horizon=h)
    hist, ret = darkroom.run_online(sweep, goal, key, SIDE, h, k)
    # a stay, then snake position i reached by step i: first-episode return h - i
    order = [0, 1, 2, 3, 7, 6, 5, 4, 8, 9, 10, 11, 15, 14, 13, 12]
    pos = np.asarray([order.index(g) for g in range(16)])
    np.testing.assert_array_equal(ret[:, 0], h - pos)
    np.testing.assert_array_equal(ret[:, 1], h - np.maximum(d - 1, 0))  # then the oracle's
    s, a, r, s2 = hist
    np.testing.assert_array_equal(r, (s2 == goal[:, None]).astype(np.float32))
    np.testing.assert_array_equal(s[:, ::h], darkroom.START)  # every episode starts at START


def test_context_actions_do_not_depend_on_the_goal():
    key = jax.random.PRNGKey(3)
    ctx_a = darkroom.random_context(key, jnp.zeros(8, jnp.int32), SIDE, 10, 2)
    ctx_b = darkroom.random_context(key, jnp.full((8,), 13, jnp.int32), SIDE, 10, 2)
    for i in (0, 1, 3):  # s, a, s' equal; only the rewards differ
        np.testing.assert_array_equal(ctx_a[i], ctx_b[i])
    np.testing.assert_array_equal(ctx_a[2], (ctx_a[3] == 0).astype(np.float32))
    np.testing.assert_array_equal(ctx_b[2], (ctx_b[3] == 13).astype(np.float32))
    np.testing.assert_array_equal(ctx_a[0][:, ::10], darkroom.START)  # resets every H steps


def test_tokens_layout_and_split():
    s, a = jnp.asarray([[0, 5]]), jnp.asarray([[4, 2]])
    r, s2 = jnp.asarray([[0.0, 1.0]]), jnp.asarray([[1, 9]])
    tok = darkroom.tokens(jnp.asarray([15]), s, a, r, s2, SIDE)
    assert tok.shape == (1, 3, darkroom.num_features())
    np.testing.assert_allclose(tok[0, 0], [1, 1] + [0] * 10 + [1])
    third = 1 / 3
    np.testing.assert_allclose(
        tok[0, 2], [0, 0, third, third, 0, 0, 1, 0, 0, 1, 2 * third, third, 0], rtol=1e-6
    )
    for seed in range(3):  # a partition: no held-out goal is a pretraining goal
        train, held = darkroom.split_goals(jax.random.PRNGKey(seed), SIDE, 3)
        assert held.shape == (3,) and train.shape == (13,)
        assert sorted(np.concatenate([train, held]).tolist()) == list(range(16))
