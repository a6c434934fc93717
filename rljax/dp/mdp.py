"""Tabular MDPs as pytrees, with validation at the boundary.

A `TabularMDP` holds arrays only, so a batch of same-shape MDPs is one pytree with a leading axis
and every solver in `rljax.dp` can be `jax.vmap`-ed over it. The horizon is static (a pytree meta
field): it fixes the length of backward-induction scans, so changing it recompiles, while changing
any array (including the discount) does not.

Conventions (used by every module in `rljax.dp`):
  * Shapes: S states, A actions, K reward atoms per transition.
  * A transition (s, a) -> s' happens with probability `transitions[s, a, s']` and pays reward
    `reward_values[s, a, s', k]` with probability `reward_probs[s, a, s', k]`.
  * Return G = sum_t discount^t r_t. With `horizon=H` the episode has exactly H steps
    (t = 0 .. H-1) and values are time-indexed, V_t with V_H = 0; with `horizon=None` it is the
    infinite discounted sum (discount < 1 required).
  * Policies are probabilities: [S, A] (stationary) or [H, S, A] (time-indexed).
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np

_ROW_ATOL = 1e-5


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["transitions", "reward_values", "reward_probs", "discount", "initial_dist"],
    meta_fields=["horizon"],
)
@dataclasses.dataclass(frozen=True)
class TabularMDP:
    """A finite MDP with a small discrete reward distribution per transition.

    Attributes:
      transitions: [S, A, S'] row-stochastic P(s' | s, a).
      reward_values: [S, A, S', K] reward atoms of each transition.
      reward_probs: [S, A, S', K] probabilities of those atoms (each [s, a, s'] row sums to 1).
      discount: [] discount γ in [0, 1].
      initial_dist: [S] distribution of the initial state.
      horizon: static int H (finite horizon, H steps) or None (infinite, γ < 1).
    """

    transitions: jax.Array
    reward_values: jax.Array
    reward_probs: jax.Array
    discount: jax.Array
    initial_dist: jax.Array
    horizon: int | None = None

    @property
    def num_states(self) -> int:
        return self.transitions.shape[-1]

    @property
    def num_actions(self) -> int:
        return self.transitions.shape[-2]

    @property
    def num_reward_atoms(self) -> int:
        return self.reward_values.shape[-1]


def _fail(field: str, value, allowed: str):
    raise ValueError(f"TabularMDP.{field}: got {value}; allowed: {allowed}.")


def _check_stochastic(name: str, x: np.ndarray, axis: int = -1):
    if np.any(~np.isfinite(x)) or np.any(x < -_ROW_ATOL):
        _fail(name, f"min entry {np.nanmin(x):.4g}", "finite non-negative probabilities")
    sums = x.sum(axis=axis)
    worst = np.unravel_index(np.argmax(np.abs(sums - 1.0)), sums.shape)
    if abs(sums[worst] - 1.0) > _ROW_ATOL:
        _fail(
            name,
            f"row {tuple(int(i) for i in worst)} sums to {sums[worst]:.6g}",
            f"rows summing to 1 (atol {_ROW_ATOL})",
        )


def make_mdp(
    transitions,
    rewards,
    discount: float,
    initial_dist=None,
    *,
    horizon: int | None = None,
    reward_probs=None,
) -> TabularMDP:
    """Validates the inputs (in NumPy, before anything compiles) and builds a `TabularMDP`.

    Args:
      transitions: [S, A, S'] transition probabilities; every [s, a] row must sum to 1.
      rewards: [S, A] (reward of (s, a)), [S, A, S'] (reward of (s, a, s')) or [S, A, S', K]
        reward atoms (then `reward_probs` [S, A, S', K] is required).
      discount: γ in [0, 1]; γ = 1 needs a finite `horizon`.
      initial_dist: [S] initial-state distribution; defaults to state 0.
      horizon: None (infinite horizon) or a positive int H.
      reward_probs: [S, A, S', K] probabilities of the reward atoms.

    Returns:
      A float32 `TabularMDP`.
    """
    p = np.asarray(transitions, dtype=np.float64)
    if p.ndim != 3 or p.shape[0] != p.shape[2] or 0 in p.shape:
        _fail("transitions", f"shape {p.shape}", "[S, A, S] with S, A >= 1")
    num_states, num_actions, _ = p.shape
    _check_stochastic("transitions", p)

    r = np.asarray(rewards, dtype=np.float64)
    sa, sas = (num_states, num_actions), (num_states, num_actions, num_states)
    if r.shape == sa:
        r = np.broadcast_to(r[:, :, None], sas)
    if r.shape == sas:
        if reward_probs is not None:
            _fail("reward_probs", "an array", "None when rewards has shape [S, A] or [S, A, S]")
        r, q = r[..., None], np.ones(sas + (1,))
    elif r.ndim == 4 and r.shape[:3] == sas:
        if reward_probs is None:
            _fail("reward_probs", None, f"an array of shape {r.shape} when rewards is [S, A, S, K]")
        q = np.asarray(reward_probs, dtype=np.float64)
        if q.shape != r.shape:
            _fail("reward_probs", f"shape {q.shape}", f"shape {r.shape} (same as rewards)")
        _check_stochastic("reward_probs", q)
    else:
        _fail("rewards", f"shape {r.shape}", f"{list(sa)}, {list(sas)} or {list(sas)} + [K]")
    if not np.all(np.isfinite(r)):
        _fail("rewards", "non-finite entries", "finite numbers")

    if not 0.0 <= float(discount) <= 1.0:
        _fail("discount", discount, "a number in [0, 1]")
    if horizon is not None and (not isinstance(horizon, int | np.integer) or horizon < 1):
        _fail("horizon", horizon, "None or an int >= 1")
    if horizon is None and float(discount) >= 1.0:
        _fail("discount", discount, "< 1 when horizon is None (infinite horizon)")

    if initial_dist is None:
        mu = np.zeros(num_states)
        mu[0] = 1.0
    else:
        mu = np.asarray(initial_dist, dtype=np.float64)
        if mu.shape != (num_states,):
            _fail("initial_dist", f"shape {mu.shape}", f"[{num_states}]")
        _check_stochastic("initial_dist", mu)

    return TabularMDP(
        transitions=jnp.asarray(p, jnp.float32),
        reward_values=jnp.asarray(r, jnp.float32),
        reward_probs=jnp.asarray(q, jnp.float32),
        discount=jnp.asarray(discount, jnp.float32),
        initial_dist=jnp.asarray(mu, jnp.float32),
        horizon=None if horizon is None else int(horizon),
    )


def expected_reward(mdp: TabularMDP) -> jax.Array:
    """r̄(s, a) = Σ_{s', k} P(s'|s, a) p_k(s, a, s') r_k(s, a, s'). Returns [S, A]."""
    chex.assert_rank(mdp.transitions, 3)
    mean_r = jnp.sum(mdp.reward_values * mdp.reward_probs, axis=-1)
    return jnp.sum(mdp.transitions * mean_r, axis=-1)


def return_bounds(mdp: TabularMDP) -> tuple[jax.Array, jax.Array]:
    """Bounds (G_min, G_max) on the return (and on every partial sum) of any policy.

    G_min = min(r_min, 0) · Σ_t γ^t and G_max = max(r_max, 0) · Σ_t γ^t. Returns two [] arrays.
    """
    gamma = mdp.discount
    if mdp.horizon is None:
        scale = 1.0 / (1.0 - gamma)
    else:
        scale = jnp.sum(gamma ** jnp.arange(mdp.horizon))
    r_min = jnp.minimum(jnp.min(mdp.reward_values), 0.0)
    r_max = jnp.maximum(jnp.max(mdp.reward_values), 0.0)
    return r_min * scale, r_max * scale


def stack_mdps(mdps: list[TabularMDP]) -> TabularMDP:
    """Stacks same-shape, same-horizon MDPs into one batched pytree (leading axis B) for vmap."""
    horizons = {m.horizon for m in mdps}
    if len(horizons) != 1:
        _fail("horizon", sorted(horizons, key=str), "the same value for every stacked MDP")
    return jax.tree.map(lambda *xs: jnp.stack(xs), *mdps)


def as_time_indexed(policy: jax.Array, horizon: int) -> jax.Array:
    """Broadcasts a stationary policy [S, A] to [H, S, A]; passes [H, S, A] through."""
    if policy.ndim == 2:
        return jnp.broadcast_to(policy, (horizon,) + policy.shape)
    chex.assert_rank(policy, 3)
    return policy
