"""The DQN family: one agent, the value loss as a plug-in.

DQN (Mnih et al. 2015) with a target network, Double DQN (van Hasselt et al. 2016), n-step
returns (Hessel et al. 2018), ε-greedy exploration with a linear or exponential schedule, and
the value heads of ``rljax.nets.q_heads``: scalar Q with MSE or Huber, two-hot or HL-Gauss
cross-entropy ("Stop Regressing", Farebrother et al. 2024), C51 (Bellemare et al. 2017),
QR-DQN (Dabney et al. 2018) and IQN (Dabney et al. 2018b). The head is one static value in
``Config`` (its network, its Q read-back and its loss); data collection, replay, target network
and optimizer are shared.

One ``update`` = ``rollout_steps`` batched steps of ``num_envs`` environments with the ε-greedy
policy, written to the replay buffer, then ``grad_steps`` gradient steps on uniformly sampled
(n-step) transitions and, every ``target_update_every`` env steps, a target-network update.
With the defaults (10 envs, 1 step, 1 gradient step) that is the classic purejaxrl/CleanRL
CartPole setup. Gradient steps before ``learning_starts`` env steps are computed with a zero
loss scale, which leaves parameters and optimizer exactly as they were (seeds stay in lockstep
under ``vmap``, and no select over the parameters is needed).
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rljax import checks, replay
from rljax.agents import learner
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.losses import reduce
from rljax.nets import ACTIVATIONS, q_heads

EPS_SCHEDULES = ("linear", "exponential")


@dataclasses.dataclass(frozen=True)
class Config:
    """Static DQN settings (shapes and switches). Sweepable numbers live in ``Hparams``."""

    num_envs: int = 10  # parallel environments per agent
    rollout_steps: int = 1  # batched env steps per update
    grad_steps: int = 1  # gradient steps per update
    buffer_size: int = 10_000  # replay capacity in transitions (a multiple of num_envs)
    batch_size: int = 128  # sampled transitions per gradient step
    learning_starts: int = 10_000  # env steps before gradient steps take effect
    target_update_every: int = 500  # env steps between target updates
    tau: float = 1.0  # target update rate: 1 = copy, < 1 = Polyak averaging
    head: q_heads.Head = q_heads.MSE()  # value head (q_heads.make: name + settings -> Head)
    double: bool = False  # Double DQN: the online network selects the bootstrap action
    n_step: int = 1  # n-step returns
    eps_schedule: str = "linear"  # linear | exponential decay of ε over eps_decay_steps
    hidden: tuple[int, ...] = (120, 84)  # MLP widths
    activation: str = "relu"  # one of rljax.nets.ACTIVATIONS
    max_grad_norm: float = 0.0  # global-norm clipping; 0 = off
    anneal_lr: bool = False  # linear decay of the learning rate to 0 over num_updates
    num_updates: int = 50_000  # total updates of the run (set by the trainer)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape: array leaves, so a grid of them can be vmapped."""

    lr: jax.Array  # Adam step size
    gamma: jax.Array  # discount γ
    eps_start: jax.Array  # ε at env step 0
    eps_end: jax.Array  # final ε
    eps_decay_steps: jax.Array  # env steps of the decay (linear: to eps_end; exp.: time constant)
    hl_sigma: jax.Array  # HL-Gauss σ in bin widths (Stop Regressing recommends 0.75)
    reward_noise: jax.Array  # std of Gaussian noise added to sampled rewards (0 = off)


