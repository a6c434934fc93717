"""Action-value networks and the value heads of the DQN family, each head one static value.

One MLP torso maps a flattened observation to ``A × D`` outputs, reshaped ``[B, A, D]``. A
``Head`` says what those D outputs mean: how many there are, how to read Q-values ``[B, A]``
back from them, and the per-example loss against a target. Agents hold one ``Head`` in their
static config and call its methods; they never branch on a head's name.

* ``MSE`` / ``Huber``: D = 1, a scalar Q-value per action (Mnih et al. 2015).
* ``TwoHot`` / ``HLGauss``: D = N logits over a fixed support of bin centres, trained by
  cross-entropy against a two-hot or HL-Gauss target (Farebrother et al. 2024, "Stop
  Regressing"); the value is the expectation over the support.
* ``C51``: D = N logits of a categorical return distribution (Bellemare et al. 2017).
* ``QR``: D = N quantiles of the return distribution (Dabney et al. 2018, QR-DQN).
* ``IQN``: implicit quantiles (Dabney et al. 2018b): the network takes K sampled fractions τ
  (flax RNG stream ``"tau"``; midpoints ``(2i + 1)/(2K)`` when none is given, e.g. when acting)
  and returns D = 2K outputs per action, K quantile values and the K fractions they are at.

A head also builds its network (``Head.network``): the MLP ``QNetwork`` for all but IQN, whose
``IQNNetwork`` merges a cosine embedding of τ into the torso.

Names become heads in one place, ``make`` (called when a config is converted at the entry
point): ``make("hl_gauss", num_bins=51, v_min=0, v_max=100, huber_delta=1)``.
"""

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.losses import classification, distributional, value
from rljax.nets.mlp import ACTIVATIONS, dense_dot_general

HEADS = ("mse", "huber", "two_hot", "hl_gauss", "c51", "qr", "iqn")
# Settings a head is built from (config fields next to ``head``), with their defaults.
SETTINGS = {"num_bins": 51, "v_min": 0.0, "v_max": 100.0, "huber_delta": 1.0}


def _take(x: jax.Array, a: jax.Array) -> jax.Array:
    """``x[i, a_i]``: ``[N, A, D]``, ``[N]`` -> ``[N, D]``."""
    return jnp.take_along_axis(x, a[:, None, None].astype(jnp.int32), axis=1)[:, 0]


@dataclasses.dataclass(frozen=True)
class Head:
    """A value head (static: hashable, compared by value). Subclasses set the maths.

    ``loss`` regresses outputs on a *scalar* target ``y_t``; ``td_loss`` is the one-step (or
    n-step) Q-learning loss with bootstrap action ``a_tp1``. The default ``td_loss`` forms
    ``y_t = r_t + discount_t · Q_tp1(a_tp1)`` and calls ``loss``; distributional heads override
    it and have no scalar ``loss`` (``scalar_target = False``).
    """

    name: ClassVar[str] = ""
    scalar_target: ClassVar[bool] = True  # has a loss against a scalar target y

    @property
    def dim(self) -> int:
        """Outputs per action D."""
        return 1

    def q_values(self, out: jax.Array) -> jax.Array:
        """Action values ``[B, A]`` from network outputs ``[B, A, D]``."""
        return out[..., 0]

    def network(self, num_actions: int, hidden: Sequence[int], activation: str) -> nn.Module:
        """The network whose ``[B, A, D]`` outputs this head reads."""
        return QNetwork(num_actions, self.dim, tuple(hidden), activation)

    def loss(self, out_t: jax.Array, a_t: jax.Array, y_t: jax.Array, *, hl_sigma) -> jax.Array:
        """Per-example loss ``[N]`` of outputs ``[N, A, D]`` at actions ``a_t`` against ``y_t``."""
        raise NotImplementedError

    def td_loss(self, out_t, a_t, r_t, discount_t, out_tp1, a_tp1, *, hl_sigma) -> jax.Array:
        """Per-example Q-learning loss ``[N]``; ``out_tp1`` from the target network.

        Args:
          out_t: online outputs ``[N, A, D]``.
          a_t: taken actions ``[N]``.
          r_t: (n-step) rewards ``[N]``.
          discount_t: ``γ^h (1 - terminated)`` ``[N]``.
          out_tp1: target-network outputs at the bootstrap states ``[N, A, D]``.
          a_tp1: bootstrap actions ``[N]`` (Double DQN: chosen by the online network), or
            ``None``: ``argmax_a Q_tp1(a)``, greedy on ``out_tp1``.
          hl_sigma: HL-Gauss σ in bin widths (an array leaf; unused by other heads).
        """
        if a_tp1 is None:
            a_tp1 = jnp.argmax(self.q_values(out_tp1), axis=-1)
        q_tp1 = jnp.take_along_axis(self.q_values(out_tp1), a_tp1[:, None], axis=-1)[:, 0]
        y_t = jax.lax.stop_gradient(r_t + discount_t * q_tp1)
        return self.loss(out_t, a_t, y_t, hl_sigma=hl_sigma)


