"""experiments/brorl_bandit.py: --quick writes its tables with finite statistics, the exact
enumeration check is a probability distribution, and bad flags give one-line errors."""

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_tables(run_quick):
    res = run_quick("brorl_bandit.py")
    for name, row in res["one_step"].items():
        for key in ("delta_mass", "fall_share"):
            assert math.isfinite(row[key]["mean"]), (name, key)
            assert 0.0 <= row["fall_share"]["mean"] <= 1.0
    exact = res["exact_check"]["exact"]
    assert abs(exact["total_probability"] - 1.0) < 1e-6
    assert all(math.isfinite(v) for v in exact.values())
    quartiles = res["shared_policy"]["quartiles"]
    assert set(quartiles) == {"Q1", "Q2", "Q3", "Q4"}
    assert all(math.isfinite(q["delta"]["mean"]) for q in quartiles.values())


def test_bad_flags(bad_flag):
    assert "--lr" in bad_flag("brorl_bandit.py", "--lr", "-1")
    assert "--draws" in bad_flag("brorl_bandit.py", "--draws", "0")
    assert "--seed=-1" in bad_flag("brorl_bandit.py", "--seed", "-1")
