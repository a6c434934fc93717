"""Discrete offline RL: BC, offline DQN, QR-DQN, IQN, CQL, BCQ and CRR on a fixed dataset.

One agent module; the algorithm is data: ``Config.algo`` names an entry of ``ALGOS``, an
``Algo`` that says which networks train, the value head, the TD target, the extra loss terms
and how the learner acts; the code reads those fields and never branches on a name, so an
algorithm built from these parts is one table row. Networks, sampling, optimizer and target
network are shared. The ``env`` of the learner
contract is the ``rljax.offline_data.Dataset`` (an array pytree, so a batch of datasets, or the
same transitions under uniform and return-weighted sampling, is one ``jax.vmap`` axis); no
environment is touched during training.

* ``bc``: behavior cloning, ``-log π(a_t|s_t)``.
* ``dqn``: offline DQN (Agarwal et al. 2020), Huber TD error against
  ``r_t + γ (1 - term) max_a Q_target(s'_t, a)``.
* ``qr_dqn``: QR-DQN (Dabney et al. 2018), ``rljax.losses.distributional.quantile_q_learning``
  through the ``q_heads.QR`` head.
* ``iqn``: IQN (Dabney et al. 2018b), ``distributional.implicit_quantile_huber`` at sampled
  fractions through the ``q_heads.IQN`` head (``num_quantiles`` fractions per state).
* ``cql``: DQN plus ``α (log Σ_a exp Q(s_t, a) - Q(s_t, a_t))`` (Kumar et al. 2020, CQL(H)).
* ``bcq``: discrete BCQ (Fujimoto et al. 2019): an imitation model G by BC; the TD target and
  the policy maximize Q only over actions with ``G(a|s)/max G >= τ`` (online Q picks, target
  evaluates).
* ``crr``: CRR (Wang et al. 2020): critic by expected-SARSA TD on the policy, actor by
  ``-min(exp(A/β), 20) log π(a_t|s_t)``.

One ``update`` = one gradient step on ``batch_size`` transitions drawn from the dataset's
sampling distribution, and every ``target_update_every`` updates a target-network copy. Acting
is greedy: ``argmax`` of the policy logits (BC, CRR), of Q (DQN, QR-DQN, IQN, CQL) or of Q over
BCQ's allowed actions.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rljax import checks, offline_data
from rljax.agents import learner
from rljax.losses import offline as offline_losses
from rljax.losses import reduce
from rljax.nets import ACTIVATIONS, distributions, q_heads


@dataclasses.dataclass(frozen=True)
class Algo:
    """What one offline algorithm is made of (static)."""

    nets: tuple[str, ...]  # networks it trains: "q" (values), "pi" (policy / imitation model)
    head: str = "huber"  # the value head: "huber" (scalar Q), "qr" (QR-DQN), "iqn" (IQN)
    bc: bool = False  # behavior cloning of "pi" on the data's actions
    target: str = "max"  # TD target: "max" (argmax Q_target), "bcq" (over BCQ's allowed
    # actions, online Q picks), "expected" (expected SARSA under π: CRR)
    cql: bool = False  # CQL(H)'s α (log Σ exp Q − Q(s, a)) regularizer
    crr_actor: bool = False  # CRR's advantage-weighted actor loss on "pi"
    act: str = "q"  # greedy on: "q" (Q-values), "pi" (policy logits), "bcq" (allowed Q)


ALGOS = {
    "bc": Algo(nets=("pi",), bc=True, act="pi"),
    "dqn": Algo(nets=("q",)),
    "qr_dqn": Algo(nets=("q",), head="qr"),
    "iqn": Algo(nets=("q",), head="iqn"),
    "cql": Algo(nets=("q",), cql=True),
    "bcq": Algo(nets=("q", "pi"), bc=True, target="bcq", act="bcq"),
    "crr": Algo(nets=("q", "pi"), target="expected", crr_actor=True, act="pi"),
}


@dataclasses.dataclass(frozen=True)
class Config:
    """Static offline-learner settings."""

    algo: str = "dqn"  # one of ALGOS
    num_actions: int = 2  # discrete actions of the environment the data came from
    batch_size: int = 128  # transitions per gradient step
    hidden: tuple[int, ...] = (64, 64)  # MLP widths (Q-network and policy network alike)
    activation: str = "relu"  # one of rljax.nets.ACTIVATIONS
    num_quantiles: int = 16  # quantiles of the QR-DQN head, sampled fractions of the IQN head
    huber_delta: float = 1.0  # Huber threshold of the TD losses (QR-DQN, IQN: κ)
    target_update_every: int = 100  # updates between target-network copies
    num_updates: int = 5000  # total updates of the run (for the learning-rate schedule)
    anneal_lr: bool = False  # linear decay of the learning rate to 0 over num_updates


class Hparams(NamedTuple):
    """Hyperparameters that change no shape (vmappable)."""

    lr: jax.Array  # Adam step size
    gamma: jax.Array  # discount γ
    cql_alpha: jax.Array  # CQL's regularizer weight α
    bcq_threshold: jax.Array  # BCQ's filter τ in [0, 1]
    crr_beta: jax.Array  # CRR's advantage temperature β


HPARAM_RULES = {
    "lr": (lambda v: v > 0, "> 0"),
    "gamma": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "cql_alpha": (lambda v: v >= 0, ">= 0"),
    "bcq_threshold": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "crr_beta": (lambda v: v > 0, "> 0"),
}


def env_steps_per_update(config: Config) -> int:
    """Dataset transitions one update trains on (no environment steps: the data is fixed)."""
    return config.batch_size


def validate(config: Config) -> None:
    """Checks static settings; a ``ValueError`` names the field, the value and what is allowed."""
    if config.algo not in ALGOS:
        raise ValueError(f"offline.algo={config.algo!r} is unknown; valid: {', '.join(ALGOS)}")
    for field, low in (("num_actions", 2), ("batch_size", 1), ("num_quantiles", 2),
                       ("target_update_every", 1), ("num_updates", 1)):  # fmt: skip
        checks.check_int(f"offline.{field}", getattr(config, field), low=low)
    if config.activation not in ACTIVATIONS:
        raise ValueError(
            f"offline.activation={config.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
        )
    if not config.hidden or any(int(h) < 1 for h in config.hidden):
        raise ValueError(f"offline.hidden={config.hidden!r} is invalid; allowed: positive widths")
    if not config.huber_delta > 0:
        raise ValueError(f"offline.huber_delta={config.huber_delta!r} is invalid; allowed: > 0")


def validate_hparams(hparams: dict) -> None:
    """Checks one grid point's values against ``HPARAM_RULES``."""
    for name, (ok, allowed) in HPARAM_RULES.items():
        if name not in hparams:
            raise ValueError(f"offline hparams lack {name!r}")
        if not ok(float(hparams[name])):
            raise ValueError(f"offline.{name}={hparams[name]!r} is invalid; allowed: {allowed}")