@dataclasses.dataclass(frozen=True)
class MSE(Head):
    """Scalar Q with the squared TD error ``½ δ²``."""

    name: ClassVar[str] = "mse"

    def loss(self, out_t, a_t, y_t, *, hl_sigma):
        return value.l2(value.q_td_error(out_t[..., 0], a_t, y_t))


@dataclasses.dataclass(frozen=True)
class Huber(Head):
    """Scalar Q with the Huber loss of the TD error (threshold ``delta``)."""

    name: ClassVar[str] = "huber"
    delta: float = 1.0

    def loss(self, out_t, a_t, y_t, *, hl_sigma):
        return value.huber(value.q_td_error(out_t[..., 0], a_t, y_t), delta=self.delta)


@dataclasses.dataclass(frozen=True)
class _Categorical(Head):
    """Logits over ``num_bins`` evenly spaced atoms from ``v_min`` to ``v_max``."""

    num_bins: int = 51
    v_min: float = 0.0
    v_max: float = 100.0

    @property
    def dim(self) -> int:
        return self.num_bins

    @property
    def support(self) -> jax.Array:
        """Bin centres ``[N]``."""
        return support(self.v_min, self.v_max, self.num_bins)

    @property
    def bin_width(self) -> float:
        return (self.v_max - self.v_min) / max(self.num_bins - 1, 1)

    def q_values(self, out):
        return classification.expectation(out, self.support)


@dataclasses.dataclass(frozen=True)
class TwoHot(_Categorical):
    """Cross-entropy against the two-hot encoding of ``y`` on the support."""

    name: ClassVar[str] = "two_hot"

    def loss(self, out_t, a_t, y_t, *, hl_sigma):
        target = classification.two_hot(y_t, self.support)
        return classification.cross_entropy(_take(out_t, a_t), target)


@dataclasses.dataclass(frozen=True)
class HLGauss(_Categorical):
    """Cross-entropy against a Gaussian of std ``hl_sigma`` bin widths, integrated per bin."""

    name: ClassVar[str] = "hl_gauss"

    def loss(self, out_t, a_t, y_t, *, hl_sigma):
        target = classification.hl_gauss(y_t, self.support, sigma=hl_sigma * self.bin_width)
        return classification.cross_entropy(_take(out_t, a_t), target)


@dataclasses.dataclass(frozen=True)
class C51(_Categorical):
    """Categorical return distribution; loss: cross-entropy to the projected Bellman target."""

    name: ClassVar[str] = "c51"
    scalar_target: ClassVar[bool] = False

    def td_loss(self, out_t, a_t, r_t, discount_t, out_tp1, a_tp1, *, hl_sigma):
        if a_tp1 is None:
            return distributional.categorical_q_learning(
                out_t, a_t, r_t, discount_t, out_tp1, self.support
            )
        probs_tp1 = jax.nn.softmax(_take(out_tp1, a_tp1), axis=-1)
        target = distributional.categorical_td_target(r_t, discount_t, probs_tp1, self.support)
        return classification.cross_entropy(_take(out_t, a_t), target)


