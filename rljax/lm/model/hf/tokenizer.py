"""Hugging Face tokenizers (`tokenizer.json`) and chat templates, in rljax's id layout.

`HFTokenizer` is a `rljax.lm.model.tokenizer.Tokenizer` for a pretrained model: `encode` adds no
special tokens (a plain prompt's BOS is `bos_id`, the tokenizer_config's bos_token, put first by
`tokenizer.encode_prompts`), and `decode` reads up to the first stop token. Chat templates are
rendered with jinja2 in a sandbox configured the way transformers renders them (trim_blocks,
lstrip_blocks, loop controls, `raise_exception`, a `tojson` that keeps non-ASCII text), so the
prompt text equals `apply_chat_template`'s (tests/lm). `train_bpe` trains a small byte-level BPE
tokenizer.

Every error of `from_dir` names its file: a tokenizer.json that does not read, a JSON file that
is not JSON, a special token (bos / eos / pad) that is not in the vocabulary or a stop id outside
it, a chat template that does not compile. A template that raises while rendering (its own
`raise_exception`, the sandbox refusing an attribute, a type error) is a ValueError naming the
file that holds it.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os

import jinja2
import jinja2.ext
import jinja2.sandbox
import numpy as np
import tokenizers

from rljax import cli
from rljax.lm.model.hf import config as hf_config


def _raise(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _environment() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def _read_text(file: str) -> str:
    try:
        with open(file, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"{file} is not UTF-8 text (byte {e.start}: {e.reason})") from None


def _compile(template: str, where: str) -> jinja2.Template:
    """The chat template compiled in the sandbox; a syntax error names `where` and the line."""
    try:
        return _environment().from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as e:
        raise ValueError(
            f"the chat template in {where} does not compile (line {e.lineno}: {e.message})"
        ) from None


def _token_text(value) -> str | None:
    """A special token's text from tokenizer_config.json (a string or an AddedToken dict)."""
    return value.get("content") if isinstance(value, dict) else value


@dataclasses.dataclass(frozen=True)
class HFTokenizer:
    """A `tokenizers.Tokenizer` plus the special tokens and chat template of its model."""

    tokenizer: tokenizers.Tokenizer
    eos_ids: tuple[int, ...]  # ids that end a completion (EOS and the template's end-of-turn)
    pad_id: int
    bos_token: str | None = None
    eos_token: str | None = None
    chat_template: str | None = None
    chat_template_file: str | None = None  # where chat_template comes from (named in errors)

    @property
    def eos_id(self) -> int:
        return self.eos_ids[0]

    @property
    def bos_id(self) -> int | None:
        """The id of tokenizer_config.json's bos_token (None without one)."""
        return None if self.bos_token is None else self.tokenizer.token_to_id(self.bos_token)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    @classmethod
    def from_dir(cls, path: str, *, eos_ids: tuple[int, ...] = ()) -> HFTokenizer:
        """Reads `path/tokenizer.json` and `tokenizer_config.json` (special tokens, template).

        `eos_ids` overrides the stop tokens (default: the config's eos_token, then the
        eos_token_id entries of config.json and generation_config.json where present)."""
        file = os.path.join(path, "tokenizer.json")
        if not os.path.exists(file):
            raise FileNotFoundError(f"tokenizer path {path!r} has no tokenizer.json")
        try:
            tok = tokenizers.Tokenizer.from_file(file)
        except Exception as e:  # tokenizers raises a bare Exception naming no file
            raise ValueError(
                f"{file} does not read as a tokenizer ({cli.one_line(e)}); a download cut short or "
                "a damaged file: fetch it again"
            ) from None
        conf_file = os.path.join(path, "tokenizer_config.json")
        conf = hf_config.read_json(conf_file) if os.path.exists(conf_file) else {}
        template, template_file = conf.get("chat_template"), f"{conf_file} (chat_template)"
        if template is not None and not isinstance(template, str):
            raise ValueError(
                f"{template_file} is a JSON {type(template).__name__}; allowed: the template's "
                "text (a string)"
            )
        jinja_file = os.path.join(path, "chat_template.jinja")
        if template is None and os.path.exists(jinja_file):
            template, template_file = _read_text(jinja_file), jinja_file
        if template is not None:
            _compile(template, template_file)
        vocab = tok.get_vocab_size()
        specials = {}
        for field in ("bos_token", "eos_token", "pad_token"):
            text = _token_text(conf.get(field))
            if text is not None and tok.token_to_id(text) is None:
                raise ValueError(
                    f"{conf_file} {field}={text!r} is not in the vocabulary of {file}; allowed: "
                    "one of its tokens, or null"
                )
            specials[field] = text
        eos, pad = specials["eos_token"], specials["pad_token"]
        ids = list(eos_ids)
        if not ids and eos is not None:
            ids.append(tok.token_to_id(eos))
        for model_conf in ("config.json", "generation_config.json"):
            model_file = os.path.join(path, model_conf)
            if not eos_ids and os.path.exists(model_file):
                extra = hf_config.read_json(model_file).get("eos_token_id")
                ids += hf_config.check_ids(extra, "eos_token_id", vocab, model_file)
        ids = list(dict.fromkeys(ids))
        if not ids:
            raise ValueError(f"tokenizer path {path!r}: no eos_token; pass eos_ids")
        pad_id = tok.token_to_id(pad) if pad is not None else ids[0]
        return cls(
            tok, tuple(ids), pad_id, specials["bos_token"], eos, template,
            template_file if template is not None else None,
        )  # fmt: skip

    def fingerprint(self) -> str:
        """A hash of the vocabulary, merges and stop/pad ids (names the SFT bases trained on it)."""
        blob = f"{self.tokenizer.to_str()}|{self.eos_ids}|{self.pad_id}"
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """The text's ids; `add_special_tokens` applies tokenizer.json's post-processor (what
        transformers' `encode` does by default)."""
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def apply_chat_template(self, messages: list[dict], *, add_generation_prompt: bool = True):
        """The prompt text of a conversation (`[{"role": ..., "content": ...}, ...]`)."""
        if self.chat_template is None:
            raise ValueError("this tokenizer has no chat_template (tokenizer_config.json)")
        where = self.chat_template_file or "the tokenizer"
        template = _compile(self.chat_template, where)
        try:
            return template.render(
                messages=messages,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token or "",
                eos_token=self.eos_token or "",
            )
        except Exception as e:  # the template's own code failed: say so, and where it lives
            raise ValueError(
                f"the chat template in {where} failed to render a conversation: "
                f"{type(e).__name__}: {cli.one_line(e)}"
            ) from None

    def decode(self, ids) -> tuple[str, bool]:
        """Text up to the first stop token (special tokens dropped), and whether one was found."""
        ids = np.asarray(ids).tolist()
        stops = [k for k, i in enumerate(ids) if i in self.eos_ids]
        finished = bool(stops)
        ids = ids[: stops[0]] if stops else ids
        return self.tokenizer.decode(ids, skip_special_tokens=True), finished


def train_bpe(
    texts: list[str], vocab_size: int, special_tokens: tuple[str, ...], *, min_frequency: int = 1
) -> tokenizers.Tokenizer:
    """A byte-level BPE tokenizer trained on `texts` (special tokens get the first ids)."""
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    return tok
