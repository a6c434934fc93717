"""The Decision-Pretrained Transformer on the dark room (Lee et al. 2023, #227).

As ``rljax.agents.dpt`` (same ``State``, network and optimizer), with a query: token 0 holds a
query cell, tokens 1..N the transitions ``(s, a, r, s')`` of a random policy's in-context
dataset, and the transformer is trained by cross-entropy to predict the optimal action at the
query cell from every prefix of the dataset,

    L(θ) = E_goal E_{D, s_q} [ -(1 / (N + 1)) Σ_{j=0..N} log M_θ(a*(s_q) | s_q, D_{<j}) ].

Deployed online (``act``), episode k reads the transitions of the agent's own first k − 1
episodes (the prefix at token (k − 1)·H) with its current cell as the query, and samples its
action from the prediction; the context changes only between episodes, as in the paper.
Tasks, datasets and labels: ``rljax.darkroom``.
"""

import dataclasses

import jax
import jax.numpy as jnp
import optax

from rljax import checks, darkroom
from rljax.agents import learner
from rljax.agents.dpt import State
from rljax.losses import reduce
from rljax.nets import distributions
from rljax.nets.in_context import InContextTransformer

__all__ = ["Config", "State", "act", "init", "loss_fn", "train_chunk", "update", "validate"]


@dataclasses.dataclass(frozen=True)
class Config:
    """Static DPT settings for the dark room."""

    side: int = 5  # the grid is side x side; goals are its cells
    horizon: int = 25  # H: steps per episode
    context_episodes: int = 3  # E: random-policy episodes per in-context dataset (N = E·H)
    d_model: int = 32  # transformer width
    num_layers: int = 2  # transformer blocks
    num_heads: int = 2  # attention heads
    batch_size: int = 32  # tasks per update
    lr: float = 1e-3  # Adam step size
    concentration: float = 1.0  # Dirichlet concentration of the context's action distribution


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    for field, low in (("side", 2), ("horizon", 1), ("context_episodes", 1), ("d_model", 1),
                       ("num_layers", 1), ("num_heads", 1), ("batch_size", 1)):  # fmt: skip
        checks.check_int(f"dpt_darkroom.{field}", getattr(config, field), low=low)
    if config.d_model % config.num_heads:
        raise ValueError(
            f"dpt_darkroom.d_model={config.d_model} is invalid; allowed: a multiple of "
            f"num_heads ({config.num_heads})"
        )
    for field in ("lr", "concentration"):
        if not getattr(config, field) > 0:
            raise ValueError(
                f"dpt_darkroom.{field}={getattr(config, field)!r} is invalid; allowed: > 0"
            )


def network(config: Config) -> InContextTransformer:
    return InContextTransformer(
        darkroom.NUM_ACTIONS, config.d_model, config.num_layers, config.num_heads
    )


def _optimizer(config: Config) -> optax.GradientTransformation:
    return optax.adam(config.lr)


def context_length(config: Config) -> int:
    """N = E·H transitions per in-context dataset."""
    return config.context_episodes * config.horizon


def init(config: Config, key: jax.Array) -> State:
    net_key, agent_key = jax.random.split(key)
    tokens = jnp.zeros((1, context_length(config) + 1, darkroom.num_features()))
    params = network(config).init(net_key, tokens)
    return State(params, _optimizer(config).init(params), agent_key, jnp.zeros((), jnp.int32))


def loss_fn(params: dict, config: Config, tokens: jax.Array, labels: jax.Array):
    """Mean cross-entropy of ``labels [B]`` at every prefix of ``tokens [B, N + 1, F]``."""
    logits = network(config).apply(params, tokens)
    targets = jnp.broadcast_to(labels[:, None], logits.shape[:2])
    nll = -distributions.categorical_log_prob(logits, targets)
    acc = (jnp.argmax(logits, -1) == targets).astype(jnp.float32)
    return reduce.masked_mean(nll), {"loss/ce": reduce.masked_mean(nll),
                                     "accuracy/first": reduce.masked_mean(acc[:, 0]),
                                     "accuracy/last": reduce.masked_mean(acc[:, -1])}  # fmt: skip


def update(config: Config, goals: jax.Array, state: State) -> tuple[State, dict]:
    """One Adam step on a fresh pretraining batch whose goals are drawn from ``goals [G]`` (the
    pretraining goals; the learner contract's ``env``)."""
    key = jax.random.fold_in(state.key, state.step)
    tokens, labels, _ = darkroom.pretraining_batch(
        key, goals, config.batch_size, config.side, config.horizon, config.context_episodes,
        concentration=config.concentration,
    )  # fmt: skip
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, config, tokens, labels)
    updates, opt_state = _optimizer(config).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return State(params, opt_state, state.key, state.step + 1), metrics


def train_chunk(config: Config, goals: jax.Array, state: State, num_updates: int):
    """``num_updates`` updates as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, goals, state, num_updates)


def act(config: Config, state: State, cell, history, t, key, *, greedy=False) -> jax.Array:
    """Online DPT in ``darkroom.run_online``'s policy form: the prediction at token
    ``(t // H) · H`` (the completed episodes) for the query ``cell [B]``; a sample (the argmax
    with ``greedy``). Completed episodes beyond the pretraining context (``N``) are cut to
    the last ``E``. Actions ``[B]`` int32."""
    s, a, r, s2 = history
    n = context_length(config)
    done = (t // config.horizon) * config.horizon
    # keep the last min(done, N) completed transitions, left-aligned
    first = jnp.maximum(done - n, 0)
    window = lambda x: jax.lax.dynamic_slice_in_dim(  # noqa: E731
        jnp.pad(x, ((0, 0), (0, n))), first, n, axis=1
    )
    tokens = darkroom.tokens(cell, *(window(x) for x in (s, a, r, s2)), config.side)
    logits = network(config).apply(state.params, tokens)
    logits = jnp.take(logits, jnp.minimum(done, n), axis=1)
    if greedy:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    return jax.random.categorical(key, logits).astype(jnp.int32)