@dataclasses.dataclass(frozen=True)
class QR(Head):
    """``num_bins`` quantiles of the return; loss: quantile-Huber with threshold ``kappa``."""

    name: ClassVar[str] = "qr"
    scalar_target: ClassVar[bool] = False
    num_bins: int = 51
    kappa: float = 1.0

    @property
    def dim(self) -> int:
        return self.num_bins

    def q_values(self, out):
        return jnp.mean(out, axis=-1)  # each quantile carries mass 1/N

    def td_loss(self, out_t, a_t, r_t, discount_t, out_tp1, a_tp1, *, hl_sigma):
        if a_tp1 is None:
            return distributional.quantile_q_learning(
                out_t, a_t, r_t, discount_t, out_tp1, kappa=self.kappa
            )
        target = r_t[:, None] + discount_t[:, None] * _take(out_tp1, a_tp1)
        return distributional.quantile_huber(
            _take(out_t, a_t), jax.lax.stop_gradient(target), kappa=self.kappa
        )


@dataclasses.dataclass(frozen=True)
class IQN(Head):
    """Implicit quantiles at ``num_tau`` sampled fractions; loss: quantile-Huber at those τ.

    Outputs ``[B, A, 2K]``: ``[..., :K]`` the values ``Z_τ_k(s, a)``, ``[..., K:]`` the fractions
    ``τ_k`` (shared by the actions of a state). Online and target outputs come from independent
    draws (τ and τ'), so the target ``r + γ Z_τ'(s', a*)`` is K samples of the next return;
    ``a*`` maximizes the mean over that same τ' draw (Dabney et al. 2018b draw separate
    fractions for the argmax; one draw fewer here).
    """

    name: ClassVar[str] = "iqn"
    scalar_target: ClassVar[bool] = False
    num_tau: int = 32
    kappa: float = 1.0
    embed_dim: int = 64  # cosines cos(π i τ), i = 0..embed_dim-1

    @property
    def dim(self) -> int:
        return 2 * self.num_tau

    def q_values(self, out):
        return jnp.mean(out[..., : self.num_tau], axis=-1)  # Monte Carlo over τ

    def network(self, num_actions, hidden, activation):
        return IQNNetwork(num_actions, self.num_tau, tuple(hidden), activation, self.embed_dim)

    def td_loss(self, out_t, a_t, r_t, discount_t, out_tp1, a_tp1, *, hl_sigma):
        if a_tp1 is None:
            a_tp1 = jnp.argmax(self.q_values(out_tp1), axis=-1)
        k = self.num_tau
        target = r_t[:, None] + discount_t[:, None] * _take(out_tp1, a_tp1)[:, :k]
        pred = _take(out_t, a_t)
        return distributional.implicit_quantile_huber(
            pred[:, :k], pred[:, k:], jax.lax.stop_gradient(target), kappa=self.kappa
        )


def make(
    name: str,
    *,
    num_bins: int = SETTINGS["num_bins"],
    v_min: float = SETTINGS["v_min"],
    v_max: float = SETTINGS["v_max"],
    huber_delta: float = SETTINGS["huber_delta"],
) -> Head:
    """The head called ``name`` with its settings; a ``ValueError`` names a bad field.

    Args:
      name: one of ``HEADS``.
      num_bins: atoms of the categorical heads, quantiles of QR (>= 2).
      v_min, v_max: support of the categorical heads (``v_max > v_min``).
      huber_delta: Huber threshold (``huber``) and QR's and IQN's κ (> 0).
      (IQN reads ``num_bins`` as its number of sampled fractions K.)
    """
    if name not in HEADS:
        raise ValueError(f"head={name!r} is unknown; valid: {', '.join(HEADS)}")
    if not isinstance(num_bins, int) or isinstance(num_bins, bool) or num_bins < 2:
        raise ValueError(f"num_bins={num_bins!r} is invalid; allowed: an integer >= 2")
    if not v_max > v_min:
        raise ValueError(f"v_max={v_max!r} is invalid; allowed: > v_min={v_min}")
    if not huber_delta > 0:
        raise ValueError(f"huber_delta={huber_delta!r} is invalid; allowed: > 0")
    support_ = {"num_bins": num_bins, "v_min": float(v_min), "v_max": float(v_max)}
    constructors = {
        "mse": lambda: MSE(),
        "huber": lambda: Huber(delta=float(huber_delta)),
        "two_hot": lambda: TwoHot(**support_),
        "hl_gauss": lambda: HLGauss(**support_),
        "c51": lambda: C51(**support_),
        "qr": lambda: QR(num_bins=num_bins, kappa=float(huber_delta)),
        "iqn": lambda: IQN(num_tau=num_bins, kappa=float(huber_delta)),
    }
    return constructors[name]()


