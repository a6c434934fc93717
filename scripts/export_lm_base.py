"""Exports the SFT base of an LM config as a Hugging Face folder (config.json + safetensors).

    python scripts/export_lm_base.py --config=configs/grpo.py:arithmetic,fast \
        --config.model.family=llama --out=runs/hf/arithmetic_llama
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic,fast \
        --config.model.path=runs/hf/arithmetic_llama

With `--config.model.tokenizer=DIR` (scripts/train_bpe_tokenizer.py) the base is trained on that
tokenizer's ids and its tokenizer files are copied into the folder, which then serves as both
`--config.model.path` and `--config.model.tokenizer`.

Trains the base (or reads it from --config.base_cache_dir) exactly as experiments/train_lm.py
does, then writes it with `rljax.lm.model.hf.checkpoint.save`; transformers' `from_pretrained`
loads the
folder, and `--config.model.path` reloads it in place of the SFT base. The families llama, qwen2
and qwen3 export; the tiny family (fused qkv, GELU MLP) has no Hugging Face layout.
"""

import importlib.util
import os
import shutil
import sys

# The entry point's flags, validation and XLA set-up (it sets XLA_FLAGS before jax loads).
_SPEC = importlib.util.spec_from_file_location(
    "train_lm", os.path.join(os.path.dirname(__file__), "..", "experiments", "train_lm.py")
)
train_lm = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(train_lm)

from rljax import cli  # noqa: E402
from rljax.agents import sft  # noqa: E402
from rljax.lm.model import pretrained  # noqa: E402
from rljax.lm.model.hf import checkpoint  # noqa: E402
from rljax.train import lm_base, lm_experiment  # noqa: E402
from rljax.train.lm_experiment import TASKS, completion_length, prompt_length  # noqa: E402


def main(argv: list[str]) -> int:
    out = [a.split("=", 1)[1] for a in argv[1:] if a.startswith("--out=")]
    if len(out) != 1:
        raise cli.ConfigError("--out=DIR is required (the folder to write)")
    run = train_lm.parse([a for a in argv if not a.startswith("--out=")])
    task = TASKS[run.task]
    model = pretrained.model_config(
        dict(run.model), max_len=prompt_length(task) + completion_length(task)
    )
    sft_problems, _, _ = lm_experiment.problems(run)
    tok = pretrained.tokenizer(dict(run.model))
    params, info = lm_base.train_or_load(
        model, sft.SFTConfig(**dict(run.sft)), task, sft_problems, run.base_cache_dir, tok=tok
    )
    checkpoint.save(out[0], params, model)
    if dict(run.model).get("tokenizer"):  # the folder carries the tokenizer it was trained with
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            source = os.path.join(dict(run.model)["tokenizer"], name)
            if os.path.exists(source) and not os.path.exists(os.path.join(out[0], name)):
                shutil.copy(source, os.path.join(out[0], name))
    print(f"wrote {out[0]} ({model.family}, base {'cached' if info['cached'] else 'trained'})")
    return 0


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv))
