"""Pure loss functions: per-element outputs; averaging only in `reduce`.

Modules: ``policy_gradient`` (REINFORCE, PPO/DAPO/dual-clip, GSPO, CISPO, NFT, PACS, ROVER,
entropy), ``kl`` (k1/k2/k3, exact KL, f-divergences), ``value`` (TD, Q-learning, double Q, MSE,
Huber, clipped double Q, soft Bellman), ``actor_critic`` (SAC actor and temperature,
deterministic policy gradient), ``mpo`` (E-step weights, temperature dual, KL constraints),
``classification`` (two-hot, HL-Gauss), ``distributional`` (C51, QR-DQN), ``reduce``.
"""

from rljax.losses import (
    actor_critic,
    classification,
    distributional,
    kl,
    mpo,
    policy_gradient,
    reduce,
    value,
)

__all__ = [
    "actor_critic",
    "classification",
    "distributional",
    "kl",
    "mpo",
    "policy_gradient",
    "reduce",
    "value",
]
