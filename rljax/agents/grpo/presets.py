"""Named presets of the one RLVR learner: each is nothing but values.

The learner (`rljax.agents.grpo`) makes every choice of the GRPO family inside its jitted step
from integer leaves of its hyperparameters, so a preset is a dict of numbers and names, and a
population can mix presets. The names below are the only place where choices get their integer
codes; `hparam_values` turns a preset (plus overrides) into the numbers the learner carries.

Normalization each preset uses (the aggregation turns per-token losses into one number):
  grpo      seq_mean_token_mean  (1/N) Σ_i (1/|o_i|) Σ_t ℓ_it       DeepSeekMath
  dr_grpo   seq_mean_token_sum_norm (1/N) Σ_i Σ_t ℓ_it / L_max     Dr.GRPO
  dapo, lite_ppo, ngrpo, cispo, nft, rover, vespo   token_mean Σ_i Σ_t ℓ_it / Σ_i |o_i|
  sapo      seq_mean_token_mean, as GRPO (TRL's loss_type="sapo")
  luspo     seq_mean_token_sum of GSPO's sequence loss on every token: (1/N) Σ_i |o_i| ℓ_i
  gspo, pacs   sequence-level losses, mean over sequences
  rloo      seq_mean_token_sum   (1/N) Σ_i Σ_t ℓ_it: the sequence-sum REINFORCE form of the
            paper (a sequence-mean-token-mean would divide each gradient by |o_i|)
  dph_fkl, dph_js   GRPO's, plus the divergence to the reference on reference samples

Values follow the papers where they state them; where they do not (NGRPO's asymmetric clip,
CISPO's truncation, NFT's and PACS's aggregation, the DPH coefficients), ours are marked. SAPO,
VESPO and LUSPO, the two-sided clip `delta` and `mask_truncated_completions` take TRL 1.16's
GRPOTrainer defaults (`trl/trainer/grpo_config.py`); `delta` and the masking are off by default.
"""

from __future__ import annotations

ADVANTAGES = ("grpo", "dr_grpo", "lite_ppo", "batch", "rloo", "ngrpo")
AGGREGATIONS = (
    "token_mean",
    "seq_mean_token_mean",
    "seq_mean_token_sum",
    "seq_mean_token_sum_norm",
)
POLICY_LOSSES = (
    "ppo_clip", "cispo", "reinforce", "nft", "gspo", "pacs", "rover", "sapo", "vespo", "luspo",
)  # fmt: skip
TWO_SIDED_LOSSES = ("ppo_clip", "gspo", "luspo")  # the losses `delta` caps (TRL's clip losses)
SEQUENCE_LOSSES = ("gspo", "pacs")  # one loss per sequence: averaged over sequences
DIVERGENCES = ("none", "k1", "k2", "k3", "forward_kl", "js")
SAMPLE_DIVERGENCES = ("forward_kl", "js")  # estimated on the reference model's own samples
PLACEMENTS = ("loss", "reward")
# What the learner is rewarded for (rljax.agents.grpo.reward_signal): the verifier, or invalid
# signals.
REWARDS = ("verifier", "random", "inverted", "format_only", "majority", "none")
PARSED_REWARDS = ("inverted", "format_only", "majority")  # parse answers: exact-match tasks only
# Which problems a step draws (rljax.agents.grpo.curriculum): uniformly, or by a bandit over levels.
CURRICULA = ("uniform", "sec", "ucb")

# Which choice field takes names from which tuple.
CHOICES = {
    "advantage": ADVANTAGES,
    "aggregation": AGGREGATIONS,
    "policy_loss": POLICY_LOSSES,
    "divergence": DIVERGENCES,
    "placement": PLACEMENTS,
    "reward": REWARDS,
    "curriculum": CURRICULA,
}

