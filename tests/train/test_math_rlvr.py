"""Math RLVR end to end on a GSM8K-layout sample file written here: SFT, GRPO steps whose
rewards come from the math-verify checker inside the jitted step, and pass@k on held-out data."""

import json
import os

import pytest

from rljax.train import math_experiment


def write_sample(path, pairs):
    with open(path, "w") as f:
        for a, b in pairs:
            row = {
                "question": f"Tom has {a} apples and finds {b} more. How many now?",
                "answer": f"{a} + {b} = <<{a}+{b}={a + b}>>{a + b}\n#### {a + b}",
            }
            f.write(json.dumps(row) + "\n")
    return str(path)


def sample_files(tmp_path):
    pairs = [(a, b) for a in range(10) for b in range(10) if a + b < 10]
    test = pairs[::6]
    train = [p for p in pairs if p not in test]
    return write_sample(tmp_path / "train.jsonl", train), write_sample(
        tmp_path / "test.jsonl", test
    )


def test_validate_refuses_bad_fields_before_loading(tmp_path):
    run = math_experiment.MathRunConfig("none.jsonl", "none.jsonl", str(tmp_path))
    for change, message in [
        (dict(group_size=1), "group_size=1 is invalid; allowed: an integer >= 2"),
        (dict(presets=("grpo", "gpro")), "preset='gpro' is unknown; valid: grpo,"),
        (dict(layout="aime"), "layout='aime' is unknown"),
        (dict(answer_modes=("boxed", "first")), "answer mode 'first' is unknown"),
        (dict(model="Qwen/Qwen2.5-0.5B"), "model='Qwen/Qwen2.5-0.5B' has no config.json"),
        (dict(checker_timeout_s=0.0), "checker_timeout_s=0.0"),
    ]:
        bad = math_experiment.MathRunConfig(**{**run.__dict__, **change})
        with pytest.raises(ValueError, match=message):
            math_experiment.validate(bad)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tiny_model_trains_grpo_on_a_gsm8k_file_and_writes_pass_at_k(tmp_path):
    train, test = sample_files(tmp_path)
    run = math_experiment.MathRunConfig(
        train_path=train,
        test_path=test,
        workdir=str(tmp_path / "run"),
        prompt_length=64,
        completion_length=8,
        prompts_per_step=4,
        group_size=4,
        steps=3,
        presets=("grpo", "dr_grpo"),
        sft_steps=150,
        final_samples=4,
    )
    results = math_experiment.run(run)
    with open(os.path.join(run.workdir, "results.json")) as f:
        assert json.load(f)["learners"] == json.loads(json.dumps(results["learners"]))
    rows = [json.loads(line) for line in open(os.path.join(run.workdir, "metrics.jsonl"))]
    assert len(rows) == run.steps * 2
    assert {(r["preset"], r["seed"]) for r in rows} == {("grpo", 0), ("dr_grpo", 0)}
    assert set(results["learners"]) == {"grpo/seed0", "dr_grpo/seed0"}
    # The pipeline's files: the fingerprint, checkpoints, curves and summary beside them.
    for name in ("config.json", "summary.json", "curves.png", "metrics.csv", "checkpoints"):
        assert os.path.exists(os.path.join(run.workdir, name)), name
    # The rewards inside the jitted step came from the checker: the fine-tuned base answers some
    # problems right ("#### 7" + EOS), so some steps see reward and the checker ran.
    assert max(r["reward/mean"] for r in rows) > 0
    assert results["checker"]["checked"] > 0
    for summary in results["learners"].values():
        curve = summary["pass_at_k"]["pass"]
        assert len(curve) == run.final_samples
        assert all(0 <= a <= b <= 1 for a, b in zip(curve[:-1], curve[1:], strict=True))
        assert summary["num_problems"] == 10
