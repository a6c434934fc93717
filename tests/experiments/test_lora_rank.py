"""experiments/lora_rank.py: each arm is the testbed with only its adapters (rank, alpha, step
size) changed; the claim rule flips on synthetic gains built to flip it. The study itself runs
for ~15 min (docs/lm.md has its table); no --quick run here, its arms would train nothing."""

import argparse

import numpy as np


def test_arms_differ_only_in_their_adapters(load_entry, tmp_path):
    mod = load_entry("experiments/lora_rank.py")
    args = argparse.Namespace(
        quick=False, seeds=5, seed=100, steps=100, no_progress=True, workdir=str(tmp_path)
    )
    name, full = mod.arm_config(args, 0)
    assert name == "full" and full.lora == ()  # full parameters: no adapters
    preset_lr = mod.presets.resolve(full.preset)["learning_rate"]
    assert dict(full.rl)["learning_rate"] is None  # the preset's own step size
    for rank in mod.RANKS:
        name, arm = mod.arm_config(args, rank)
        lora = dict(arm.lora)
        assert name == f"rank{rank}" and (lora["rank"], lora["alpha"]) == (rank, mod.ALPHA)
        assert dict(arm.rl)["learning_rate"] == mod.LORA_LR_FACTOR * preset_lr
        changed = {f for f in full.__dataclass_fields__ if getattr(arm, f) != getattr(full, f)}
        assert changed == {"lora", "rl", "workdir"}, changed
        assert (arm.num_seeds, arm.seed, arm.steps) == (5, 100, 100)


def test_the_claim_flips_on_synthetic_gains(load_entry):
    mod = load_entry("experiments/lora_rank.py")
    rng = np.random.default_rng(0)
    full = list(0.20 + 0.01 * rng.standard_normal(5))
    close = list(0.19 + 0.01 * rng.standard_normal(5))  # 95% of the full gain
    far = list(0.05 + 0.01 * rng.standard_normal(5))  # 25% of it
    assert mod.claim(close, full)["status"] == "reproduced"
    assert mod.claim(far, full)["status"] == "contradicted"
    tie = mod.claim(list(0.16 + 0.05 * rng.standard_normal(5)), full)
    assert tie["status"] == "not at this scale"
    assert tie["diff_ci"][0] < 0 < tie["diff_ci"][1]