_COMMON = dict(
    advantage="grpo",
    aggregation="token_mean",
    policy_loss="ppo_clip",
    divergence="none",
    placement="loss",
    eps_low=0.2,
    eps_high=0.2,
    kl_coef=0.0,
    entropy_coef=0.0,
    pacs_beta=1.0,
    rover_rho=1.0,  # ρ of ROVER's Q = ρ log(π_θ/π_old) (ours: the paper's LLM value unverified)
    # TRL's `delta`: the two-sided clip caps the unclipped ratio of TWO_SIDED_LOSSES at δ (0: off)
    delta=0.0,
    # 1: completions that never emitted a stop token get zero weight (DAPO's overlong filtering)
    mask_truncated_completions=0,
    sapo_tau_pos=1.0,  # SAPO's gate temperatures for A > 0 and A <= 0 (TRL's defaults)
    sapo_tau_neg=1.05,
    vespo_k_pos=2.0,  # VESPO's Gamma weight w^k e^{λ(1-w)}: k and λ for A >= 0 (TRL's defaults)
    vespo_lambda_pos=3.0,
    vespo_k_neg=3.0,  # ... and for A < 0
    vespo_lambda_neg=2.0,
    num_epochs=2,
    num_minibatches=2,
    learning_rate=3e-4,
    weight_decay=1e-4,
    dynamic_sampling=0,
    reward="verifier",
    # Prompt selection (rljax.agents.grpo.curriculum; values ours): uniform draws reproduce the
    # learner
    # without curricula. τ of softmax(value/τ), α of the TD(0) value update, c of UCB's bonus
    # (DUMP's c √(2 ln N / n)), and balanced filtering's band |p̂ − ½| ≤ δ (½: no band beyond
    # dynamic sampling's 0 < p̂ < 1; read only by learners that sample dynamically).
    curriculum="uniform",
    curriculum_temp=0.2,
    curriculum_lr=0.5,
    ucb_c=1.0,
    balance_delta=0.5,
)
PRESETS = {
    # DeepSeekMath GRPO: group-normalized advantages, per-sequence mean, k3 KL in the loss.
    "grpo": {**_COMMON, "aggregation": "seq_mean_token_mean", "divergence": "k3", "kl_coef": 0.04},
    # Dr.GRPO: no std division, constant length normalizer, no KL.
    "dr_grpo": {**_COMMON, "advantage": "dr_grpo", "aggregation": "seq_mean_token_sum_norm"},
    # DAPO: clip-higher, token-level mean, dynamic sampling, no KL.
    "dapo": {**_COMMON, "eps_high": 0.28, "dynamic_sampling": 1},
    # Lite PPO: group mean / batch std, token-level mean.
    "lite_ppo": {**_COMMON, "advantage": "lite_ppo"},
    # NGRPO: virtual max-reward sample, asymmetric clip (ε values ours).
    "ngrpo": {**_COMMON, "advantage": "ngrpo", "eps_low": 0.16, "eps_high": 0.24},
    # GSPO: sequence-level length-normalized ratio with a tiny clip range.
    "gspo": {
        **_COMMON,
        "aggregation": "seq_mean_token_mean",
        "policy_loss": "gspo",
        "eps_low": 3e-4,
        "eps_high": 4e-4,
    },
    # RLOO: leave-one-out baseline, one on-policy pass, the sequence-sum REINFORCE form.
    "rloo": {
        **_COMMON,
        "advantage": "rloo",
        "aggregation": "seq_mean_token_sum",
        "policy_loss": "reinforce",
        "num_epochs": 1,
        "num_minibatches": 1,
    },
    # CISPO (MiniMax-M1, ScaleRL): clipped, stopped IS weight; no lower bound (ε_high ours).
    "cispo": {**_COMMON, "policy_loss": "cispo", "eps_low": 1.0, "eps_high": 0.28},
    # NFT: supervised loss on positives and an implicit negative policy (token mean ours).
    "nft": {**_COMMON, "policy_loss": "nft"},
    # PACS: BCE of a leave-one-out log-ratio score against the 0/1 reward (β ours).
    "pacs": {**_COMMON, "policy_loss": "pacs", "aggregation": "seq_mean_token_mean"},
    # ROVER: regress the uniform policy's Q = ρ log(π_θ/π_old) onto r̃ + mean-over-vocab Q of
    # the next state, with the group-centred reward r̃ = r − mean (Dr.GRPO's advantage) given
    # to every token, token-mean aggregated (ρ = 1 ours).
    "rover": {**_COMMON, "advantage": "dr_grpo", "policy_loss": "rover"},
    # SAPO: PPO's hard clip replaced by a sigmoid gate of the token ratio; GRPO's aggregation,
    # as TRL's loss_type="sapo".
    "sapo": {**_COMMON, "policy_loss": "sapo", "aggregation": "seq_mean_token_mean"},
    # VESPO: REINFORCE weighted by a Gamma function of the sequence ratio; token mean, as TRL.
    "vespo": {**_COMMON, "policy_loss": "vespo"},
    # LUSPO: GSPO with each sequence's loss scaled by its length, (1/N) Σ_i |o_i| ℓ_i as TRL's
    # loss_type="luspo"; GSPO's sequence-ratio clip range (ours: TRL's default ε is 0.2).
    "luspo": {
        **_COMMON,
        "aggregation": "seq_mean_token_sum",
        "policy_loss": "luspo",
        "eps_low": 3e-4,
        "eps_high": 4e-4,
    },
    # DPH-RL ("The Choice of Divergence"): GRPO plus a mass-covering divergence to the base,
    # estimated on the base's own samples (coefficients ours).
    "dph_fkl": {
        **_COMMON,
        "aggregation": "seq_mean_token_mean",
        "divergence": "forward_kl",
        "kl_coef": 0.05,
    },
    "dph_js": {
        **_COMMON,
        "aggregation": "seq_mean_token_mean",
        "divergence": "js",
        "kl_coef": 0.1,
    },
}
FIELDS = tuple(_COMMON)  # every field a preset sets, and so every field a sweep may name

