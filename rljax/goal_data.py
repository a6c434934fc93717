"""Goal-conditioned gridworld datasets whose test (start, goal) pairs never share a trajectory.

The stitching test of Ghugare et al. 2024 ("Closing the Gap between TD Learning and Supervised
Learning: A Generalisation Point of View", #24): every training trajectory stays inside two
adjacent rooms of a corridor of rooms, so a start in room i and a goal in room j with
``|i - j| >= 2`` never appear in one trajectory; reaching such a goal needs pieces of several
trajectories joined at the states they share (the doors and the middle rooms).

* ``rooms``: ``num_rooms`` square rooms of ``room_size`` x ``room_size`` cells in a row, walls
  between them, one door cell per wall (alternately in the top and the bottom row); 4 actions
  (up, right, down, left), a move into a wall stays put. Deterministic.
* ``collect``: trajectories of an ε-noisy shortest-path walker between a start and a goal drawn
  in the union of rooms ``(i, i + 1)`` and their door; its moves never leave that union (a noisy
  move is drawn among the moves that stay inside), so every trajectory covers two rooms.
* ``relabel``: (s, a, s', g) samples from the trajectories, goals chosen by one of ``SCHEMES``:
  ``"future"`` (a later state of the same trajectory: hindsight relabelling, the goal-conditioned
  BC data), ``"waypoint"`` (temporal augmentation: with probability ``p_aug`` a later state w of
  the same trajectory is a waypoint, another trajectory through w is picked, and the goal is a
  state from w on along it; otherwise, or when no other trajectory visits w, ``"future"``),
  ``"future_random"`` (``"future"`` or, with probability ``p_aug``, any state of the data: the
  goals a goal-conditioned Q-learner bootstraps towards).
* ``to_dataset``: the samples as an ``rljax.offline_data.Dataset`` for ``rljax.agents.offline``:
  obs = one-hot(s) ++ one-hot(g), reward and termination 1 when s' = g.
* ``success``: the share of (start, goal) pairs a greedy goal-conditioned policy reaches within a
  horizon, on the true dynamics (``jax``, vmappable over learners).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rljax import offline_data

MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # up, right, down, left
SCHEMES = ("future", "waypoint", "future_random")


class Rooms(NamedTuple):
    """A corridor of rooms as a deterministic tabular environment (N free cells, 4 actions)."""

    next_state: np.ndarray  # [N, 4] int: s' of (s, a)
    room: np.ndarray  # [N] int: room of each cell; -1 - k for the door between rooms k, k + 1
    coords: np.ndarray  # [N, 2] (row, col)
    num_rooms: int

    @property
    def num_states(self) -> int:
        return self.next_state.shape[0]


def rooms(num_rooms: int = 4, room_size: int = 4) -> Rooms:
    """The corridor of ``num_rooms`` rooms (see the module docstring).

    Raises:
      ValueError: ``num_rooms < 3`` (no pair of rooms two apart) or ``room_size < 2``.
    """
    if int(num_rooms) < 3:
        raise ValueError(f"num_rooms={num_rooms!r} is invalid; allowed: an integer >= 3")
    if int(room_size) < 2:
        raise ValueError(f"room_size={room_size!r} is invalid; allowed: an integer >= 2")
    width = num_rooms * room_size + num_rooms - 1
    cells, room = [], []
    for c in range(width):
        k, offset = divmod(c, room_size + 1)
        for r in range(room_size):
            if offset < room_size:
                cells.append((r, c))
                room.append(k)
            elif r == (0 if k % 2 == 0 else room_size - 1):  # the door of wall k
                cells.append((r, c))
                room.append(-1 - k)
    index = {rc: i for i, rc in enumerate(cells)}
    nxt = np.zeros((len(cells), 4), np.int32)
    for i, (r, c) in enumerate(cells):
        for a, (dr, dc) in enumerate(MOVES):
            nxt[i, a] = index.get((r + dr, c + dc), i)
    return Rooms(nxt, np.asarray(room, np.int32), np.asarray(cells, np.int32), int(num_rooms))


def distances(next_state: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """Shortest-path lengths ``[N, N]`` (``d[s, g]``) by breadth-first search, moving only
    through ``allowed`` cells (default all); unreachable pairs get a large number."""
    n = next_state.shape[0]
    allowed = np.ones(n, bool) if allowed is None else np.asarray(allowed, bool)
    big = 10 * n
    d = np.full((n, n), big, np.int64)
    for g in np.flatnonzero(allowed):
        d[g, g] = 0
        for level in range(n):
            # cells one move from a cell at distance `level`, not yet reached
            new = allowed & (d[:, g] == big) & (d[next_state, g].min(1) == level)
            if not new.any():
                break
            d[new, g] = level + 1
    return d


def region(env: Rooms, k: int) -> np.ndarray:
    """Cells ``[N]`` bool of rooms k and k + 1 and the door between them."""
    return (env.room == k) | (env.room == k + 1) | (env.room == -1 - k)


def collect(env: Rooms, rng: np.random.Generator, per_region: int, *, eps: float,
            max_len: int) -> list[np.ndarray]:  # fmt: skip
    """``per_region`` trajectories in each two-room region (see the module docstring).

    Returns:
      A list of ``[T + 1, 2]`` int arrays: column 0 the states s_0..s_T, column 1 the actions
      a_0..a_{T-1} (the last row's action is -1). A trajectory ends at its goal or ``max_len``.
    """
    trajs = []
    for k in range(env.num_rooms - 1):
        allowed = region(env, k)
        d = distances(env.next_state, allowed)
        cells = np.flatnonzero(allowed)
        inside = allowed[env.next_state]  # [N, 4] moves that stay in the region
        for _ in range(per_region):
            s, g = rng.choice(cells, 2, replace=False)
            states, actions = [s], []
            while s != g and len(actions) < max_len:
                if rng.random() < eps:
                    a = rng.choice(np.flatnonzero(inside[s]))
                else:
                    a = rng.choice(np.flatnonzero(d[env.next_state[s], g] < d[s, g]))
                s = env.next_state[s, a]
                states.append(s)
                actions.append(a)
            trajs.append(np.stack([states, [*actions, -1]], 1).astype(np.int32))
    return trajs


def co_occurring(trajs: list[np.ndarray], pairs: np.ndarray) -> np.ndarray:
    """``[P]`` bool: whether start and goal of each pair ``[P, 2]`` lie on one trajectory."""
    visits = [set(t[:, 0].tolist()) for t in trajs]
    return np.asarray([any(int(s) in v and int(g) in v for v in visits) for s, g in pairs])


def unseen_pairs(env: Rooms) -> np.ndarray:
    """All (start, goal) ``[P, 2]`` with start and goal in rooms at least two apart."""
    cells = np.flatnonzero(env.room >= 0)
    s, g = np.meshgrid(cells, cells, indexing="ij")
    s, g = s.ravel(), g.ravel()
    keep = np.abs(env.room[s] - env.room[g]) >= 2
    return np.stack([s[keep], g[keep]], 1).astype(np.int32)


def seen_pairs(trajs: list[np.ndarray], rng: np.random.Generator, num: int) -> np.ndarray:
    """``num`` (start, later state) pairs ``[num, 2]`` of random trajectories (in distribution)."""
    out = []
    while len(out) < num:
        t = trajs[rng.integers(len(trajs))][:, 0]
        if len(t) < 2:
            continue
        i = rng.integers(len(t) - 1)
        out.append((t[i], t[rng.integers(i + 1, len(t))]))
    return np.asarray(out, np.int32)


def relabel(trajs: list[np.ndarray], rng: np.random.Generator, num: int, scheme: str, *,
            p_aug: float = 0.5) -> np.ndarray:  # fmt: skip
    """``num`` samples ``[num, 4]`` of (s, a, s', g), transitions drawn uniformly (see
    ``SCHEMES`` in the module docstring for the goal)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r} is unknown; valid: {', '.join(SCHEMES)}")
    if not 0 <= p_aug <= 1:
        raise ValueError(f"p_aug={p_aug!r} is invalid; allowed: in [0, 1]")
    lengths = np.asarray([len(t) - 1 for t in trajs])
    usable = np.flatnonzero(lengths > 0)
    starts = np.concatenate([[0], np.cumsum(lengths[usable])])
    where = {}  # state -> [(trajectory, position)]
    for j, t in enumerate(trajs):
        for m, s in enumerate(t[:, 0]):
            where.setdefault(int(s), []).append((j, m))
    all_states = np.concatenate([t[:, 0] for t in trajs])
    flat = rng.integers(0, starts[-1], num)
    out = np.zeros((num, 4), np.int32)
    for n, f in enumerate(flat):
        k = np.searchsorted(starts, f, side="right") - 1
        t = trajs[usable[k]]
        i = f - starts[k]
        goal = t[rng.integers(i + 1, len(t)), 0]
        if scheme == "waypoint" and rng.random() < p_aug:
            others = [(j, m) for j, m in where[int(goal)] if j != usable[k]]
            if others:
                j, m = others[rng.integers(len(others))]
                goal = trajs[j][rng.integers(m, len(trajs[j])), 0]
        elif scheme == "future_random" and rng.random() < p_aug:
            goal = all_states[rng.integers(len(all_states))]
        out[n] = (t[i, 0], t[i, 1], t[i + 1, 0], goal)
    return out


