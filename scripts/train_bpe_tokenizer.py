"""Trains a small byte-level BPE tokenizer on a toy task's texts and writes a tokenizer folder.

    python scripts/train_bpe_tokenizer.py --task=arithmetic --vocab_size=512 \
        --out=runs/hf/arithmetic_bpe

The corpus is the task's training problems (prompt and answer); the folder holds tokenizer.json
and tokenizer_config.json (special tokens and a ChatML chat template) that both
`rljax.lm.model.hf.tokenizer.HFTokenizer.from_dir` and transformers' `AutoTokenizer` read. Prints
the
tokens per prompt and per answer against the character tokenizer's.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from rljax.lm.model.hf.tokenizer import HFTokenizer, train_bpe  # noqa: E402
from rljax.lm.tasks import builders  # noqa: E402
from rljax.train.lm_experiment import TASKS  # noqa: E402

SPECIALS = ("<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="arithmetic", choices=sorted(TASKS))
    parser.add_argument("--vocab_size", type=int, default=512)
    parser.add_argument("--problems", type=int, default=20_000)
    parser.add_argument("--data_dir", default="runs/lm_data")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    problems = builders.load_problems(args.task, "train", args.data_dir)[: args.problems]
    texts = [p.prompt for p in problems] + [p.answer for p in problems]
    tok = train_bpe(texts, args.vocab_size, SPECIALS)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    conf = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|pad|>",
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(conf, f, indent=2)
    loaded = HFTokenizer.from_dir(args.out)
    for what, items in (("prompt", texts[: len(problems)]), ("answer", texts[len(problems) :])):
        bpe = np.mean([len(loaded.encode(t)) for t in items])
        chars = np.mean([len(t) for t in items])
        print(f"{what}: {bpe:.1f} BPE tokens vs {chars:.1f} characters on average")
    print(f"wrote {args.out} (vocab {loaded.vocab_size})")


if __name__ == "__main__":
    main()
