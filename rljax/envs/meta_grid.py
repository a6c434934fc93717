"""A lifetime of gridworld episodes with a hidden goal, with or without recurring structure (#214).

The gridworld half of Rentschler & Roberts 2025 ("Exploitation Is All You Need... for
Exploration", #214). One gymnax episode is one *lifetime* of ``E`` episodes in an ``n x n``
grid (cells ``c = row · n + col``, moves of ``rljax.darkroom``: walls clip a move). Every
episode starts in the corner ``START = 0``. A hidden goal cell ``g`` is drawn uniformly from the
``n² − 1`` other cells when the lifetime starts. A move onto ``g`` pays ``r = 1`` and ends the
episode (the agent is back on ``START``); an episode that has not reached ``g`` after ``L``
moves ends with nothing. The lifetime ends (``terminated``, no bootstrap) when its ``E``-th
episode ends, so it lasts between ``E`` and ``E · L`` steps and pays between 0 and ``E``.

* Structure on (``redraw=False``): ``g`` stays for the whole lifetime, so a goal found in one
  episode can be walked to in the next ones: searching early pays later.
* Structure off (``redraw=True``): a new ``g`` is drawn (uniformly, independently) whenever an
  episode ends, so what an episode reveals says nothing about the next one.

Actions: 0 up, 1 down, 2 left, 3 right. The observation never holds the goal:
``[one-hot(cell) (n²), one-hot(cell the last move reached) (n²), r_{t-1}, 1[episode start],
steps in the episode / L, episodes done / E]``. The second block is zero before the first move;
after a move onto the goal it is the goal while ``cell`` is already ``START`` (the reward says
where it was found, as in the dark room), otherwise it equals ``cell``. A policy without memory
sees one move back; a recurrent one can keep the whole lifetime.
"""

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from rljax import darkroom

# Registered names -> (side n, episodes E, moves per episode L, redraw).
NAMES = {
    "MetaGrid-4x4-v0": (4, 4, 8, False),  # structure on: one goal for the lifetime
    "MetaGrid-4x4-Redraw-v0": (4, 4, 8, True),  # structure off: a new goal every episode
}
START = darkroom.START  # the corner (0, 0)
NUM_ACTIONS = 4
_DARKROOM_ACTION = 1  # action a is darkroom action a + 1 (darkroom's 0 is "stay")


@struct.dataclass
class EnvState(environment.EnvState):
    goal: jax.Array  # hidden goal cell of the current episode (int32)
    cell: jax.Array  # the agent's cell (int32)
    reached: jax.Array  # cell the last move reached, before any return to START (int32)
    last_reward: jax.Array  # reward of the last move (float32; 0 before the first move)
    step: jax.Array  # moves made in the current episode (int32)
    episode: jax.Array  # episodes ended in this lifetime (int32)
    time: jax.Array  # moves made in this lifetime (int32)


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 32  # longest lifetime, E · L moves (set by make)


def move(cell: jax.Array, action: jax.Array, side: int) -> jax.Array:
    """Next cell after ``action`` (0 up, 1 down, 2 left, 3 right); walls clip the move."""
    return darkroom.step(cell, action + _DARKROOM_ACTION, side)


def shortest_path_action(cell: jax.Array, goal: jax.Array, side: int) -> jax.Array:
    """An action that lowers the Manhattan distance to ``goal`` by one (column first, then
    row; ``darkroom.optimal_action``); on the goal itself it returns 0 (unused there)."""
    a = darkroom.optimal_action(cell, goal, side)
    return jnp.maximum(a - _DARKROOM_ACTION, 0).astype(jnp.int32)


def snake_order(side: int) -> jax.Array:
    """The cells in boustrophedon order from ``START``: right along even rows, left along odd
    rows. Consecutive cells are neighbours, so following it visits a new cell every move."""
    rows = [[r * side + c for c in (range(side) if r % 2 == 0 else reversed(range(side)))]
            for r in range(side)]  # fmt: skip
    return jnp.asarray([c for row in rows for c in row], jnp.int32)