HPARAM_RULES = {
    "lr": (lambda v: v > 0, "> 0"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "eps_start": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "eps_end": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "eps_decay_steps": (lambda v: v > 0, "> 0"),
    "hl_sigma": (lambda v: v > 0, "> 0"),
    "reward_noise": (lambda v: v >= 0, ">= 0"),
}


def env_steps_per_update(config: Config) -> int:
    """Environment steps one agent takes per ``update``."""
    return config.num_envs * config.rollout_steps


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """DQN (every value head, IQN's included) picks one of ``A`` discrete actions."""
    del config
    learner.validate_discrete_env("dqn", env, "for continuous actions use ppo, sac, td3 or mpo")


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    for field in ("num_envs", "rollout_steps", "grad_steps", "buffer_size", "batch_size",
                  "target_update_every", "n_step", "num_updates"):  # fmt: skip
        checks.check_int(f"dqn.{field}", getattr(config, field), low=1)
    if not isinstance(config.head, q_heads.Head):
        raise ValueError(
            f"dqn.head={config.head!r} is invalid; allowed: a rljax.nets.q_heads.Head "
            f"(q_heads.make(name) with name in {', '.join(q_heads.HEADS)})"
        )
    if config.eps_schedule not in EPS_SCHEDULES:
        raise ValueError(
            f"dqn.eps_schedule={config.eps_schedule!r} is unknown; "
            f"valid: {', '.join(EPS_SCHEDULES)}"
        )
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"dqn.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if not config.hidden or any(int(h) < 1 for h in config.hidden):
        raise ValueError(f"dqn.hidden={config.hidden!r} is invalid; allowed: positive widths")
    if config.buffer_size % config.num_envs:
        raise ValueError(
            f"dqn.buffer_size={config.buffer_size} is invalid; allowed: a multiple of "
            f"num_envs={config.num_envs}"
        )
    if config.buffer_size < config.batch_size:
        raise ValueError(
            f"dqn.buffer_size={config.buffer_size} is smaller than a batch; allowed: >= "
            f"batch_size={config.batch_size}"
        )
    if config.buffer_size // config.num_envs <= config.n_step:
        raise ValueError(
            f"dqn.buffer_size={config.buffer_size} is too small; allowed: > n_step * num_envs "
            f"= {config.n_step * config.num_envs}"
        )
    need = max(config.batch_size, config.n_step * config.num_envs)
    if not isinstance(config.learning_starts, int) or config.learning_starts < need:
        raise ValueError(
            f"dqn.learning_starts={config.learning_starts!r} is invalid; allowed: an integer >= "
            f"max(batch_size, n_step * num_envs) = {need}, so the first sample has enough data"
        )
    if config.target_update_every % env_steps_per_update(config):
        raise ValueError(
            f"dqn.target_update_every={config.target_update_every} is invalid; allowed: a "
            f"multiple of num_envs*rollout_steps={env_steps_per_update(config)}"
        )
    if not 0 < config.tau <= 1:
        raise ValueError(f"dqn.tau={config.tau!r} is invalid; allowed: in (0, 1]")
    if config.max_grad_norm < 0:
        raise ValueError(f"dqn.max_grad_norm={config.max_grad_norm!r} is invalid; allowed: >= 0")


class State(NamedTuple):
    """One DQN agent: networks, optimizer, replay, environments and its own key."""

    params: dict
    target_params: dict
    opt_state: optax.OptState
    buffer: replay.Buffer
    env: rollout_lib.RolloutState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # updates done (int32)
    hparams: Hparams


def network(config: Config, env: gymnax_env.Env):
    """The Q-network for ``env`` that ``config.head`` reads (``Head.network``)."""
    return config.head.network(env.num_actions, config.hidden, config.activation)


def optimizer(config: Config) -> optax.GradientTransformation:
    """Adam's scaling (optionally after clipping); the swept step size is applied in ``update``."""
    adam = optax.scale_by_adam()
    if config.max_grad_norm > 0:
        return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), adam)
    return adam


def epsilon(config: Config, hparams: Hparams, env_steps: jax.Array) -> jax.Array:
    """ε after ``env_steps``: linear to ``eps_end`` or exponential with time constant."""
    t = env_steps.astype(jnp.float32)
    if config.eps_schedule == "linear":
        frac = jnp.clip(t / hparams.eps_decay_steps, 0.0, 1.0)
        return hparams.eps_start + frac * (hparams.eps_end - hparams.eps_start)
    decay = jnp.exp(-t / hparams.eps_decay_steps)
    return hparams.eps_end + (hparams.eps_start - hparams.eps_end) * decay


