"""experiments/echo_chamber.py: --quick trains both model sizes on the mixed-format SFT data and
a few GRPO updates, and writes format shares that are shares, a mix as configured and verdicts
for the four claims; bad flags fail before anything is built."""

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_echo_chamber_quick(run_quick):
    res = run_quick("echo_chamber.py", timeout=580)
    # the scientific invariant: the SFT mix is the configured thirds, and the classifier that
    # measures the shares labels every SFT trace with the format it was written in
    assert res["sft_classified"] == 1.0
    for fmt, share in res["sft_mix"].items():
        assert abs(share - 1 / 3) <= 1 / res["num_sft_traces"], fmt
    assert set(res["arms"]) == {"small", "large"}
    assert res["params"]["large"] > 4 * res["params"]["small"]
    for size, row in res["table"].items():
        for stage in ("base", "final"):
            total = sum(row[f"{stage} {f}"]["mean"] for f in ("math", "code", "words"))
            assert 0.0 <= total <= 1.0 + 1e-9, (size, stage)  # the rest is "other"
        curve = res["curves"][size]
        assert curve["updates"] == [0, 2]
        for fmt, shares in curve["shares_mean"].items():
            assert all(0.0 <= v <= 1.0 for v in shares), (size, fmt)
    assert len(res["claims"]) == 4
    for name, summary in res["figures"].items():
        assert all(math.isfinite(v) for v in (summary["mean"], *summary["mean_ci"])), name


@pytest.mark.slow  # three interpreter starts (~20-35 s)
def test_bad_flags(bad_flag):
    assert "--seeds=2" in bad_flag("echo_chamber.py", "--seeds", "2")
    assert "--sft_steps=3" in bad_flag("echo_chamber.py", "--sft_steps", "3")
    assert "--steps=15" in bad_flag("echo_chamber.py", "--steps", "15")
