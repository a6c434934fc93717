"""experiments/compose_fg.py (#81) and experiments/backtracking.py (#207, #69): the scientific
invariants of their data (held-out compositions never trained on, DFS traces legal searches,
equal token budgets across arms), and --quick end to end (slow)."""

import importlib.util
import math
import os
import pathlib
import re

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "experiments" / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def compose_fg():
    return _script("compose_fg.py")


@pytest.fixture(scope="module")
def backtracking():
    return _script("backtracking.py")


def test_compose_held_out_sets_are_never_trained_on(compose_fg):
    from rljax.lm.tasks import compose

    data = compose_fg.datasets(0, compose_fg.QUICK)
    trained = {p.prompt for p in data["sft"] + data["rl"]}
    for name, problems in data["test"].items():
        assert problems, name
        assert not trained & {p.prompt for p in problems}, name
    # training composes only source atoms, at levels 1-2; the level 3-5 sets are deeper
    assert {p.level for p in data["sft"]} == {1, 2}
    assert {p.level for p in data["rl"]} == {2}
    for p in data["sft"] + data["rl"]:
        if p.level > 1:
            assert set(compose.parse(p.prompt)[0]) <= set(compose.SOURCE), p
    for name in ("target L2", "target L3"):
        for p in data["test"][name]:
            names, _ = compose.parse(p.prompt)
            assert set(names) <= set(compose.TARGET) and p.info == "target", p
    for level in (3, 4, 5):
        assert {p.level for p in data["test"][f"source L{level}"]} == {level}
    # the target atoms are learned alone: level-1 SFT data holds each of them
    alone = {compose.parse(p.prompt)[0] for p in data["sft"] if p.level == 1}
    assert set(compose.TARGET) <= alone
    # the verifier scores f(g(x)) right on every held-out problem
    for problems in data["test"].values():
        for p in problems:
            names, word = compose.parse(p.prompt)
            value = word
            for name in reversed(names):
                value = compose.ATOMS[name](value)
            assert compose.verify(p, p.answer).correct and compose.final_answer(p.answer) == value


def test_compose_second_seed_set_draws_other_data(compose_fg):
    a = compose_fg.datasets(0, compose_fg.QUICK)
    b = compose_fg.datasets(1000, compose_fg.QUICK)
    assert [p.prompt for p in a["rl"]] != [p.prompt for p in b["rl"]]


def test_backtracking_data_are_legal_searches_on_unseen_problems(backtracking):
    from rljax.lm.tasks import countdown_search as cs

    data = backtracking.datasets(0, backtracking.QUICK)
    assert not {p.prompt for p in data["train"]} & {p.prompt for p in data["test"]}
    for arm, traces in data["traces"].items():
        assert len(traces) == len(data["train"])
        for p, text in zip(data["train"], traces, strict=True):
            assert cs.replay(p.info, text) == (True, True), (arm, text)
            assert len(text) <= backtracking.QUICK.trace_chars
    for p in data["train"] + data["test"]:
        assert len(p.info.split(">")[0].split(",")) == backtracking.QUICK.numbers
    mean_bt = {a: np.mean([cs.num_backtracks(t) for t in ts]) for a, ts in data["traces"].items()}
    assert mean_bt["direct"] == 0 < mean_bt["DFS <=1"] < mean_bt["DFS <=3"]
    # every trace, prompt and sampled completion fits the model's sequence lengths
    b = backtracking.QUICK
    assert b.completion_len >= b.trace_chars + 1  # the trace and its EOS
    longest = max(len(p.prompt) for p in data["train"] + data["test"])
    assert b.prompt_len >= longest + 1  # BOS and the prompt


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("numbers", 5, "2..4"),
        ("trace_chars", 80, "16..64"),
        ("d_model", 30, "multiple of 4"),
        ("learning_rate", 0.0, "(0, 0.1]"),
        ("train_problems", 2000, "distinct 3-number problems"),
        ("group", 1, ">= 2"),
    ],
)
def test_backtracking_budget_errors_name_the_field(backtracking, field, value, allowed):
    import dataclasses

    bad = dataclasses.replace(backtracking.DEFAULT, **{field: value})
    expected = re.escape(f"Budget.{field}={value!r} is invalid") + ".*" + re.escape(allowed)
    with pytest.raises(ValueError, match=expected):
        backtracking.validate(bad)
    backtracking.validate(backtracking.DEFAULT)
    backtracking.validate(backtracking.QUICK)


def test_token_budgets_are_equal_across_arms(backtracking):
    from rljax.train import study_scratch as _scratch

    rng = np.random.default_rng(0)
    n, m = 16, 20
    correct = rng.uniform(size=(2, m, n)) < np.asarray([0.1, 0.4])[:, None, None]
    lengths = np.stack([np.full((m, n), 10), np.full((m, n), 40)])  # a short and a long arm
    curve = _scratch.pass_curve(correct, range(1, n + 1))
    got = backtracking.pass_at_tokens(correct, lengths, 80)
    # 80 tokens buy 8 samples of 10 tokens and 2 samples of 40 tokens: the same spend
    assert got[0] == pytest.approx(curve[0, 7]) and got[1] == pytest.approx(curve[1, 1])
    assert backtracking.pass_at_tokens(correct, lengths, 20)[1] == pytest.approx(
        0.5 * curve[1, 0]
    )  # half a sample's worth
    assert math.isnan(backtracking.pass_at_tokens(correct, lengths, 200)[0])  # 20 > n samples
    mid = backtracking.pass_at_tokens(correct, lengths, 100)[1]  # k = 2.5
    assert mid == pytest.approx(0.5 * (curve[1, 1] + curve[1, 2]))


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_compose_fg_quick(tmp_path):
    mod = _script("compose_fg.py")
    out = mod.STUDY.main(["--quick", "--workdir", str(tmp_path)])
    res = _results(tmp_path)
    assert set(res["arms"]) == {"base", "RL", "RFT", "NTP"}
    assert len(res["claims"]) == 4
    for name, passes in out["passes"].items():
        assert passes.shape == (4, 3) and np.all((passes >= 0) & (passes <= 1)), name


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_backtracking_quick(tmp_path):
    mod = _script("backtracking.py")
    out = mod.STUDY.main(["--quick", "--workdir", str(tmp_path)])
    res = _results(tmp_path)
    assert len(res["claims"]) == 4
    assert out["learners"] == [a for a in mod.ARMS for _ in range(3)]
    for phase in ("before", "after"):
        assert np.all((out[phase]["pass@1"] >= 0) & (out[phase]["pass@1"] <= 1))
        assert np.all(out[phase]["tokens"] >= 1)


def _results(path) -> dict:
    import json

    for name in ("results.md", "results.json"):
        assert os.path.getsize(path / name) > 0, name
    assert list(path.glob("*.png")), "no plot written"
    res = json.loads((path / "results.json").read_text())
    assert res["verdict"] in ("reproduced", "partly", "not at this scale", "contradicted")
    return res
