"""Proximal Policy Optimization for discrete and Gaussian actions on gymnax environments.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms", with the implementation choices
of Huang et al. 2022 ("The 37 Implementation Details of PPO"): GAE, advantage normalization per
minibatch, clipped value loss, global-norm gradient clipping, linear learning-rate annealing.

Everything an agent needs is in ``State``; ``update`` is one PPO iteration (a rollout, then
``num_epochs`` passes of minibatch SGD) and is pure, so ``jax.vmap`` over a leading agent axis
trains many seeds and hyperparameter settings (``Hparams``, array leaves) in one program.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.flatten_util
import jax.numpy as jnp
import optax

from rljax import checks, returns
from rljax.agents import learner
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.losses import policy_gradient, reduce, value
from rljax.nets import ACTIVATIONS, ActorCritic, actor_out, critic_value, distributions
from rljax.types import Transition


@dataclasses.dataclass(frozen=True)
class Config:
    """Static PPO settings (shapes and switches). Sweepable numbers live in ``Hparams``."""

    num_envs: int = 4  # parallel environments per agent
    num_steps: int = 128  # rollout length T per update
    num_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # minibatches per epoch; must divide num_envs * num_steps
    num_updates: int = 976  # total updates of the run (sets the learning-rate annealing)
    hidden: tuple[int, ...] = (64, 64)  # MLP widths of actor and critic
    activation: str = "tanh"  # one of rljax.nets.ACTIVATIONS
    max_grad_norm: float = 0.5  # global-norm gradient clipping
    anneal_lr: bool = True  # linear decay of the learning rate to 0 over num_updates
    normalize_obs: bool = False  # running observation normalization
    normalize_adv: bool = True  # standardize advantages per minibatch
    clip_value: bool = True  # PPO2-style clipped value loss (uses clip_eps)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape: array leaves, so a grid of them can be vmapped."""

    lr: jax.Array  # Adam step size
    clip_eps: jax.Array  # PPO clip range ε (also the value clip range)
    ent_coef: jax.Array  # entropy bonus coefficient
    vf_coef: jax.Array  # value-loss coefficient
    gamma: jax.Array  # discount γ
    gae_lambda: jax.Array  # GAE λ


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    positive = {
        "num_envs": config.num_envs,
        "num_steps": config.num_steps,
        "num_epochs": config.num_epochs,
        "num_minibatches": config.num_minibatches,
        "num_updates": config.num_updates,
    }
    for field, number in positive.items():
        checks.check_int(f"ppo.{field}", number, low=1)
    batch = config.num_envs * config.num_steps
    if batch % config.num_minibatches:
        raise ValueError(
            f"ppo.num_minibatches={config.num_minibatches} does not divide the batch "
            f"num_envs*num_steps={batch}; allowed: a divisor of {batch}"
        )
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"ppo.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if not config.hidden or any(int(h) < 1 for h in config.hidden):
        raise ValueError(f"ppo.hidden={config.hidden!r} is invalid; allowed: positive widths")
    if config.max_grad_norm <= 0:
        raise ValueError(f"ppo.max_grad_norm={config.max_grad_norm!r} is invalid; allowed: > 0")


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """PPO acts in discrete (categorical) and continuous (Gaussian) action spaces: every
    environment is accepted."""
    del config, env


