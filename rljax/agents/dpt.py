"""Decision-Pretrained Transformer (DPT) on bandits: supervised pretraining for in-context RL.

Lee, Xie, Pacchiano, Chandak, Finn, Nachum & Brunskill 2023 ("Supervised Pretraining Can Learn
In-Context Reinforcement Learning", #227): a transformer reads an in-context dataset of
interactions with a task and is trained by cross-entropy to predict the task's optimal action,

    L(θ) = E_task E_D [ -(1 / (T + 1)) Σ_{t=0..T} log M_θ(a* | D_{<t}) ],

at every prefix D_{<t} of the dataset (a causal transformer gives all T + 1 predictions in one
pass). Deployed online, it samples ``a_t ~ M_θ(· | its own first t pulls)``, which the paper
shows behaves like posterior (Thompson) sampling. Tasks and datasets: ``rljax.bandits``.

``Config`` + ``State`` + ``init`` / ``act`` / ``loss_fn`` / ``update`` / ``train_chunk``; the
pretraining data is drawn fresh at every update from ``fold_in(state.key, state.step)``.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rljax import bandits, checks
from rljax.agents import learner
from rljax.losses import reduce
from rljax.nets import distributions
from rljax.nets.in_context import InContextTransformer


@dataclasses.dataclass(frozen=True)
class Config:
    """Static DPT settings."""

    num_arms: int = 5  # K
    horizon: int = 50  # T: pulls per in-context dataset (and per online episode)
    d_model: int = 32  # transformer width
    num_layers: int = 2  # transformer blocks
    num_heads: int = 2  # attention heads
    batch_size: int = 32  # tasks per update
    lr: float = 1e-3  # Adam step size
    concentration: float = 1.0  # Dirichlet concentration of the pretraining action distribution


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    for field, low in (("num_arms", 2), ("horizon", 1), ("d_model", 1), ("num_layers", 1),
                       ("num_heads", 1), ("batch_size", 1)):  # fmt: skip
        checks.check_int(f"dpt.{field}", getattr(config, field), low=low)
    if config.d_model % config.num_heads:
        raise ValueError(
            f"dpt.d_model={config.d_model} is invalid; allowed: a multiple of num_heads "
            f"({config.num_heads})"
        )
    for field in ("lr", "concentration"):
        if not getattr(config, field) > 0:
            raise ValueError(f"dpt.{field}={getattr(config, field)!r} is invalid; allowed: > 0")


class State(NamedTuple):
    params: dict
    opt_state: optax.OptState
    key: jax.Array  # fixed; per-update keys are fold_in(key, step)
    step: jax.Array


def network(config: Config) -> InContextTransformer:
    return InContextTransformer(
        config.num_arms, config.d_model, config.num_layers, config.num_heads
    )


def _optimizer(config: Config) -> optax.GradientTransformation:
    return optax.adam(config.lr)


def init(config: Config, key: jax.Array) -> State:
    net_key, agent_key = jax.random.split(key)
    tokens = jnp.zeros((1, config.horizon + 1, 2 * config.num_arms + 2))
    params = network(config).init(net_key, tokens)
    return State(params, _optimizer(config).init(params), agent_key, jnp.zeros((), jnp.int32))


def loss_fn(params: dict, config: Config, tokens: jax.Array, best: jax.Array):
    """Mean cross-entropy of ``best [B]`` at every prefix of ``tokens [B, T + 1, F]``."""
    logits = network(config).apply(params, tokens)
    labels = jnp.broadcast_to(best[:, None], logits.shape[:2])
    nll = -distributions.categorical_log_prob(logits, labels)
    acc = (jnp.argmax(logits, -1) == labels).astype(jnp.float32)
    return reduce.masked_mean(nll), {"loss/ce": reduce.masked_mean(nll),
                                     "accuracy/last": reduce.masked_mean(acc[:, -1])}  # fmt: skip


def update(config: Config, _, state: State) -> tuple[State, dict]:
    """One Adam step on a fresh pretraining batch (the learner contract's ``env`` is unused)."""
    key = jax.random.fold_in(state.key, state.step)
    tokens, best, _ = bandits.pretraining_batch(
        key, config.batch_size, config.num_arms, config.horizon,
        concentration=config.concentration,
    )  # fmt: skip
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, config, tokens, best)
    updates, opt_state = _optimizer(config).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return State(params, opt_state, state.key, state.step + 1), metrics


def train_chunk(config: Config, state: State, num_updates: int) -> tuple[State, dict]:
    """``num_updates`` updates as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, None, state, num_updates)


def act(config: Config, env, state: State, obs, key: jax.Array, *, greedy=False) -> jax.Array:
    """Online DPT: ``a_t ~ M_θ(· | first t pulls)`` (the argmax with ``greedy``) for
    ``obs = (actions [B, T], rewards [B, T], t)`` (``bandits.run_online``'s history); ``env`` is
    unused (the tasks are in the history): actions ``[B]`` int32."""
    actions, rewards, t = obs
    tokens = bandits.history_features(actions, rewards, config.num_arms)
    logits = network(config).apply(state.params, tokens)[:, t]
    if greedy:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    return jax.random.categorical(key, logits).astype(jnp.int32)
