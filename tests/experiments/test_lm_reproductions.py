"""The LM reproduction scripts (tricks_or_traps, ngrpo_hard, nft_pacs, reward_validity, one_shot,
passk_divergence, rover_lm, agent_calculator): --quick trains every arm as populations of the
tiny model and writes tables with finite statistics; bad flags fail early."""

import json
import math

import numpy as np
import pytest


def _finite_table(res: dict) -> None:
    for arm, row in res["table"].items():
        for column, summary in row.items():  # n = 0: undefined for every seed ("n/a")
            assert summary["n"] == 0 or math.isfinite(summary["mean"]), (arm, column)
        assert row[next(iter(row))]["n"] >= 3, arm  # the headline column is always defined
    for name, c in res["comparisons"].items():
        assert all(math.isfinite(v) for v in (c["diff"], *c["diff_ci"])), name
        assert c["sign"] in "+-0", name


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_tricks_or_traps_quick(run_quick):
    res = run_quick("tricks_or_traps.py", timeout=380)
    assert len(res["arms"]) == 14  # 7 arms x 2 initializations
    assert len(res["claims"]) == 3
    _finite_table(res)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_ngrpo_hard_quick(run_quick):
    res = run_quick("ngrpo_hard.py", timeout=380)
    assert set(res["arms"]) == {"GRPO", "GRPO + asymmetric clip", "calibration only", "NGRPO",
                                "DAPO"}  # fmt: skip
    _finite_table(res)
    for arm, row in res["table"].items():
        assert 0.0 <= row["zero-adv share"]["mean"] <= 1.0, arm


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_nft_pacs_quick(run_quick):
    res = run_quick("nft_pacs.py", timeout=380)
    assert set(res["arms"]) == {"grpo", "nft", "pacs", "cispo"}
    _finite_table(res)
    assert all(math.isfinite(v) for vs in res["identity"].values() for v in vs)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_agent_calculator_quick(run_quick):
    res = run_quick("agent_calculator.py", timeout=380)
    assert set(res["arms"]) == {"grpo + calculator", "grpo, no tool", "grpo, no tool, bare base"}
    _finite_table(res)
    assert res["oracle"] == 1.0  # the demonstrations through the environment are right
    assert len(res["tool_calls"]["grpo + calculator"]) == 3  # per seed (none without the tool)
    assert res["tool_calls"]["grpo, no tool"] == res["tool_calls"]["grpo, no tool, bare base"] == []


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_bad_flags(bad_flag):
    assert "--seeds=2" in bad_flag("tricks_or_traps.py", "--seeds", "2")
    assert "--steps=0" in bad_flag("ngrpo_hard.py", "--steps", "0")
    assert "--identity_batches=1" in bad_flag("nft_pacs.py", "--identity_batches", "1")
    assert "--seed=-1" in bad_flag("reward_validity.py", "--seed", "-1")
    assert "--workdir" in bad_flag("one_shot.py", "--workdir", "")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_reward_validity_quick(run_quick):
    res = run_quick("reward_validity.py", timeout=380)
    assert set(res["arms"]) == {"verifier", "random", "inverted", "format_only", "majority"}
    _finite_table(res)
    assert {"level 1", "level 2", "level 3"} <= set(res["table"]["verifier"])


@pytest.mark.slow
@pytest.mark.timeout(500)
def test_one_shot_quick(run_quick, tmp_path):
    res = run_quick("one_shot.py", timeout=480)
    one = [f"1 example (π{k})" for k in (1, 2)]
    entropy = [
        f"{one[0]}, {x}" for x in ("entropy 0.001", "entropy 0.01", "entropy only (no reward)")
    ]
    assert set(res["arms"]) == {*one, *entropy, "2 examples (π1, π2)", "full set"}
    _finite_table(res)
    # The selected examples are the top-variance problems of what the selection run recorded:
    # its per-problem training accuracy at every update, read back from its metrics.jsonl.
    sel = res["selection"]
    rows = [json.loads(line) for line in (tmp_path / "select" / "metrics.jsonl").open()]
    updates = sorted({r["update"] for r in rows})
    acc = np.full((res["seeds"], len(updates), sel["pool"]), np.nan)
    for r in rows:
        for i in range(sel["pool"]):
            value = r.get(f"problem/correct{i}")
            acc[r["seed"], updates.index(r["update"]), i] = np.nan if value is None else value
    assert len(updates) == sel["steps"] and np.isfinite(acc).any(axis=2).all()  # every update
    visits = np.isfinite(acc).sum(axis=(0, 1))
    with np.errstate(all="ignore"):
        var = np.nanvar(acc.reshape(-1, sel["pool"]), axis=0)
    ranked = [i for i in range(sel["pool"]) if visits[i] >= sel["min_visits"]]
    want = sorted(ranked, key=lambda i: (-var[i], i))
    assert [r["index"] for r in sel["ranking"]] == want
    assert sel["picks"] == want[:2]
    np.testing.assert_allclose([r["variance"] for r in sel["ranking"]], var[want], atol=1e-12)
    assert [r["visits"] for r in sel["ranking"]] == visits[want].tolist()
    # Each 1-shot population trained on its one selected example only, the 2-shot on both.
    names = [r["example"] for r in sel["ranking"][:2]]
    for k, (index, name) in enumerate(zip(sel["picks"], names, strict=True)):
        config = json.loads((tmp_path / f"one_pi{k + 1}" / "config.json").read_text())
        assert config["train_examples"] == [index] and config["train_problems"] == 0
        assert res["examples"][f"one_pi{k + 1}"] == [name]
    assert res["examples"]["two"] == names
    assert "full" not in res["examples"]  # the full set: every training problem


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_passk_divergence_quick(run_quick):
    res = run_quick("passk_divergence.py", timeout=380)
    assert set(res["arms"]) == {"no divergence", "reverse KL (k3)", "forward KL (DPH)",
                                "JS (DPH)", "SELF (least likely ½, k3)"}  # fmt: skip
    _finite_table(res)
    assert isinstance(res["split_meets_target"], bool)
    assert len(res["claims"]) == 4  # SELF's claim decided like the others


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_rover_lm_quick(run_quick):
    res = run_quick("rover_lm.py", timeout=380)
    assert set(res["arms"]) == {"GRPO (no KL)", "ROVER ρ=1", "ROVER ρ=0.25"}
    _finite_table(res)
    assert len(res["claims"]) == 3
    assert all(v in ("reproduced", "partly", "contradicted", "not at this scale")
               for v, _ in res["claims"].values())  # fmt: skip
