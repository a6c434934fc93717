"""MPO (Abdolmaleki et al. 2018): KL-constrained policy iteration, continuous and discrete.

E-step: for each state of a batch, actions from the target policy π' (N samples of a Gaussian,
or all A actions of a categorical weighted by π') are reweighted by ``exp(Q'(s, a) / η)``; the
temperature η is the learned multiplier of ``KL(q ‖ π') <= ε`` (the convex dual
``rljax.losses.mpo.temperature_dual``). M-step: the online policy fits those weights by
weighted maximum likelihood under ``KL(π' ‖ π_θ) <= ε_KL``: for the Gaussian the bound is
decoupled into one on the mean (``eps_mean``) and one on the covariance (``eps_std``), each with
its own multiplier; for the categorical one bound (``eps_mean``). Every dual variable is a
parameter passed through ``softplus`` and trained by Adam on its Lagrangian, like the networks.

Critics: K Q-networks regressed on the expected target under the target policy,
``r + γ E_{a'~π'}[min_k Q'_k(s', a')]`` (N samples, or the exact sum for discrete actions).
Actor and critic targets are Polyak averages. Acting samples the online policy.

One ``update``: collect ``num_envs × rollout_steps`` steps (uniformly random actions before
``learning_starts``), then ``grad_steps`` gradient steps of critic, policy and duals from one
batch and one backward pass. Maths: ``rljax.losses.mpo``.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rljax import checks, replay
from rljax.agents import learner, offpolicy
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.losses import kl as kl_lib
from rljax.losses import mpo as mpo_loss
from rljax.losses import reduce, value
from rljax.nets import continuous, distributions


@dataclasses.dataclass(frozen=True)
class Config:
    """Static MPO settings (shapes and switches). Sweepable numbers live in ``Hparams``."""

    discrete: bool = False  # categorical policy over all actions (else a diagonal Gaussian)
    num_envs: int = 4  # parallel environments per agent
    rollout_steps: int = 1  # batched env steps per update
    grad_steps: int = 2  # gradient steps per update
    buffer_size: int = 100_000  # replay capacity in transitions (a multiple of num_envs)
    batch_size: int = 128  # sampled transitions per gradient step
    learning_starts: int = 1_000  # env steps of uniformly random actions before learning
    num_samples: int = 16  # N actions sampled per state (continuous E-step and critic target)
    num_critics: int = 2  # critics; targets take their minimum
    hidden: tuple[int, ...] = (128, 128)  # MLP widths of actor and critics
    activation: str = "relu"  # one of rljax.nets.ACTIVATIONS
    num_updates: int = 50_000  # total updates of the run (set by the trainer)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape: array leaves, so a grid of them can be vmapped."""

    lr_actor: jax.Array  # Adam step size of the policy
    lr_critic: jax.Array  # Adam step size of the critics
    lr_dual: jax.Array  # Adam step size of the dual variables (η, α_μ, α_Σ)
    gamma: jax.Array  # discount γ
    tau: jax.Array  # Polyak rate of the target networks, in (0, 1]
    eps_eta: jax.Array  # ε: E-step bound on KL(q ‖ π')
    eps_mean: jax.Array  # M-step bound on the mean's KL (discrete: on the whole KL)
    eps_std: jax.Array  # M-step bound on the covariance's KL (continuous only)
    init_eta: jax.Array  # initial temperature η
    init_alpha: jax.Array  # initial M-step multipliers α_μ, α_Σ
    init_std: jax.Array  # initial policy σ (normalized action units; continuous only)


_POSITIVE = (lambda v: v > 0, "> 0")
HPARAM_RULES = {
    "lr_actor": _POSITIVE,
    "lr_critic": _POSITIVE,
    "lr_dual": _POSITIVE,
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "tau": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "eps_eta": _POSITIVE,
    "eps_mean": _POSITIVE,
    "eps_std": _POSITIVE,
    "init_eta": _POSITIVE,
    "init_alpha": _POSITIVE,
    "init_std": _POSITIVE,
}


def env_steps_per_update(config: Config) -> int:
    """Environment steps one agent takes per ``update``."""
    return config.num_envs * config.rollout_steps


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    offpolicy.validate_common("mpo", config)
    if not isinstance(config.discrete, bool):
        raise ValueError(f"mpo.discrete={config.discrete!r} is invalid; allowed: True or False")
    for field in ("num_samples", "num_critics"):
        checks.check_int(f"mpo.{field}", getattr(config, field), low=1)


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """Refuses the continuous variant on a discrete environment and vice versa."""
    kind = "discrete" if env.discrete else "continuous"
    hint = f"set mpo.discrete={env.discrete} for the {kind} variant"
    offpolicy.validate_action_space("mpo", config.discrete, env, hint)