# The presets' optimizer numbers are the toy testbed's (a 0.1-1M-parameter decoder trained from
# scratch, learning_rate 3e-4). A pretrained checkpoint moves far with them: AdamW turns any
# gradient, rounding noise included, into a step of about lr on every parameter, so one update
# at 3e-4 moves each weight of a model whose weights are ~1e-2 by a few percent. A run from a
# checkpoint (the math front end when `model.path` is set,
# rljax.train.math_experiment) takes these values over every preset's, below its own `rl.*`
# and `sweep.*` fields. What the sources use:
#   DeepSeekMath GRPO (Shao et al. 2024): policy lr 1e-6, KL coefficient β = 0.04 (k3).
#   TRL GRPOConfig defaults (1.x): learning_rate 1e-6, beta 0.0 (no KL), weight_decay 0.0.
#   DAPO (Yu et al. 2025): lr 1e-6 (constant after a 20-step warm-up), no KL.
#   Dr. GRPO (Liu et al. 2025, Oat-Zero): lr 1e-6, no KL.
#   verl's GRPO example scripts: actor lr 1e-6, kl_loss_coef 0.001 with low_var_kl (k3).
# All use 1e-6, which the rule takes. The KL settings stay each preset's own, which are its
# paper's for pretrained models (grpo: k3 at β 0.04 as DeepSeekMath; dr_grpo, dapo: none).
# weight_decay is 0 (TRL's default): a step without any signal leaves a checkpoint exactly as
# it was (with decay w every optimizer step scales each parameter by 1 - lr·w; docs/math.md).
PRETRAINED = {"learning_rate": 1e-6, "weight_decay": 0.0}


_INF = float("inf")
_POSITIVE = ("pacs_beta", "rover_rho", "sapo_tau_pos", "sapo_tau_neg")
_POSITIVE += ("vespo_lambda_pos", "vespo_lambda_neg")
# The float fields: field -> (check, what is allowed). `rljax.agents.grpo.HPARAM_RULES` is this.
HPARAM_RULES = {
    **{
        f: (lambda v: 0 <= v < _INF, "a finite >= 0")
        for f in ("eps_high", "kl_coef", "entropy_coef", "weight_decay", "ucb_c")
    },
    # the ratio's lower clip 1 - ε_low must be >= 0 (1: no lower clip, as CISPO)
    "eps_low": (lambda v: 0 <= v <= 1, "in [0, 1] (1 - eps_low is the lowest ratio kept)"),
    # scales of a log-ratio (0 would erase the loss), SAPO's temperatures and VESPO's decays
    **{f: (lambda v: 0 < v < _INF, "a finite > 0") for f in _POSITIVE},
    **{f: (lambda v: 0 <= v < _INF, "a finite >= 0") for f in ("vespo_k_pos", "vespo_k_neg")},
    # a cap at or below 1 would clip the on-policy ratio itself
    "delta": (lambda v: v == 0 or 1 < v < _INF, "0 (no two-sided clip) or a finite > 1"),
    "learning_rate": (lambda v: 0 < v < 1, "in (0, 1)"),
    "curriculum_temp": (lambda v: 0 < v < _INF, "a finite > 0"),
    "curriculum_lr": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "balance_delta": (lambda v: 0 <= v <= 0.5, "in [0, 0.5]"),
}


