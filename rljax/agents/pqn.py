"""PQN: parallel Q-learning without a replay buffer or a target network.

Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning". Each ``update`` collects
``rollout_steps`` batched steps of ``num_envs`` environments with the ε-greedy policy (the one
``lax.scan`` rollout of ``rljax.envs.rollouts``), computes Peng's Q(λ) returns over the rollout
with the *current* network (``rljax.returns.q_lambda_returns``; termination zeroes the
bootstrap, truncation bootstraps from the final observation), and regresses
``Q(s_t, a_t)`` on them with ``num_epochs`` passes of ``num_minibatches`` shuffled minibatches,
like PPO's epochs. LayerNorm after every hidden layer keeps the bootstrapped regression stable
without a target network (the paper's analysis); the many parallel environments decorrelate
the data in place of a replay buffer.

ε decays linearly from ``eps_start`` to ``eps_end`` over ``eps_decay_steps`` env steps; the
learning rate optionally decays linearly to 0; gradients are clipped to a global norm
``max_grad_norm`` (a swept leaf, like every float here).
"""

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rljax import returns
from rljax.agents import learner
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.losses import reduce, value
from rljax.nets import ACTIVATIONS
from rljax.nets.mlp import dense_dot_general

NORMS = ("layer_norm", "none")


@dataclasses.dataclass(frozen=True)
class Config:
    """Static PQN settings (shapes and switches). Sweepable numbers live in ``Hparams``."""

    num_envs: int = 32  # parallel environments per agent
    rollout_steps: int = 64  # batched env steps per update (T of the λ-returns)
    num_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 16  # minibatches per pass (must divide num_envs * rollout_steps)
    hidden: tuple[int, ...] = (128, 128)  # MLP widths
    activation: str = "relu"  # one of rljax.nets.ACTIVATIONS
    norm: str = "layer_norm"  # layer_norm | none: normalization after each hidden Dense
    anneal_lr: bool = True  # linear decay of the learning rate to 0 over num_updates
    num_updates: int = 244  # total updates of the run (set by the trainer)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape: array leaves, so a grid of them can be vmapped."""

    lr: jax.Array  # Adam step size
    gamma: jax.Array  # discount γ
    lambda_: jax.Array  # Q(λ) trace parameter
    eps_start: jax.Array  # ε at env step 0
    eps_end: jax.Array  # final ε
    eps_decay_steps: jax.Array  # env steps of the linear ε decay
    max_grad_norm: jax.Array  # global-norm clipping threshold
    reward_scale: jax.Array  # rewards are multiplied by this before the returns