class State(NamedTuple):
    """One offline learner: networks, target copy, optimizer, its own key."""

    params: dict  # {"q": ..., "pi": ...}, the networks its algorithm trains
    target_params: dict
    opt_state: optax.OptState
    key: jax.Array  # fixed per agent; per-update keys are fold_in(key, step)
    step: jax.Array  # updates done (int32)
    hparams: Hparams


def head(config: Config) -> q_heads.Head:
    """The algorithm's value head (``Algo.head``) with the config's settings."""
    heads = {
        "huber": lambda: q_heads.Huber(delta=config.huber_delta),
        "qr": lambda: q_heads.QR(num_bins=config.num_quantiles, kappa=config.huber_delta),
        "iqn": lambda: q_heads.IQN(num_tau=config.num_quantiles, kappa=config.huber_delta),
    }
    return heads[ALGOS[config.algo].head]()


def networks(config: Config) -> dict:
    """The networks of ``config.algo``: ``"q"`` the head's own, ``"pi"`` with logits."""
    nets = {
        "q": head(config).network(config.num_actions, config.hidden, config.activation),
        "pi": q_heads.QNetwork(config.num_actions, 1, config.hidden, config.activation),
    }
    return {name: nets[name] for name in ALGOS[config.algo].nets}


def init(config: Config, data: offline_data.Dataset, key: jax.Array, hparams: Hparams) -> State:
    """Initializes one learner for ``data`` (only its observation shape is read)."""
    net_key, agent_key = jax.random.split(key)
    obs = jnp.zeros((1, *data.obs.shape[1:]), jnp.float32)
    nets = networks(config)
    keys = jax.random.split(net_key, len(nets))
    params = {name: net.init(k, obs) for (name, net), k in zip(nets.items(), keys, strict=True)}
    return State(
        params=params,
        target_params=params,
        opt_state=optax.scale_by_adam().init(params),
        key=agent_key,
        step=jnp.zeros((), jnp.int32),
        hparams=Hparams(*(jnp.asarray(h, jnp.float32) for h in hparams)),
    )


