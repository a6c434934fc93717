"""Tabular MDP instances: chains, gambles, a slippery cliff, random MDPs, trees, homeostasis.

Every builder except `random_mdp` runs on the host with NumPy and goes through `make_mdp`'s
validation; `random_mdp` is pure JAX, so `jax.vmap(random_mdp_fn)(keys)` draws a batch of MDPs.
Instances meant for stock augmentation (gamble chain, cliff, homeostasis) use γ = 1, a finite
horizon and integer rewards, so every reachable stock lies on an integer grid and stock-augmented
DP on that grid is exact.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from rljax.dp.mdp import TabularMDP, make_mdp

CLIFF_ACTIONS = ("up", "right", "down", "left")


def chain(
    num_states: int = 5, *, slip: float = 0.1, discount: float = 0.9, horizon: int | None = None
) -> TabularMDP:
    """A RiverSwim-like chain: `left` (action 0) is safe, `right` (action 1) slips back.

    `right` moves one step right w.p. 1 - slip and one step left otherwise; `left` always moves
    left. Reward 1 for `right` at the last state, 0.1 for `left` at state 0, 0 elsewhere.
    """
    if num_states < 2:
        raise ValueError(f"chain.num_states: got {num_states}; allowed: an int >= 2.")
    p = np.zeros((num_states, 2, num_states))
    r = np.zeros((num_states, 2))
    for s in range(num_states):
        p[s, 0, max(s - 1, 0)] = 1.0
        p[s, 1, min(s + 1, num_states - 1)] += 1.0 - slip
        p[s, 1, max(s - 1, 0)] += slip
    r[0, 0] = 0.1
    r[num_states - 1, 1] = 1.0
    return make_mdp(p, r, discount, horizon=horizon)


def gamble_chain(
    length: int = 5,
    *,
    safe_reward: float = 1.0,
    risky_rewards: tuple[float, ...] = (5.0, -10.0),
    risky_probs: tuple[float, ...] = (0.95, 0.05),
) -> TabularMDP:
    """Each of `length` steps offers a safe steady reward or a heavy-tailed gamble.

    States 0 .. length - 1 are the step index; state `length` is absorbing with reward 0.
    Action 0 (safe) pays `safe_reward`; action 1 (risky) pays `risky_rewards[k]` w.p.
    `risky_probs[k]`. The default gamble pays 4.25 on average (vs 1) but loses 10 w.p. 0.05: a
    rare, large loss that the lower tail (CVaR) sees and the mean hides. γ = 1 and horizon =
    `length`, so the return is the plain sum of rewards.
    """
    if len(risky_rewards) != len(risky_probs):
        raise ValueError(
            f"gamble_chain.risky_probs: got {len(risky_probs)} entries; allowed: "
            f"{len(risky_rewards)} (one per risky reward)."
        )
    num_states, num_atoms = length + 1, len(risky_rewards)
    p = np.zeros((num_states, 2, num_states))
    r = np.zeros((num_states, 2, num_states, num_atoms))
    q = np.zeros((num_states, 2, num_states, num_atoms))
    q[..., 0] = 1.0
    for s in range(num_states):
        nxt = min(s + 1, length)
        p[s, :, nxt] = 1.0
        if s < length:
            r[s, 0, :, 0] = safe_reward
            r[s, 1, :, :] = risky_rewards
            q[s, 1, :, :] = risky_probs
    return make_mdp(p, r, 1.0, horizon=length, reward_probs=q)


def cliff_gridworld(
    rows: int = 4,
    cols: int = 6,
    *,
    slip: float = 0.1,
    step_reward: float = -1.0,
    cliff_reward: float = -10.0,
    horizon: int = 16,
) -> TabularMDP:
    """A slippery cliff walk (Sutton & Barto, Example 6.6) with an absorbing terminal state.

    Start at the bottom-left cell, goal at the bottom-right; the bottom-row cells between them are
    the cliff. Actions are `CLIFF_ACTIONS`; w.p. `slip` the action is replaced by a uniformly
    random one. Every step pays `step_reward`; stepping into the cliff additionally pays
    `cliff_reward` and ends the episode; reaching the goal ends it. State index = row * cols + col,
    plus the terminal state rows * cols. γ = 1 with the given horizon.
    """
    num_cells = rows * cols
    terminal = num_cells
    moves = ((-1, 0), (0, 1), (1, 0), (0, -1))
    goal = (rows - 1) * cols + cols - 1
    cliff = {(rows - 1) * cols + c for c in range(1, cols - 1)}
    p = np.zeros((num_cells + 1, 4, num_cells + 1))
    r = np.zeros((num_cells + 1, 4, num_cells + 1))
    p[terminal, :, terminal] = 1.0
    for cell in range(num_cells):
        if cell in cliff or cell == goal:
            p[cell, :, terminal] = 1.0  # unreachable as a start; kept valid
            continue
        row, col = divmod(cell, cols)
        for a in range(4):
            for b in range(4):
                prob = (1.0 - slip) * (a == b) + slip / 4.0
                nr = min(max(row + moves[b][0], 0), rows - 1)
                nc = min(max(col + moves[b][1], 0), cols - 1)
                nxt = nr * cols + nc
                reward = step_reward + (cliff_reward if nxt in cliff else 0.0)
                # Falling ends the episode at once; the goal cell pays nothing and then ends it.
                dest = terminal if nxt in cliff else nxt
                p[cell, a, dest] += prob
                r[cell, a, dest] = reward
    start = np.eye(num_cells + 1)[(rows - 1) * cols]
    return make_mdp(p, r, 1.0, horizon=horizon, initial_dist=start)


@functools.partial(
    jax.jit,
    static_argnames=(
        "num_states",
        "num_actions",
        "discount",
        "num_reward_atoms",
        "horizon",
        "concentration",
    ),
)
def random_mdp(
    key: jax.Array,
    num_states: int,
    num_actions: int,
    *,
    discount: float = 0.9,
    num_reward_atoms: int = 1,
    horizon: int | None = None,
    concentration: float = 0.5,
) -> TabularMDP:
    """A random MDP: Dirichlet(`concentration`) transitions, U[0, 1] reward atoms, uniform start.

    Pure JAX and valid by construction, so it can be vmapped over keys (shapes are static).
    """
    k_p, k_r, k_q = jax.random.split(key, 3)
    shape = (num_states, num_actions)
    transitions = jax.random.dirichlet(k_p, jnp.full(num_states, concentration), shape)
    reward_values = jax.random.uniform(k_r, shape + (num_states, num_reward_atoms))
    reward_probs = jax.random.dirichlet(k_q, jnp.ones(num_reward_atoms), shape + (num_states,))
    return TabularMDP(
        transitions=transitions.astype(jnp.float32),
        reward_values=reward_values,
        reward_probs=reward_probs.astype(jnp.float32),
        discount=jnp.asarray(discount, jnp.float32),
        initial_dist=jnp.full(num_states, 1.0 / num_states, jnp.float32),
        horizon=horizon,
    )


def tree_mdp(
    seed: int,
    *,
    depth: int = 4,
    branching: int = 3,
    success_prob: float = 0.2,
    chance_prob: float = 0.0,
) -> TabularMDP:
    """A deterministic tree with binary terminal rewards (ROVER's setting), or a noisy variant.

    Nodes are numbered breadth-first; action a at node n leads to child `branching * n + a + 1`.
    Entering a leaf (depth `depth`) pays 1 if the leaf is labelled a success (each leaf is, i.i.d.
    w.p. `success_prob`) and 0 otherwise; leaves then move to an absorbing terminal state.
    With `chance_prob > 0` each action instead leads to a uniformly random child w.p.
    `chance_prob`, which breaks ROVER's theorem. γ = 1, horizon = depth.
    """
    rng = np.random.default_rng(seed)
    num_internal = (branching**depth - 1) // (branching - 1)
    num_nodes = (branching ** (depth + 1) - 1) // (branching - 1)
    terminal = num_nodes
    labels = np.zeros(num_nodes)
    labels[num_internal:] = rng.random(num_nodes - num_internal) < success_prob
    p = np.zeros((num_nodes + 1, branching, num_nodes + 1))
    r = np.zeros((num_nodes + 1, branching, num_nodes + 1))
    p[num_internal:, :, terminal] = 1.0
    for n in range(num_internal):
        children = branching * n + 1 + np.arange(branching)
        for a in range(branching):
            p[n, a, children] += chance_prob / branching
            p[n, a, children[a]] += 1.0 - chance_prob
            r[n, a, children] = labels[children]
    return make_mdp(p, r, 1.0, horizon=depth)


def homeostasis(horizon: int = 8) -> TabularMDP:
    """Keep an energy level near its start: rewards are the changes in energy (γ = 1).

    State 0: no food around; state 1: food around. Actions:
      0 rest: energy -1 w.p. 0.5 (metabolism) else 0; food appears w.p. 0.3.
      1 eat: with food, +2 w.p. 0.7 or +1 w.p. 0.3, and the food is gone w.p. 0.6;
        without food, -1.
      2 forage: -1; food appears w.p. 0.7 (stays if present).
    The stock is the energy change so far; a homeostatic objective scores c + G near a target.
    """
    p = np.zeros((2, 3, 2))
    r = np.zeros((2, 3, 2, 2))
    q = np.zeros((2, 3, 2, 2))
    q[..., 0] = 1.0
    p[0, 0] = [0.7, 0.3]
    p[1, 0] = [0.0, 1.0]
    r[:, 0, :, :] = [-1.0, 0.0]
    q[:, 0, :, :] = [0.5, 0.5]
    p[0, 1] = [1.0, 0.0]
    r[0, 1, :, 0] = -1.0
    p[1, 1] = [0.6, 0.4]
    r[1, 1, :, :] = [2.0, 1.0]
    q[1, 1, :, :] = [0.7, 0.3]
    p[0, 2] = [0.3, 0.7]
    p[1, 2] = [0.0, 1.0]
    r[:, 2, :, 0] = -1.0
    return make_mdp(p, r, 1.0, horizon=horizon, reward_probs=q)
