"""experiments/rover_trees.py: --quick writes its tables with finite statistics for every arm,
τ and negative control, the metrics lie in their ranges, and bad flags give one-line errors."""

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_tables(run_quick):
    res = run_quick("rover_trees.py")
    m = res["config"]["correct"]
    assert res["arms"], "no arms"
    for name, row in res["table"].items():
        for key, summary in row.items():
            assert math.isfinite(summary["mean"]), (name, key)
        assert -1e-6 <= row["success"]["mean"] <= 1.0 + 1e-6, name
        assert 1.0 - 1e-4 <= row["effective_correct"]["mean"] <= m + 1e-4, name
        assert 0.0 <= row["distinct@256"]["mean"] <= m + 1e-4, name
    for tau, row in res["tau_sweep"].items():
        assert all(math.isfinite(s["mean"]) for s in row.values()), tau
    for name in ("stochastic", "non-binary", "deterministic binary"):
        row = res["controls"][name]
        assert all(math.isfinite(s["mean"]) for s in row.values()), name
        assert row["greedy_regret"]["mean"] >= -1e-5, name  # V* bounds every policy
    assert len(res["theorem"]["greedy_regret"]) == res["config"]["seeds"]


def test_bad_flags(bad_flag):
    assert "--correct" in bad_flag("rover_trees.py", "--correct", "0")
    assert "leaves" in bad_flag("rover_trees.py", "--branching", "8", "--depth", "9")
    assert "--slip" in bad_flag("rover_trees.py", "--slip", "1.5")
    assert "--taus" in bad_flag("rover_trees.py", "--taus", "0.1,x")
    # evaluation trees stay below the tuning trees' seeds (10,000 and up)
    assert "--seed=9990" in bad_flag("rover_trees.py", "--seed", "9990")
