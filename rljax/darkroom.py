"""The dark room: an n x n grid with an invisible goal, its in-context datasets and policies.

The dark room of Laskin et al. 2022 (Algorithm Distillation) and Lee et al. 2023 ("Supervised
Pretraining Can Learn In-Context Reinforcement Learning", #227): the agent sees only its own
cell, never the goal. A task is a goal cell ``g``; every episode starts in the fixed cell
``START`` (the corner (0, 0)) and lasts ``H`` steps; the reward of step t is
``r_t = 1[s_{t+1} = g]`` (one per step that ends on the goal, so a reward tells the agent where
it is), and the optimal return from a start at Manhattan distance ``d <= H`` is
``H − max(d − 1, 0)``.

Cells are ints ``c = row · n + col``. Actions: 0 stay, 1 up (row − 1), 2 down (row + 1), 3 left
(col − 1), 4 right (col + 1); a move into a wall stays put.

* ``optimal_action``: the label of DPT: a shortest-path action with a deterministic tie-break
  (fix the column first, then the row; stay on the goal).
* ``split_goals``: the goals of pretraining and the held-out goals tested on.
* ``random_context``: a task's in-context dataset: ``E`` episodes from ``START`` with actions
  from a Dirichlet-drawn distribution, drawn independently of the goal (the actions and the
  cells visited say nothing about the goal; only the rewards do).
* ``tokens``: a query cell and transitions ``(s, a, r, s')`` as the tokens of an in-context
  learner: token 0 holds the query, token j + 1 transition j; a cell enters as its coordinates
  ``(row, col) / (n − 1)``, so an unseen goal is a point of a plane already seen.
* ``run_online``: ``K`` episodes of ``H`` steps of a policy that sees the history so far.
* ``oracle``, ``uniform``, ``sweep``: the references in that form.
"""

import jax
import jax.numpy as jnp

NUM_ACTIONS = 5
START = 0  # every episode starts in the corner (row 0, col 0)
# (d_row, d_col) of each action: stay, up, down, left, right
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))


