"""Pure loss functions: per-element outputs; averaging only in `reduce`.

Modules: ``policy_gradient`` (REINFORCE, PPO/DAPO/dual-clip, GSPO, CISPO, NFT, PACS, ROVER,
entropy), ``kl`` (k1/k2/k3, exact KL, f-divergences), ``value`` (TD, Q-learning, double Q, MSE,
Huber), ``classification`` (two-hot, HL-Gauss), ``distributional`` (C51, QR-DQN), ``reduce``.
"""

from rljax.losses import classification, distributional, kl, policy_gradient, reduce, value

__all__ = ["classification", "distributional", "kl", "policy_gradient", "reduce", "value"]
