"""Math problems as device tables, and their reward: the checker behind `jax.pure_callback`.

Prompts are `template.render(question)` encoded by `tokenizer`, left-padded to a fixed `[N, P]`
(the layout of `rljax.lm.model.tokenizer`); a template with `add_bos` (the plain one) puts the
tokenizer's BOS first, a chat template's text already holds its special tokens. A tokenizer has
`encode(text) -> ids` (no special tokens added), `decode(ids) -> (text before a stop token,
finished)`, `vocab_size`, `pad_id`, `bos_id` (None: no BOS), `eos_id` and `eos_ids`: the byte
tokenizer here for the tiny decoder, `PretrainedTokenizer` for a checkpoint's tokenizer.json. The
sampler stops at the model config's `eos_ids` and pads with its `pad_id`, so those come from the
tokenizer (`check_tokenizer`).

Reward of a completion (`math_scorer`), as `rljax.lm.tasks.reward`:

  r = 1[finished] · (1[answer ≡ reference] + format_weight · 1[an answer was extracted])

with the answer extracted by `rljax.lm.tasks.math_answers` and ≡ judged by
`rljax.lm.tasks.math_checker`.
`device_reward.score(kind="host", ...)` calls the scorer with `vmap_method="expand_dims"`, so a
vmapped population sends all its completions in one call and every answer keeps its own
deadline.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, device_reward, math_answers
from rljax.lm.tasks.math_checker import Checker


class ByteTokenizer:
    """UTF-8 bytes as tokens 3..258 after PAD/BOS/EOS (0, 1, 2): encodes any text."""

    pad_id, bos_id, eos_id = tokenizer.PAD, tokenizer.BOS, tokenizer.EOS
    eos_ids = (tokenizer.EOS,)
    vocab_size = 264  # 3 specials + 256 bytes, rounded up to a multiple of 8

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


@dataclasses.dataclass(frozen=True)
class PretrainedTokenizer:
    """A checkpoint's `rljax.lm.model.hf.tokenizer.HFTokenizer` in the interface above: `encode`
    adds
    no special tokens, `bos_id` is the id of tokenizer_config.json's bos_token (None without)."""

    hf: object  # HFTokenizer

    @property
    def pad_id(self) -> int:
        return self.hf.pad_id

    @property
    def eos_id(self) -> int:
        return self.hf.eos_id

    @property
    def eos_ids(self) -> tuple[int, ...]:
        return self.hf.eos_ids

    @property
    def bos_id(self) -> int | None:
        token = self.hf.bos_token
        return None if token is None else self.hf.tokenizer.token_to_id(token)

    @property
    def vocab_size(self) -> int:
        return self.hf.vocab_size

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False)

    def decode(self, ids) -> tuple[str, bool]:
        """Text before the first of `eos_ids` (special tokens dropped), and whether it ended."""
        return self.hf.decode(ids)


@dataclasses.dataclass(frozen=True)
class PlainTemplate:
    """`prefix + question + suffix`: the prompt without a chat template (BOS put first)."""

    prefix: str = ""
    suffix: str = "\nAnswer: "
    add_bos: ClassVar[bool] = True

    def render(self, question: str) -> str:
        return f"{self.prefix}{question}{self.suffix}"


@dataclasses.dataclass(frozen=True)
class ChatTemplate:
    """The question as one user turn of the tokenizer's chat template, with the assistant's turn
    opened (`apply_chat_template(..., add_generation_prompt=True)`); its text holds its own
    special tokens (a BOS too where the template writes one), so no BOS is added."""

    hf: object  # HFTokenizer with a chat_template
    add_bos: ClassVar[bool] = False

    def render(self, question: str) -> str:
        messages = [{"role": "user", "content": question}]
        return self.hf.apply_chat_template(messages, add_generation_prompt=True)


