"""Named presets of the one RLVR trainer, and the one place where names become loss functions.

Each preset is plain data (hyperparameters and names); `make_rl_config` turns the names into the
pure functions of `rljax.returns` / `rljax.losses` through the visible dicts below. Values follow
the papers where they state them; NGRPO's asymmetric clip values are not given in its abstract,
so the ones here are our choice (tighter below for A < 0, looser above for A > 0).
"""

from __future__ import annotations

import functools

from rljax import returns
from rljax.lm.rlvr import RLConfig
from rljax.losses import kl, reduce

ADVANTAGES = {
    "grpo": returns.grpo_advantages,  # (r - mean_g) / std_g            (Shao et al. 2024)
    "dr_grpo": returns.dr_grpo_advantages,  # r - mean_g                 (Liu et al. 2025)
    "lite_ppo": returns.lite_ppo_advantages,  # (r - mean_g) / std_batch (Tricks or Traps, #3)
    "batch": returns.batch_advantages,  # (r - mean_batch) / std_batch
    "rloo": returns.rloo_advantages,  # leave-one-out baseline        (Ahmadian et al. 2024)
    "ngrpo": returns.ngrpo_advantages,  # virtual r_max sample          (NGRPO, #93)
}
AGGREGATIONS = {
    "token_mean": reduce.token_mean,
    "seq_mean_token_mean": reduce.seq_mean_token_mean,
    "seq_mean_token_sum": reduce.seq_mean_token_sum,
    "seq_mean_token_sum_norm": reduce.seq_mean_token_sum_norm,  # needs max_len (Dr.GRPO)
}
KL_ESTIMATORS = {"none": None, "k1": kl.k1, "k2": kl.k2, "k3": kl.k3}

_COMMON = dict(
    sequence_ratio=False,
    eps_low=0.2,
    eps_high=0.2,
    kl="none",
    kl_coef=0.0,
    kl_in_reward=False,
    entropy_coef=0.0,
    num_epochs=2,
    num_minibatches=2,
    learning_rate=3e-4,
    max_grad_norm=1.0,
    dynamic_sampling=False,
)
PRESETS = {
    # DeepSeekMath GRPO: group-normalized advantages, per-sequence mean, k3 KL in the loss.
    "grpo": {
        **_COMMON,
        "advantage": "grpo",
        "aggregation": "seq_mean_token_mean",
        "kl": "k3",
        "kl_coef": 0.04,
    },
    # Dr.GRPO: no std division, constant length normalizer, no KL.
    "dr_grpo": {**_COMMON, "advantage": "dr_grpo", "aggregation": "seq_mean_token_sum_norm"},
    # DAPO: clip-higher, token-level mean, dynamic sampling, no KL.
    "dapo": {
        **_COMMON,
        "advantage": "grpo",
        "aggregation": "token_mean",
        "eps_high": 0.28,
        "dynamic_sampling": True,
    },
    # Lite PPO: group mean / batch std, token-level mean.
    "lite_ppo": {**_COMMON, "advantage": "lite_ppo", "aggregation": "token_mean"},
    # NGRPO: virtual max-reward sample, asymmetric clip.
    "ngrpo": {
        **_COMMON,
        "advantage": "ngrpo",
        "aggregation": "token_mean",
        "eps_low": 0.16,
        "eps_high": 0.24,
    },
    # GSPO: sequence-level length-normalized ratio with a tiny clip range.
    "gspo": {
        **_COMMON,
        "advantage": "grpo",
        "aggregation": "seq_mean_token_mean",
        "sequence_ratio": True,
        "eps_low": 3e-4,
        "eps_high": 4e-4,
    },
    # RLOO: leave-one-out baseline, one on-policy pass (= REINFORCE; the clip never binds).
    "rloo": {
        **_COMMON,
        "advantage": "rloo",
        "aggregation": "seq_mean_token_mean",
        "num_epochs": 1,
        "num_minibatches": 1,
    },
}


def _choose(field: str, name: str, table: dict):
    if name not in table:
        raise ValueError(f"{field}={name!r} is not one of {sorted(table)}")
    return table[name]


def resolve(preset: str, **overrides) -> dict:
    """The preset's hyperparameters with `overrides` applied (names still as strings)."""
    values = dict(_choose("preset", preset, PRESETS))
    for key, value in overrides.items():
        if key not in values:
            raise ValueError(f"override {key!r} is not a preset field; fields: {sorted(values)}")
        values[key] = value
    return values


def make_rl_config(preset: str, *, completion_length: int, **overrides) -> tuple[RLConfig, bool]:
    """Builds the trainer config of a named preset. Returns (RLConfig, dynamic_sampling)."""
    v = resolve(preset, **overrides)
    aggregate = _choose("aggregation", v["aggregation"], AGGREGATIONS)
    if v["aggregation"] == "seq_mean_token_sum_norm":
        aggregate = functools.partial(aggregate, max_len=float(completion_length))
    cfg = RLConfig(
        advantage_fn=_choose("advantage", v["advantage"], ADVANTAGES),
        aggregate_fn=aggregate,
        sequence_ratio=bool(v["sequence_ratio"]),
        eps_low=float(v["eps_low"]),
        eps_high=float(v["eps_high"]),
        kl_fn=_choose("kl", v["kl"], KL_ESTIMATORS),
        kl_coef=float(v["kl_coef"]),
        kl_in_reward=bool(v["kl_in_reward"]),
        entropy_coef=float(v["entropy_coef"]),
        num_epochs=int(v["num_epochs"]),
        num_minibatches=int(v["num_minibatches"]),
        learning_rate=float(v["learning_rate"]),
        max_grad_norm=float(v["max_grad_norm"]),
    )
    return cfg, bool(v["dynamic_sampling"])
