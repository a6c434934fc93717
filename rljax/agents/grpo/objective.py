"""The GRPO family's objective with every choice made from integer leaves inside the step.

`rljax.agents.grpo.presets` names the choices; here each choice computes every option with the pure
functions of `rljax.returns` / `rljax.losses` and selects one by its integer code. Selecting
between per-element results costs little next to the transformer, and it lets one compiled
program train learners that use different estimators, losses and aggregations.

Aggregation is written as per-token weights `w [M, A]` (and per-sequence weights `u [M]` for
sequence-level losses) whose normalizers are computed over the whole minibatch beforehand, so a
minibatch split into micro-batches (gradient accumulation) gives the same loss as the minibatch in
one piece; with one micro-batch `Σ w ℓ` is exactly the `rljax.losses.reduce` function of the
chosen name.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rljax import returns
from rljax.agents.grpo import presets
from rljax.losses import implicit, policy_gradient, sequence
from rljax.losses import kl as kl_lib


def select(code: jax.Array, options: dict[str, jax.Array], names: tuple[str, ...], what: str):
    """`options[names[code]]`: the option a learner's integer code names, by name.

    Every name of the preset table must have exactly one option and every option a name, so a
    choice added to `rljax.agents.grpo.presets` without its implementation fails here, at trace
    time,
    instead of silently training as another option (codes are positions in `names`).
    """
    missing = [n for n in names if n not in options]
    unknown = [n for n in options if n not in names]
    if missing or unknown:
        raise ValueError(
            f"{what}: no implementation of {missing} / implementations of unknown names "
            f"{unknown}; every name of rljax.agents.grpo.presets needs exactly one"
        )
    return jnp.stack([options[n] for n in names])[code]


class Choice(NamedTuple):
    """The numbers one learner's objective reads (scalars; array leaves under vmap)."""

    advantage: jax.Array  # int32 code in presets.ADVANTAGES
    aggregation: jax.Array  # int32 code in presets.AGGREGATIONS
    policy_loss: jax.Array  # int32 code in presets.POLICY_LOSSES
    divergence: jax.Array  # int32 code in presets.DIVERGENCES
    placement: jax.Array  # int32 code in presets.PLACEMENTS
    eps_low: jax.Array
    eps_high: jax.Array
    kl_coef: jax.Array  # β of the divergence
    entropy_coef: jax.Array
    pacs_beta: jax.Array
    rover_rho: jax.Array  # ρ of ROVER's Q = ρ log(π_θ/π_old)
    # Defaults (off / TRL's values) so a hand-built Choice need not name the fields below.
    delta: jax.Array | float = 0.0  # two-sided cap on the unclipped ratio (0: none)
    sapo_tau_pos: jax.Array | float = 1.0  # SAPO's gate temperature where A > 0
    sapo_tau_neg: jax.Array | float = 1.05  # ... and where A <= 0
    vespo_k_pos: jax.Array | float = 2.0  # VESPO's power k where A >= 0
    vespo_lambda_pos: jax.Array | float = 3.0  # VESPO's decay λ where A >= 0
    vespo_k_neg: jax.Array | float = 3.0  # ... and where A < 0
    vespo_lambda_neg: jax.Array | float = 2.0


def advantages(choice: Choice, rewards: jax.Array, mask: jax.Array, r_max: float) -> jax.Array:
    """The chosen group advantage of `rewards [B, G]` with `mask [B, G]`; `[B, G]`."""
    options = {
        "grpo": returns.grpo_advantages(rewards, mask),
        "dr_grpo": returns.dr_grpo_advantages(rewards, mask),
        "lite_ppo": returns.lite_ppo_advantages(rewards, mask),
        "batch": returns.batch_advantages(rewards, mask),
        "rloo": returns.rloo_advantages(rewards, mask),
        "ngrpo": returns.ngrpo_advantages(rewards, mask, r_max=r_max),
    }
    return select(choice.advantage, options, presets.ADVANTAGES, "advantage")


