"""SQIRL: random exploration, then k steps of fitted-Q iteration on the random policy's Q.

Laidlaw, Zhu, Russell & Dragan 2024, "The Effective Horizon Explains Deep RL Performance in
Stochastic Environments" (arXiv 2312.08369). Many stochastic MDPs are solved by acting greedily
on ``Q_k = T^k Q^{π_rand}``: a few Bellman-optimality backups of the uniformly random policy's
Q-function. SQIRL separates exploration from learning: it only ever explores uniformly at random
and fits ``Q_0 ≈ Q^{π_rand}`` and ``Q_j ≈ r + γ max_a' Q_{j-1}(s', a')`` with any regression
oracle, then acts greedily on ``Q_k``.

This module is the deep, discounted variant on gymnax, with the data growing over training:

* each ``update`` adds ``num_envs × rollout_steps`` exploration transitions to a replay buffer
  (the dataset; it keeps everything up to ``buffer_size``). An exploration episode follows the
  greedy policy on ``Q_k`` for its first ``switch`` steps and acts uniformly at random after;
  ``switch`` is drawn per episode from ``0..prefix_max`` and ``prefix_max`` grows linearly to
  the episode limit by ``prefix_until`` of training (``prefix_until = 0``: purely random). This
  is our reading of SQIRL/GORP's loop, which learns the policy one timestep at a time and
  collects the rollouts for timestep i by following the policy learned for the earlier steps,
  then exploring randomly; with a stationary policy, a growing random roll-in length plays
  that role. Without it, random CartPole episodes (about 22 steps) never reach the states a
  good policy visits after a few hundred steps;
* level 0 regresses the random policy's ``mc_steps``-step return
  ``Σ_{i<h} γ^i r_{t+i} + γ^h mean_a Q_0(s_{t+h}, a)`` from states where the random phase had
  begun (Monte-Carlo up to the episode end, on-policy for the random policy);
* levels ``j = 1..k`` regress ``r_t + γ (1 - terminated_t) max_a Q_{j-1}(s'_t, a)`` on all
  transitions (fitted-Q iteration is off-policy);
* all ``k + 1`` networks are trained together (stacked parameters, ``grad_steps`` per update),
  each level against the current, stopped, previous level;
* the reported return is that of the greedy policy on ``Q_k`` in separate evaluation
  environments (``eval_envs × eval_steps`` steps per update, not counted as samples).

The regression oracle is an MLP with MSE, Huber, two-hot or HL-Gauss cross-entropy: any
``rljax.nets.q_heads.Head`` with a scalar-target loss, as in "Stop Regressing".
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rljax import replay
from rljax.agents import learner
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.losses import reduce, value
from rljax.nets import ACTIVATIONS, q_heads

HEADS = tuple(name for name in q_heads.HEADS if q_heads.make(name).scalar_target)


@dataclasses.dataclass(frozen=True)
class Config:
    """Static SQIRL settings."""

    k: int = 1  # fitted-Q iterations on top of Q^{π_rand}; act greedily on Q_k
    num_envs: int = 16  # random-exploration environments
    rollout_steps: int = 32  # batched random steps per update
    mc_steps: int = 32  # steps of the Monte-Carlo return that defines Q_0
    buffer_size: int = 200_000  # dataset capacity in transitions (multiple of num_envs)
    batch_size: int = 256  # transitions per gradient step
    grad_steps: int = 8  # gradient steps per update (all levels at once)
    head: q_heads.Head = q_heads.MSE()  # regression oracle with a scalar-target loss (HEADS)
    hidden: tuple[int, ...] = (128, 128)  # MLP widths (one MLP per level)
    activation: str = "relu"
    eval_envs: int = 8  # greedy-evaluation environments
    eval_steps: int = 32  # greedy steps per update (not counted as training samples)
    prefix_until: float = 0.5  # fraction of training by which greedy prefixes reach max_steps
    # (0 = pure random exploration: every episode is random from its first step)
    anneal_lr: bool = False  # linear decay of the learning rate to 0 over num_updates
    num_updates: int = 1000  # total updates of the run (set by the trainer)


class Hparams(NamedTuple):
    """Hyperparameters that change no shape (vmappable)."""

    lr: jax.Array  # Adam step size
    gamma: jax.Array  # discount γ
    hl_sigma: jax.Array  # HL-Gauss σ in bin widths


HPARAM_RULES = {
    "lr": (lambda v: v > 0, "> 0"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "hl_sigma": (lambda v: v > 0, "> 0"),
}


def env_steps_per_update(config: Config) -> int:
    """Random-exploration environment steps per ``update`` (evaluation steps excluded)."""
    return config.num_envs * config.rollout_steps


def validate_env(config: Config, env: gymnax_env.Env) -> None:
    """SQIRL's greedy prefixes take the argmax of ``A`` discrete actions' Q-values."""
    del config
    learner.validate_discrete_env("sqirl", env, "for continuous actions use ppo, sac, td3 or mpo")


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    for field in ("num_envs", "rollout_steps", "mc_steps", "buffer_size", "batch_size",
                  "grad_steps", "eval_envs", "eval_steps", "num_updates"):  # fmt: skip
        number = getattr(config, field)
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError(f"sqirl.{field}={number!r} is invalid; allowed: an integer >= 1")
    if not isinstance(config.k, int) or config.k < 0:
        raise ValueError(f"sqirl.k={config.k!r} is invalid; allowed: an integer >= 0")
    if not isinstance(config.head, q_heads.Head) or not config.head.scalar_target:
        name = config.head.name if isinstance(config.head, q_heads.Head) else config.head
        raise ValueError(f"sqirl.head={name!r} is unknown; valid: {', '.join(HEADS)}")
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"sqirl.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if config.buffer_size % config.num_envs:
        raise ValueError(
            f"sqirl.buffer_size={config.buffer_size} is invalid; allowed: a multiple of "
            f"num_envs={config.num_envs}"
        )
    if config.buffer_size // config.num_envs < config.mc_steps:
        raise ValueError(
            f"sqirl.buffer_size={config.buffer_size} is too small; allowed: >= mc_steps * "
            f"num_envs = {config.mc_steps * config.num_envs}"
        )
    if config.buffer_size < config.batch_size:
        raise ValueError(
            f"sqirl.buffer_size={config.buffer_size} is smaller than a batch; allowed: >= "
            f"batch_size={config.batch_size}"
        )
    if not 0 <= config.prefix_until <= 1:
        raise ValueError(
            f"sqirl.prefix_until={config.prefix_until!r} is invalid; allowed: in [0, 1]"
        )


class State(NamedTuple):
    """One SQIRL agent: k + 1 stacked Q-networks, the dataset, and two sets of environments."""

    params: dict  # leaves [k + 1, ...]: level j approximates Q_j
    opt_state: optax.OptState
    buffer: replay.Buffer
    env: rollout_lib.RolloutState  # exploration: a greedy prefix, then uniformly random
    switch: jax.Array  # [num_envs] episode step at which each exploration env turns random
    eval_env: rollout_lib.RolloutState  # greedy evaluation
    key: jax.Array
    step: jax.Array
    hparams: Hparams


def network(config: Config, env: gymnax_env.Env) -> q_heads.QNetwork:
    """One level's Q-network."""
    return q_heads.QNetwork(env.num_actions, config.head.dim, config.hidden, config.activation)