class State(NamedTuple):
    """One MPO agent: policy, critics, dual variables, targets, Adam states, replay, envs."""

    params: dict  # {"actor", "critic", "dual": {"eta", "alpha_mean", "alpha_std"} raw values}
    target_params: dict  # {"actor", "critic"}
    opt_state: dict  # one Adam state per entry of params
    buffer: replay.Buffer
    env: rollout_lib.RolloutState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # updates done (int32)
    hparams: Hparams


def networks(config: Config, env: gymnax_env.Env) -> tuple:
    """``(actor, critics)``: categorical logits or a Gaussian head, and K critics."""
    return offpolicy.actor_and_critics(config, env)


def _inverse_softplus(x: jax.Array) -> jax.Array:
    return jnp.log(jnp.expm1(x))


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one agent: networks and target copies, duals, Adam, empty replay, envs."""
    actor_key, critic_key, env_key, agent_key = jax.random.split(key, 4)
    hparams = Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams))
    actor, critics = networks(config, env)
    obs = jnp.zeros((1, *env.obs_shape), jnp.float32)
    action = None if config.discrete else jnp.zeros((1, env.num_actions), jnp.float32)
    alpha = _inverse_softplus(hparams.init_alpha)
    params = {
        "actor": actor.init(actor_key, obs),
        "critic": critics.init(critic_key, obs, action),
        "dual": {"eta": _inverse_softplus(hparams.init_eta), "alpha_mean": alpha,
                 "alpha_std": alpha},
    }  # fmt: skip
    return State(
        params=params,
        target_params={"actor": params["actor"], "critic": params["critic"]},
        opt_state={k: offpolicy.ADAM.init(v) for k, v in params.items()},
        buffer=offpolicy.init_buffer(env, config.num_envs, config.buffer_size),
        env=offpolicy.init_envs(env, env_key, config.num_envs),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=hparams,
    )


def policy_out(config: Config, env, actor_params, obs: jax.Array, init_std):
    """Logits ``[B, A]`` (discrete) or ``(mean, std)`` ``[B, D]`` each (continuous)."""
    actor, _ = networks(config, env)
    if config.discrete:
        return actor.apply(actor_params, obs)
    mean, raw = actor.apply(actor_params, obs)
    return mean, continuous.mpo_std(raw, init_std)


def _act(config: Config, env, actor_params, obs: jax.Array, key: jax.Array, init_std, greedy=False):
    """Sampled (or, with ``greedy``, modal) actions: int ``[B]`` or normalized ``[B, D]``."""
    out = policy_out(config, env, actor_params, obs, init_std)
    if config.discrete:
        return jnp.argmax(out, -1) if greedy else distributions.categorical_sample(key, out)
    mean, std = out
    scale = 0.0 if greedy else 1.0
    return jnp.clip(mean + scale * std * jax.random.normal(key, mean.shape), -1.0, 1.0)


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """Sampled (or, with ``greedy``, modal) actions for observations ``[B, ...]``: int ``[B]``
    or ``[B, D]`` within the environment's bounds."""
    std = state.hparams.init_std
    action = _act(config, env, state.params["actor"], obs, key, std, greedy)
    return action if config.discrete else offpolicy.to_env_action(env, action)


def _sample(key, mean, std, n: int):
    """N samples of ``N(mean, std²)`` per state: ``[B, N, D]``."""
    return mean[:, None] + std[:, None] * jax.random.normal(key, (mean.shape[0], n, mean.shape[1]))


def _q_samples(critics, critic_params, obs, actions):
    """``min_k Q_k(s, clip(a_j))`` for sampled actions ``[B, N, D]``: ``[B, N]``."""
    b, n, d = actions.shape
    obs_rep = jnp.repeat(obs, n, axis=0)
    q = critics.apply(critic_params, obs_rep, jnp.clip(actions, -1, 1).reshape(b * n, d))
    return jnp.min(q, axis=0).reshape(b, n)


