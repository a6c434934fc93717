"""TD3 (Fujimoto et al. 2018) with DDPG (Lillicrap et al. 2016) as its preset, continuous actions.

A deterministic actor ``μ(s) = tanh(MLP(s))`` explores with Gaussian noise ``N(0, σ_explore²)``.
Critics regress on the clipped double-Q target ``r + γ min_k Q'_k(s', ã')`` where the target
action is smoothed, ``ã' = clip(μ'(s') + clip(ε, -c, c), -1, 1)``, ``ε ~ N(0, σ_target²)``
(target policy smoothing). The actor follows the deterministic policy gradient of ``Q_1`` and,
with the target networks, is updated only every ``policy_delay`` gradient steps (delayed actor).

DDPG is the preset ``num_critics=1, policy_delay=1, target_noise=0`` (configs/td3.py:ddpg-*):
one critic, no smoothing, the actor stepped with every critic step.

One ``update``: collect ``num_envs × rollout_steps`` steps (uniformly random actions before
``learning_starts``), then ``grad_steps`` gradient steps. Maths: ``rljax.losses.value``
(``clipped_double_q_target``) and ``rljax.losses.actor_critic``
(``deterministic_policy_gradient``).
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rljax import checks, replay
from rljax.agents import learner, offpolicy
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.losses import actor_critic, reduce, value
from rljax.nets import continuous


@dataclasses.dataclass(frozen=True)
class Config:
    """Static TD3 settings (shapes and switches). Sweepable numbers live in ``Hparams``."""

    num_envs: int = 4  # parallel environments per agent
    rollout_steps: int = 1  # batched env steps per update
    grad_steps: int = 2  # gradient steps per update
    buffer_size: int = 100_000  # replay capacity in transitions (a multiple of num_envs)
    batch_size: int = 128  # sampled transitions per gradient step
    learning_starts: int = 1_000  # env steps of uniformly random actions before learning
    num_critics: int = 2  # 2: clipped double Q (TD3); 1: DDPG's single critic
    policy_delay: int = 2  # gradient steps per actor (and target) step; DDPG: 1
    hidden: tuple[int, ...] = (128, 128)  # MLP widths of actor and critics
    activation: str = "relu"  # one of rljax.nets.ACTIVATIONS
    num_updates: int = 50_000  # total updates of the run (set by the trainer)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape: array leaves, so a grid of them can be vmapped."""

    lr_actor: jax.Array  # Adam step size of the actor
    lr_critic: jax.Array  # Adam step size of the critics
    gamma: jax.Array  # discount γ
    tau: jax.Array  # Polyak rate of the target networks, in (0, 1]
    explore_noise: jax.Array  # σ of the behaviour noise (normalized action units)
    target_noise: jax.Array  # σ of the target-policy smoothing noise (DDPG: 0)
    noise_clip: jax.Array  # c: the smoothing noise is clipped to [-c, c]


HPARAM_RULES = {
    "lr_actor": (lambda v: v > 0, "> 0"),
    "lr_critic": (lambda v: v > 0, "> 0"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "tau": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "explore_noise": (lambda v: v >= 0, ">= 0"),
    "target_noise": (lambda v: v >= 0, ">= 0"),
    "noise_clip": (lambda v: v >= 0, ">= 0"),
}


def env_steps_per_update(config: Config) -> int:
    """Environment steps one agent takes per ``update``."""
    return config.num_envs * config.rollout_steps


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    offpolicy.validate_common("td3", config)
    for field in ("num_critics", "policy_delay"):
        checks.check_int(f"td3.{field}", getattr(config, field), low=1)


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """TD3 and DDPG act in continuous action spaces only."""
    hint = "TD3/DDPG need continuous actions; use sac (sac.discrete=True) or dqn"
    offpolicy.validate_action_space("td3", False, env, hint)


class State(NamedTuple):
    """One TD3 agent: actor and critics, their targets and Adam states, replay, envs."""

    params: dict  # {"actor": ..., "critic": ...}
    target_params: dict
    opt_state: dict  # one Adam state per entry of params
    buffer: replay.Buffer
    env: rollout_lib.RolloutState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # updates done (int32)
    grad_step: jax.Array  # gradient steps applied (int32): the actor steps when it hits the delay
    hparams: Hparams


def networks(config: Config, env: gymnax_env.Env) -> tuple:
    """``(actor, critics)``: a deterministic tanh actor and K critics of ``Q(s, a)``."""
    actor = continuous.DeterministicActor(env.num_actions, config.hidden, config.activation)
    critics = continuous.Critics(config.hidden, config.num_critics, 0, config.activation)
    return actor, critics


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one agent: networks and their target copies, Adam, empty replay, envs."""
    actor_key, critic_key, env_key, agent_key = jax.random.split(key, 4)
    actor, critics = networks(config, env)
    obs = jnp.zeros((1, *env.obs_shape), jnp.float32)
    action = jnp.zeros((1, env.num_actions), jnp.float32)
    params = {"actor": actor.init(actor_key, obs), "critic": critics.init(critic_key, obs, action)}
    return State(
        params=params,
        target_params=params,
        opt_state={k: offpolicy.ADAM.init(v) for k, v in params.items()},
        buffer=offpolicy.init_buffer(env, config.num_envs, config.buffer_size),
        env=offpolicy.init_envs(env, env_key, config.num_envs),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        grad_step=jnp.zeros((), jnp.int32),
        hparams=Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams)),
    )


def _act(config: Config, env, actor_params, obs: jax.Array, key: jax.Array, noise_std):
    """``clip(μ(s) + N(0, noise_std²), -1, 1)`` for observations ``[B, ...]``: ``[B, D]``."""
    actor, _ = networks(config, env)
    mu = actor.apply(actor_params, obs)
    return jnp.clip(mu + noise_std * jax.random.normal(key, mu.shape), -1.0, 1.0)


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """``μ(s)`` plus the state's exploration noise (``hparams.explore_noise``; none with
    ``greedy``) for observations ``[B, ...]``: ``[B, D]`` within the environment's bounds."""
    noise = 0.0 if greedy else state.hparams.explore_noise
    return offpolicy.to_env_action(env, _act(config, env, state.params["actor"], obs, key, noise))