def _q_all(config: Config, env: gymnax_env.Env, params, obs: jax.Array) -> jax.Array:
    """Outputs of every level ``[k + 1, B, A, D]``."""
    return jax.vmap(lambda p: network(config, env).apply(p, obs))(params)


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """k + 1 freshly initialized networks, an empty dataset, reset environments."""
    net_key, env_key, eval_key, agent_key = jax.random.split(key, 4)
    dummy = jnp.zeros((1, *env.obs_shape), jnp.float32)
    keys = jax.random.split(net_key, config.k + 1)
    params = jax.vmap(lambda k: network(config, env).init(k, dummy))(keys)
    env_state = rollout_lib.rollout_init(env, env_key, config.num_envs)
    fake = lambda p, o, k: (jnp.zeros(o.shape[0], jnp.int32),) + (jnp.zeros(o.shape[0]),) * 2  # noqa: E731
    run = lambda: rollout_lib.rollout(env, fake, None, env_key, env_state, 1)  # noqa: E731
    example = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), jax.eval_shape(run)[1]
    )  # noqa: E501
    return State(
        params=params,
        opt_state=optax.scale_by_adam().init(params),
        buffer=replay.init(example, config.buffer_size // config.num_envs),
        env=env_state,
        switch=jnp.zeros((config.num_envs,), jnp.int32),
        eval_env=rollout_lib.rollout_init(env, eval_key, config.eval_envs),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams)),
    )


