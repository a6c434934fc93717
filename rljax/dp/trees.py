"""Full b-ary trees stored level by level: exact DP for ROVER's setting without an S×A×S' table.

A tree of depth D and branching b has b^d nodes at level d (d = 0 is the root) and b^D leaves.
Node n of level d, action a, leads to child ``n·b + a`` of level d + 1 (row-major), so the values
of level d + 1 reshaped to ``[b^d, b]`` are the deterministic q-values of level d. Rewards are
paid on entering a leaf only (terminal rewards, γ = 1), as in He et al. 2025, "Random Policy
Valuation is Enough for LLM Reasoning with Verifiable Rewards" (ROVER, arXiv 2509.24981).

Shapes (pytrees of per-level arrays, so everything jits and vmaps over a batch of trees):
  * ``leaf_rewards``: [b^D].
  * q-values and policies: a tuple of D arrays, level d: [b^d, b] (policies are probabilities).
  * ``transitions`` (optional): a tuple of D arrays, level d: [b^d, b, b], P(child c | n, a);
    ``None`` is the deterministic tree.

The dense `TabularMDP` of the same tree (`rljax.dp.tree_mdp` numbers nodes the same way,
breadth first) needs (b^{D+1})² b floats; these functions need O(b^{D+1}) (b^3 per node with
``transitions``). tests/dp/test_dp_trees.py checks them against `rljax.dp` on small trees.

Backward DP, V_D = r, for d = D-1 … 0:
  Q_d(n, a) = Σ_c P_d(c | n, a) V_{d+1}(n·b + c)      (= V_{d+1}(n·b + a) when deterministic)
  V_d(n) = mean_a Q_d(n, a)   (uniform policy π_u: Q^{π_u}, ROVER's Q)
         = max_a Q_d(n, a)    (optimal: Q*)
         = Σ_a π_d(a|n) Q_d(n, a)   (any policy π: Q^π).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

Levels = tuple[jax.Array, ...]


def num_nodes(branching: int, depth: int) -> int:
    """Nodes of a full tree, leaves included: (b^{D+1} - 1) / (b - 1)."""
    return (branching ** (depth + 1) - 1) // (branching - 1)


def _depth(leaf_rewards: jax.Array, branching: int) -> int:
    size = leaf_rewards.shape[-1]
    depth = round(np.log(size) / np.log(branching))
    if branching < 2 or branching**depth != size:
        raise ValueError(
            f"leaf_rewards has {size} leaves; allowed: a power of branching={branching} (>= 2)"
        )
    return depth


def _backup(v_next: jax.Array, branching: int, transitions_d: jax.Array | None) -> jax.Array:
    """Q_d [b^d, b] from V_{d+1} [b^{d+1}]."""
    v_children = v_next.reshape(-1, branching)
    if transitions_d is None:
        return v_children
    return jnp.einsum("nac,nc->na", transitions_d, v_children)


def _backward(leaf_rewards, branching, transitions, reduce_fn) -> Levels:
    depth = _depth(leaf_rewards, branching)
    if transitions is not None:
        chex.assert_equal(len(transitions), depth)
    v = leaf_rewards
    q = [None] * depth
    for d in reversed(range(depth)):
        q[d] = _backup(v, branching, None if transitions is None else transitions[d])
        v = reduce_fn(d, q[d])
    return tuple(q)


def uniform_q(leaf_rewards: jax.Array, branching: int, transitions: Levels | None = None) -> Levels:
    """Q^{π_u}: the q-values of the uniformly random policy (ROVER's Q).

    With binary rewards Q^{π_u}(n, a) is the probability that acting uniformly at random after
    taking a reaches a correct leaf; on a deterministic tree it is (correct leaves below the
    child) / (leaves below the child).

    Args:
      leaf_rewards: [b^D] terminal rewards.
      branching: b.
      transitions: ``None`` (deterministic) or D arrays [b^d, b, b].

    Returns:
      D arrays, level d: [b^d, b].
    """
    return _backward(leaf_rewards, branching, transitions, lambda d, q: jnp.mean(q, axis=-1))


def optimal_q(leaf_rewards: jax.Array, branching: int, transitions: Levels | None = None) -> Levels:
    """Q*: backward induction with V_d = max_a Q_d. Shapes as `uniform_q`."""
    return _backward(leaf_rewards, branching, transitions, lambda d, q: jnp.max(q, axis=-1))


def policy_q(leaf_rewards: jax.Array, policy: Levels, transitions: Levels | None = None) -> Levels:
    """Q^π of a policy given as D arrays of probabilities [b^d, b]. Shapes as `uniform_q`."""
    branching = policy[0].shape[-1]
    return _backward(
        leaf_rewards, branching, transitions, lambda d, q: jnp.sum(policy[d] * q, axis=-1)
    )


def softmax_policy(q: Levels, temperature: float | jax.Array) -> Levels:
    """ROVER's sampling policy π(a|n) = softmax_a(Q(n, a) / τ), level by level.

    Args:
      q: D arrays [b^d, b] (e.g. `uniform_q`).
      temperature: τ > 0 (may be traced).
    """
    return tuple(jax.nn.softmax(q_d / temperature, axis=-1) for q_d in q)


def greedy_policy(q: Levels, *, rtol: float = 1e-5) -> Levels:
    """The τ → 0 limit of `softmax_policy`: uniform over the actions within ``rtol·max|Q|`` of
    max_a Q(n, a) (ties are exact in Q^{π_u} of a deterministic tree, up to float rounding)."""
    out = []
    for q_d in q:
        top = jnp.max(q_d, axis=-1, keepdims=True)
        best = (q_d >= top - rtol * jnp.maximum(jnp.abs(top), 1e-30)).astype(q_d.dtype)
        out.append(best / jnp.sum(best, axis=-1, keepdims=True))
    return tuple(out)


def proportional_policy(q: Levels) -> Levels:
    """π(a|n) ∝ Q(n, a) (uniform where every Q(n, ·) is 0). A reference, not ROVER's policy.

    On a deterministic tree with binary rewards and π_u's Q this samples every correct leaf with
    probability 1/m (m correct leaves): Q(n, a) is proportional to the correct leaves below the
    child, and the ratios telescope along the path.
    """
    out = []
    for q_d in q:
        total = jnp.sum(q_d, axis=-1, keepdims=True)
        uniform = jnp.full_like(q_d, 1.0 / q_d.shape[-1])
        out.append(jnp.where(total > 0, q_d / jnp.where(total > 0, total, 1.0), uniform))
    return tuple(out)


def leaf_distribution(policy: Levels, transitions: Levels | None = None) -> jax.Array:
    """Probability of ending in each leaf when starting at the root and following ``policy``.

    Forward recursion p_0 = [1], p_{d+1}(n·b + c) = p_d(n) Σ_a π_d(a|n) P_d(c | n, a).

    Returns:
      [b^D], sums to 1.
    """
    p = jnp.ones((1,), policy[0].dtype)
    for d, pi_d in enumerate(policy):
        step = pi_d if transitions is None else jnp.einsum("na,nac->nc", pi_d, transitions[d])
        p = (p[:, None] * step).reshape(-1)
    return p


def expected_distinct(leaf_probs: jax.Array, correct: jax.Array, ks: jax.Array) -> jax.Array:
    """Expected number of distinct correct leaves among k i.i.d. samples, Σ_{ℓ correct}
    1 - (1 - p_ℓ)^k, for each k in ``ks`` [K]. Returns [K]."""
    chex.assert_equal_shape([leaf_probs, correct])
    log_miss = jnp.log1p(-jnp.clip(leaf_probs, 0.0, 1.0))  # [L]
    # one k at a time: O(L) memory instead of O(K L) (K = 256, L = b^D under vmap adds up)
    return jax.lax.map(
        lambda k: jnp.sum(-jnp.expm1(k.astype(log_miss.dtype) * log_miss) * correct), ks
    )


def random_leaf_rewards(seed: int, *, branching: int, depth: int, num_correct: int) -> np.ndarray:
    """[b^D] binary rewards with exactly ``num_correct`` correct leaves at uniform positions."""
    rng = np.random.default_rng(seed)
    size = branching**depth
    if not 1 <= num_correct <= size:
        raise ValueError(f"num_correct={num_correct} is invalid; allowed: 1..{size}")
    r = np.zeros(size, np.float32)
    r[rng.choice(size, num_correct, replace=False)] = 1.0
    return r


def random_transitions(seed: int, *, branching: int, depth: int, slip: float) -> Levels:
    """Stochastic transitions: the intended child w.p. 1 - slip, else a child drawn from a
    Dirichlet(1) distribution of its own for every (node, action). D arrays [b^d, b, b]."""
    if not 0.0 <= slip <= 1.0:
        raise ValueError(f"slip={slip} is invalid; allowed: a probability in [0, 1]")
    rng = np.random.default_rng(seed)
    eye = np.eye(branching, dtype=np.float64)
    out = []
    for d in range(depth):
        noise = rng.dirichlet(np.ones(branching), size=(branching**d, branching))
        out.append(jnp.asarray((1.0 - slip) * eye[None] + slip * noise, jnp.float32))
    return tuple(out)