def _outputs(
    config: Config, params: dict, obs: jax.Array, key: jax.Array | None = None
) -> dict[str, jax.Array]:
    """``{"q": Q-values [B, A], "q_out": head outputs [B, A, D], "logits": [B, A]}`` as trained.

    ``key`` feeds the Q-network's ``"tau"`` RNG stream (IQN's sampled fractions; without it IQN
    reads its midpoint fractions).
    """
    nets = networks(config)
    out = {}
    if "q" in nets:
        rngs = {} if key is None else {"tau": key}
        out["q_out"] = nets["q"].apply(params["q"], obs, rngs=rngs)
        out["q"] = head(config).q_values(out["q_out"])
    if "pi" in nets:
        out["logits"] = nets["pi"].apply(params["pi"], obs)[..., 0]
    return out


def act(
    config: Config, data: offline_data.Dataset, state: State, obs: jax.Array, key: jax.Array, *,
    greedy: bool = False,
) -> jax.Array:  # fmt: skip
    """The learned policy (greedy whatever ``greedy`` says), its BCQ threshold from the state:
    actions ``[B]`` (int32) for observations ``[B, ...]``."""
    return _greedy_action(config, state.params, obs, state.hparams)


def _greedy_action(config: Config, params: dict, obs: jax.Array, hparams: Hparams) -> jax.Array:
    out, how = _outputs(config, params, obs), ALGOS[config.algo].act
    if how == "pi":
        return jnp.argmax(out["logits"], axis=-1).astype(jnp.int32)
    if how == "bcq":
        allowed = offline_losses.bcq_allowed(out["logits"], threshold=hparams.bcq_threshold)
        return offline_losses.masked_argmax(out["q"], allowed)
    return jnp.argmax(out["q"], axis=-1).astype(jnp.int32)


EVAL_ROWS = 1024  # dataset rows (drawn uniformly with replacement) of one ``evaluate``


def evaluate(config: Config, data: offline_data.Dataset, state: State, key: jax.Array) -> dict:
    """The policy measured on its data, the only world an offline learner has: the fraction of
    ``EVAL_ROWS`` random dataset states where it takes the logged action (``data/agreement``),
    and there the mean of its greedy ``Q`` (``data/q_greedy``; learners with a value net)."""
    rows = jax.random.randint(key, (EVAL_ROWS,), 0, data.action.shape[0])
    action = act(config, data, state, data.obs[rows], key, greedy=True)
    metrics = {"data/agreement": jnp.mean((action == data.action[rows]).astype(jnp.float32))}
    if "q" in ALGOS[config.algo].nets:
        q = _outputs(config, state.params, data.obs[rows])["q"]
        metrics["data/q_greedy"] = jnp.mean(jnp.take_along_axis(q, action[:, None], 1))
    return metrics