def _greedy_action(config: Config, env: gymnax_env.Env, params, obs: jax.Array) -> jax.Array:
    """Greedy actions on the last level, ``argmax_a Q_k(s, a)``: ``[B]`` int32."""
    last = jax.tree.map(lambda x: x[-1], params)
    q = config.head.q_values(network(config, env).apply(last, obs))
    return jnp.argmax(q, axis=-1).astype(jnp.int32)


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """SQIRL's policy, greedy on the last level whatever ``greedy`` says (its random
    exploration is a training schedule over episodes, not a policy): ``[B]`` int32."""
    return _greedy_action(config, env, state.params, obs)


def targets(params, config: Config, env: gymnax_env.Env, seq, hparams: Hparams) -> jax.Array:
    """Regression targets of every level for sequences ``[N, mc_steps]``: ``[k + 1, N]``.

    Level 0: the random policy's ``mc_steps``-step return
    ``Σ_{i<h} γ^i r_{t+i} + γ^h (1 - terminated) mean_a Q_0(s_{t+h}, a)``.
    Level j >= 1: ``r_t + γ (1 - terminated_t) max_a Q_{j-1}(s'_t, a)`` (fitted-Q iteration).
    Computed from stopped parameters.
    """
    frozen = jax.lax.stop_gradient(params)
    mc = replay.n_step_transition(seq, hparams.gamma)
    one = jax.tree.map(lambda x: x[:, 0], seq)
    q_mc_next = config.head.q_values(_q_all(config, env, frozen, mc.next_obs))
    y0 = mc.reward + mc.discount * jnp.mean(q_mc_next[0], axis=-1)  # uniform random policy
    q_next = config.head.q_values(_q_all(config, env, frozen, one.next_obs))
    discount = hparams.gamma * (1.0 - one.terminated.astype(jnp.float32))
    y_up = jax.vmap(lambda q: value.q_learning_target(one.reward, discount, q))(q_next[:-1])
    return jax.lax.stop_gradient(jnp.concatenate([y0[None], y_up], axis=0))


