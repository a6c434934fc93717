"""A character-level tokenizer shared by every task, and the fixed-shape batch encoders.

Layout conventions (used by the model, sampling, SFT and RL alike):
  prompts      [B, P]  left-padded, BOS first:   PAD PAD BOS 3 + 4 =
  completions  [B, A]  right-padded, EOS last:   1 1 EOS PAD PAD
with masks of the same shape (1 = real token). EOS is the end-of-answer token.

`CHAR` wraps these functions in the interface the toy tasks take from any tokenizer
(`encode_prompts`, `encode_completions`, `decode`, `vocab_size`, `eos_ids`, `pad_id`,
`fingerprint`); `rljax.lm.model.hf.tokenizer.HFTokenizer` (a BPE tokenizer.json) has the same one.
"""

from __future__ import annotations

import string

import numpy as np

PAD, BOS, EOS = 0, 1, 2
_SPECIALS = ("<pad>", "<bos>", "<eos>")
CHARS = string.digits + "+-*/()=,;:>" + string.ascii_lowercase + "ABCDEFGH"
VOCAB_SIZE = 64  # 3 specials + 58 characters, rounded up; ids 61-63 are unused
_CHAR_TO_ID = {c: i + len(_SPECIALS) for i, c in enumerate(CHARS)}
assert len(_SPECIALS) + len(CHARS) <= VOCAB_SIZE


def encode(text: str) -> list[int]:
    """Token ids of `text`; raises ValueError naming the first character outside `CHARS`."""
    for c in text:
        if c not in _CHAR_TO_ID:
            raise ValueError(f"character {c!r} in {text!r} is not in the vocabulary {CHARS!r}")
    return [_CHAR_TO_ID[c] for c in text]


def decode(ids) -> tuple[str, bool]:
    """Text up to the first EOS, and whether an EOS was found. PAD/BOS are dropped; ids outside
    the character set decode to '?', which no verifier accepts."""
    chars = []
    for i in np.asarray(ids).tolist():
        if i == EOS:
            return "".join(chars), True
        if i in (PAD, BOS):
            continue
        k = i - len(_SPECIALS)
        chars.append(CHARS[k] if 0 <= k < len(CHARS) else "?")
    return "".join(chars), False


def encode_prompts(prompts: list[str], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Left-padded `[N, length]` int32 tokens (BOS + prompt) and their 0/1 mask."""
    tokens = np.full((len(prompts), length), PAD, np.int32)
    mask = np.zeros((len(prompts), length), np.int32)
    for row, prompt in enumerate(prompts):
        ids = [BOS, *encode(prompt)]
        if len(ids) > length:
            raise ValueError(f"prompt {prompt!r} needs {len(ids)} tokens > prompt length {length}")
        tokens[row, length - len(ids) :] = ids
        mask[row, length - len(ids) :] = 1
    return tokens, mask


def encode_completions(answers: list[str], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded `[N, length]` int32 tokens (answer + EOS) and their 0/1 mask."""
    tokens = np.full((len(answers), length), PAD, np.int32)
    mask = np.zeros((len(answers), length), np.int32)
    for row, answer in enumerate(answers):
        ids = [*encode(answer), EOS]
        if len(ids) > length:
            raise ValueError(f"answer {answer!r} needs {len(ids)} tokens > answer length {length}")
        tokens[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    return tokens, mask


class CharTokenizer:
    """The character tokenizer as an object: what the toy tasks call on any tokenizer."""

    vocab_size, pad_id, bos_id, eos_ids = VOCAB_SIZE, PAD, BOS, (EOS,)
    eos_id = EOS

    def fingerprint(self) -> str:
        """ "" : SFT-base cache keys made with the character tokenizer do not name it."""
        return ""

    def encode(self, text: str) -> list[int]:
        return encode(text)

    def decode(self, ids) -> tuple[str, bool]:
        return decode(ids)

    def encode_prompts(self, prompts: list[str], length: int):
        return encode_prompts(prompts, length)

    def encode_completions(self, answers: list[str], length: int):
        return encode_completions(answers, length)


CHAR = CharTokenizer()
