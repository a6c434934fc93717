"""Bernoulli multi-armed bandits: tasks, in-context datasets, online policies and their regret.

A task is a vector of arm means ``μ [K]`` drawn uniformly from [0, 1]; a pull of arm a pays
``r ~ Bernoulli(μ_a)``. With this prior, Thompson sampling with Beta(1, 1) priors is exact
posterior sampling (Thompson 1933; Russo et al. 2018), the reference the Decision-Pretrained
Transformer is compared with (Lee et al. 2023, "Supervised Pretraining Can Learn In-Context
Reinforcement Learning", #227).

* ``history_features``: a history of pulls as the tokens of an in-context learner: token 0 is
  an empty "start" token, token t + 1 encodes pull t as ``[one-hot(a_t), r_t one-hot(a_t),
  (t + 1) / T, 0]`` (the last feature marks token 0), so the prediction at token t sees exactly
  the first t pulls. The features are a function of the pulls alone: no arm mean enters them.
* ``pretraining_batch``: DPT's pretraining data: a task, an in-context dataset of pulls from an
  action distribution drawn from a Dirichlet independently of the task (so the dataset's actions
  carry no information about the best arm), and the label ``argmax μ``.
* ``run_online``: one ``lax.scan`` of T pulls of a policy ``(actions, rewards, t, key) -> a``
  that sees the history so far (future entries are masked), on a batch of tasks; returns the
  actions and the per-pull pseudo-regret ``μ* − μ_{a_t}``.
* ``thompson``, ``ucb1``, ``greedy``, ``uniform``: the classic policies in that form.
"""

import jax
import jax.numpy as jnp


def sample_means(key: jax.Array, num_tasks: int, num_arms: int) -> jax.Array:
    """Arm means ``[B, K]`` drawn uniformly from [0, 1]."""
    return jax.random.uniform(key, (num_tasks, num_arms))


def history_features(actions: jax.Array, rewards: jax.Array, num_arms: int) -> jax.Array:
    """Tokens ``[B, T + 1, 2K + 2]`` of pull histories ``actions [B, T]``, ``rewards [B, T]``."""
    b, t = actions.shape
    onehot = jax.nn.one_hot(actions, num_arms)
    step = jnp.broadcast_to(jnp.arange(1, t + 1) / t, (b, t))[..., None]
    pulls = jnp.concatenate([onehot, onehot * rewards[..., None], step, jnp.zeros_like(step)], -1)
    start = jnp.zeros((b, 1, 2 * num_arms + 2)).at[..., -1].set(1.0)
    return jnp.concatenate([start, pulls], 1)


def pretraining_batch(
    key: jax.Array, batch_size: int, num_arms: int, horizon: int, *, concentration: float = 1.0
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """DPT pretraining data: (tokens ``[B, T + 1, 2K + 2]``, best arm ``[B]``, means ``[B, K]``).

    Each task's in-context pulls follow ``p ~ Dirichlet(concentration · 1)``, drawn independently
    of the means; the label ``argmax μ`` is the same for every token of the sequence.
    """
    k_mu, k_p, k_a, k_r = jax.random.split(key, 4)
    means = sample_means(k_mu, batch_size, num_arms)
    probs = jax.random.dirichlet(k_p, jnp.full((num_arms,), concentration), (batch_size,))
    actions = jax.random.categorical(k_a, jnp.log(probs)[:, None, :], shape=(batch_size, horizon))
    mu_a = jnp.take_along_axis(means, actions, 1)
    rewards = jax.random.bernoulli(k_r, mu_a).astype(jnp.float32)
    return history_features(actions, rewards, num_arms), jnp.argmax(means, -1), means


def counts(actions: jax.Array, rewards: jax.Array, t: jax.Array, num_arms: int):
    """Pulls and successes per arm ``[B, K]`` among the first ``t`` pulls of the history."""
    seen = (jnp.arange(actions.shape[1]) < t)[None, :, None]
    onehot = jax.nn.one_hot(actions, num_arms) * seen
    return onehot.sum(1), (onehot * rewards[..., None]).sum(1)


def thompson(actions, rewards, t, key, *, num_arms: int) -> jax.Array:
    """Thompson sampling, Beta(1, 1) priors: ``argmax_a θ_a``, ``θ_a ~ Beta(1 + S_a, 1 + F_a)``."""
    n, s = counts(actions, rewards, t, num_arms)
    theta = jax.random.beta(key, 1.0 + s, 1.0 + n - s)
    return jnp.argmax(theta, -1).astype(jnp.int32)


def ucb1(actions, rewards, t, key, *, num_arms: int) -> jax.Array:
    """UCB1 (Auer et al. 2002): each arm once, then ``argmax μ̂_a + sqrt(2 ln t / n_a)``."""
    del key
    n, s = counts(actions, rewards, t, num_arms)
    bonus = jnp.sqrt(2.0 * jnp.log(jnp.maximum(t, 1)) / jnp.maximum(n, 1))
    score = jnp.where(n > 0, s / jnp.maximum(n, 1) + bonus, jnp.inf)
    return jnp.argmax(score, -1).astype(jnp.int32)


def greedy(actions, rewards, t, key, *, num_arms: int) -> jax.Array:
    """Greedy with memory: ``argmax_a (1 + S_a) / (2 + N_a)``, the Beta(1, 1) posterior mean
    (the myopic Bayes policy: best for the next pull alone); ties broken uniformly at random."""
    n, s = counts(actions, rewards, t, num_arms)
    mean = (1.0 + s) / (2.0 + n)
    tie_break = jax.random.uniform(key, mean.shape)
    best = mean >= mean.max(-1, keepdims=True)
    return jnp.argmax(jnp.where(best, tie_break, -1.0), -1).astype(jnp.int32)


def uniform(actions, rewards, t, key, *, num_arms: int) -> jax.Array:
    """Uniformly random arms (the no-learning reference)."""
    del rewards, t
    return jax.random.randint(key, actions.shape[:1], 0, num_arms)


def run_online(policy, means: jax.Array, key: jax.Array, horizon: int):
    """``horizon`` pulls of ``policy(actions [B, T], rewards [B, T], t, key) -> a [B]`` on tasks
    ``means [B, K]``; entries ``>= t`` of the history it sees are zero.

    Returns:
      (actions ``[B, T]`` int32, rewards ``[B, T]``, pseudo-regret ``μ* − μ_{a_t}`` ``[B, T]``).
    """
    b = means.shape[0]

    def body(carry, xs):
        actions, rewards = carry
        t, k = xs
        k_pol, k_r = jax.random.split(k)
        a = policy(actions, rewards, t, k_pol)
        mu_a = jnp.take_along_axis(means, a[:, None], 1)[:, 0]
        r = jax.random.bernoulli(k_r, mu_a).astype(jnp.float32)
        actions = actions.at[:, t].set(a)
        rewards = rewards.at[:, t].set(r)
        return (actions, rewards), means.max(-1) - mu_a

    start = (jnp.zeros((b, horizon), jnp.int32), jnp.zeros((b, horizon), jnp.float32))
    xs = (jnp.arange(horizon), jax.random.split(key, horizon))
    (actions, rewards), regret = jax.lax.scan(body, start, xs)
    return actions, rewards, regret.T
