"""Bad input to experiments/train_lm.py: one line naming the flag/field and what is allowed,
found by the script's own ``parse`` before any data is built or anything compiles."""

import os
import subprocess
import sys

import pytest

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LM = "--config=configs/grpo.py:arithmetic,tiny"


CASES = {
    "unknown top key": ([LM, "--config.foo=1"], "unknown key 'foo' at the top level; valid: "),
    "unknown rl key": ([LM, "--config.rl.lr=1"], "unknown key 'lr' at rl; valid: "),
    "unknown sweep key": ([LM, "--config.sweep.tau=1"], "unknown key 'tau' at sweep; valid: "),
    "unknown flag": ([LM, "--bogus=1"], "unknown flag --bogus; valid: --config"),
    "no config": ([], "--config is required"),
    "config flag": (["--config=configs/grpo.py:arithmetic,huge"], "'huge' is unknown"),
    "unknown task": ([LM, "--config.task=chess"], "task='chess' is unknown; valid: arithmetic"),
    "unknown preset": ([LM, "--config.preset=ppo9"], "preset='ppo9' is unknown; valid: grpo"),
    "unknown swept preset": ([LM, "--config.sweep.preset=grpo,x"], "preset='x' is unknown"),
    "unknown advantage": ([LM, "--config.rl.advantage=mean"], "rl.advantage='mean' is unknown"),
    "unknown divergence": ([LM, "--config.rl.divergence=tv"], "rl.divergence='tv' is unknown"),
    "swept loss name": ([LM, "--config.sweep.policy_loss=ppo_clip,dpo"], "'dpo' is unknown"),
    "negative clip": ([LM, "--config.rl.eps_low=-0.2"], "rl.eps_low=-0.2 is invalid"),
    "nan clip": ([LM, "--config.rl.eps_high=nan"], "rl.eps_high=nan is invalid"),
    "learning rate": ([LM, "--config.rl.learning_rate=5.0"], "rl.learning_rate=5.0"),
    "kl coef alone": ([LM, "--config.preset=dapo", "--config.rl.kl_coef=0.1"], "would be ignored"),
    "divergence in reward": (
        [LM, "--config.preset=dph_js", "--config.rl.placement=reward"],
        "can only be placed in the loss",
    ),
    "epochs": ([LM, "--config.rl.num_epochs=0"], "rl.num_epochs=0 is invalid"),
    "sweep text": ([LM, "--config.sweep.learning_rate=1e-4,fast"], "not a comma-separated list"),
    "seeds": ([LM, "--config.num_seeds=0"], "num_seeds=0 is invalid"),
    "group size": ([LM, "--config.run.group_size=1"], "group_size=1 is invalid"),
    "chunking": ([LM, "--config.run.steps=3"], "chunk_steps=2 does not divide steps=3"),
    "minibatches": ([LM, "--config.rl.num_minibatches=3"], "prompts_per_step=8 is not divisible"),
    "level": ([LM, "--config.max_level=7"], "max_level=7 is invalid; allowed: 0..3"),
    "devices": ([LM, "--config.num_seeds=3", "--cpu_devices=2"], "does not divide the population"),
    "int as text": ([LM, "--config.num_seeds=abc"], "--config.num_seeds=abc"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_before_anything_runs(train_lm, case, tmp_path):
    argv, expected = CASES[case]
    argv = [*argv, f"--workdir={tmp_path}/run"]
    with pytest.raises(cli.ConfigError) as info:
        train_lm.parse(["train_lm.py", *argv])
    message = str(info.value)
    assert "\n" not in message and expected in message, message
    assert not (tmp_path / "run").exists()


def test_workdir_that_is_a_file_names_the_flag(train_lm, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(cli.ConfigError, match="--workdir"):
        train_lm.parse(["train_lm.py", LM, f"--workdir={tmp_path}/file"])


@pytest.mark.timeout(120)
def test_script_exits_2_with_one_line_and_no_traceback(tmp_path):
    out = subprocess.run(
        [sys.executable, "experiments/train_lm.py", LM, "--config.rl.eps_low=-1",
         f"--workdir={tmp_path}/run"],
        cwd=ROOT, capture_output=True, text=True, timeout=110,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: rl.eps_low=-1.0 is invalid; allowed: in [0, 1] (1 - eps_low is the lowest "
        "ratio kept)"
    ]
