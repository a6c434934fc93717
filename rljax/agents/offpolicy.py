"""What the off-policy actor-critic learners (``sac``, ``td3``, ``mpo``) share: checks of their
common settings, the replay row, data collection, one-step batches, gated Adam and Polyak steps.

Every learner's ``update`` is: ``rollout_steps`` batched steps of ``num_envs`` environments
(uniformly random actions until ``learning_starts`` env steps, then the learner's behaviour
policy), written to a uniform replay buffer, then the learner's gradient steps. Before
``learning_starts`` they are skipped: every member of a population holds the same update count,
so ``population_any`` turns "is any member learning yet" into one value shared by the vmapped
members and ``lax.cond`` on it runs one branch, not both (a ``lax.cond`` on a per-member value
becomes a select under ``vmap``, which computes both). Inside the branch each member's steps are
still kept only where that member learns (``jnp.where``), so members with different counts
(never the case in a population) would still be exact.
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax import custom_batching

from rljax import checks, replay
from rljax.envs import gymnax_env
from rljax.envs import rollouts as rollout_lib
from rljax.nets import ACTIVATIONS, continuous
from rljax.nets.mlp import MLP
from rljax.types import Transition

INT_FIELDS = ("num_envs", "rollout_steps", "grad_steps", "buffer_size", "batch_size",
              "num_updates")  # fmt: skip


def validate_common(block: str, config: Any) -> None:
    """Checks the settings every off-policy learner has; errors name ``block.field``."""
    for field in INT_FIELDS:
        checks.check_int(f"{block}.{field}", getattr(config, field), low=1)
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"{block}.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if not config.hidden or any(int(h) < 1 for h in config.hidden):
        raise ValueError(f"{block}.hidden={config.hidden!r} is invalid; allowed: positive widths")
    if config.buffer_size % config.num_envs:
        raise ValueError(
            f"{block}.buffer_size={config.buffer_size} is invalid; allowed: a multiple of "
            f"num_envs={config.num_envs}"
        )
    if config.buffer_size < config.batch_size:
        raise ValueError(
            f"{block}.buffer_size={config.buffer_size} is smaller than a batch; allowed: >= "
            f"batch_size={config.batch_size}"
        )
    need = max(config.batch_size, config.num_envs * config.rollout_steps)
    if not isinstance(config.learning_starts, int) or config.learning_starts < need:
        raise ValueError(
            f"{block}.learning_starts={config.learning_starts!r} is invalid; allowed: an integer "
            f">= max(batch_size, num_envs * rollout_steps) = {need}, so the first batch has data"
        )


def validate_action_space(block: str, discrete: bool, env: gymnax_env.Env, hint: str) -> None:
    """Refuses a learner variant whose action space is not the environment's.

    Args:
      block: the config block, e.g. ``"sac"``.
      discrete: whether the configured variant acts in a discrete action space.
      env: the environment.
      hint: what to set instead, e.g. ``"set sac.discrete=True"``.
    """
    if discrete != env.discrete:
        kind = "discrete" if env.discrete else "continuous"
        raise ValueError(
            f"{block}.discrete={discrete} does not match {env.name}'s {kind} actions; {hint}"
        )


def example_row(env: gymnax_env.Env, num_envs: int) -> Transition:
    """Shapes and dtypes of one stored row (a ``Transition`` with leaves ``[B, ...]``)."""
    f32 = lambda *shape: jax.ShapeDtypeStruct((num_envs, *shape), jnp.float32)  # noqa: E731
    flag = jax.ShapeDtypeStruct((num_envs,), jnp.bool_)
    action = jax.ShapeDtypeStruct((num_envs,), jnp.int32) if env.discrete else f32(env.num_actions)
    obs = f32(*env.obs_shape)
    return Transition(obs, action, f32(), obs, flag, flag, f32(), f32())


def init_buffer(env: gymnax_env.Env, num_envs: int, buffer_size: int) -> replay.Buffer:
    """An empty replay buffer of ``buffer_size`` transitions (``buffer_size / num_envs`` rows)."""
    return replay.init(example_row(env, num_envs), buffer_size // num_envs)


def init_envs(env: gymnax_env.Env, key: jax.Array, num_envs: int) -> rollout_lib.RolloutState:
    """Reset environments with every leaf strongly typed (gymnax's Pendulum starts ``last_u`` as
    a weakly typed 0.0, which the first step changes; jitted chunks would trace twice)."""
    state = rollout_lib.rollout_init(env, key, num_envs)
    return jax.tree.map(lambda x: jnp.array(x, dtype=x.dtype), state)


def random_action(env: gymnax_env.Env, key: jax.Array, num_envs: int) -> jax.Array:
    """Uniform actions: ``[B]`` int32 (discrete) or ``[B, D]`` in ``[-1, 1]`` (normalized)."""
    if env.discrete:
        return jax.random.randint(key, (num_envs,), 0, env.num_actions)
    return jax.random.uniform(key, (num_envs, env.num_actions), minval=-1.0, maxval=1.0)


def collect(
    env: gymnax_env.Env,
    policy: Callable[[Any, jax.Array, jax.Array], jax.Array],
    params: Any,
    key: jax.Array,
    env_state: rollout_lib.RolloutState,
    buffer: replay.Buffer,
    num_steps: int,
    explore: jax.Array,
) -> tuple[rollout_lib.RolloutState, replay.Buffer, dict[str, jax.Array]]:
    """Runs ``num_steps`` batched steps and stores them.

    Args:
      policy: ``(params, obs [B, ...], key) -> action``: int ``[B]`` or normalized ``[B, D]``.
      explore: bool scalar; True: uniformly random actions (before ``learning_starts``).

    Returns:
      The new rollout state, the buffer with the steps added (continuous actions in the
      environment's bounds) and the episode summary.
    """

    def _policy(p, obs, k):
        policy_key, random_key = jax.random.split(k)
        action = policy(p, obs, policy_key)
        action = jnp.where(explore, random_action(env, random_key, obs.shape[0]), action)
        if not env.discrete:
            action = to_env_action(env, jnp.clip(action, -1.0, 1.0))
        zero = jnp.zeros(obs.shape[0], jnp.float32)
        return action, zero, zero

    env_state, traj, stats = rollout_lib.rollout(env, _policy, params, key, env_state, num_steps)
    return env_state, replay.add_rows(buffer, traj), rollout_lib.episode_summary(stats)


def to_env_action(env: gymnax_env.Env, action: jax.Array) -> jax.Array:
    """Normalized ``[-1, 1]`` actions to the environment's bounds."""
    return env.action_low + 0.5 * (action + 1.0) * (env.action_high - env.action_low)


def sample_batch(
    env: gymnax_env.Env, buffer: replay.Buffer, key: jax.Array, batch_size: int, gamma
) -> replay.NStep:
    """A uniform batch of one-step transitions ``[N, ...]``; continuous actions normalized.

    ``discount = γ (1 - terminated)``: time-limit truncations bootstrap from the true next
    observation.
    """
    row = replay.sample(buffer, key, batch_size)
    action = row.action
    if not env.discrete:
        span = env.action_high - env.action_low
        action = 2.0 * (action - env.action_low) / span - 1.0
    discount = gamma * (1.0 - row.terminated.astype(jnp.float32))
    return replay.NStep(row.obs, action, row.reward, discount, row.next_obs)


ADAM = optax.scale_by_adam()  # the swept step size multiplies its output in ``adam_step``


def adam_step(params, opt_state, grads, lr: jax.Array, apply: jax.Array):
    """One Adam step ``params - lr · adam(grads)``, kept only where ``apply`` (bool scalar).

    Returns:
      ``(params, opt_state)``: the stepped ones if ``apply``, else the inputs unchanged.
    """
    updates, new_state = ADAM.update(grads, opt_state, params)
    new_params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    keep = lambda new, old: jnp.where(apply, new, old)  # noqa: E731
    return jax.tree.map(keep, new_params, params), jax.tree.map(keep, new_state, opt_state)


def polyak(target, online, tau: jax.Array, apply: jax.Array):
    """``τ online + (1 - τ) target`` where ``apply`` (bool scalar), else ``target``."""
    mixed = optax.incremental_update(online, target, tau)
    return jax.tree.map(lambda m, t: jnp.where(apply, m, t), mixed, target)


@custom_batching.custom_vmap
def population_any(flag: jax.Array) -> jax.Array:
    """``flag`` (bool scalar) for one agent; under ``vmap``, whether any member's flag is set, as
    one unbatched value (a ``lax.cond`` on it stays a branch instead of becoming a select)."""
    return flag


@population_any.def_vmap
def _population_any_vmap(axis_size, in_batched, flag):
    del axis_size
    return (jnp.any(flag) if in_batched[0] else flag), False


def grad_steps(step_fn, state, key: jax.Array, num_steps: int):
    """``num_steps`` calls of ``step_fn(state, key) -> (state, metrics)``; metrics averaged."""
    if num_steps == 1:
        return step_fn(state, key)
    state, metrics = jax.lax.scan(step_fn, state, jax.random.split(key, num_steps))
    return state, jax.tree.map(jnp.mean, metrics)


def each_step(grad_step, num_steps: int):
    """The gradient phase of ``num_steps`` identical steps ``grad_step(state, key, learning)``,
    as ``update`` takes it: ``(state, key, learning) -> (state, metrics)``."""
    return lambda s, key, learning: grad_steps(lambda t, k: grad_step(t, k, learning), s, key,
                                               num_steps)  # fmt: skip


def update(config: Any, env: gymnax_env.Env, state, policy, learn, steps_per_update: int):
    """One update of an off-policy learner: act and store, then the gradient phase ``learn``.

    Uniform random actions until ``config.learning_starts`` env steps; the gradient phase runs
    once the update reaches that count (before it, it is skipped and its metrics are 0).

    Args:
      policy: ``(params, obs, key) -> action``, the learner's exploration policy.
      learn: ``(state, key, learning) -> (state, metrics)``, the update's gradient steps, each
        kept only where ``learning`` (bool scalar); it changes no ``buffer`` or ``env``.
      steps_per_update: env steps one update takes.

    Returns:
      The new state (``step`` advanced by one) and a flat dict of scalar metrics.
    """
    key = jax.random.fold_in(state.key, state.step)
    rollout_key, grad_key = jax.random.split(key)
    env_steps = state.step * steps_per_update
    explore = env_steps < config.learning_starts
    env_state, buffer, metrics = collect(
        env, policy, state.params, rollout_key, state.env, state.buffer, config.rollout_steps,
        explore,
    )  # fmt: skip
    state = state._replace(env=env_state, buffer=buffer)
    learning = env_steps + steps_per_update >= config.learning_starts

    # The branches return the state without its replay and environments (read, never written
    # here), so the conditional carries only the networks and optimizer states.
    traced = []  # the learning branch's metric shapes, recorded as ``lax.cond`` traces it

    def _learned(s):
        new, grad_metrics = learn(s, grad_key, learning)
        traced.append(jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), grad_metrics))
        return new._replace(buffer=None, env=None), grad_metrics

    def skip(s):
        # ``lax.cond`` traces the true branch first, so the gradient phase is traced once; were
        # it not, ``eval_shape`` would trace it again for the shapes.
        shapes = traced[-1] if traced else jax.eval_shape(_learned, s)[1]
        zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        return s._replace(buffer=None, env=None), zeros

    new, grad_metrics = jax.lax.cond(population_any(learning), _learned, skip, state)
    metrics.update(grad_metrics)
    return new._replace(buffer=buffer, env=env_state, step=state.step + 1), metrics


def actor_and_critics(config: Any, env: gymnax_env.Env, row_grad: bool = False) -> tuple:
    """``(actor, critics)`` of SAC and MPO: categorical logits (``config.discrete``) or a Gaussian
    head, and ``config.num_critics`` critics (one output per action when discrete; ``row_grad``
    as in ``continuous.Critics``)."""
    if config.discrete:
        actor = MLP(config.hidden, env.num_actions, config.activation, out_scale=0.01)
    else:
        actor = continuous.GaussianActor(env.num_actions, config.hidden, config.activation)
    critics = continuous.Critics(
        config.hidden, config.num_critics, env.num_actions if config.discrete else 0,
        config.activation, row_grad=row_grad,
    )  # fmt: skip
    return actor, critics