HPARAM_RULES = {
    "lr": (lambda v: v > 0, "> 0"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "lambda_": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "eps_start": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "eps_end": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "eps_decay_steps": (lambda v: v > 0, "> 0"),
    "max_grad_norm": (lambda v: v > 0, "> 0"),
    "reward_scale": (lambda v: v > 0, "> 0"),
}


def env_steps_per_update(config: Config) -> int:
    """Environment steps one agent takes per ``update``."""
    return config.num_envs * config.rollout_steps


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """PQN's ε-greedy argmax picks one of ``A`` discrete actions."""
    del config
    learner.validate_discrete_env("pqn", env, "for continuous actions use ppo, sac, td3 or mpo")


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    for field in ("num_envs", "rollout_steps", "num_epochs", "num_minibatches", "num_updates"):
        number = getattr(config, field)
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError(f"pqn.{field}={number!r} is invalid; allowed: an integer >= 1")
    batch = env_steps_per_update(config)
    if batch % config.num_minibatches:
        raise ValueError(
            f"pqn.num_minibatches={config.num_minibatches} is invalid; allowed: a divisor of "
            f"num_envs*rollout_steps={batch}"
        )
    if config.norm not in NORMS:
        raise ValueError(f"pqn.norm={config.norm!r} is unknown; valid: {', '.join(NORMS)}")
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"pqn.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if not config.hidden or any(int(h) < 1 for h in config.hidden):
        raise ValueError(f"pqn.hidden={config.hidden!r} is invalid; allowed: positive widths")


class QNetwork(nn.Module):
    """``Dense -> LayerNorm -> act`` per hidden width, then ``Dense(A)``: Q-values ``[B, A]``."""

    num_actions: int
    hidden: Sequence[int] = (128, 128)
    activation: str = "relu"
    layer_norm: bool = True

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = nn.Dense(width, dot_general=dense_dot_general)(x)
            x = act(nn.LayerNorm()(x) if self.layer_norm else x)
        return nn.Dense(self.num_actions, dot_general=dense_dot_general)(x)


class State(NamedTuple):
    """One PQN agent: network, optimizer, environments and its own key (no buffer, no target)."""

    params: dict
    opt_state: optax.OptState
    env: rollout_lib.RolloutState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # updates done (int32)
    hparams: Hparams


def network(config: Config, env: gymnax_env.Env) -> QNetwork:
    """The Q-network for ``env``."""
    return QNetwork(env.num_actions, config.hidden, config.activation, config.norm == "layer_norm")


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one agent: network, Adam moments, reset environments."""
    net_key, env_key, agent_key = jax.random.split(key, 3)
    params = network(config, env).init(net_key, jnp.zeros((1, *env.obs_shape), jnp.float32))
    return State(
        params=params,
        opt_state=optax.scale_by_adam().init(params),
        env=rollout_lib.rollout_init(env, env_key, config.num_envs),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams)),
    )


def epsilon(hparams: Hparams, env_steps: jax.Array) -> jax.Array:
    """ε after ``env_steps``: linear from ``eps_start`` to ``eps_end`` over ``eps_decay_steps``."""
    frac = jnp.clip(env_steps.astype(jnp.float32) / hparams.eps_decay_steps, 0.0, 1.0)
    return hparams.eps_start + frac * (hparams.eps_end - hparams.eps_start)


def _act(
    config: Config, env: gymnax_env.Env, params, obs: jax.Array, key: jax.Array, eps: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """ε-greedy actions for observations ``[B, ...]``: ``(action [B] int32, max_a Q [B])``."""
    q = network(config, env).apply(params, obs)
    explore_key, random_key = jax.random.split(key)
    greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
    random_action = jax.random.randint(random_key, greedy.shape, 0, env.num_actions)
    explore = jax.random.uniform(explore_key, greedy.shape) < eps
    return jnp.where(explore, random_action, greedy), jnp.max(q, axis=-1)


def loss_fn(
    params, config: Config, env: gymnax_env.Env, obs: jax.Array, a_t: jax.Array,
    target_t: jax.Array,
) -> tuple[jax.Array, dict[str, jax.Array]]:  # fmt: skip
    """Mean ``½ (Q(s_t, a_t) - G_t)²`` over a minibatch ``[N, ...]`` (targets carry no gradient)."""
    q_t = network(config, env).apply(params, obs)
    td = value.q_td_error(q_t, a_t, jax.lax.stop_gradient(target_t))
    loss = reduce.masked_mean(value.l2(td))
    q_taken = jnp.take_along_axis(q_t, a_t[:, None], axis=-1)
    return loss, {"loss/value": loss, "q/taken": reduce.masked_mean(q_taken)}


def targets(config: Config, env: gymnax_env.Env, params, traj, hparams: Hparams) -> jax.Array:
    """Q(λ) returns ``[T, B]`` of a rollout, bootstrapped from ``max_a Q(s'_t, a)``.

    ``s'_t`` is the true next state (the final observation where an episode ended), evaluated
    with the current parameters in one batched pass.
    """
    t, b = traj.reward.shape
    next_obs = traj.next_obs.reshape(t * b, *traj.next_obs.shape[2:])
    q_tp1 = jnp.max(network(config, env).apply(params, next_obs), axis=-1).reshape(t, b)
    discount_t = hparams.gamma * (1.0 - traj.terminated.astype(jnp.float32))
    done_t = jnp.logical_or(traj.terminated, traj.truncated)
    return returns.q_lambda_returns(
        hparams.reward_scale * traj.reward, discount_t, jax.lax.stop_gradient(q_tp1), done_t,
        lambda_=hparams.lambda_,
    )  # fmt: skip


def _clip(grads, max_norm: jax.Array):
    """Gradients scaled to global norm at most ``max_norm`` (a traced leaf); also the norm."""
    norm = optax.tree.norm(grads)
    scale = jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-12))
    return jax.tree.map(lambda g: g * scale, grads), norm


def _sgd_step(config, env, state: State, minibatch) -> tuple[State, dict[str, jax.Array]]:
    """One clipped Adam step on one minibatch ``(obs, action, target)``."""
    obs, a_t, target_t = minibatch
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, config, env, obs, a_t, target_t)
    grads, metrics["grad_norm"] = _clip(grads, state.hparams.max_grad_norm)
    updates, opt_state = optax.scale_by_adam().update(grads, state.opt_state, state.params)
    lr = learner.annealed_lr(state.hparams.lr, state.step, config.num_updates, config.anneal_lr)
    params = jax.tree.map(lambda p, u: p - lr * u, state.params, updates)
    return state._replace(params=params, opt_state=opt_state), metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One update: an ε-greedy rollout, its Q(λ) returns, then epochs of minibatch steps.

    Returns:
      The new state and a flat dict of scalar metrics.
    """
    key = jax.random.fold_in(state.key, state.step)
    rollout_key, shuffle_key = jax.random.split(key)
    eps = epsilon(state.hparams, state.step * env_steps_per_update(config))

    def _policy(params, obs, k):
        action, q_max = _act(config, env, params, obs, k, eps)
        return action, jnp.zeros_like(q_max), q_max

    env_state, traj, stats = rollout_lib.rollout(
        env, _policy, state.params, rollout_key, state.env, config.rollout_steps
    )
    target_t = targets(config, env, state.params, traj, state.hparams)
    n = env_steps_per_update(config)
    flat = (
        traj.obs.reshape(n, *traj.obs.shape[2:]),
        traj.action.reshape(n).astype(jnp.int32),
        target_t.reshape(n),
    )
    size = n // config.num_minibatches
    perms = jax.vmap(lambda k: jax.random.permutation(k, n))(
        jax.random.split(shuffle_key, config.num_epochs)
    )
    order = perms.reshape(config.num_epochs * config.num_minibatches, size)
    state, metrics = jax.lax.scan(
        lambda s, idx: _sgd_step(config, env, s, jax.tree.map(lambda x: x[idx], flat)),
        state,
        order,
    )
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics.update(rollout_lib.episode_summary(stats))
    metrics["epsilon"] = eps
    metrics["target/mean"] = jnp.mean(target_t)
    return state._replace(env=env_state, step=state.step + 1), metrics


def train_chunk(
    config: Config, env: gymnax_env.Env, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one agent as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, env, state, num_updates)


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """ε-greedy actions ``[B]`` (int32) for observations ``[B, ...]``, ε the state's current
    exploration rate (the schedule at its env steps); ``greedy``: ε = 0."""
    eps = epsilon(state.hparams, state.step * env_steps_per_update(config))
    return _act(config, env, state.params, obs, key, 0.0 if greedy else eps)[0]


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``)."""
    policy = lambda o, f, c, k: (act(config, env, state, o, k, greedy=True), c)  # noqa: E731
    return learner.evaluate_episodes(env, policy, key)