def loss_fn(params, target_params, config: Config, env, batch: replay.NStep, hparams, key):
    """Critic loss and actor loss of one batch ``[N, ...]``, and the metrics.

    The actor's loss sees the critic through ``stop_gradient``, so one backward pass gives both
    gradients; the caller applies the actor's only every ``policy_delay`` steps.
    """
    sg = jax.lax.stop_gradient
    actor, critics = networks(config, env)
    mu_tp1 = actor.apply(target_params["actor"], batch.next_obs)
    eps = hparams.target_noise * jax.random.normal(key, mu_tp1.shape)
    a_tp1 = jnp.clip(mu_tp1 + jnp.clip(eps, -hparams.noise_clip, hparams.noise_clip), -1, 1)
    q_tp1 = critics.apply(target_params["critic"], batch.next_obs, a_tp1)
    y = value.clipped_double_q_target(batch.reward, batch.discount, q_tp1)
    q_t = critics.apply(params["critic"], batch.obs, batch.action)  # [K, N]
    critic_loss = jnp.sum(reduce.masked_mean(value.l2(y[None] - q_t), axis=-1))
    q_mu = critics.apply(sg(params["critic"]), batch.obs, actor.apply(params["actor"], batch.obs))
    actor_loss = reduce.masked_mean(actor_critic.deterministic_policy_gradient(q_mu[0]))
    metrics = {"loss/value": critic_loss, "loss/policy": actor_loss, "q/taken": jnp.mean(q_t)}
    return critic_loss + actor_loss, metrics


def _grad_step(config, env, state: State, key: jax.Array, learning: jax.Array):
    """One batch: a critic step; every ``policy_delay``-th step also the actor and the targets."""
    batch_key, loss_key = jax.random.split(key)
    hp = state.hparams
    batch = offpolicy.sample_batch(env, state.buffer, batch_key, config.batch_size, hp.gamma)
    grads, metrics = jax.grad(loss_fn, has_aux=True)(
        state.params, state.target_params, config, env, batch, hp, loss_key
    )
    delayed = learning & ((state.grad_step + 1) % config.policy_delay == 0)
    critic, critic_opt = offpolicy.adam_step(
        state.params["critic"], state.opt_state["critic"], grads["critic"], hp.lr_critic, learning
    )
    actor, actor_opt = offpolicy.adam_step(
        state.params["actor"], state.opt_state["actor"], grads["actor"], hp.lr_actor, delayed
    )
    params = {"actor": actor, "critic": critic}
    target = offpolicy.polyak(state.target_params, params, hp.tau, delayed)
    return state._replace(
        params=params,
        target_params=target,
        opt_state={"actor": actor_opt, "critic": critic_opt},
        grad_step=state.grad_step + learning.astype(jnp.int32),
    ), metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One update: act and store, then ``grad_steps`` gradient steps.

    Returns:
      The new state and a flat dict of scalar metrics.
    """
    noise = state.hparams.explore_noise
    policy = lambda p, obs, k: _act(config, env, p["actor"], obs, k, noise)  # noqa: E731
    grad_step = lambda s, k, learning: _grad_step(config, env, s, k, learning)  # noqa: E731
    return offpolicy.update(config, env, state, policy, grad_step, env_steps_per_update(config))


def train_chunk(
    config: Config, env: gymnax_env.Env, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one agent as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, env, state, num_updates)


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``)."""
    policy = lambda o, f, c, k: (act(config, env, state, o, k, greedy=True), c)  # noqa: E731
    return learner.evaluate_episodes(env, policy, key)