def loss_fn(params, target_params, config: Config, env, batch: replay.NStep, hparams, key):
    """Critic, E-step temperature, M-step policy and KL-constraint losses of one batch."""
    sg = jax.lax.stop_gradient
    _, critics = networks(config, env)
    dual = jax.tree.map(mpo_loss.multiplier, params["dual"])
    out = lambda p, obs: policy_out(config, env, p, obs, hparams.init_std)  # noqa: E731
    q_t = critics.apply(params["critic"], batch.obs, None if config.discrete else batch.action)
    if config.discrete:
        q_tp1 = jnp.min(critics.apply(target_params["critic"], batch.next_obs), axis=0)
        probs_tp1 = jax.nn.softmax(out(target_params["actor"], batch.next_obs))
        v_tp1 = jnp.sum(probs_tp1 * q_tp1, axis=-1)
        q_t = jnp.take_along_axis(q_t, batch.action.astype(jnp.int32)[None, :, None], 2)[..., 0]
        target_logits = out(target_params["actor"], batch.obs)
        log_prior = jax.nn.log_softmax(target_logits)
        q_e = jnp.min(critics.apply(target_params["critic"], batch.obs), axis=0)  # [N, A]
        logits = out(params["actor"], batch.obs)
        weights = mpo_loss.e_step_weights(q_e, log_prior, dual["eta"])
        policy_loss = mpo_loss.weighted_log_likelihood(weights, jax.nn.log_softmax(logits))
        kl = kl_lib.categorical_kl(sg(target_logits), logits)
        kl_loss = mpo_loss.kl_constraint(kl, dual["alpha_mean"], epsilon=hparams.eps_mean)
        kl_std = jnp.zeros_like(kl)
    else:
        key_tp1, key_t = jax.random.split(key)
        n = config.num_samples
        mean_tp1, std_tp1 = out(target_params["actor"], batch.next_obs)
        a_tp1 = _sample(key_tp1, mean_tp1, std_tp1, n)
        v_tp1 = jnp.mean(_q_samples(critics, target_params["critic"], batch.next_obs, a_tp1), 1)
        target_mean, target_std = out(target_params["actor"], batch.obs)
        a_j = _sample(key_t, target_mean, target_std, n)  # [N, n, D]
        q_e = _q_samples(critics, target_params["critic"], batch.obs, a_j)
        log_prior = jnp.full_like(q_e, -jnp.log(n))
        weights = mpo_loss.e_step_weights(q_e, log_prior, dual["eta"])
        mean, std = out(params["actor"], batch.obs)
        logp = lambda m, s: distributions.gaussian_log_prob(m[:, None], jnp.log(s)[:, None], a_j)  # noqa: E731
        policy_loss = mpo_loss.weighted_log_likelihood(
            weights, logp(mean, target_std)
        ) + mpo_loss.weighted_log_likelihood(weights, logp(target_mean, std))
        kl, kl_std = mpo_loss.decoupled_gaussian_kl(target_mean, target_std, mean, std)
        kl_loss = mpo_loss.kl_constraint(
            kl, dual["alpha_mean"], epsilon=hparams.eps_mean
        ) + mpo_loss.kl_constraint(kl_std, dual["alpha_std"], epsilon=hparams.eps_std)
    y = sg(batch.reward + batch.discount * v_tp1)  # expected target under π'
    critic_loss = jnp.sum(reduce.masked_mean(value.l2(y[None] - q_t), axis=-1))
    eta_loss = mpo_loss.temperature_dual(q_e, log_prior, dual["eta"], epsilon=hparams.eps_eta)
    metrics = {
        "loss/value": critic_loss,
        "loss/policy": reduce.masked_mean(policy_loss),
        "loss/kl": reduce.masked_mean(kl_loss),
        "loss/temperature": reduce.masked_mean(eta_loss),
        "dual/eta": dual["eta"],
        "dual/alpha_mean": dual["alpha_mean"],
        "kl/mean": reduce.masked_mean(kl),
        "kl/std": reduce.masked_mean(kl_std),
        "q/taken": jnp.mean(q_t),
    }
    if not config.discrete:
        metrics["dual/alpha_std"] = dual["alpha_std"]
        metrics["policy/std"] = jnp.mean(std)
    total = critic_loss + metrics["loss/policy"] + metrics["loss/kl"]
    return total + metrics["loss/temperature"], metrics


def _grad_step(config, env, state: State, key: jax.Array, learning: jax.Array):
    """One batch: critics, policy and duals step together, then the target networks."""
    batch_key, loss_key = jax.random.split(key)
    hp = state.hparams
    batch = offpolicy.sample_batch(env, state.buffer, batch_key, config.batch_size, hp.gamma)
    grads, metrics = jax.grad(loss_fn, has_aux=True)(
        state.params, state.target_params, config, env, batch, hp, loss_key
    )
    lrs = {"actor": hp.lr_actor, "critic": hp.lr_critic, "dual": hp.lr_dual}
    params, opt_state = {}, {}
    for name, lr in lrs.items():
        params[name], opt_state[name] = offpolicy.adam_step(
            state.params[name], state.opt_state[name], grads[name], lr, learning
        )
    online = {"actor": params["actor"], "critic": params["critic"]}
    target = offpolicy.polyak(state.target_params, online, hp.tau, learning)
    return state._replace(params=params, opt_state=opt_state, target_params=target), metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One update: act and store, then ``grad_steps`` gradient steps.

    Returns:
      The new state and a flat dict of scalar metrics.
    """
    init_std = state.hparams.init_std
    policy = lambda p, obs, k: _act(config, env, p["actor"], obs, k, init_std)  # noqa: E731
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
