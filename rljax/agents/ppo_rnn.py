"""Recurrent PPO: a GRU actor-critic trained with truncated backpropagation through time.

PPO (``rljax.agents.ppo``: its clipped objective, its GAE targets, its clipped Adam step) with a
recurrent core (``rljax.nets.recurrent``) for partially observable tasks (``rljax.envs.pomdp``),
as in the recurrent PPO of Stoix and purejaxrl and the memory baselines of Ni et al. 2022
("Recurrent Model-Free RL Can Be a Strong Baseline for Many POMDPs").

* Acting: the core state ``h [B, H]`` lives in ``State`` and is carried from step to step and
  from rollout to rollout; it is zeroed before the first observation of each episode
  (``first_t = 1``), inside the rollout's ``lax.scan``.
* Learning: minibatches are whole environment columns ``[T, B / M]``: the core is re-run over
  the rollout from the state it started with (``h0``), with the same resets, so the first epoch's
  first ratio is exactly 1, and gradients flow back through time to the rollout's start or the
  episode's start, whichever is later (truncated BPTT of length ``num_steps``).
* The truncation bootstrap ``V(s_{t+1})`` of an episode cut by the time limit is the critic at
  ``GRU(h_t, final observation)``: the episode's own memory, one batched cell step over ``[T, B]``.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.flatten_util
import jax.numpy as jnp
import optax

from rljax.agents import learner, ppo
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.nets import ACTIVATIONS, distributions
from rljax.nets import recurrent as rnn
from rljax.types import EpisodeStats, Transition

# The swept numbers and their rules are PPO's, unchanged.
Hparams = ppo.Hparams
HPARAM_RULES = ppo.HPARAM_RULES


@dataclasses.dataclass(frozen=True)
class Config:
    """Static recurrent-PPO settings. Sweepable numbers live in ``Hparams`` (PPO's)."""

    num_envs: int = 32  # parallel environments per agent (the sequences of a rollout)
    num_steps: int = 32  # rollout length T = the BPTT truncation length
    num_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # minibatches of whole env sequences; must divide num_envs
    num_updates: int = 488  # total updates of the run (sets the learning-rate annealing)
    embed_size: int = 64  # width of the observation embedding before the GRU
    core_size: int = 64  # GRU state size H
    hidden: tuple[int, ...] = (64,)  # MLP widths of the actor and critic heads
    activation: str = "tanh"  # one of rljax.nets.ACTIVATIONS
    max_grad_norm: float = 0.5  # global-norm gradient clipping
    anneal_lr: bool = True  # linear decay of the learning rate to 0 over num_updates
    normalize_obs: bool = False  # running observation normalization
    normalize_adv: bool = True  # standardize advantages per minibatch
    clip_value: bool = True  # PPO2-style clipped value loss (uses clip_eps)


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    for field in ("num_envs", "num_steps", "num_epochs", "num_minibatches", "num_updates",
                  "embed_size", "core_size"):  # fmt: skip
        number = getattr(config, field)
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError(f"ppo_rnn.{field}={number!r} is invalid; allowed: an integer >= 1")
    if config.num_envs % config.num_minibatches:
        raise ValueError(
            f"ppo_rnn.num_minibatches={config.num_minibatches} does not divide "
            f"num_envs={config.num_envs} (minibatches are whole env sequences); allowed: a "
            f"divisor of {config.num_envs}"
        )
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"ppo_rnn.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if any(not isinstance(h, int) or h < 1 for h in config.hidden):
        raise ValueError(f"ppo_rnn.hidden={config.hidden!r} is invalid; allowed: positive widths")
    if not config.max_grad_norm > 0:
        raise ValueError(f"ppo_rnn.max_grad_norm={config.max_grad_norm!r} is invalid; allowed: > 0")


env_steps_per_update = ppo.env_steps_per_update  # num_envs * num_steps
validate_env = ppo.validate_env  # categorical or Gaussian head: every environment


class State(NamedTuple):
    """One recurrent PPO agent: PPO's state plus the core state and episode-start flags."""

    params: dict
    opt_state: optax.OptState
    env: rollout_lib.RolloutState
    h: jax.Array  # core state after the last step [B, H] (not yet reset for a new episode)
    first: jax.Array  # 1 where the current observation starts an episode [B] (bool)
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # number of updates done (int32)
    hparams: Hparams


def network(config: Config, env: gymnax_env.Env) -> rnn.RecurrentActorCritic:
    """The recurrent actor-critic for ``env``."""
    return rnn.RecurrentActorCritic(
        env.num_actions, env.discrete, config.embed_size, config.core_size, config.hidden,
        config.activation,
    )  # fmt: skip


def init(config: Config, env: gymnax_env.Env, key: jax.Array, hparams: Hparams) -> State:
    """One agent: network, optimizer, ``num_envs`` reset environments, zero core states."""
    net_key, env_key, agent_key = jax.random.split(key, 3)
    net = network(config, env)
    h = rnn.initial_state(net, config.num_envs)
    params = net.init(net_key, h[:1], jnp.zeros((1, *env.obs_shape), jnp.float32))
    return State(
        params=params,
        opt_state=ppo.optimizer(config).init(jax.flatten_util.ravel_pytree(params)[0]),
        env=rollout_lib.rollout_init(env, env_key, config.num_envs),
        h=h,
        first=jnp.ones((config.num_envs,), bool),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=Hparams(*(jnp.asarray(x, jnp.float32) for x in hparams)),
    )


class Input(NamedTuple):
    """What the recurrent policy acts on: observations and the core state it carries."""

    obs: jax.Array  # raw observations [B, ...]
    h: jax.Array  # core states [B, H] (rnn.initial_state(network(config, env), B) at the start)
    first: jax.Array  # [B] bool: an episode starts here (the core resets)


def act(
    config: Config, env: gymnax_env.Env, state: State, obs: Input, key: jax.Array, *,
    greedy: bool = False,
) -> tuple[jax.Array, jax.Array]:  # fmt: skip
    """One step of the policy: reset ``h`` where ``first``, advance the core, then sample (or,
    with ``greedy``, take the mode); observations normalized with the state's statistics when
    ``config.normalize_obs``.

    Returns:
      ``(action [B] or [B, D], h' [B, H])``: the next step's ``Input`` carries ``h'``.
    """
    x = rollout_lib.normalize(state.env.obs_norm, obs.obs) if config.normalize_obs else obs.obs
    net = network(config, env)
    h, (policy_out, log_std, _) = net.apply(state.params, rnn.reset_where(obs.first, obs.h), x)
    if greedy:
        return (jnp.argmax(policy_out, axis=-1) if env.discrete else policy_out), h
    return distributions.sample_and_log_prob(key, policy_out, log_std, env.discrete)[0], h


class Sequences(NamedTuple):
    """A rollout as sequences ``[T, B, ...]`` with the core state each column started from."""

    h0: jax.Array  # [B, H]
    first: jax.Array  # [T, B] bool
    batch: ppo.Batch  # leaves [T, B, ...]


def _rollout(config: Config, env: gymnax_env.Env, state: State, key: jax.Array):
    """``num_steps`` steps of every environment with the recurrent policy, one ``lax.scan``.

    Returns:
      ``(state with env, h, first advanced; Transition [T, B]; first [T, B]; states h_t
      [T, B, H]; EpisodeStats [T, B])``.
    """
    act_key, env_key = jax.random.split(key)
    noise = distributions.draw_noise(
        act_key, (config.num_steps, config.num_envs), env.num_actions, env.discrete
    )
    env_keys = jax.random.split(env_key, (config.num_steps, config.num_envs))
    net = network(config, env)

    def _step(carry, inputs):
        env_state, h, first = carry
        noise_t, keys_t = inputs
        obs_norm, obs = env_state.obs_norm, env_state.env.obs
        if config.normalize_obs:
            obs_norm = rollout_lib.obs_norm_update(obs_norm, obs)
            obs = rollout_lib.normalize(obs_norm, obs)
        h, (policy_out, log_std, v) = net.apply(state.params, rnn.reset_where(first, h), obs)
        action, logp = distributions.sample_from_noise(policy_out, log_std, noise_t, env.discrete)
        env_inner, res = gymnax_env.step_with_keys(env, keys_t, env_state.env, action)
        next_obs = res.next_obs
        if config.normalize_obs:
            next_obs = rollout_lib.normalize(obs_norm, next_obs)
        row = Transition(obs, action, res.reward, next_obs, res.terminated, res.truncated, logp, v)
        stats = EpisodeStats(res.episode_return, res.episode_length, res.done)
        carry = (rollout_lib.RolloutState(env_inner, obs_norm), h, res.done)
        return carry, (row, first, h, stats)

    carry = (state.env, state.h, state.first)
    (env_state, h, first), out = jax.lax.scan(_step, carry, (noise, env_keys))
    return state._replace(env=env_state, h=h, first=first), *out


def _bootstrap_values(config: Config, env, params, traj: Transition, h_t: jax.Array):
    """``V(s_{t+1})`` ``[T, B]``: the critic at ``GRU(h_t, next_obs_t)``, with no reset (the next
    observation belongs to the step's own episode, the final one where it ended)."""
    t, b = traj.reward.shape
    net = network(config, env)
    x = net.apply(params, traj.next_obs.reshape(t * b, *traj.next_obs.shape[2:]), method=net.embed)
    h_tp1 = net.apply(params, h_t.reshape(t * b, -1), x, method=net.core)
    return net.apply(params, h_tp1, method=net.heads)[2].reshape(t, b)


def loss_fn(params, config: Config, env, seqs: Sequences, hparams: Hparams):
    """PPO's objective on whole sequences ``[T, b]``, the core re-run from ``h0`` (BPTT)."""
    net = network(config, env)
    _, h = rnn.unroll(net, params, seqs.h0, seqs.batch.obs, seqs.first)
    t, b = seqs.first.shape
    policy_out, log_std, v = net.apply(params, h.reshape(t * b, -1), method=net.heads)
    policy_out = policy_out.reshape(t, b, -1)
    logp = distributions.log_prob(policy_out, log_std, seqs.batch.action, env.discrete)
    entropy = distributions.entropy(policy_out, log_std, env.discrete)
    return ppo.objective(config, hparams, seqs.batch, logp, entropy, v.reshape(t, b))


def update(config: Config, env: gymnax_env.Env, state: State) -> tuple[State, dict[str, jax.Array]]:
    """One iteration: a recurrent rollout, GAE, then epochs of minibatches of env sequences.

    Returns:
      The new state and a flat dict of scalar metrics (as ``ppo.update``'s).
    """
    key = jax.random.fold_in(state.key, state.step)
    rollout_key, perm_key = jax.random.split(key)
    h0 = state.h  # before step 0's reset: unroll applies first[0] to it, as the rollout did
    new_state, traj, first, h_t, stats = _rollout(config, env, state, rollout_key)
    v_tp1 = _bootstrap_values(config, env, state.params, traj, h_t)
    adv, target = ppo._advantages(traj, v_tp1, state.hparams)
    batch = ppo.Batch(traj.obs, traj.action, traj.logp, traj.value, adv, target)

    # Minibatches are env columns: every epoch a permutation of the B sequences, split in M.
    b, m = config.num_envs, config.num_minibatches
    perms = jnp.argsort(jax.random.bits(perm_key, (config.num_epochs, b), jnp.uint32), axis=-1)
    cols = perms.reshape(config.num_epochs * m, b // m)
    minibatches = Sequences(
        h0[cols],
        jnp.moveaxis(first[:, cols], 1, 0),
        jax.tree.map(lambda x: jnp.moveaxis(x[:, cols], 1, 0), batch),
    )
    lr = learner.annealed_lr(state.hparams.lr, state.step, config.num_updates, config.anneal_lr)
    flat, unravel = jax.flatten_util.ravel_pytree(state.params)
    loss = lambda p, mb: loss_fn(p, config, env, mb, state.hparams)  # noqa: E731
    step = lambda train, mb: ppo.sgd_step(config, loss, unravel, train, mb, lr)  # noqa: E731
    (flat, opt_state), metrics = jax.lax.scan(step, (flat, state.opt_state), minibatches)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics.update(rollout_lib.episode_summary(stats))
    new_state = new_state._replace(params=unravel(flat), opt_state=opt_state, step=state.step + 1)
    return new_state, metrics


def train_chunk(
    config: Config, env: gymnax_env.Env, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one agent as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, env, state, num_updates)


def evaluate(config: Config, env: gymnax_env.Env, state: State, key: jax.Array) -> dict:
    """Greedy episode statistics in fresh environments (``learner.evaluate_episodes``), the
    core state carried from step to step and reset at every episode start."""
    policy = lambda o, f, h, k: act(config, env, state, Input(o, h, f), k, greedy=True)  # noqa: E731
    h0 = rnn.initial_state(network(config, env), learner.EVAL_ENVS)
    return learner.evaluate_episodes(env, policy, key, h0)