def sweep_action(cell, visited, known, goal, side: int) -> jax.Array:
    """The exploring reference: walk a shortest path to the goal once it is ``known``, else to
    the first cell of ``snake_order`` not yet ``visited`` in the lifetime.

    Args:
      cell: the agent's cells ``[B]``.
      visited: ``[B, n²]`` bool, the cells visited (or reached) so far in the lifetime.
      known: ``[B]`` bool, a reward has shown the goal.
      goal: ``[B]`` the goal shown by that reward (read only where ``known``).
    """
    order = snake_order(side)
    open_ = ~visited[:, order]
    target = order[jnp.argmax(open_, -1)]
    return shortest_path_action(cell, jnp.where(known, goal, target), side)


class MetaGrid(environment.Environment[EnvState, EnvParams]):
    """``E`` episodes of at most ``L`` moves in an ``n x n`` grid with a hidden goal."""

    def __init__(self, side: int, episodes: int, length: int, redraw: bool):
        super().__init__()
        for field, value, low in (("side", side, 2), ("episodes", episodes, 1),
                                  ("length", length, 1)):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                allowed = f"an integer >= {low}"
                raise ValueError(f"meta_grid.{field}={value!r} is invalid; allowed: {allowed}")
        self.side, self.episodes, self.length = side, episodes, length
        self.redraw = bool(redraw)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams(max_steps_in_episode=self.episodes * self.length)

    def draw_goal(self, key: jax.Array) -> jax.Array:
        """A goal uniform over the cells other than ``START``."""
        return jax.random.randint(key, (), 1, self.side * self.side).astype(jnp.int32)

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        reached = move(state.cell, action, self.side)
        hit = reached == state.goal
        step = state.step + 1
        over = hit | (step >= self.length)  # the episode ends: back to START
        goal = state.goal
        if self.redraw:  # a static choice: structure off draws a new goal for every episode
            goal = jnp.where(over, self.draw_goal(key), goal)
        state = EnvState(
            goal=goal,
            cell=jnp.where(over, START, reached).astype(jnp.int32),
            reached=reached,
            last_reward=hit.astype(jnp.float32),
            step=jnp.where(over, 0, step).astype(jnp.int32),
            episode=state.episode + over.astype(jnp.int32),
            time=state.time + 1,
        )
        terminated = self.is_terminated(state, params)
        info = {"discount": self.discount(state, params)}
        obs = jax.lax.stop_gradient(self.get_obs(state, params))
        return obs, state, state.last_reward, terminated, info

    def reset_env(self, key, params: EnvParams):
        zero = jnp.zeros((), jnp.int32)
        state = EnvState(
            goal=self.draw_goal(key), cell=zero + START, reached=zero,
            last_reward=jnp.zeros((), jnp.float32), step=zero, episode=zero, time=zero,
        )  # fmt: skip
        return self.get_obs(state, params), state

    def get_obs(self, state: EnvState, params: EnvParams, key=None) -> jax.Array:
        cells = self.side * self.side
        moved = (state.time > 0).astype(jnp.float32)  # before the first move nothing was reached
        return jnp.concatenate([
            jax.nn.one_hot(state.cell, cells),
            jax.nn.one_hot(state.reached, cells) * moved,
            jnp.stack([
                state.last_reward,
                (state.step == 0).astype(jnp.float32),
                state.step.astype(jnp.float32) / self.length,
                state.episode.astype(jnp.float32) / self.episodes,
            ]),
        ])  # fmt: skip

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.episode >= self.episodes

    @property
    def name(self) -> str:
        return f"MetaGrid-{self.side}x{self.side}{'-Redraw' if self.redraw else ''}"

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def observation_space(self, params: EnvParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (2 * self.side * self.side + 4,), jnp.float32)


def make(name: str):
    """``(env, params)`` for a name in ``NAMES``; the caller checked the name."""
    side, episodes, length, redraw = NAMES[name]
    env = MetaGrid(side, episodes, length, redraw)
    return env, env.default_params
