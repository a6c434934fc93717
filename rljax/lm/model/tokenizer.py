"""The tokenizer interface every task uses, its character and byte tokenizers, prompt templates,
and the one pair of fixed-shape batch encoders.

Layout conventions (used by the model, sampling, SFT and RL alike):
  prompts      [B, P]  left-padded, BOS first:   PAD PAD BOS 3 + 4 =
  completions  [B, A]  right-padded, EOS last:   1 1 EOS PAD PAD
with masks of the same shape (1 = real token). EOS is the end-of-answer token.

A tokenizer is anything with the `Tokenizer` protocol below: `CHAR` (the toy tasks' characters),
`ByteTokenizer` (UTF-8 bytes: any text, the tiny math model) and
`rljax.lm.model.hf.tokenizer.HFTokenizer` (a tokenizer.json). A template turns a problem's text
into the prompt text: `PlainTemplate` (prefix + text + suffix, the tokenizer's BOS first) or
`ChatTemplate` (one user turn of the tokenizer's chat template, whose text carries its own
special tokens). `encode_prompts` and `encode_completions` are the only encoders of batches: the
toy tasks (`rljax.lm.tasks.batches`) and math (`rljax.lm.tasks.device_reward.make_table`,
`rljax.train.math_experiment`) both call them.
"""

from __future__ import annotations

import dataclasses
import string
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

PAD, BOS, EOS = 0, 1, 2
_SPECIALS = ("<pad>", "<bos>", "<eos>")
CHARS = string.digits + "+-*/()=,;:>" + string.ascii_lowercase + "ABCDEFGH"
VOCAB_SIZE = 64  # 3 specials + 58 characters, rounded up; ids 61-63 are unused
_CHAR_TO_ID = {c: i + len(_SPECIALS) for i, c in enumerate(CHARS)}
assert len(_SPECIALS) + len(CHARS) <= VOCAB_SIZE


@runtime_checkable
class Tokenizer(Protocol):
    """What every task takes from a tokenizer.

    `encode(text)` gives the text's ids with no special token added; `decode(ids)` the text
    before the first of `eos_ids` (special tokens dropped) and whether one was found. The sampler
    stops at `eos_ids` and pads with `pad_id` (a model config takes both from its tokenizer:
    `check_tokenizer`); `bos_id` starts a plain prompt (None: the tokenizer has no BOS);
    completions end in `eos_id` (= `eos_ids[0]`); `fingerprint()` names the tokenizer in SFT
    cache keys ("" for the character tokenizer, whose keys never named it).
    """

    vocab_size: int
    pad_id: int
    bos_id: int | None
    eos_id: int
    eos_ids: tuple[int, ...]

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids) -> tuple[str, bool]: ...

    def fingerprint(self) -> str: ...


def encode(text: str) -> list[int]:
    """Character ids of `text`; raises ValueError naming the first character outside `CHARS`."""
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


class CharTokenizer:
    """The toy tasks' characters (`CHARS`) as ids 3.. after PAD/BOS/EOS (0, 1, 2)."""

    vocab_size, pad_id, bos_id, eos_id, eos_ids = VOCAB_SIZE, PAD, BOS, EOS, (EOS,)

    def fingerprint(self) -> str:
        """ "" : SFT-base cache keys made with the character tokenizer do not name it."""
        return ""

    def encode(self, text: str) -> list[int]:
        return encode(text)

    def decode(self, ids) -> tuple[str, bool]:
        return decode(ids)


CHAR = CharTokenizer()


class ByteTokenizer:
    """UTF-8 bytes as ids 3..258 after PAD/BOS/EOS (0, 1, 2): encodes any text."""

    pad_id, bos_id, eos_id, eos_ids = PAD, BOS, EOS, (EOS,)
    vocab_size = 264  # 3 specials + 256 bytes, rounded up to a multiple of 8

    def fingerprint(self) -> str:
        return "bytes"

    def encode(self, text: str) -> list[int]:
        return [b + 3 for b in text.encode("utf-8")]

    def decode(self, ids) -> tuple[str, bool]:
        """Text before the first EOS (PAD/BOS dropped, bad bytes replaced), and whether it ended."""
        out, finished = bytearray(), False
        for i in np.asarray(ids).tolist():
            if i == self.eos_id:
                finished = True
                break
            if 3 <= i < 259:
                out.append(i - 3)
        return out.decode("utf-8", errors="replace"), finished


class Template(Protocol):
    """A problem's text -> the prompt's text; `add_bos`: the tokenizer's BOS goes first."""

    add_bos: bool

    def render(self, text: str) -> str: ...