def token_kl(code: jax.Array, logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """Per-token k1 / k2 / k3 estimate of KL(π‖π_ref) for divergence `code` (0 otherwise)."""
    zero = jnp.zeros_like(logp)
    options = {
        "k1": kl_lib.k1(logp, ref_logp),
        "k2": kl_lib.k2(logp, ref_logp),
        "k3": kl_lib.k3(logp, ref_logp),
        # no token estimate: none, and the divergences estimated on reference samples
        **{name: zero for name in ("none", *presets.SAMPLE_DIVERGENCES)},
    }
    return select(code, options, presets.DIVERGENCES, "divergence")


def kl_reward_penalty(choice: Choice, old_logp, ref_logp, mask) -> jax.Array:
    """β Σ_t kl_t per sequence `[N]` when the divergence is placed in the reward, else 0.

    Matches `kl.kl_in_reward` summed over tokens: the sequence keeps R − β Σ_t kl_t.
    """
    in_reward = choice.placement == presets.PLACEMENTS.index("reward")  # by name, not position
    penalty = jnp.sum(token_kl(choice.divergence, old_logp, ref_logp) * mask, axis=1)
    return jnp.where(in_reward, choice.kl_coef * penalty, 0.0)


class Norms(NamedTuple):
    """Minibatch-wide normalizers of the aggregations (scalars)."""

    tokens: jax.Array  # Σ mask over the minibatch
    sequences: jax.Array  # sequences with at least one real token
    references: jax.Array  # reference samples (sample divergences)


def minibatch_norms(mask: jax.Array, num_references: int, seq_mask=None) -> Norms:
    """Normalizers of a minibatch (or micro-batch) `mask [M, A]`; sum them across micro-batches.

    `seq_mask [M, A]`: the rows that count as sequences (None: `mask`'s); `loss_rows` drops the
    truncated rows from `mask` but not from `seq_mask`.
    """
    rows = mask if seq_mask is None else seq_mask
    return Norms(
        jnp.sum(mask),
        jnp.sum(jnp.any(rows > 0, axis=1).astype(mask.dtype)),
        jnp.asarray(num_references, mask.dtype),
    )


def loss_rows(code: jax.Array, tokens: jax.Array, completion_mask: jax.Array, eos_ids) -> jax.Array:
    """`[N]` 1 for the rows that train, 0 for the truncated ones when `code` (TRL's
    `mask_truncated_completions`, DAPO's overlong filtering) is 1.

    A completion is truncated when no real token of `tokens [N, A]` (`completion_mask`) is one of
    `eos_ids`: it hit the length limit before a stop token. Its rows get mask 0, so it adds
    nothing to the loss and no token to the token normalizers; it still counts as a sequence
    (`minibatch_norms(seq_mask=)`), and its reward still enters its group's advantages. That is
    TRL's rule: it zeroes the completion mask, its token counts drop the row and its means over
    sequences keep it.
    """
    stop = jnp.isin(tokens, jnp.asarray(eos_ids, tokens.dtype)) & (completion_mask > 0)
    truncated = ~jnp.any(stop, axis=1)
    return jnp.where((code == 1) & truncated, 0.0, 1.0)


def token_weights(code: jax.Array, mask: jax.Array, norms: Norms, max_len: float) -> jax.Array:
    """Weights `w [M, A]` with `Σ w ℓ` the chosen aggregation of per-token losses `ℓ`."""
    length = jnp.maximum(jnp.sum(mask, axis=1, keepdims=True), 1.0)
    n_seq = jnp.maximum(norms.sequences, 1.0)
    options = {
        "token_mean": mask / jnp.maximum(norms.tokens, 1.0),
        "seq_mean_token_mean": mask / (length * n_seq),
        "seq_mean_token_sum": mask / n_seq,
        "seq_mean_token_sum_norm": mask / (n_seq * max_len),  # Dr.GRPO
    }
    return select(code, options, presets.AGGREGATIONS, "aggregation")


class MicroBatch(NamedTuple):
    """One micro-batch of whole groups, `M = groups × G` rows, problem-major."""

    logp: jax.Array  # [M, A] log π_θ (current parameters)
    entropy: jax.Array  # [M, A]
    mean_log_probs: jax.Array  # [M, A] vocabulary mean of log π_θ(·|s_t) (ROVER)
    old_mean_log_probs: jax.Array  # [M, A] the same under π_old
    old_logp: jax.Array  # [M, A] log π_old (the sampling policy)
    ref_logp: jax.Array  # [M, A] log π_ref (the base)
    mask: jax.Array  # [M, A] completion mask × group validity
    adv: jax.Array  # [M]
    correct: jax.Array  # [M] 0/1
    correct_rate: jax.Array  # [M] the group's accuracy
    group_size: int  # G (static)


def policy_loss(
    choice: Choice, mb: MicroBatch, norms: Norms, max_len: float, used=presets.POLICY_LOSSES
):
    """The chosen policy loss of the micro-batch, aggregated; and the clip fraction (summable).

    `used`: the policy losses the population uses (static); only these are computed. A learner
    whose code names another gets a NaN loss (the run's NaN stop says so), never a silent zero.

    Returns:
      (loss scalar, clipped-token share scalar), both micro-batch contributions to the minibatch.
    """
    w = token_weights(choice.aggregation, mb.mask, norms, max_len)
    adv_t = jnp.broadcast_to(mb.adv[:, None], mb.logp.shape)
    # delta 0: no two-sided cap (min(ρ, inf) = ρ exactly, value and gradient)
    cap = jnp.where(choice.delta > 0, choice.delta, jnp.inf)
    clip = dict(eps_low=choice.eps_low, eps_high=choice.eps_high, delta=cap)
    pg, seq = policy_gradient, sequence
    token_fns = {
        "ppo_clip": lambda: pg.ppo_clip(mb.logp, mb.old_logp, adv_t, **clip),
        "cispo": lambda: pg.cispo(
            mb.logp, mb.old_logp, adv_t, eps_low=choice.eps_low, eps_high=choice.eps_high
        ),
        "reinforce": lambda: pg.reinforce(mb.logp, adv_t),
        "nft": lambda: _nft(mb),
        "rover": lambda: implicit.rover(
            mb.logp, mb.old_logp, mb.mean_log_probs, mb.old_mean_log_probs, mb.adv, mb.mask,
            rho=choice.rover_rho,
        ),
        "sapo": lambda: pg.sapo(
            mb.logp, mb.old_logp, adv_t, tau_pos=choice.sapo_tau_pos, tau_neg=choice.sapo_tau_neg
        ),
        "vespo": lambda: seq.vespo(
            mb.logp, mb.old_logp, mb.adv, mb.mask,
            k_pos=choice.vespo_k_pos, lambda_pos=choice.vespo_lambda_pos,
            k_neg=choice.vespo_k_neg, lambda_neg=choice.vespo_lambda_neg,
        ),
        "luspo": lambda: seq.luspo(mb.logp, mb.old_logp, mb.adv, mb.mask, **clip),
    }  # fmt: skip
    has_tok = jnp.any(mb.mask > 0, axis=1).astype(mb.logp.dtype)
    sequence_fns = {
        "gspo": lambda: seq.gspo(mb.logp, mb.old_logp, mb.adv, mb.mask, **clip),
        "pacs": lambda: _pacs(choice, mb, has_tok),
    }
    sequence_names = presets.SEQUENCE_LOSSES
    if set(sequence_fns) != set(sequence_names):
        raise ValueError(
            f"policy_loss: sequence-level losses {sorted(sequence_fns)} implemented, "
            f"{sorted(sequence_names)} named in rljax.agents.grpo.presets.SEQUENCE_LOSSES"
        )
    nan_token = jnp.full_like(mb.logp, jnp.nan)  # the unused losses (never selected)
    nan_seq = jnp.full_like(has_tok, jnp.nan)
    # Each table names every loss: a used loss its value, a loss of the other level an explicit
    # zero, an unused one NaN; `select` checks the table against presets.POLICY_LOSSES.
    token = {n: (f() if n in used else nan_token) for n, f in token_fns.items()}
    token.update({n: jnp.zeros_like(mb.logp) for n in sequence_names})
    per_token = select(choice.policy_loss, token, presets.POLICY_LOSSES, "policy_loss")
    token_loss = jnp.sum(per_token * w)

    u = has_tok / jnp.maximum(norms.sequences, 1.0)
    per_sequence = {n: (f() if n in used else nan_seq) for n, f in sequence_fns.items()}
    per_sequence.update({n: jnp.zeros_like(has_tok) for n in token_fns})
    seq_loss = jnp.sum(
        select(choice.policy_loss, per_sequence, presets.POLICY_LOSSES, "policy") * u
    )
    codes = jnp.asarray([presets.POLICY_LOSSES.index(n) for n in sequence_names])
    loss = jnp.where(jnp.isin(choice.policy_loss, codes), seq_loss, token_loss)

    ratio = jnp.exp(jnp.clip(mb.logp - mb.old_logp, -20.0, 20.0))
    clipped = ((ratio > 1 + choice.eps_high) | (ratio < 1 - choice.eps_low)).astype(w.dtype)
    clip_share = jnp.sum(clipped * mb.mask) / jnp.maximum(norms.tokens, 1.0)
    return loss, clip_share


def _nft(mb: MicroBatch) -> jax.Array:
    """NFT's per-token loss; all-right and all-wrong groups (no signal) masked out, since NFT
    needs 0 < r_q < 1."""
    informative = (mb.correct_rate > 0) & (mb.correct_rate < 1)
    rate = jnp.clip(mb.correct_rate, 1e-3, 1 - 1e-3)[:, None]
    nft = implicit.nft(mb.logp, mb.old_logp, mb.correct[:, None], rate)
    return jnp.where(informative[:, None], nft, 0.0)


def _pacs(choice: Choice, mb: MicroBatch, has_tok: jax.Array) -> jax.Array:
    """PACS's per-sequence loss `[M]` from the groups' sequence log-probs."""
    groups = mb.logp.shape[0] // mb.group_size
    seq_logp = jnp.sum(mb.logp * mb.mask, axis=1).reshape(groups, mb.group_size)
    seq_old = jnp.sum(mb.old_logp * mb.mask, axis=1).reshape(groups, mb.group_size)
    return implicit.pacs(
        seq_logp,
        seq_old,
        mb.correct.reshape(groups, mb.group_size),
        has_tok.reshape(groups, mb.group_size),
        beta=choice.pacs_beta,
    ).reshape(-1)


def regularizers(choice: Choice, mb: MicroBatch, norms: Norms, max_len: float):
    """Entropy bonus and the in-loss token divergence, each aggregated like the policy loss.

    Returns:
      (entropy term, KL term, mean entropy, mean k3 KL): the first two enter the loss as
      `- entropy_coef · entropy + kl_coef · KL` (KL only when placed in the loss).
    """
    w = token_weights(choice.aggregation, mb.mask, norms, max_len)
    entropy = jnp.sum(mb.entropy * w)
    in_loss = choice.placement == presets.PLACEMENTS.index("loss")
    kl = jnp.where(in_loss, jnp.sum(token_kl(choice.divergence, mb.logp, mb.ref_logp) * w), 0.0)
    per_token = mb.mask / jnp.maximum(norms.tokens, 1.0)
    mean_entropy = jnp.sum(mb.entropy * per_token)
    mean_k3 = jnp.sum(kl_lib.k3(mb.logp, mb.ref_logp) * per_token)
    return entropy, kl, mean_entropy, mean_k3


def sample_divergence(
    choice: Choice, seq_logp: jax.Array, seq_ref_logp: jax.Array, norms: Norms
) -> jax.Array:
    """D_f(π‖π_ref) estimated on the reference's samples (DPH-RL), summed / minibatch count.

    `seq_logp`, `seq_ref_logp`: `[R]` sequence log-probs of reference samples under π_θ and π_ref.
    forward_kl: f(u) = −log u (SFT on the base's samples); js: the Jensen-Shannon generator.
    """
    log_u = seq_logp - jax.lax.stop_gradient(seq_ref_logp)
    fkl = kl_lib.f_divergence_sample(seq_logp, seq_ref_logp, generator=kl_lib.forward_kl_generator)
    js = kl_lib.js_generator(log_u)
    code = choice.divergence
    value = jnp.where(code == presets.DIVERGENCES.index("forward_kl"), fkl, 0.0) + jnp.where(
        code == presets.DIVERGENCES.index("js"), js, 0.0
    )
    return jnp.sum(value) / jnp.maximum(norms.references, 1.0)


def micro_schedule(config, hp, mask: jax.Array, key, seq_mask=None):
    """Rows, normalizers, and active / apply flags of every micro-step `[E_max × M_max]`.

    `config`: the learner's static config (B, G, E_max, M_max, reference samples); `hp`: its
    `Hparams` (num_epochs, num_minibatches); `mask [B × G, A]` the loss mask; `key` orders the
    groups; `seq_mask [B × G, A]` the rows counted as sequences (None: `mask`'s; see
    `minibatch_norms`).
    """
    B, G = config.prompts_per_step, config.group_size
    E, M = config.max_epochs, config.max_minibatches
    per_micro = B // M
    # fold_in per epoch: epoch e's order does not depend on how many epochs the population runs.
    perms = jnp.stack([jax.random.permutation(jax.random.fold_in(key, e), B) for e in range(E)])
    groups = perms.reshape(E, M, per_micro)
    rows = (groups[..., None] * G + jnp.arange(G)).reshape(E, M, per_micro * G)
    micro_mask = mask[rows]  # [E, M, rows, A]
    micro_seq = micro_mask if seq_mask is None else seq_mask[rows]
    tokens = jnp.sum(micro_mask, axis=(2, 3))
    seqs = jnp.sum(jnp.any(micro_seq > 0, axis=3), axis=2).astype(jnp.float32)
    k = M // jnp.maximum(hp.num_minibatches, 1)  # micro-batches per AdamW step
    minibatch = jnp.arange(M) // k
    same = (minibatch[:, None] == minibatch[None, :]).astype(jnp.float32)  # [M, M]
    refs = jnp.full((E, M), per_micro * config.reference_samples, jnp.float32) @ same
    norms = Norms(tokens @ same, seqs @ same, refs)
    active = jnp.broadcast_to(jnp.arange(E)[:, None] < hp.num_epochs, (E, M))
    apply = active & ((jnp.arange(M) + 1) % k == 0)[None, :]
    flat = lambda x: x.reshape(E * M, *x.shape[2:])  # noqa: E731
    return flat(rows), flat(groups), jax.tree.map(flat, norms), flat(active), flat(apply)