# field -> (check, description of what is allowed)
HPARAM_RULES = {
    "lr": (lambda v: v > 0, "> 0"),
    "clip_eps": (lambda v: v > 0, "> 0"),
    "ent_coef": (lambda v: v >= 0, ">= 0"),
    "vf_coef": (lambda v: v >= 0, ">= 0"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "gae_lambda": (lambda v: 0 <= v <= 1, "in [0, 1]"),
}


def env_steps_per_update(config: Config) -> int:
    """Environment steps one agent takes per ``update``."""
    return config.num_envs * config.num_steps


class State(NamedTuple):
    """One PPO agent: parameters, optimizer, environments and its own key."""

    params: dict
    opt_state: optax.OptState
    env: rollout_lib.RolloutState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # number of updates done (int32)
    hparams: Hparams


def network(config: Config, env: gymnax_env.Env) -> ActorCritic:
    """The actor-critic network for ``env``."""
    return ActorCritic(env.num_actions, env.discrete, config.hidden, config.activation)


def optimizer(config: Config) -> optax.GradientTransformation:
    """Adam's scaling; the global-norm clip and the (swept, annealed) step size come later."""
    return optax.scale_by_adam(eps=1e-5)


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one agent: network, optimizer state and ``num_envs`` reset environments."""
    net_key, env_key, agent_key = jax.random.split(key, 3)
    dummy_obs = jnp.zeros((1, *env.obs_shape), jnp.float32)
    params = network(config, env).init(net_key, dummy_obs)
    hparams = Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams))
    return State(
        params=params,
        opt_state=optimizer(config).init(jax.flatten_util.ravel_pytree(params)[0]),
        env=rollout_lib.rollout_init(env, env_key, config.num_envs),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=hparams,
    )


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """Actions for raw observations ``[B, ...]`` (normalized with the state's statistics when
    ``config.normalize_obs``): sampled, or with ``greedy`` the mode (argmax of the logits, the
    Gaussian mean). Returns int ``[B]`` or ``[B, D]``."""
    if config.normalize_obs:
        obs = rollout_lib.normalize(state.env.obs_norm, obs)
    policy_out, log_std = actor_out(state.params, obs, network(config, env))
    if greedy:
        return jnp.argmax(policy_out, axis=-1) if env.discrete else policy_out
    return distributions.sample_and_log_prob(key, policy_out, log_std, env.discrete)[0]


def _act(config: Config, env: gymnax_env.Env, params, obs: jax.Array, key: jax.Array):
    """The training-time policy on normalized observations: ``(action, logp [B], value [B])``."""
    policy_out, log_std, v = network(config, env).apply(params, obs)
    action, logp = distributions.sample_and_log_prob(key, policy_out, log_std, env.discrete)
    return action, logp, v


class Batch(NamedTuple):
    """A flattened PPO minibatch ``[N, ...]``."""

    obs: jax.Array
    action: jax.Array
    old_logp: jax.Array
    old_value: jax.Array
    adv: jax.Array
    target: jax.Array


def loss_fn(
    params, config: Config, env: gymnax_env.Env, batch: Batch, hparams: Hparams
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO loss on a minibatch: clipped surrogate + vf_coef · value loss - ent_coef · entropy."""
    policy_out, log_std, v = network(config, env).apply(params, batch.obs)
    logp = distributions.log_prob(policy_out, log_std, batch.action, env.discrete)
    entropy = distributions.entropy(policy_out, log_std, env.discrete)
    return objective(config, hparams, batch, logp, entropy, v)


def objective(
    config, hparams: Hparams, batch: Batch, logp: jax.Array, entropy: jax.Array, v: jax.Array
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The PPO objective from the network's outputs on ``batch`` (any shape, e.g. ``[N]`` or
    ``[T, B]``; every element weighs the same): ``L = L_clip + c_v L_V - c_H H``.

    ``config`` needs ``normalize_adv`` and ``clip_value``; the recurrent learner shares it.
    """
    adv = batch.adv
    if config.normalize_adv:
        adv = (adv - jnp.mean(adv)) / (jnp.std(adv) + 1e-8)
    eps = hparams.clip_eps
    policy_loss = reduce.masked_mean(
        policy_gradient.ppo_clip(logp, batch.old_logp, adv, eps_low=eps, eps_high=eps)
    )
    if config.clip_value:
        value_loss = value.clipped_value_loss(v, batch.old_value, batch.target, clip_eps=eps)
    else:
        value_loss = 0.5 * jnp.square(v - batch.target)
    value_loss = reduce.masked_mean(value_loss)
    entropy = reduce.masked_mean(entropy)
    total = policy_loss + hparams.vf_coef * value_loss - hparams.ent_coef * entropy
    log_ratio = logp - batch.old_logp
    metrics = {
        "loss/total": total,
        "loss/policy": policy_loss,
        "loss/value": value_loss,
        "loss/entropy": entropy,
        # k3 estimate of KL(old || new), Schulman 2020 "Approximating KL divergence"
        "kl/approx": reduce.masked_mean(jnp.exp(log_ratio) - 1.0 - log_ratio),
        "clip_frac": reduce.masked_mean((jnp.abs(jnp.exp(log_ratio) - 1.0) > eps).astype(v.dtype)),
    }
    return total, metrics


def _act_without_value(config: Config, env: gymnax_env.Env, params, obs, noise):
    """``act`` for the rollout: the actor alone (values come after it, in one batch), its
    randomness drawn for the whole rollout beforehand (``distributions.draw_noise``)."""
    policy_out, log_std = actor_out(params, obs, network(config, env))
    action, logp = distributions.sample_from_noise(policy_out, log_std, noise, env.discrete)
    return action, logp, jnp.zeros_like(logp)


def _values(config: Config, params, traj: Transition) -> tuple[jax.Array, jax.Array]:
    """Critic values of the observations and of the true next observations, ``[T, B]`` each.

    One batched pass over ``2 T B`` observations after the rollout costs less than ``T`` small
    passes inside it; the next observations give the truncation bootstrap.
    """
    t, b = traj.reward.shape
    both = jnp.concatenate([traj.obs, traj.next_obs]).reshape(2 * t * b, *traj.obs.shape[2:])
    v = critic_value(params, both, config.hidden, config.activation).reshape(2, t, b)
    return v[0], v[1]


def _advantages(traj: Transition, v_tp1: jax.Array, hparams: Hparams):
    """GAE advantages and λ-return targets ``[T, B]``; bootstraps from the true next obs."""
    discount_t = hparams.gamma * (1.0 - traj.terminated.astype(jnp.float32))
    done_t = jnp.logical_or(traj.terminated, traj.truncated).astype(jnp.float32)
    adv = returns.gae(
        traj.reward, discount_t, traj.value, v_tp1, done_t, lambda_=hparams.gae_lambda
    )
    return adv, adv + traj.value


def _sgd_step(config, env, hparams: Hparams, unravel, train, batch: Batch, lr: jax.Array):
    """One minibatch step of ``loss_fn`` on ``train = (flat params, opt_state)``."""
    loss = lambda params, b: loss_fn(params, config, env, b, hparams)  # noqa: E731
    return sgd_step(config, loss, unravel, train, batch, lr)


def sgd_step(config, loss, unravel, train, batch, lr: jax.Array):
    """One clipped Adam step of ``loss(params, batch) -> (total, metrics)`` on ``train = (flat
    params, opt_state)``; ``config`` needs ``max_grad_norm`` (the recurrent learner shares it).

    The parameters and Adam's moments are single vectors during the SGD loop (``unravel``
    gives the network its tree): one kernel per optimizer update instead of one per leaf and
    moment. The global gradient norm is computed once, for the clip and the ``grad_norm`` metric.
    """
    flat, opt_state = train
    grad_fn = jax.value_and_grad(lambda f: loss(unravel(f), batch), has_aux=True)
    (_, metrics), grads = grad_fn(flat)
    grad_norm = jnp.sqrt(jnp.sum(jnp.square(grads)))
    clip = jnp.minimum(1.0, config.max_grad_norm / jnp.maximum(grad_norm, 1e-12))
    updates, opt_state = optimizer(config).update(grads * clip, opt_state, flat)
    metrics["grad_norm"] = grad_norm
    return (flat - lr * updates, opt_state), metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One PPO iteration: a rollout of ``num_steps`` × ``num_envs``, then minibatch epochs.

    Returns:
      The new state and a flat dict of scalar metrics (losses averaged over minibatches, the
      mean return of episodes that finished in this rollout, env steps so far).
    """
    key = jax.random.fold_in(state.key, state.step)
    rollout_key, perm_key = jax.random.split(key)
    policy_fn = lambda p, o, k: _act_without_value(config, env, p, o, k)  # noqa: E731
    noise = lambda k, t, b: distributions.draw_noise(k, (t, b), env.num_actions, env.discrete)  # noqa: E731
    env_state, traj, stats = rollout_lib.rollout(
        env, policy_fn, state.params, rollout_key, state.env, config.num_steps,
        normalize_obs=config.normalize_obs, policy_noise=noise,
    )  # fmt: skip
    value, v_tp1 = _values(config, state.params, traj)
    traj = traj._replace(value=value)
    adv, target = _advantages(traj, v_tp1, state.hparams)
    n = config.num_steps * config.num_envs
    flat = Batch(traj.obs, traj.action, traj.logp, traj.value, adv, target)
    flat = jax.tree.map(lambda x: x.reshape(n, *x.shape[2:]), flat)

    lr = learner.annealed_lr(state.hparams.lr, state.step, config.num_updates, config.anneal_lr)
    minibatch_size = n // config.num_minibatches

    # All epochs' shuffles at once: one sort of [E, n] random keys, one gather per leaf, then
    # one scan over the E * M minibatches (no nested scan, no per-epoch permutation loop).
    perms = jnp.argsort(jax.random.bits(perm_key, (config.num_epochs, n), jnp.uint32), axis=-1)
    num_batches = config.num_epochs * config.num_minibatches
    batches = jax.tree.map(
        lambda x: x[perms.reshape(-1)].reshape(num_batches, minibatch_size, *x.shape[1:]), flat
    )
    flat, unravel = jax.flatten_util.ravel_pytree(state.params)
    step = lambda t, mb: _sgd_step(config, env, state.hparams, unravel, t, mb, lr)  # noqa: E731
    (flat, opt_state), metrics = jax.lax.scan(step, (flat, state.opt_state), batches)
    state = state._replace(params=unravel(flat), opt_state=opt_state)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics.update(rollout_lib.episode_summary(stats))
    state = state._replace(env=env_state, step=state.step + 1)
    return state, metrics


def train_chunk(
    config: Config, env: gymnax_env.Env, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one agent as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, env, state, num_updates)


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``)."""
    policy = lambda o, f, c, k: (act(config, env, state, o, k, greedy=True), c)  # noqa: E731
    return learner.evaluate_episodes(env, policy, key)