def _example_row(config: Config, env: gymnax_env.Env, env_state) -> jax.ShapeDtypeStruct:
    """Shapes and dtypes of one stored row (a ``Transition`` ``[B, ...]``), traced, not run."""
    fake_policy = lambda p, o, k: (jnp.zeros(o.shape[0], jnp.int32),) + (jnp.zeros(o.shape[0]),) * 2  # noqa: E501, E731
    run = lambda: rollout_lib.rollout(env, fake_policy, None, jax.random.PRNGKey(0), env_state, 1)  # noqa: E731
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), jax.eval_shape(run)[1]
    )


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one agent: network and target copy, optimizer, empty replay, reset envs."""
    net_key, env_key, agent_key = jax.random.split(key, 3)
    params = network(config, env).init(net_key, jnp.zeros((1, *env.obs_shape), jnp.float32))
    env_state = rollout_lib.rollout_init(env, env_key, config.num_envs)
    buffer = replay.init(
        _example_row(config, env, env_state), config.buffer_size // config.num_envs
    )
    return State(
        params=params,
        target_params=params,
        opt_state=optimizer(config).init(params),
        buffer=buffer,
        env=env_state,
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams)),
    )


def _act(
    config: Config, env: gymnax_env.Env, params, obs: jax.Array, key: jax.Array, eps: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """ε-greedy actions for observations ``[B, ...]``.

    Returns:
      ``(action [B] int32, greedy value max_a Q(s, a) [B])``.
    """
    q = config.head.q_values(network(config, env).apply(params, obs))
    explore_key, random_key = jax.random.split(key)
    greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
    random_action = jax.random.randint(random_key, greedy.shape, 0, env.num_actions)
    explore = jax.random.uniform(explore_key, greedy.shape) < eps
    return jnp.where(explore, random_action, greedy), jnp.max(q, axis=-1)


def loss_fn(
    params, target_params, config: Config, env: gymnax_env.Env, batch: replay.NStep,
    hparams: Hparams, key: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:  # fmt: skip
    """Mean head loss over a batch of (n-step) transitions ``[N, ...]``.

    The bootstrap action is ``argmax_a Q_target(s', a)`` (DQN) or ``argmax_a Q_online(s', a)``
    (Double DQN); the target network evaluates it. ``key`` feeds the networks' ``"tau"`` RNG
    stream (IQN's sampled fractions, independent per network call; unused by other heads).
    """
    net = network(config, env)
    rngs = lambda i: {} if key is None else {"tau": jax.random.fold_in(key, i)}  # noqa: E731
    out_t = net.apply(params, batch.obs, rngs=rngs(0))
    out_tp1 = jax.lax.stop_gradient(net.apply(target_params, batch.next_obs, rngs=rngs(1)))
    a_tp1 = None  # the head takes argmax_a Q_target(s', a)
    if config.double:
        q_select = config.head.q_values(net.apply(params, batch.next_obs, rngs=rngs(2)))
        a_tp1 = jnp.argmax(jax.lax.stop_gradient(q_select), axis=-1)
    a_t = batch.action.astype(jnp.int32)
    per_example = config.head.td_loss(
        out_t, a_t, batch.reward, batch.discount, out_tp1, a_tp1, hl_sigma=hparams.hl_sigma
    )
    loss = reduce.masked_mean(per_example)
    q_t = jnp.take_along_axis(config.head.q_values(out_t), a_t[:, None], axis=-1)
    return loss, {"loss/value": loss, "q/taken": reduce.masked_mean(q_t)}


def _standard_normal(bits: jax.Array) -> jax.Array:
    """Standard normal samples from uniform uint32 ``bits`` (inverse CDF, as jax.random does)."""
    u = jax.lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32) - 1.0
    lo = jnp.nextafter(jnp.float32(-1.0), jnp.float32(0.0))
    return jnp.sqrt(2.0).astype(jnp.float32) * jax.lax.erf_inv(jnp.maximum(2.0 * u - 1.0, lo))


def _grad_step(config, env, state: State, key: jax.Array, learning: jax.Array):
    """One gradient step on a uniform replay batch; a no-op on the parameters until ``learning``.

    Gating is done without a second copy of the parameters: before ``learning`` the loss is
    scaled by 0, so the gradients and Adam's moments stay exactly 0 and the update is exactly 0;
    only Adam's step count is held back. That is the same as skipping the step, but costs one
    multiply instead of a select over every parameter and optimizer leaf.
    """
    bits = jax.random.bits(key, (2, config.batch_size), jnp.uint32)  # one draw: rows and noise
    seq = replay.take_sequences(state.buffer, bits[0], config.n_step)
    batch = replay.n_step_transition(seq, state.hparams.gamma)
    batch = batch._replace(
        reward=batch.reward + state.hparams.reward_noise * _standard_normal(bits[1])
    )
    gate = learning.astype(jnp.float32)
    tau_key = jax.random.fold_in(key, 1)  # IQN's fractions; the draw above stays as it was

    def gated_loss(params):
        loss, metrics = loss_fn(
            params, state.target_params, config, env, batch, state.hparams, tau_key
        )
        return gate * loss, metrics

    (_, metrics), grads = jax.value_and_grad(gated_loss, has_aux=True)(state.params)
    updates, opt_state = optimizer(config).update(grads, state.opt_state, state.params)
    held = lambda new, old: jnp.where(learning, new, old) if new.dtype == jnp.int32 else new  # noqa: E731
    opt_state = jax.tree.map(held, opt_state, state.opt_state)  # Adam's count
    lr = learner.annealed_lr(state.hparams.lr, state.step, config.num_updates, config.anneal_lr)
    params = jax.tree.map(lambda p, u: p - lr * u, state.params, updates)
    return state._replace(params=params, opt_state=opt_state), metrics


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One update: act and store, then gradient step(s) and the periodic target update.

    Returns:
      The new state and a flat dict of scalar metrics.
    """
    key = jax.random.fold_in(state.key, state.step)
    rollout_key, grad_key = jax.random.split(key)
    env_steps = state.step * env_steps_per_update(config)
    eps = epsilon(config, state.hparams, env_steps)

    def _policy(params, obs, k):
        action, q_max = _act(config, env, params, obs, k, eps)
        return action, jnp.zeros_like(q_max), q_max

    env_state, traj, stats = rollout_lib.rollout(
        env, _policy, state.params, rollout_key, state.env, config.rollout_steps
    )
    buffer = replay.add_rows(state.buffer, traj)
    state = state._replace(env=env_state, buffer=buffer)
    env_steps = env_steps + env_steps_per_update(config)
    learning = env_steps >= config.learning_starts
    if config.grad_steps == 1:
        state, metrics = _grad_step(config, env, state, grad_key, learning)
    else:
        keys = jax.random.split(grad_key, config.grad_steps)
        state, metrics = jax.lax.scan(
            lambda s, k: _grad_step(config, env, s, k, learning), state, keys
        )
        metrics = jax.tree.map(jnp.mean, metrics)
    copy = env_steps % config.target_update_every == 0
    target = state.params
    if config.tau < 1:
        target = optax.incremental_update(state.params, state.target_params, config.tau)
    target = jax.tree.map(lambda t, o: jnp.where(copy, t, o), target, state.target_params)
    metrics.update(rollout_lib.episode_summary(stats))
    metrics["epsilon"] = eps
    return state._replace(target_params=target, step=state.step + 1), metrics


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
    eps = epsilon(config, state.hparams, state.step * env_steps_per_update(config))
    return _act(config, env, state.params, obs, key, 0.0 if greedy else eps)[0]


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``)."""
    policy = lambda o, f, c, k: (act(config, env, state, o, k, greedy=True), c)  # noqa: E731
    return learner.evaluate_episodes(env, policy, key)
