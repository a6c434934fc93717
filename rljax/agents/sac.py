"""Soft Actor-Critic (Haarnoja et al. 2018) for continuous actions, and its discrete variant
(Christodoulou 2019).

Continuous: a tanh-squashed Gaussian actor trained with the reparameterized loss
``α log π(a|s) - min_k Q_k(s, a)``; twin critics regressed on the sampled soft Bellman target
``r + γ (min_k Q'_k(s', a') - α log π(a'|s'))`` with Polyak-averaged target critics; the
temperature α learned as the multiplier of the entropy constraint ``E[H(π)] >= H̄``
(``target_entropy``; ``-D`` is the usual choice). Discrete (``discrete=True``): a categorical
actor, critics with one output per action and exact expectations over actions in the target,
the actor loss and the entropy (a bound on the KL to the uniform policy,
``KL(π ‖ U) = log A - H(π)``).

One ``update``: collect ``num_envs × rollout_steps`` steps (uniformly random actions before
``learning_starts``), then ``grad_steps`` gradient steps, each updating critics, actor and
temperature from one batch (one backward pass: the actor's loss sees the critics through
``stop_gradient``) and then the target critics. Maths: ``rljax.losses.value`` (soft Bellman
targets), ``rljax.losses.actor_critic`` (actor and temperature losses).
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
    """Static SAC settings (shapes and switches). Sweepable numbers live in ``Hparams``."""

    discrete: bool = False  # the discrete-action variant (categorical actor)
    num_envs: int = 4  # parallel environments per agent
    rollout_steps: int = 1  # batched env steps per update
    grad_steps: int = 2  # gradient steps per update
    buffer_size: int = 100_000  # replay capacity in transitions (a multiple of num_envs)
    batch_size: int = 128  # sampled transitions per gradient step
    learning_starts: int = 1_000  # env steps of uniformly random actions before learning
    num_critics: int = 2  # critics; the target takes their minimum
    hidden: tuple[int, ...] = (128, 128)  # MLP widths of actor and critics
    activation: str = "relu"  # one of rljax.nets.ACTIVATIONS
    num_updates: int = 50_000  # total updates of the run (set by the trainer)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape: array leaves, so a grid of them can be vmapped."""

    lr_actor: jax.Array  # Adam step size of the actor
    lr_critic: jax.Array  # Adam step size of the critics
    lr_alpha: jax.Array  # Adam step size of log α
    gamma: jax.Array  # discount γ
    tau: jax.Array  # Polyak rate of the target critics, in (0, 1]
    init_alpha: jax.Array  # α at the start
    target_entropy: jax.Array  # H̄ in nats (continuous: e.g. -D; discrete: below log A)