@dataclasses.dataclass(frozen=True)
class PlainTemplate:
    """`prefix + text + suffix`, the tokenizer's BOS put first (no chat markup)."""

    prefix: str = ""
    suffix: str = ""
    add_bos: ClassVar[bool] = True

    def render(self, text: str) -> str:
        return f"{self.prefix}{text}{self.suffix}"


PLAIN = PlainTemplate()  # the toy tasks' prompts: BOS and the problem's text as it is


@dataclasses.dataclass(frozen=True)
class ChatTemplate:
    """The text as one user turn of the tokenizer's chat template, with the assistant's turn
    opened (`apply_chat_template(..., add_generation_prompt=True)`); its text holds its own
    special tokens (a BOS too where the template writes one), so no BOS is added."""

    hf: object  # an HFTokenizer with a chat_template
    add_bos: ClassVar[bool] = False

    def render(self, text: str) -> str:
        messages = [{"role": "user", "content": text}]
        return self.hf.apply_chat_template(messages, add_generation_prompt=True)


def encode_prompts(
    texts: list[str], length: int, tok: Tokenizer = CHAR, template: Template = PLAIN
) -> tuple[np.ndarray, np.ndarray]:
    """Left-padded `[N, length]` int32 prompt ids and their 0/1 mask.

    Row i is `[BOS] + tok.encode(template.render(texts[i]))`, the BOS only where
    `template.add_bos` and the tokenizer has one; padded with `tok.pad_id`. A prompt longer than
    `length` is refused, naming its row.
    """
    tokens = np.full((len(texts), length), tok.pad_id, np.int32)
    mask = np.zeros((len(texts), length), np.int32)
    bos = [tok.bos_id] if template.add_bos and tok.bos_id is not None else []
    for row, text in enumerate(texts):
        ids = [*bos, *tok.encode(template.render(text))]
        if len(ids) > length:
            raise ValueError(
                f"prompt {row} ({text[:40]!r}) needs {len(ids)} tokens > prompt length {length}; "
                "allowed: a longer prompt length or a shorter prompt"
            )
        tokens[row, length - len(ids) :] = ids
        mask[row, length - len(ids) :] = 1
    return tokens, mask


def encode_completions(
    texts: list[str], length: int, tok: Tokenizer = CHAR, *, truncate: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded `[N, length]` int32 ids (`tok.encode(text)` + EOS) and their 0/1 mask.

    A completion longer than `length` is refused, naming its row, or with `truncate` cut to its
    first `length` ids (losing its EOS).
    """
    tokens = np.full((len(texts), length), tok.pad_id, np.int32)
    mask = np.zeros((len(texts), length), np.int32)
    for row, text in enumerate(texts):
        ids = [*tok.encode(text), tok.eos_id]
        if truncate:
            ids = ids[:length]
        elif len(ids) > length:
            raise ValueError(
                f"completion {row} ({text[:40]!r}) needs {len(ids)} tokens > completion length "
                f"{length}; allowed: a longer completion length or truncate=True"
            )
        tokens[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    return tokens, mask


def check_tokenizer(tok: Tokenizer, model=None) -> None:
    """Refuses a tokenizer the sampler cannot end: its stop ids must start with `eos_id` and its
    ids fit the vocabulary; with `model` (a `TransformerConfig`), the model's `eos_ids` /
    `pad_id` must be the tokenizer's (the sampler stops and pads with them) and its vocabulary
    cover the tokenizer's."""
    ids = {"pad_id": tok.pad_id, "bos_id": tok.bos_id, "eos_id": tok.eos_id}
    if not tok.eos_ids or tok.eos_id != tok.eos_ids[0]:
        raise ValueError(f"tokenizer eos_ids={tok.eos_ids} must start with eos_id={tok.eos_id}")
    for name, i in (*ids.items(), *(("eos_ids", i) for i in tok.eos_ids)):
        if i is not None and not 0 <= i < tok.vocab_size:
            raise ValueError(
                f"tokenizer {name}={i} is outside its vocabulary [0, {tok.vocab_size})"
            )
    if model is None:
        return
    if tuple(model.eos_ids) != tuple(tok.eos_ids) or model.pad_id != tok.pad_id:
        raise ValueError(
            f"model eos_ids={model.eos_ids}, pad_id={model.pad_id}; the sampler needs the "
            f"tokenizer's eos_ids={tok.eos_ids}, pad_id={tok.pad_id}"
        )
    if tok.vocab_size > model.vocab_size:
        raise ValueError(
            f"tokenizer vocab_size={tok.vocab_size} > the model's vocab_size={model.vocab_size}; "
            "allowed: a tokenizer whose ids the model's embedding covers"
        )