def _choose(field: str, name, table) -> int:
    if name not in table:
        raise ValueError(f"{field}={name!r} is unknown; valid: {', '.join(table)}")
    return table.index(name)


def resolve(preset: str, **overrides) -> dict:
    """The preset's fields with `overrides` applied (choices still as names)."""
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} is unknown; valid: {', '.join(PRESETS)}")
    values = dict(PRESETS[preset])
    for key, value in overrides.items():
        if key not in values:
            raise ValueError(f"rl.{key} is not a preset field; fields: {', '.join(FIELDS)}")
        values[key] = value
    return values


def check(values: dict) -> None:
    """Validates one learner's resolved fields; raises ValueError naming field, value, range."""
    for field, table in CHOICES.items():
        _choose(f"rl.{field}", values[field], table)
    for field, (ok, allowed) in HPARAM_RULES.items():
        v = float(values[field])
        if not (v == v and ok(v)):
            raise ValueError(f"rl.{field}={values[field]!r} is invalid; allowed: {allowed}")
    for field in ("num_epochs", "num_minibatches"):
        v = values[field]
        if isinstance(v, bool) or int(v) != v or not 1 <= v <= 64:
            raise ValueError(f"rl.{field}={v!r} is invalid; allowed: an integer in [1, 64]")
    for field in ("dynamic_sampling", "mask_truncated_completions"):
        if values[field] not in (0, 1, True, False):
            raise ValueError(f"rl.{field}={values[field]!r} is invalid; allowed: 0 or 1")
    if float(values["delta"]) > 0 and values["policy_loss"] not in TWO_SIDED_LOSSES:
        raise ValueError(
            f"rl.delta={values['delta']!r} with rl.policy_loss={values['policy_loss']!r} would "
            f"be ignored; the two-sided clip caps {', '.join(TWO_SIDED_LOSSES)} (or set delta=0)"
        )
    _check_curriculum(values)
    if values["divergence"] in SAMPLE_DIVERGENCES and values["placement"] == "reward":
        raise ValueError(
            f"rl.placement='reward' with rl.divergence={values['divergence']!r}: a divergence "
            "estimated on reference samples can only be placed in the loss"
        )
    if values["divergence"] == "none" and float(values["kl_coef"]) > 0:
        raise ValueError(
            f"rl.kl_coef={values['kl_coef']!r} with rl.divergence='none' would be ignored; "
            f"choose rl.divergence from {', '.join(DIVERGENCES[1:])}"
        )
    if values["divergence"] != "none" and not float(values["kl_coef"]) > 0:
        raise ValueError(
            f"rl.divergence={values['divergence']!r} needs rl.kl_coef > 0 "
            f"(got {values['kl_coef']!r}); use divergence='none' for no regularizer"
        )


def _check_curriculum(values: dict) -> None:
    delta = float(values["balance_delta"])
    if delta < 0.5 and not values["dynamic_sampling"]:
        raise ValueError(
            f"rl.balance_delta={values['balance_delta']!r} with rl.dynamic_sampling=0 would be "
            "ignored: balanced filtering drops groups, so it needs dynamic_sampling=1"
        )


def hparam_values(values: dict) -> dict:
    """Resolved fields -> the numbers a learner carries (choices as their integer codes)."""
    check(values)
    out = {k: v for k, v in values.items() if k not in CHOICES}
    out.update({field: _choose(field, values[field], table) for field, table in CHOICES.items()})
    out["dynamic_sampling"] = int(bool(values["dynamic_sampling"]))
    out["mask_truncated_completions"] = int(bool(values["mask_truncated_completions"]))
    out["num_epochs"], out["num_minibatches"] = (
        int(values["num_epochs"]),
        int(values["num_minibatches"]),
    )
    return out