HPARAM_RULES = {
    "lr_actor": (lambda v: v > 0, "> 0"),
    "lr_critic": (lambda v: v > 0, "> 0"),
    "lr_alpha": (lambda v: v >= 0, ">= 0 (0: fixed temperature)"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "tau": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "init_alpha": (lambda v: v > 0, "> 0"),
    "target_entropy": (lambda v: True, "any number"),
}


def env_steps_per_update(config: Config) -> int:
    """Environment steps one agent takes per ``update``."""
    return config.num_envs * config.rollout_steps


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    offpolicy.validate_common("sac", config)
    if not isinstance(config.discrete, bool):
        raise ValueError(f"sac.discrete={config.discrete!r} is invalid; allowed: True or False")
    checks.check_int("sac.num_critics", config.num_critics, low=1)


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """Refuses SAC's continuous variant on a discrete environment and vice versa."""
    kind = "discrete" if env.discrete else "continuous"
    hint = f"set sac.discrete={env.discrete} for the {kind} variant"
    offpolicy.validate_action_space("sac", config.discrete, env, hint)


class State(NamedTuple):
    """One SAC agent: actor, critics, temperature, their targets and optimizers, replay, envs."""

    params: dict  # {"actor": ..., "critic": ..., "log_alpha": scalar}
    target_critic: dict
    opt_state: dict  # one Adam state per entry of params
    buffer: replay.Buffer
    env: rollout_lib.RolloutState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # updates done (int32)
    hparams: Hparams


def networks(config: Config, env: gymnax_env.Env) -> tuple:
    """``(actor, critics)``: a categorical (discrete) or Gaussian actor and K critics.

    The critics' one-column output layers take their weight gradients as rows
    (``rljax.nets.mlp.row_grad_dot_general``): the gradient of each Q is the soft Bellman
    residual, whose target XLA:CPU would otherwise recompute for every weight.
    """
    return offpolicy.actor_and_critics(config, env, row_grad=True)


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one agent: networks, target critics, log α, Adam states, empty replay, envs."""
    actor_key, critic_key, env_key, agent_key = jax.random.split(key, 4)
    hparams = Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams))
    actor, critics = networks(config, env)
    obs = jnp.zeros((1, *env.obs_shape), jnp.float32)
    action = None if config.discrete else jnp.zeros((1, env.num_actions), jnp.float32)
    params = {
        "actor": actor.init(actor_key, obs),
        "critic": critics.init(critic_key, obs, action),
        "log_alpha": jnp.log(hparams.init_alpha),
    }
    return State(
        params=params,
        target_critic=params["critic"],
        opt_state={k: offpolicy.ADAM.init(v) for k, v in params.items()},
        buffer=offpolicy.init_buffer(env, config.num_envs, config.buffer_size),
        env=offpolicy.init_envs(env, env_key, config.num_envs),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=hparams,
    )


def _policy(config: Config, env, actor_params, obs: jax.Array, noise: jax.Array):
    """``(action, logp)`` for the given noise: Gaussian ``[B, D]`` or Gumbel ``[B, A]``."""
    actor, _ = networks(config, env)
    if config.discrete:
        logits = actor.apply(actor_params, obs)
        action = jnp.argmax(logits + noise, axis=-1)
        return action, jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
    mean, raw = actor.apply(actor_params, obs)
    return continuous.tanh_gaussian(mean, continuous.sac_log_std(raw), noise)


def _act(config: Config, env, actor_params, obs: jax.Array, key: jax.Array, greedy=False):
    """Actions for observations ``[B, ...]``: sampled, or the mode with ``greedy``.

    Returns:
      int ``[B]`` (discrete) or normalized ``[B, D]`` in ``[-1, 1]``.
    """
    draw = jax.random.gumbel if config.discrete else jax.random.normal
    noise = draw(key, (obs.shape[0], env.num_actions))
    return _policy(config, env, actor_params, obs, noise * (0.0 if greedy else 1.0))[0]


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """Actions for observations ``[B, ...]``: sampled, or the mode with ``greedy``; int ``[B]``
    (discrete) or ``[B, D]`` within the environment's bounds."""
    action = _act(config, env, state.params["actor"], obs, key, greedy)
    return action if config.discrete else offpolicy.to_env_action(env, action)


def loss_fn(params, target_critic, config: Config, env, batch: replay.NStep, hparams, key):
    """Critic + actor + temperature loss of one batch ``[N, ...]`` and the metrics.

    Each part reaches only its own parameters: targets and the actor's critics are constants,
    the actor and temperature losses use α and log π as constants respectively.
    """
    sg = jax.lax.stop_gradient
    _, critics = networks(config, env)
    alpha = jnp.exp(params["log_alpha"])
    draw = jax.random.gumbel if config.discrete else jax.random.normal
    noise = draw(key, (2, batch.reward.shape[0], env.num_actions))
    if config.discrete:
        actor, _ = networks(config, env)
        logits_tp1 = actor.apply(params["actor"], batch.next_obs)
        q_tp1 = critics.apply(target_critic, batch.next_obs)
        y = value.soft_bellman_target_discrete(
            batch.reward, batch.discount, q_tp1, sg(logits_tp1), alpha=sg(alpha)
        )
        q_all = critics.apply(params["critic"], batch.obs)  # [K, N, A]
        q_t = jnp.take_along_axis(q_all, batch.action.astype(jnp.int32)[None, :, None], 2)[..., 0]
        logits = actor.apply(params["actor"], batch.obs)
        actor_loss = actor_critic.sac_actor_discrete(sg(jnp.min(q_all, 0)), logits, alpha=alpha)
        log_probs = jax.nn.log_softmax(logits)
        entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
    else:
        a_tp1, logp_tp1 = _policy(config, env, params["actor"], batch.next_obs, noise[0])
        q_tp1 = critics.apply(target_critic, batch.next_obs, a_tp1)
        y = value.soft_bellman_target(
            batch.reward, batch.discount, q_tp1, logp_tp1, alpha=sg(alpha)
        )
        q_t = critics.apply(params["critic"], batch.obs, batch.action)  # [K, N]
        a_t, logp_t = _policy(config, env, params["actor"], batch.obs, noise[1])
        q_pi = jnp.min(critics.apply(sg(params["critic"]), batch.obs, a_t), axis=0)
        actor_loss = actor_critic.sac_actor(q_pi, logp_t, alpha=alpha)
        entropy = -logp_t
    critic_loss = jnp.sum(reduce.masked_mean(value.l2(y[None] - q_t), axis=-1))
    alpha_loss = actor_critic.sac_temperature(
        params["log_alpha"], sg(entropy), target_entropy=hparams.target_entropy
    )
    metrics = {
        "loss/value": critic_loss,
        "loss/policy": reduce.masked_mean(actor_loss),
        "loss/alpha": reduce.masked_mean(alpha_loss),
        "alpha": alpha,
        "entropy": reduce.masked_mean(entropy),
        "q/taken": reduce.masked_mean(q_t),
    }
    total = critic_loss + metrics["loss/policy"] + metrics["loss/alpha"]
    return total, metrics


def _grad_step(config, env, state: State, key: jax.Array, learning: jax.Array):
    """One batch: critics, actor and temperature step together, then the target critics."""
    batch_key, loss_key = jax.random.split(key)
    hp = state.hparams
    batch = offpolicy.sample_batch(env, state.buffer, batch_key, config.batch_size, hp.gamma)
    grads, metrics = jax.grad(loss_fn, has_aux=True)(
        state.params, state.target_critic, config, env, batch, hp, loss_key
    )
    lrs = {"actor": hp.lr_actor, "critic": hp.lr_critic, "log_alpha": hp.lr_alpha}
    params, opt_state = {}, {}
    for name, lr in lrs.items():
        params[name], opt_state[name] = offpolicy.adam_step(
            state.params[name], state.opt_state[name], grads[name], lr, learning
        )
    target = offpolicy.polyak(state.target_critic, params["critic"], hp.tau, learning)
    return state._replace(params=params, opt_state=opt_state, target_critic=target), metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One update: act and store, then ``grad_steps`` gradient steps.

    Returns:
      The new state and a flat dict of scalar metrics.
    """
    policy = lambda p, obs, k: _act(config, env, p["actor"], obs, k)  # noqa: E731
    grad_step = lambda s, k, learning: _grad_step(config, env, s, k, learning)  # noqa: E731
    learn = offpolicy.each_step(grad_step, config.grad_steps)
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
