"""experiments/kl_bayes.py: --quick writes its tables with finite statistics for every arm
(trained, best-of-N, rejection, RLG), the exact sampling arms are distributions, and bad flags
give one-line errors."""

import math

import pytest


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_tables(run_quick):
    res = run_quick("kl_bayes.py")
    summary = res["summary"]
    for arm in ("no_kl", "k1_in_reward", "best_of_4", "rejection_64", "rlg_seq_w=2.0",
                "rlg_token_w=0.5", "retrain_w=0.5", "target π*"):  # fmt: skip
        assert arm in summary, arm
        for key in ("kl_to_target", "kl_from_target", "reward", "entropy", "coverage"):
            assert math.isfinite(summary[arm][key]["mean"]), (arm, key)
    for arm, row in summary.items():
        assert row["kl_to_target"]["mean"] > -1e-4, arm  # a KL between distributions
        assert 0.0 <= row["coverage"]["mean"] <= 1.0, arm
    assert abs(summary["target π*"]["kl_to_target"]["mean"]) < 1e-5


def test_bad_flags(bad_flag):
    assert "--beta" in bad_flag("kl_bayes.py", "--beta", "0")
    assert "--methods" in bad_flag("kl_bayes.py", "--methods", "k4")
    assert "V^L" in bad_flag("kl_bayes.py", "--vocab", "8", "--length", "6")


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--lr", "nan"), "--lr=nan is invalid; allowed: a finite number > 0"),
        (("--beta", "inf"), "--beta=inf is invalid; allowed: a finite number > 0"),
        (("--vocab", "1"), "--vocab=1 is invalid; allowed: an integer >= 2"),
        (("--prior_scale", "-1"), "--prior_scale=-1.0 is invalid"),
        (("--seed", "-3"), "--seed=-3 is invalid"),
    ],
)
def test_non_finite_and_degenerate_flags_are_refused(bad_flag, flags, message):
    err = bad_flag("kl_bayes.py", *flags)
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