def encode_prompts(problems: list[Problem], tok, template, length: int):
    """`[N, length]` int32 prompt tokens (BOS if `template.add_bos` and the tokenizer has one,
    then the rendered question; left-padded) and 0/1 mask."""
    tokens = np.full((len(problems), length), tok.pad_id, np.int32)
    mask = np.zeros((len(problems), length), np.int32)
    bos = [tok.bos_id] if template.add_bos and tok.bos_id is not None else []
    for row, problem in enumerate(problems):
        ids = [*bos, *tok.encode(template.render(problem.prompt))]
        if len(ids) > length:
            raise ValueError(
                f"problem {row} needs {len(ids)} prompt tokens > prompt_length={length}; "
                "allowed: raise prompt_length or drop long problems"
            )
        tokens[row, length - len(ids) :] = ids
        mask[row, length - len(ids) :] = 1
    return tokens, mask


def encode_sft(problems: list[Problem], tok, template, prompt_length: int, length: int):
    """Prompts and reference completions (`"#### <answer>"` + EOS, right-padded to `length`)."""
    prompt_tokens, prompt_mask = encode_prompts(problems, tok, template, prompt_length)
    tokens = np.full((len(problems), length), tok.pad_id, np.int32)
    mask = np.zeros((len(problems), length), np.int32)
    for row, problem in enumerate(problems):
        ids = [*tok.encode(f"#### {problem.answer}"), tok.eos_id][:length]
        tokens[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    return prompt_tokens, prompt_mask, tokens, mask


def check_tokenizer(tok, model=None) -> None:
    """Refuses a tokenizer the sampler cannot end: its stop ids must hold `eos_id` and its ids fit
    the vocabulary; with `model` (a `TransformerConfig`), the model's `eos_ids` / `pad_id` must be
    the tokenizer's (the sampler stops and pads with them) and its vocabulary cover the
    tokenizer's."""
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


def make_table(problems: list[Problem], tok, template, prompt_length: int):
    """A `device_reward.ProblemTable` of math problems (answers stay on the host: row index)."""
    check_tokenizer(tok)
    if not problems:
        raise ValueError("an empty problem list cannot be a table")
    prompt_tokens, prompt_mask = encode_prompts(problems, tok, template, prompt_length)
    n = len(problems)
    return device_reward.ProblemTable(
        prompt_tokens=prompt_tokens,
        prompt_mask=prompt_mask,
        target_int=np.zeros(n, np.int32),
        target_tokens=np.zeros((n, 1), np.int32),
        target_len=np.zeros(n, np.int32),
        level=np.asarray([p.level for p in problems], np.int32),
        index=np.arange(n, dtype=np.int32),
    )


def judge(checker: Checker, references: list[str], texts: list[str], modes):
    """`(correct, well_formed)` lists for completion texts against extracted references."""
    answers = [math_answers.extract(text, modes) for text in texts]
    correct = checker.check(list(zip(references, answers, strict=True)))
    return correct, [a is not None for a in answers]


def math_scorer(
    checker: Checker,
    problems: list[Problem],
    tok,
    *,
    format_weight: float,
    modes=math_answers.MODES,
):
    """A NumPy `(tokens [..., A], problem [...]) -> (reward, correct)` for `jax.pure_callback`.

    Any leading dimensions (it runs under `vmap` with `vmap_method="expand_dims"`)."""
    modes = math_answers.check_modes(modes)
    if not format_weight >= 0:
        raise ValueError(f"format_weight={format_weight!r} is invalid; allowed: >= 0")
    references = [p.answer for p in problems]

    def score(tokens, problem):
        tokens, problem = np.asarray(tokens), np.asarray(problem)
        flat_tokens = tokens.reshape(-1, tokens.shape[-1])
        flat_problem = np.broadcast_to(problem, tokens.shape[:-1]).reshape(-1)
        decoded = [tok.decode(row) for row in flat_tokens]
        refs = [references[int(i)] for i in flat_problem]
        correct, well_formed = judge(checker, refs, [text for text, _ in decoded], modes)
        finished = np.asarray([done for _, done in decoded], bool)
        correct = np.asarray(correct, bool) & finished
        reward = finished * (correct + format_weight * np.asarray(well_formed, np.float32))
        shape = tokens.shape[:-1]
        return reward.astype(np.float32).reshape(shape), correct.reshape(shape)

    return score
