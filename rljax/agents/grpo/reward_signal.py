"""What a learner is rewarded for: the verifier's reward or a deliberately invalid signal.

"Validity of the reward signal on clean data" (#61 in PAPERS.md) and the entropy-only arm of
1-shot RLVR (#124) train on rewards that are not the verifier's. Each signal is a choice of the
one RLVR learner (`rljax.agents.grpo.presets.REWARDS`, an integer leaf), computed on device for
groups of
G completions and selected by its code, so one population can mix them:

  verifier     the task's reward (`rljax.lm.tasks.device_reward.score`), unchanged;
  random       Bernoulli(1/2) per completion, independent of the completion;
  inverted     1 for a finished, well-formed but wrong answer (rewards being wrong);
  format_only  1 for a finished, well-formed answer, right or wrong;
  majority     1 for a finished answer equal to the group's most frequent well-formed answer
               (TTRL-style pseudo-labels; ties go to the earliest sample; 0 if none parses);
  none         0 everywhere (only regularizers such as the entropy bonus train).

The learner's "correct" labels (NFT's and PACS's targets) follow the signal: reward > 0. The
verifier's own correctness is kept apart for metrics.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from rljax.agents.grpo import presets
from rljax.lm.tasks import device_reward


def majority_labels(key: jax.Array, ok: jax.Array) -> jax.Array:
    """1 where a completion's answer is its group's most frequent well-formed answer.

    Args:
      key: `[B, G, K]` answer keys (`device_reward.answers`): equal exactly for equal answers.
      ok: `[B, G]` bool, the answer parses (only these vote and can win).

    Returns:
      `[B, G]` bool.
    """
    chex.assert_rank(key, 3)
    same = jnp.all(key[:, :, None, :] == key[:, None, :, :], axis=-1)
    same = same & ok[:, :, None] & ok[:, None, :]  # [B, G, G]
    votes = jnp.sum(same, axis=-1)  # [B, G]: samples sharing each one's answer
    winner = jnp.argmax(votes, axis=1)  # the first sample with the most votes
    won = jnp.take_along_axis(same, winner[:, None, None], axis=1)[:, 0, :]
    return won & (jnp.max(votes, axis=1) > 0)[:, None]


def signal(
    code: jax.Array,
    kind: str,
    tokens: jax.Array,
    rewards: jax.Array,
    correct: jax.Array,
    key: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """The chosen reward signal of `B` groups of `G` completions.

    Args:
      code: int32 code in `presets.REWARDS`.
      kind: `device_reward.KINDS[task]`; signals other than "verifier", "random" and "none"
        parse answers on device, so they need an exact-match kind (not "host").
      tokens: `[B, G, A]` completions.
      rewards: `[B, G]` the verifier's rewards; correct: `[B, G]` its verdicts.
      key: for the random signal.

    Returns:
      (rewards `[B, G]` float32, labels `[B, G]` float32: the signal's notion of correct).
    """
    B, G, A = tokens.shape
    chex.assert_shape([rewards, correct], (B, G))
    coin = jax.random.bernoulli(key, 0.5, (B, G)).astype(jnp.float32)
    zero = jnp.zeros((B, G), jnp.float32)
    if kind == "host":  # answers are parsed on the host: only the signals that need no parse
        parsed = (zero, zero, zero)
    else:
        answer, ok, finished = device_reward.answers(kind, tokens.reshape(B * G, A))
        ok, finished = ok.reshape(B, G), finished.reshape(B, G)
        formatted = finished & ok
        parsed = (
            (formatted & ~correct.astype(bool)).astype(jnp.float32),
            formatted.astype(jnp.float32),
            (finished & majority_labels(answer.reshape(B, G, -1), ok)).astype(jnp.float32),
        )
    options = jnp.stack([rewards.astype(jnp.float32), coin, *parsed, zero])
    chosen = options[code]
    verifier = code == presets.REWARDS.index("verifier")
    labels = jnp.where(verifier, correct.astype(jnp.float32), (chosen > 0).astype(jnp.float32))
    return chosen, labels