class QNetwork(nn.Module):
    """MLP over flattened observations with ``num_actions × dim`` outputs.

    Flax's default (LeCun-normal) initialization, as in the CleanRL/purejaxrl DQN; the orthogonal
    initializer of ``rljax.nets.MLP`` costs seconds of compile time on CPU (a QR decomposition
    per layer) and buys nothing measurable here. Returns ``[B, A, D]``.
    """

    num_actions: int
    dim: int
    hidden: Sequence[int] = (120, 84)
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = act(nn.Dense(width, dot_general=dense_dot_general)(x))
        out = nn.Dense(self.num_actions * self.dim, dot_general=dense_dot_general)(x)
        return out.reshape(obs.shape[0], self.num_actions, self.dim)


class IQNNetwork(nn.Module):
    """IQN: ``Z_τ(s, a) = f(ψ(s) ⊙ φ(τ))_a`` for K fractions τ per state; returns ``[B, A, 2K]``.

    ``ψ`` is the MLP torso (``hidden``), ``φ(τ) = ReLU(W cos(π i τ) + b)`` over
    ``i = 0..embed_dim-1`` with the torso's last width, ``f`` one more hidden layer and the
    output layer (Dabney et al. 2018b, eq. 4). τ is drawn from U(0, 1) with the ``"tau"`` RNG
    stream when it is given (``apply(..., rngs={"tau": key})``), else it is the midpoints
    ``(2k + 1)/(2K)``. The last K outputs per action are τ itself (no gradient).
    """

    num_actions: int
    num_tau: int
    hidden: Sequence[int] = (120, 84)
    activation: str = "relu"
    embed_dim: int = 64

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        b, k = obs.shape[0], self.num_tau
        x = obs.reshape(b, -1).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for width in self.hidden:
            x = act(nn.Dense(width, dot_general=dense_dot_general)(x))
        if self.has_rng("tau"):
            tau = jax.random.uniform(self.make_rng("tau"), (b, k), jnp.float32)
        else:
            tau = jnp.broadcast_to((jnp.arange(k, dtype=jnp.float32) + 0.5) / k, (b, k))
        cosines = jnp.cos(jnp.pi * jnp.arange(self.embed_dim) * tau.reshape(b * k, 1))
        phi = nn.relu(nn.Dense(x.shape[-1], dot_general=dense_dot_general)(cosines))
        h = jnp.repeat(x, k, axis=0) * phi  # [B K, H], row b k + j is state b at τ_bj
        h = act(nn.Dense(self.hidden[-1], dot_general=dense_dot_general)(h))
        z = nn.Dense(self.num_actions, dot_general=dense_dot_general)(h).reshape(b, k, -1)
        tau_out = jnp.broadcast_to(jax.lax.stop_gradient(tau)[:, None, :], (b, self.num_actions, k))
        return jnp.concatenate([jnp.swapaxes(z, 1, 2), tau_out], axis=-1)


def support(v_min: float, v_max: float, num_bins: int) -> jax.Array:
    """``num_bins`` evenly spaced bin centres from ``v_min`` to ``v_max``: ``[N]``."""
    return jnp.linspace(v_min, v_max, num_bins, dtype=jnp.float32)