def loss_fn(
    params, config: Config, env: gymnax_env.Env, seq, hparams: Hparams
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Sum over levels of each level's mean regression loss against ``targets``."""
    y = targets(params, config, env, seq, hparams)
    a_t = seq.action[:, 0].astype(jnp.int32)
    out = _q_all(config, env, params, seq.obs[:, 0])  # [k + 1, N, A, D]
    random_start = (seq.logp[:, 0] < 0).astype(jnp.float32)  # Q_0 is the random policy's
    masks = jnp.concatenate([random_start[None], jnp.ones((config.k, a_t.shape[0]))], axis=0)
    per_level = jax.vmap(
        lambda o, y_j, m: reduce.masked_mean(
            config.head.loss(o, a_t, y_j, hl_sigma=hparams.hl_sigma), m
        )
    )(out, y, masks)
    metrics = {"loss/value": jnp.sum(per_level), "loss/level0": per_level[0]}
    metrics["loss/last_level"] = per_level[-1]
    return jnp.sum(per_level), metrics


def _grad_step(config, env, state: State, key: jax.Array):
    seq = replay.sample_sequences(state.buffer, key, config.batch_size, config.mc_steps)
    (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state.params, config, env, seq, state.hparams
    )
    updates, opt_state = optax.scale_by_adam().update(grads, state.opt_state, state.params)
    lr = learner.annealed_lr(state.hparams.lr, state.step, config.num_updates, config.anneal_lr)
    params = jax.tree.map(lambda p, u: p - lr * u, state.params, updates)
    ready = replay.can_sample(state.buffer, config.mc_steps)  # else the sample held zeros
    keep = lambda new, old: jax.tree.map(lambda n, o: jnp.where(ready, n, o), new, old)  # noqa: E731
    return state._replace(
        params=keep(params, state.params), opt_state=keep(opt_state, state.opt_state)
    ), metrics  # noqa: E501


def _explore_policy(config: Config, env: gymnax_env.Env, policy_params, obs, key):
    """Greedy on Q_k where ``greedy [B]`` is set, uniformly random elsewhere.

    ``logp`` records which: 0 for a greedy step, ``-log A`` for a random one (the level-0
    Monte-Carlo target is only valid from random-policy states).
    """
    params, greedy = policy_params
    random_action = jax.random.randint(key, (obs.shape[0],), 0, env.num_actions)
    action = jnp.where(greedy, _greedy_action(config, env, params, obs), random_action)
    logp = jnp.where(greedy, 0.0, -jnp.log(float(env.num_actions)))
    return action, logp, jnp.zeros((obs.shape[0],))


def _explore(config: Config, env: gymnax_env.Env, state: State, key: jax.Array):
    """``rollout_steps`` exploration steps: each episode follows the greedy policy for its first
    ``switch`` steps, then acts uniformly at random; ``switch`` is redrawn at every episode end
    uniformly from ``0..prefix_max``, with ``prefix_max`` growing linearly to ``max_steps`` by
    ``prefix_until`` of training. This is SQIRL's (and GORP's) way of reaching deep states:
    roll in with the policy learned so far, explore randomly from there.
    """
    progress = state.step / (config.prefix_until * config.num_updates + 1e-9)
    prefix_max = jnp.minimum(progress, 1.0) * env.max_steps
    policy_fn = lambda p, o, k: _explore_policy(config, env, p, o, k)  # noqa: E731

    def _step(carry, step_key):
        env_state, switch = carry
        roll_key, switch_key = jax.random.split(step_key)
        greedy = env_state.env.episode_length < switch
        env_state, traj, stats = rollout_lib.rollout(
            env, policy_fn, (state.params, greedy), roll_key, env_state, 1
        )
        draw = jax.random.uniform(switch_key, switch.shape) * (prefix_max + 1)
        switch = jnp.where(stats.returned_episode[0], draw.astype(jnp.int32), switch)
        return (env_state, switch), jax.tree.map(lambda x: x[0], traj)

    keys = jax.random.split(key, config.rollout_steps)
    (env_state, switch), traj = jax.lax.scan(_step, (state.env, state.switch), keys)
    return state._replace(env=env_state, switch=switch), traj


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """Random exploration into the dataset, ``grad_steps`` of fitting, greedy evaluation."""
    key = jax.random.fold_in(state.key, state.step)
    explore_key, fit_key, eval_key = jax.random.split(key, 3)

    state, traj = _explore(config, env, state, explore_key)
    state = state._replace(buffer=replay.add_rows(state.buffer, traj))
    keys = jax.random.split(fit_key, config.grad_steps)
    state, metrics = jax.lax.scan(lambda s, k: _grad_step(config, env, s, k), state, keys)
    metrics = jax.tree.map(jnp.mean, metrics)

    def _greedy(params, obs, k):
        zeros = jnp.zeros(obs.shape[0])
        return _greedy_action(config, env, params, obs), zeros, zeros

    eval_env, _, stats = rollout_lib.rollout(
        env, _greedy, state.params, eval_key, state.eval_env, config.eval_steps
    )
    metrics.update(rollout_lib.episode_summary(stats))
    return state._replace(eval_env=eval_env, step=state.step + 1), metrics


def train_chunk(
    config: Config, env: gymnax_env.Env, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one agent as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, env, state, num_updates)


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``)."""
    policy = lambda o, f, c, k: (act(config, env, state, o, k, greedy=True), c)  # noqa: E731
    return learner.evaluate_episodes(env, policy, key)
