"""Pure loss functions: per-element outputs; averaging only in `reduce`.

Modules: ``policy_gradient`` (per-token ratios: REINFORCE, PPO/DAPO/dual-clip, CISPO, SAPO,
entropy), ``sequence`` (sequence ratios: GSPO, LUSPO, VESPO), ``implicit`` (the log-ratio as a
model: NFT, PACS, ROVER), ``kl`` (k1/k2/k3, exact KL, f-divergences), ``value`` (TD,
Q-learning, double Q, MSE, Huber, clipped double Q, soft Bellman), ``actor_critic`` (SAC actor
and temperature, deterministic policy gradient), ``mpo`` (E-step weights, temperature dual, KL
constraints), ``classification`` (two-hot, HL-Gauss), ``distributional`` (C51, QR-DQN),
``reduce``.
"""

from rljax.losses import (
    actor_critic,
    classification,
    distributional,
    implicit,
    kl,
    mpo,
    policy_gradient,
    reduce,
    sequence,
    value,
)

__all__ = [
    "actor_critic",
    "classification",
    "distributional",
    "implicit",
    "kl",
    "mpo",
    "policy_gradient",
    "reduce",
    "sequence",
    "value",
]
