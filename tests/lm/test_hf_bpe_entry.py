"""One command line, `--config.model.path=DIR --config.model.tokenizer=DIR`, on a Qwen-layout and a
Llama-layout checkpoint built here with a BPE tokenizer trained by scripts/train_bpe_tokenizer.py
(the field's errors: tests/lm/test_hf_entry.py)."""

import json
import os
import shutil

import jax
import pytest

from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.hf.tokenizer import HFTokenizer
from rljax.lm.tasks import TASKS
from rljax.lm.tasks.batches import completion_length, prompt_length

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LM = "--config=configs/grpo.py:arithmetic,tiny"
SHAPES = {  # small, and different where the families differ
    "qwen2": dict(n_kv_heads=2, tie_embeddings=True),
    "llama": dict(n_kv_heads=1, tie_embeddings=False, rope_scaling=("linear", 2.0)),
}


@pytest.fixture(scope="module")
def bpe_dir(load_entry, tmp_path_factory):
    script = load_entry("scripts/train_bpe_tokenizer.py")
    out = str(tmp_path_factory.mktemp("bpe"))
    cwd = os.getcwd()
    os.chdir(ROOT)  # the script reads the task's data from runs/lm_data
    try:
        script.main(["--task=arithmetic", "--vocab_size=300", "--problems=400", f"--out={out}"])
    finally:
        os.chdir(cwd)
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("family", sorted(SHAPES))
def test_same_command_line_on_qwen_and_llama_layouts(train_lm, bpe_dir, family, tmp_path):
    """A random checkpoint of the family, with the BPE tokenizer's vocabulary and ids, written
    with tokenizer.json beside it, trains 2 GRPO steps and is evaluated by the entry point."""
    tok = HFTokenizer.from_dir(bpe_dir)
    task = TASKS["arithmetic"]
    cfg = TransformerConfig(
        vocab_size=tok.vocab_size,
        d_model=32,
        n_layers=1,
        n_heads=4,
        d_ff=64,
        max_len=prompt_length(task) + completion_length(task),
        family=family,
        eos_ids=tok.eos_ids,
        pad_id=tok.pad_id,
        **SHAPES[family],
    )
    folder = tmp_path / family
    checkpoint.save(str(folder), init_params(cfg, jax.random.key(0)), cfg)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(bpe_dir, name), folder / name)
    with open(folder / "config.json") as f:
        assert json.load(f)["architectures"] == [
            f"{'Qwen2' if family == 'qwen2' else 'Llama'}ForCausalLM"
        ]
    argv = [
        "train_lm.py",
        LM,
        f"--config.model.path={folder}",
        f"--config.model.tokenizer={folder}",
    ]
    argv += ["--config.run.steps=2", "--config.run.prompts_per_step=2", "--config.run.group_size=2"]
    argv += ["--config.run.eval_problems=4", "--config.eval.num_problems=4"]
    argv += ["--config.eval.num_samples=2", "--config.progress=False", f"--workdir={tmp_path}/run"]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert train_lm.main(argv) == 0
    finally:
        os.chdir(cwd)
    with open(tmp_path / "run" / "results.json") as f:
        results = json.load(f)
    assert results["rl_steps"] == 2 and results["num_learners"] == 1
    assert len(results["learners"]) == 1 and results["base"]["num_problems"] == 4
