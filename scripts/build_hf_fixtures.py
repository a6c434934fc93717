"""Builds the Hugging Face parity fixtures under tests/lm/fixtures/hf (needs the `hf` extra).

    .venvs/hf/bin/python scripts/build_hf_fixtures.py [--out=tests/lm/fixtures/hf]

About 10 s on one CPU core. For each family (llama with llama3 RoPE scaling and untied head,
qwen2 with q/k/v biases and tied embeddings, qwen3 with q/k norm and head_dim != d_model / heads)
a random tiny model in the Hugging Face layout (config.json, model.safetensors) and
reference.npz: a left-padded batch, its float32 logits from transformers (eager attention,
position ids counting real tokens only) and 32 greedy tokens from `generate`. A byte-level BPE
tokenizer with a chat template (tokenizer/) and tokenizer_reference.json: transformers' ids of 200
strings (ASCII, digits, unicode) and its `apply_chat_template` text of a few conversations.
tests/lm/test_hf_parity.py compares rljax against these, and rebuilds them live where
transformers is importable.
"""

import argparse
import json
import os
import random
import sys

import numpy as np
import tokenizers
import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from rljax.lm.model.hf.tokenizer import train_bpe  # noqa: E402

SEED = 0
VOCAB = 256
PROMPT_LEN = 12
NEW_TOKENS = 32
EOS, PAD = 1, 0
# A ChatML-style template exercising what real ones use: a default system turn, loops,
# conditionals, whitespace control, raise_exception and the generation prompt.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if messages[0]['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role ' + message['role']) }}"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] | trim }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ("<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|bos|>")
CONVERSATIONS = [
    [{"role": "user", "content": "What is 12+30?"}],
    [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": "  3*4-5=  "},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": "Und 9·9? — ünïcödé 日本語 🙂"},
    ],
]


def _common(family: str) -> dict:
    heads, kv = 4, 2
    return dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        max_position_embeddings=64,
        rms_norm_eps=1e-6,
        rope_theta=10_000.0,
        initializer_range=0.2,  # logits spread out, so greedy argmaxes are not near-ties
        eos_token_id=EOS,
        pad_token_id=PAD,
        bos_token_id=None,
    )


def _config(family: str):
    kw = _common(family)
    if family == "llama":
        scaling = dict(
            rope_type="llama3",
            factor=8.0,
            low_freq_factor=1.0,
            high_freq_factor=4.0,
            original_max_position_embeddings=16,
        )
        kw.update(rope_scaling=scaling, tie_word_embeddings=False, head_dim=8)
        return transformers.LlamaConfig(**kw)
    if family == "qwen2":
        return transformers.Qwen2Config(**kw, tie_word_embeddings=True)
    return transformers.Qwen3Config(**kw, head_dim=16, tie_word_embeddings=False)


def _batch(rng: np.random.Generator):
    lengths = (PROMPT_LEN, 7, 3)
    ids = np.full((len(lengths), PROMPT_LEN), PAD, np.int64)
    mask = np.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, PROMPT_LEN - n :] = rng.integers(5, VOCAB, n)
        mask[row, PROMPT_LEN - n :] = 1
    return ids, mask


def build_model(family: str, out: str) -> None:
    torch.manual_seed(SEED)
    model = transformers.AutoModelForCausalLM.from_config(
        _config(family), attn_implementation="eager", dtype=torch.float32
    ).eval()
    folder = os.path.join(out, family)
    model.save_pretrained(folder, safe_serialization=True)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(folder, extra)):
            os.remove(os.path.join(folder, extra))
    ids, mask = _batch(np.random.default_rng(SEED))
    positions = np.maximum(np.cumsum(mask, -1) - 1, 0)
    with torch.no_grad():
        logits = model(
            input_ids=torch.tensor(ids),
            attention_mask=torch.tensor(mask),
            position_ids=torch.tensor(positions),
        ).logits.numpy()
        greedy = model.generate(
            input_ids=torch.tensor(ids),
            attention_mask=torch.tensor(mask),
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            eos_token_id=EOS,
            pad_token_id=PAD,
        )[:, PROMPT_LEN:].numpy()
    greedy = np.pad(greedy, ((0, 0), (0, NEW_TOKENS - greedy.shape[1])), constant_values=PAD)
    np.savez_compressed(
        os.path.join(folder, "reference.npz"),
        tokens=ids.astype(np.int32),
        mask=mask.astype(np.int32),
        logits=logits.astype(np.float32),
        greedy=greedy.astype(np.int32),
    )


def _strings(n: int) -> list[str]:
    rng = random.Random(SEED)
    pieces = [
        "hello",
        " world",
        "The",
        " quick",
        "12",
        "+",
        "345",
        "=",
        " ",
        "  ",
        "\n",
        "\t",
        "ünïcödé",
        "naïve",
        "日本語",
        "中文",
        "🙂",
        "👍🏽",
        "ß",
        "Ωμέγα",
        "Привет",
        "ـعربي",
        "x*y",
        "(1+2)*3",
        "don't",
        "I'm",
        "e=mc²",
        "<|im_end|>",
        "<|im_start|>",
        "$",
        "€100",
    ]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 8))) for _ in range(n)]


def build_tokenizer(out: str) -> None:
    corpus = _strings(2000) + [json.dumps(c, ensure_ascii=False) for c in CONVERSATIONS]
    tok = train_bpe(corpus, 400, SPECIALS)
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="<|bos|> $A", special_tokens=[("<|bos|>", tok.token_to_id("<|bos|>"))]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    folder = os.path.join(out, "tokenizer")
    fast.save_pretrained(folder)
    loaded = transformers.AutoTokenizer.from_pretrained(folder)
    strings = _strings(200)
    reference = {
        "strings": strings,
        "ids": [loaded(s)["input_ids"] for s in strings],
        "ids_no_specials": [loaded(s, add_special_tokens=False)["input_ids"] for s in strings],
        "conversations": CONVERSATIONS,
        "chat_text": [
            loaded.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
            for c in CONVERSATIONS
        ],
        "eos_id": loaded.eos_token_id,
        "pad_id": loaded.pad_token_id,
    }
    with open(os.path.join(out, "tokenizer_reference.json"), "w") as f:
        json.dump(reference, f, ensure_ascii=False, indent=0)


def build(out: str) -> None:
    torch.set_num_threads(1)
    for family in ("llama", "qwen2", "qwen3"):
        build_model(family, out)
    build_tokenizer(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/lm/fixtures/hf")
    build(parser.parse_args().out)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}: wrote the fixtures")