def loss_fn(
    params: dict, target_params: dict, config: Config, batch: offline_data.Dataset,
    hparams: Hparams, key: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:  # fmt: skip
    """Mean loss of ``config.algo`` over a batch of transitions ``[B, ...]``.

    ``key``: IQN's fractions, drawn independently for the online and the target outputs.
    """
    algo, a_t = ALGOS[config.algo], batch.action
    discount_t = hparams.gamma * (1.0 - batch.terminated)
    keys = (None, None) if key is None else tuple(jax.random.split(key))
    out_t = _outputs(config, params, batch.obs, keys[0])
    metrics = {}
    loss = jnp.zeros(())
    if algo.bc:  # (imitation model of) the behavior policy
        bc = -distributions.categorical_log_prob(out_t["logits"], a_t)
        loss = loss + reduce.masked_mean(bc)
        metrics["loss/bc"] = reduce.masked_mean(bc)
    if "q" in out_t:
        out_tp1 = jax.tree.map(
            jax.lax.stop_gradient, _outputs(config, target_params, batch.next_obs, keys[1])
        )
        a_tp1 = None  # argmax_a Q_target(s', a) (DQN, QR-DQN, IQN, CQL)
        if algo.target == "bcq":
            nxt = jax.lax.stop_gradient(_outputs(config, params, batch.next_obs))
            allowed = offline_losses.bcq_allowed(nxt["logits"], threshold=hparams.bcq_threshold)
            a_tp1 = offline_losses.masked_argmax(nxt["q"], allowed)
        if algo.target == "expected":
            probs_tp1 = jax.nn.softmax(
                jax.lax.stop_gradient(_outputs(config, params, batch.next_obs)["logits"]), -1
            )
            y_t = offline_losses.expected_q_target(
                batch.reward, discount_t, out_tp1["q"], probs_tp1
            )
            td = head(config).loss(out_t["q_out"], a_t, y_t, hl_sigma=None)
        else:
            td = head(config).td_loss(
                out_t["q_out"], a_t, batch.reward, discount_t, out_tp1["q_out"], a_tp1,
                hl_sigma=None,
            )  # fmt: skip
        loss = loss + reduce.masked_mean(td)
        metrics["loss/td"] = reduce.masked_mean(td)
        metrics["q/taken"] = reduce.masked_mean(jnp.take_along_axis(out_t["q"], a_t[:, None], -1))
    if algo.cql:
        penalty = reduce.masked_mean(offline_losses.cql_penalty(out_t["q"], a_t))
        loss = loss + hparams.cql_alpha * penalty
        metrics["loss/cql"] = penalty
    if algo.crr_actor:
        weight = offline_losses.crr_weight(
            jax.lax.stop_gradient(out_t["q"]), out_t["logits"], a_t, beta=hparams.crr_beta
        )
        actor = -weight * distributions.categorical_log_prob(out_t["logits"], a_t)
        loss = loss + reduce.masked_mean(actor)
        metrics["loss/actor"] = reduce.masked_mean(actor)
        metrics["crr/weight"] = reduce.masked_mean(weight)
    metrics["loss/total"] = loss
    return loss, metrics


def update(
    config: Config, data: offline_data.Dataset, state: State
) -> tuple[State, dict[str, jax.Array]]:
    """One gradient step on a batch drawn from ``data.cdf``, then the periodic target copy."""
    key = jax.random.fold_in(state.key, state.step)
    idx = offline_data.sample_indices(data.cdf, key, config.batch_size)
    batch = jax.tree.map(lambda x: x[idx], data)
    grads, metrics = jax.grad(loss_fn, has_aux=True)(
        state.params, state.target_params, config, batch, state.hparams,
        jax.random.fold_in(key, 1),  # IQN's fractions; the batch draw stays as it was
    )  # fmt: skip
    updates, opt_state = optax.scale_by_adam().update(grads, state.opt_state, state.params)
    lr = learner.annealed_lr(state.hparams.lr, state.step, config.num_updates, config.anneal_lr)
    params = jax.tree.map(lambda p, u: p - lr * u, state.params, updates)
    step = state.step + 1
    copy = step % config.target_update_every == 0
    target = jax.tree.map(lambda n, o: jnp.where(copy, n, o), params, state.target_params)
    state = state._replace(params=params, target_params=target, opt_state=opt_state, step=step)
    return state, metrics


def train_chunk(
    config: Config, data: offline_data.Dataset, state: State, num_updates: int
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive updates of one learner as one ``lax.scan``; metrics ``[n]``."""
    return learner.train_chunk(update, config, data, state, num_updates)