def observe(s: jax.Array, g: jax.Array, num_states: int) -> jax.Array:
    """one-hot(s) ++ one-hot(g): ``[..., 2 N]`` float32."""
    return jnp.concatenate(
        [jax.nn.one_hot(s, num_states), jax.nn.one_hot(g, num_states)], -1
    ).astype(jnp.float32)


def to_dataset(samples: np.ndarray, num_states: int) -> offline_data.Dataset:
    """(s, a, s', g) samples ``[M, 4]`` as a uniformly sampled offline ``Dataset``: reward 1 and
    termination at s' = g; ``episode_return`` holds that reward (no episode returns here)."""
    s, a, s2, g = (jnp.asarray(samples[:, k]) for k in range(4))
    hit = (s2 == g).astype(jnp.float32)
    m = samples.shape[0]
    return offline_data.Dataset(
        obs=observe(s, g, num_states),
        action=a.astype(jnp.int32),
        reward=hit,
        next_obs=observe(s2, g, num_states),
        terminated=hit,
        episode_return=hit,
        cdf=jnp.asarray(np.arange(1, m + 1) / m, jnp.float32),
    )


def success(next_state: jax.Array, policy, pairs: jax.Array, horizon: int) -> jax.Array:
    """``[P]`` float32: 1 where the greedy ``policy(obs [P, 2N]) -> actions [P]`` reaches the
    goal of (start, goal) ``pairs [P, 2]`` within ``horizon`` steps on the true dynamics."""
    n = next_state.shape[0]
    goal = pairs[:, 1]

    def body(carry, _):
        s, done = carry
        a = policy(observe(s, goal, n))
        s = jnp.where(done, s, next_state[s, a])
        return (s, done | (s == goal)), None

    start = (pairs[:, 0], pairs[:, 0] == goal)
    (_, done), _ = jax.lax.scan(body, start, None, length=horizon)
    return done.astype(jnp.float32)


