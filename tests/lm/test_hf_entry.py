"""`--config.model.family|path|tokenizer|dtype|remat` on experiments/train_lm.py; export."""

import os
import subprocess
import sys

import pytest

from rljax import cli
from rljax.lm.model import pretrained

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LM = "--config=configs/grpo.py:arithmetic,tiny"
FIXTURES = os.path.join(ROOT, "tests", "lm", "fixtures", "hf")


@pytest.mark.parametrize(
    "flag,message",
    [
        ("--config.model.family=gpt2", "family='gpt2'; allowed: ('tiny', 'llama', 'qwen2'"),
        ("--config.model.dtype=fp8", "dtype='fp8'; allowed: ('float32', 'bfloat16')"),
        ("--config.model.path=/nonexistent", "model.path='/nonexistent' has no config.json"),
        (
            f"--config.model.path={FIXTURES}/qwen2",
            "vocab_size=256, eos_token_id=(1,); the toy tasks' character tokenizer needs",
        ),
    ],
)
def test_model_flags_are_checked_before_anything_runs(train_lm, flag, message, tmp_path):
    with pytest.raises(cli.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        train_lm.parse(["train_lm.py", LM, flag, f"--workdir={tmp_path}/w"])


def test_tokenizer_field_is_checked_before_anything_runs(train_lm, tmp_path):
    argv = ["train_lm.py", LM, f"--workdir={tmp_path}/w"]
    with pytest.raises(cli.ConfigError, match="model.tokenizer='/nonexistent' has no tokenizer"):
        train_lm.parse([*argv, "--config.model.tokenizer=/nonexistent"])
    bpe = f"--config.model.tokenizer={FIXTURES}/tokenizer"  # vocab 400, EOS 3
    with pytest.raises(cli.ConfigError, match="rl.reward='majority' parses answers on device"):
        train_lm.parse([*argv, bpe, "--config.rl.reward=majority"])
    with pytest.raises(cli.ConfigError, match="needs vocab_size >= 400 and eos_token_id 3"):
        train_lm.parse([*argv, f"--config.model.path={FIXTURES}/qwen2", bpe])  # vocab 256
    run = train_lm.parse([*argv, bpe])  # a model built for it takes its vocabulary and ids
    assert dict(run.model)["tokenizer"].endswith("tokenizer")


def test_remat_and_logits_chunk_reach_the_model_and_only_then_the_fingerprint(train_lm, tmp_path):
    argv = ["train_lm.py", LM, f"--workdir={tmp_path}/w"]
    off = dict(train_lm.parse(argv).model)
    assert "remat" not in off and "logits_chunk" not in off  # fingerprints as before
    assert not pretrained.model_config(off).remat
    on = ["--config.model.remat=True", "--config.model.logits_chunk=8"]
    on = dict(train_lm.parse([*argv, *on]).model)
    assert on["remat"] is True and on["logits_chunk"] == 8
    assert pretrained.model_config(on).remat and pretrained.model_config(on).logits_chunk == 8


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_export_then_train_from_model_path(tmp_path):
    """An rljax-trained llama-family arithmetic base, exported in the Hugging Face layout, loads
    through --config.model.path and trains (2 GRPO steps) with the same command line."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    common = [LM, "--config.sft.steps=20", f"--config.base_cache_dir={tmp_path}/base"]
    out = tmp_path / "hf"
    export = [sys.executable, "scripts/export_lm_base.py", *common, "--config.model.family=llama"]
    done = subprocess.run([*export, f"--out={out}"], cwd=ROOT, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert (out / "config.json").exists() and (out / "model.safetensors").exists()
    run = [sys.executable, "experiments/train_lm.py", *common, f"--config.model.path={out}"]
    run += ["--config.run.steps=2", "--config.progress=False", f"--workdir={tmp_path}/run"]
    done = subprocess.run(run, cwd=ROOT, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "cached=True, " in done.stdout.decode() and str(out) in done.stdout.decode()
    assert (tmp_path / "run" / "results.md").exists()
