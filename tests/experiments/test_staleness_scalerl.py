"""The staleness and ScaleRL reproductions: --quick checks their scientific invariants (the lag
really is k for every learner and update; the sigmoid fitter recovers known curves) and writes
finite tables; bad flags fail early."""

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_staleness_quick_lag_is_k(run_quick):
    res = run_quick("staleness.py", timeout=380)
    cells = {"none k=0", "none k=2", "tis k=2", "mis k=2", "cispo k=0", "cispo k=2"}
    bf16 = {"bf16 none k=0", "bf16 tis k=0"}  # sampled in bf16, learned in float32
    assert set(res["arms"]) == cells | bf16
    assert res["sampler_dtype"] == {c: "bfloat16" for c in bf16}
    inv = res["lag_invariant"]
    assert inv["holds"] and not inv["failures"]
    assert inv["checked_updates"] == len(cells | bf16) * 3 * 6  # every learner, every update
    for cell, row in res["table"].items():
        mismatch = row["|log π_prox/μ|"]["mean"]
        if cell.endswith("k=0") and cell not in bf16:  # sampler and learner are the same
            assert mismatch == 0.0, cell
        else:  # the sampler lags or runs in bf16: its log-probs differ from the learner's
            assert mismatch > 1e-4, cell
        assert math.isfinite(row["gain"]["mean"]), cell
    assert len(res["claims"]) == 5


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_scalerl_quick_fit_recovers_known_curves(run_quick):
    res = run_quick("scalerl_curves.py", timeout=380)
    check = res["synthetic_check"]
    assert check["holds"] and len(check["curves"]) == 3
    for curve in check["curves"]:
        a, b, c_mid = curve["true"]
        fa, fb, fc = curve["fit"]
        assert abs(fa - a) <= 0.05 and abs(fb - b) <= 0.35 * b and abs(fc - c_mid) <= 0.25 * c_mid
    assert set(res["fits"]) == {"GRPO norm", "Lite PPO", "Dr.GRPO norm",
                                "GRPO norm, sequence-level", "CISPO"}  # fmt: skip
    for name, f in res["fits"].items():
        assert f["r0"] <= f["fit"]["A"] <= 1.0, name
        assert f["ci"]["A"][0] <= f["fit"]["A"] <= f["ci"]["A"][1] + 1e-9, name
        assert f["points_fitted"] >= 3, name
    for t in res["ranking"].values():
        assert -1.0 <= t["ci"][0] <= t["tau"] <= 1.0 or -1.0 <= t["tau"] <= 1.0
    assert len(res["claims"]) == 3


@pytest.mark.slow  # two interpreter starts (~15 s)
def test_bad_flags_fail_early(bad_flag):
    assert "--steps=8" in bad_flag("staleness.py", "--steps", "8")
    assert "--steps=10" in bad_flag("scalerl_curves.py", "--steps", "10")