def tabular_q(samples: np.ndarray, num_states: int, *, gamma: float,
              iterations: int) -> np.ndarray:  # fmt: skip
    """Goal-conditioned Q-iteration on the samples themselves: the TD fixed point of the data.

    ``Q(s, a, g) ← mean over samples (s, a, s', g) of [r + γ (1 − r) max_a' Q(s', a', g)]``,
    r = 1[s' = g]; a (s, a, g) no sample has stays 0 (pessimistic). Returns ``Q [N, 4, N]``.
    """
    s, a, s2, g = (samples[:, k] for k in range(4))
    r = (s2 == g).astype(np.float64)
    count = np.zeros((num_states, 4, num_states))
    np.add.at(count, (s, a, g), 1.0)
    q = np.zeros_like(count)
    for _ in range(iterations):
        y = r + gamma * (1.0 - r) * q.max(1)[s2, g]
        total = np.zeros_like(q)
        np.add.at(total, (s, a, g), y)
        q = total / np.maximum(count, 1.0)
    return q


def table_policy(q: jax.Array):
    """The greedy policy ``argmax_a Q[s, a, g]`` of a table, on one-hot(s) ++ one-hot(g) obs."""
    n = q.shape[0]
    return lambda obs: jnp.argmax(
        q[jnp.argmax(obs[:, :n], -1), :, jnp.argmax(obs[:, n:], -1)], -1
    ).astype(jnp.int32)
