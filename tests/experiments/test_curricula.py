"""experiments/curricula.py: --quick trains the five arms (uniform, dynamic sampling, balanced
band, SEC, UCB) as one population of the tiny model and writes finite tables, cost ratios and
verdicts; bad flags fail before anything is built."""

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_curricula_quick(run_quick):
    res = run_quick("curricula.py", timeout=380)
    assert set(res["arms"]) == {"uniform", "SEC", "UCB", "dynamic 0<p̂<1", "balanced p̂∈[¼,¾]"}
    for arm, row in res["table"].items():
        for column, summary in row.items():
            assert math.isfinite(summary["mean"]), (arm, column)
        drawn = sum(row[f"drawn level {lv}"]["mean"] for lv in (1, 2, 3))
        assert abs(drawn - 1.0) < 1e-6, arm  # every trained group is of some level
        assert 0.0 <= row["zero-var share"]["mean"] <= 1.0, arm
    # filtering arms sample 2B groups a step, the others B
    tokens = {arm: row["tokens / step"]["mean"] for arm, row in res["table"].items()}
    assert tokens["dynamic 0<p̂<1"] > 1.5 * tokens["uniform"]
    for name, c in res["comparisons"].items():
        assert all(math.isfinite(v) for v in (c["diff"], *c["diff_ci"])), name
    assert len(res["claims"]) == 2
    for name, r in res["reach"].items():  # a ratio may be inf (never reached), never NaN
        assert not math.isnan(r["ratio"]) and r["ratio"] > 0, name


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_bad_flags(bad_flag):
    assert "--seeds=1" in bad_flag("curricula.py", "--seeds", "1")
    assert "--steps=0" in bad_flag("curricula.py", "--steps", "0")


def test_a_claim_for_both_curricula_follows_the_one_rule():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "curricula.py"
    spec = importlib.util.spec_from_file_location("curricula_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod._combine(["-", "0"]) == "contradicted"  # one arm worse, the other tied: refuted
    assert mod._combine(["0", "0"]) == "not at this scale"
    assert mod._combine(["-", "-"]) == "contradicted"
    assert mod._combine(["+", "0"]) == "partly"
    assert mod._combine(["+", "+"]) == "reproduced"
