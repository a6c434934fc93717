"""TD3 (Fujimoto et al. 2018) with DDPG (Lillicrap et al. 2016) as its preset, continuous actions.

A deterministic actor ``μ(s) = tanh(MLP(s))`` explores with Gaussian noise ``N(0, σ_explore²)``.
Critics regress on the clipped double-Q target ``r + γ min_k Q'_k(s', ã')`` where the target
action is smoothed, ``ã' = clip(μ'(s') + clip(ε, -c, c), -1, 1)``, ``ε ~ N(0, σ_target²)``
(target policy smoothing). The actor follows the deterministic policy gradient of ``Q_1`` and,
with the target networks, is updated only every ``policy_delay`` critic steps (delayed actor):
``policy_delay`` critic-only steps (the critics' loss alone is differentiated and stepped), then
one actor step on the last critic step's batch against the just-updated critic, then the targets'
Polyak step (Fujimoto et al. 2018, Algorithm 1).

DDPG is the preset ``num_critics=1, policy_delay=1, target_noise=0`` (configs/td3.py:ddpg-*):
one critic, no smoothing, the actor stepped with every critic step.

One ``update``: collect ``num_envs × rollout_steps`` steps (uniformly random actions before
``learning_starts``, no gradient step until then), then ``grad_steps`` critic steps and their
actor steps (``_learn``). Maths: ``rljax.losses.value``
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
    grad_step: jax.Array  # critic steps applied (int32): the actor steps at multiples of the delay
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


def critic_loss_fn(critic_params, target_params, config: Config, env, batch: replay.NStep,
                   hparams, key):  # fmt: skip
    """The critics' loss on one batch ``[N, ...]``: ``Σ_k mean_N (y - Q_k(s, a))²`` with the
    clipped double-Q target ``y`` of the target networks at the smoothed target action.

    Returns:
      ``(loss, metrics)``; the gradient is with respect to ``critic_params`` only.
    """
    actor, critics = networks(config, env)
    mu_tp1 = actor.apply(target_params["actor"], batch.next_obs)
    eps = hparams.target_noise * jax.random.normal(key, mu_tp1.shape)
    a_tp1 = jnp.clip(mu_tp1 + jnp.clip(eps, -hparams.noise_clip, hparams.noise_clip), -1, 1)
    q_tp1 = critics.apply(target_params["critic"], batch.next_obs, a_tp1)
    y = value.clipped_double_q_target(batch.reward, batch.discount, q_tp1)
    q_t = critics.apply(critic_params, batch.obs, batch.action)  # [K, N]
    critic_loss = jnp.sum(reduce.masked_mean(value.l2(y[None] - q_t), axis=-1))
    return critic_loss, {"loss/value": critic_loss, "q/taken": jnp.mean(q_t)}


def actor_loss_fn(actor_params, critic_params, config: Config, env, obs: jax.Array):
    """The actor's loss ``mean_N -Q_1(s, μ(s))`` on observations ``[N, ...]``: the deterministic
    policy gradient through the first critic alone (the others are not evaluated)."""
    actor, _ = networks(config, env)
    first = continuous.Critics(config.hidden, 1, 0, config.activation)
    first_params = {"params": {"MLP_0": critic_params["params"]["MLP_0"]}}
    q_mu = first.apply(first_params, obs, actor.apply(actor_params, obs))  # [1, N]
    return reduce.masked_mean(actor_critic.deterministic_policy_gradient(q_mu[0]))


def _critic_step(config, env, state: State, key: jax.Array, learning: jax.Array):
    """One batch, one critic step (kept where ``learning``): ``(state, metrics, batch)``."""
    batch_key, loss_key = jax.random.split(key)
    hp = state.hparams
    batch = offpolicy.sample_batch(env, state.buffer, batch_key, config.batch_size, hp.gamma)
    grads, metrics = jax.grad(critic_loss_fn, has_aux=True)(
        state.params["critic"], state.target_params, config, env, batch, hp, loss_key
    )
    critic, critic_opt = offpolicy.adam_step(
        state.params["critic"], state.opt_state["critic"], grads, hp.lr_critic, learning
    )
    return (
        state._replace(
            params={**state.params, "critic": critic},
            opt_state={**state.opt_state, "critic": critic_opt},
            grad_step=state.grad_step + learning.astype(jnp.int32),
        ),
        metrics,
        batch,
    )


def _actor_step(config, env, nets: tuple, hparams: Hparams, obs: jax.Array, apply: jax.Array):
    """One actor step on ``obs`` against the current first critic, then the targets' Polyak
    step, both kept where ``apply``. ``nets = (params, target_params, opt_state)``."""
    params, target_params, opt_state = nets
    loss, grads = jax.value_and_grad(actor_loss_fn)(
        params["actor"], params["critic"], config, env, obs
    )
    actor, actor_opt = offpolicy.adam_step(
        params["actor"], opt_state["actor"], grads, hparams.lr_actor, apply
    )
    params = {**params, "actor": actor}
    target = offpolicy.polyak(target_params, params, hparams.tau, apply)
    return (params, target, {**opt_state, "actor": actor_opt}), loss


def _learn(config, env, state: State, key: jax.Array, learning: jax.Array):
    """The gradient phase of one update: ``grad_steps`` critic steps; after every
    ``policy_delay``-th (counted over the run by ``grad_step``) one actor step on that step's
    batch and the target networks' step.

    When ``policy_delay`` divides ``grad_steps`` (the shipped configs) every update starts a
    cycle, so the cycle is unrolled statically: ``policy_delay`` critic-only steps (no actor
    gradient, no actor Adam step), then the actor's. Otherwise the actor step sits in a
    ``lax.cond`` on whether any member is due (``offpolicy.population_any``): in a population
    the members share their counts, so it runs only when due.
    """
    delay, hp = config.policy_delay, state.hparams
    nets = lambda s: (s.params, s.target_params, s.opt_state)  # noqa: E731
    put = lambda s, n: s._replace(params=n[0], target_params=n[1], opt_state=n[2])  # noqa: E731

    if config.grad_steps % delay == 0:

        def cycle(s, k):
            critic_metrics = []
            for sub in jax.random.split(k, delay):
                s, m, batch = _critic_step(config, env, s, sub, learning)
                critic_metrics.append(m)
            n, actor_loss = _actor_step(config, env, nets(s), hp, batch.obs, learning)
            metrics = jax.tree.map(lambda *v: jnp.mean(jnp.stack(v)), *critic_metrics)
            return put(s, n), {**metrics, "loss/policy": actor_loss, "actor/steps": jnp.float32(1)}

        state, metrics = offpolicy.grad_steps(cycle, state, key, config.grad_steps // delay)
        metrics["actor/steps"] = metrics["actor/steps"] * learning * (config.grad_steps // delay)
        return state, metrics

    def step(s, k):
        s, metrics, batch = _critic_step(config, env, s, k, learning)
        due = learning & (s.grad_step % delay == 0)
        actor = lambda n: _actor_step(config, env, n, hp, batch.obs, due)  # noqa: E731
        skip = lambda n: (n, jnp.zeros((), jnp.float32))  # noqa: E731
        n, actor_loss = jax.lax.cond(offpolicy.population_any(due), actor, skip, nets(s))
        due = due.astype(jnp.float32)
        return put(s, n), {**metrics, "loss/policy": actor_loss * due, "actor/steps": due}

    state, metrics = offpolicy.grad_steps(step, state, key, config.grad_steps)
    steps = metrics["actor/steps"] * config.grad_steps  # the means over the steps to sums
    metrics["loss/policy"] = metrics["loss/policy"] * config.grad_steps / jnp.maximum(steps, 1.0)
    metrics["actor/steps"] = steps
    return state, metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One update: act and store, then the gradient phase (``_learn``).

    Returns:
      The new state and a flat dict of scalar metrics: ``loss/value`` and ``q/taken`` averaged
      over the critic steps, ``loss/policy`` over the actor steps (0 without one),
      ``actor/steps`` the actor steps taken.
    """
    noise = state.hparams.explore_noise
    policy = lambda p, obs, k: _act(config, env, p["actor"], obs, k, noise)  # noqa: E731
    learn = lambda s, k, learning: _learn(config, env, s, k, learning)  # noqa: E731
    return offpolicy.update(config, env, state, policy, learn, env_steps_per_update(config))


def train_chunk(
    config: Config, env: gymnax_env.Env, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one agent as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, env, state, num_updates)


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``)."""
    policy = lambda o, f, c, k: (act(config, env, state, o, k, greedy=True), c)  # noqa: E731
    return learner.evaluate_episodes(env, policy, key)