def step(cell: jax.Array, action: jax.Array, side: int) -> jax.Array:
    """Next cell of ``cell`` under ``action`` (same shapes), walls clip the move."""
    moves = jnp.asarray(MOVES)[action]
    row = jnp.clip(cell // side + moves[..., 0], 0, side - 1)
    col = jnp.clip(cell % side + moves[..., 1], 0, side - 1)
    return (row * side + col).astype(jnp.int32)


def distance(cell: jax.Array, goal: jax.Array, side: int) -> jax.Array:
    """Manhattan distance ``|Δrow| + |Δcol|``: the number of steps of a shortest path."""
    return jnp.abs(cell // side - goal // side) + jnp.abs(cell % side - goal % side)


def optimal_action(cell: jax.Array, goal: jax.Array, side: int) -> jax.Array:
    """A shortest-path action: right/left until the column is the goal's, then down/up, then
    stay. Every action it returns lowers ``distance`` by one (or stays on the goal). int32."""
    d_row, d_col = goal // side - cell // side, goal % side - cell % side
    by_row = jnp.where(d_row > 0, 2, jnp.where(d_row < 0, 1, 0))
    return jnp.where(d_col > 0, 4, jnp.where(d_col < 0, 3, by_row)).astype(jnp.int32)


def split_goals(key: jax.Array, side: int, num_heldout: int) -> tuple[jax.Array, jax.Array]:
    """A random split of the ``side²`` cells: (pretraining goals, held-out goals), sorted."""
    perm = jax.random.permutation(key, side * side).astype(jnp.int32)
    return jnp.sort(perm[num_heldout:]), jnp.sort(perm[:num_heldout])


def rollout(actions: jax.Array, goal: jax.Array, side: int, horizon: int):
    """Transitions of fixed ``actions [B, T]`` from ``START`` with a reset every ``horizon``
    steps: ``(s, r, s')``, each ``[B, T]`` (``r_t = 1[s'_t = goal]``)."""

    def body(cell, xs):
        t, a = xs
        cell = jnp.where(t % horizon == 0, START, cell)
        nxt = step(cell, a, side)
        return nxt, (cell, nxt)

    b, t = actions.shape
    _, (s, s2) = jax.lax.scan(body, jnp.zeros((b,), jnp.int32), (jnp.arange(t), actions.T))
    s, s2 = s.T, s2.T
    return s, (s2 == goal[:, None]).astype(jnp.float32), s2


def random_context(key, goal, side: int, horizon: int, num_episodes: int, *, concentration=1.0):
    """A random policy's in-context dataset for each task of ``goal [B]``: ``(s, a, r, s')``,
    each ``[B, E·H]``. The actions follow ``p ~ Dirichlet(concentration · 1)`` per task and
    are drawn from ``key`` alone: the same key gives the same actions for every goal."""
    k_p, k_a = jax.random.split(key)
    b = goal.shape[0]
    probs = jax.random.dirichlet(k_p, jnp.full((NUM_ACTIONS,), concentration), (b,))
    length = num_episodes * horizon
    actions = jax.random.categorical(k_a, jnp.log(probs)[:, None, :], shape=(b, length))
    actions = actions.astype(jnp.int32)
    s, r, s2 = rollout(actions, goal, side, horizon)
    return s, actions, r, s2


def _coords(cell: jax.Array, side: int) -> jax.Array:
    return jnp.stack([cell // side, cell % side], -1).astype(jnp.float32) / max(side - 1, 1)


def num_features() -> int:
    """Token width: query (2), s (2), one-hot a (5), r (1), s' (2), query flag (1)."""
    return 2 + 2 + NUM_ACTIONS + 1 + 2 + 1


def tokens(query, s, a, r, s2, side: int) -> jax.Array:
    """Tokens ``[B, N + 1, F]`` of query cells ``[B]`` and transitions ``[B, N]`` each:
    token 0 is ``[coords(query), 0…, 1]``, token j + 1 is ``[0, 0, coords(s_j), one-hot(a_j),
    r_j, coords(s'_j), 0]``. The output at token j sees the query and the first j transitions."""
    b, n = a.shape
    zeros2 = jnp.zeros((b, n, 2))
    trans = jnp.concatenate(
        [zeros2, _coords(s, side), jax.nn.one_hot(a, NUM_ACTIONS), r[..., None],
         _coords(s2, side), jnp.zeros((b, n, 1))], -1
    )  # fmt: skip
    first = jnp.zeros((b, 1, num_features())).at[:, 0, :2].set(_coords(query, side))
    return jnp.concatenate([first.at[:, 0, -1].set(1.0), trans], 1)


def pretraining_batch(key, goals, batch_size: int, side: int, horizon: int, num_episodes: int,
                      *, concentration: float = 1.0):  # fmt: skip
    """DPT's pretraining data: tokens ``[B, E·H + 1, F]``, labels ``[B]``, goals ``[B]``.

    A goal uniform over ``goals [G]`` (the pretraining goals), a random-policy context
    (``random_context``), a query cell uniform over the grid, and the label
    ``optimal_action(query, goal)``, the same for every prefix of the context.
    """
    k_g, k_c, k_q = jax.random.split(key, 3)
    goal = goals[jax.random.randint(k_g, (batch_size,), 0, goals.shape[0])]
    s, a, r, s2 = random_context(k_c, goal, side, horizon, num_episodes,
                                 concentration=concentration)  # fmt: skip
    query = jax.random.randint(k_q, (batch_size,), 0, side * side)
    return tokens(query, s, a, r, s2, side), optimal_action(query, goal, side), goal


def run_online(policy, goal: jax.Array, key: jax.Array, side: int, horizon: int, episodes: int):
    """``episodes`` episodes of ``horizon`` steps from ``START`` on tasks ``goal [B]``.

    ``policy(cell [B], history, t, key) -> a [B]`` with ``history = (s, a, r, s')`` each
    ``[B, K·H]`` holding the first ``t`` transitions of the run (later entries are zero); the
    completed episodes are the first ``(t // H) · H`` of them.

    Returns:
      (history ``(s, a, r, s')``, return per episode ``[B, K]``).
    """
    b, total = goal.shape[0], episodes * horizon

    def body(carry, xs):
        cell, hist = carry
        t, k = xs
        cell = jnp.where(t % horizon == 0, START, cell)
        a = policy(cell, hist, t, k)
        nxt = step(cell, a, side)
        r = (nxt == goal).astype(jnp.float32)
        hist = tuple(h.at[:, t].set(v) for h, v in zip(hist, (cell, a, r, nxt), strict=True))
        return (nxt, hist), None

    zi, zf = jnp.zeros((b, total), jnp.int32), jnp.zeros((b, total), jnp.float32)
    start = (jnp.full((b,), START, jnp.int32), (zi, zi, zf, zi))
    xs = (jnp.arange(total), jax.random.split(key, total))
    (_, hist), _ = jax.lax.scan(body, start, xs)
    return hist, hist[2].reshape(b, episodes, horizon).sum(-1)


def oracle(cell, history, t, key, *, goal: jax.Array, side: int) -> jax.Array:
    """The optimal policy, told the goal: ``optimal_action``."""
    del history, t, key
    return optimal_action(cell, goal, side)


def uniform(cell, history, t, key) -> jax.Array:
    """Uniformly random actions (the no-learning reference)."""
    del history, t
    return jax.random.randint(key, cell.shape, 0, NUM_ACTIONS).astype(jnp.int32)


def snake_action(cell: jax.Array, side: int) -> jax.Array:
    """The boustrophedon from ``START``: right along even rows, left along odd rows, down at a
    row's end, stay on its last cell; it visits all ``side²`` cells in ``side² − 1`` steps."""
    row, col = cell // side, cell % side
    along = jnp.where(row % 2 == 0, jnp.where(col < side - 1, 4, 2), jnp.where(col > 0, 3, 2))
    return jnp.where((row == side - 1) & (along == 2), 0, along).astype(jnp.int32)


def sweep(cell, history, t, key, *, side: int, horizon: int) -> jax.Array:
    """The best goal-free policy we state: stay one step (a reward then says the start is the
    goal), sweep the grid (``snake_action``) until a reward shows the goal (in this episode or
    an earlier one), then take shortest paths to it.

    It reaches a new cell every step, so under a uniform prior on the goal it finds it at the
    earliest expected step but one; with ``H >= side²`` it finds every goal in its first
    episode (return ``H − i`` for the goal i-th on the snake) and is the oracle from then on."""
    del key
    _, _, r, s2 = history
    seen = (jnp.arange(s2.shape[1]) < t)[None] & (r > 0)
    known = seen.any(-1)
    goal = jnp.take_along_axis(s2, jnp.argmax(seen, -1)[:, None], 1)[:, 0]
    search = jnp.where(t % horizon == 0, 0, snake_action(cell, side))
    return jnp.where(known, optimal_action(cell, goal, side), search).astype(jnp.int32)
