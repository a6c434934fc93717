"""rljax.stats: IQM by hand, stratified bootstrap, probability of improvement, results files."""

import json

import numpy as np
import pytest

from rljax import stats


def test_iqm_by_hand():
    assert stats.iqm([1.0, 2.0, 3.0, 4.0]) == pytest.approx(2.5)
    # 8 runs: the middle four.
    assert stats.iqm([0, 1, 2, 3, 4, 5, 6, 100]) == pytest.approx((2 + 3 + 4 + 5) / 4)
    # 5 runs: quantile range [1.25, 3.75] -> weights .75, 1, .75 on the 2nd..4th sorted values.
    assert stats.iqm([10, 0, 1, 2, 3]) == pytest.approx((0.75 * 1 + 2 + 0.75 * 3) / 2.5)
    assert stats.iqm([7.0]) == 7.0


def test_iqm_matches_trimmed_mean_reference():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    s = np.sort(x)
    assert stats.iqm(x) == pytest.approx(s[10:30].mean())


def test_bootstrap_interval_covers_mean_and_shrinks_with_seeds():
    rng = np.random.default_rng(1)
    small, large = rng.normal(1.0, 1.0, 5), rng.normal(1.0, 1.0, 200)
    lo_s, hi_s = stats.stratified_bootstrap(small)
    lo_l, hi_l = stats.stratified_bootstrap(large)
    assert lo_s <= small.mean() <= hi_s
    assert lo_l <= large.mean() <= hi_l
    assert hi_l - lo_l < hi_s - lo_s
    assert stats.stratified_bootstrap([3.0, 3.0, 3.0]) == (3.0, 3.0)


def test_bootstrap_is_stratified_by_task():
    # Task 0 always scores 0 and task 1 always 10: a stratified resample keeps one of each per
    # seed slot, so the mean is exactly 5 in every resample; pooling the tasks would not be.
    scores = np.stack([np.zeros(6), np.full(6, 10.0)], axis=1)
    assert stats.stratified_bootstrap(scores) == (5.0, 5.0)


def test_probability_of_improvement():
    assert stats.probability_of_improvement([2, 3, 4], [0, 1]) == 1.0
    assert stats.probability_of_improvement([0, 1], [2, 3, 4]) == 0.0
    assert stats.probability_of_improvement([1, 2], [1, 2]) == 0.5
    # Brute force over pairs.
    x, y = [0.1, 0.5, 0.9], [0.4, 0.5]
    wins = sum((a > b) + 0.5 * (a == b) for a in x for b in y) / 6
    assert stats.probability_of_improvement(x, y) == pytest.approx(wins)
    lo, hi = stats.probability_of_improvement_ci(x, y)
    assert 0.0 <= lo <= wins <= hi <= 1.0


def test_compare_detects_a_real_difference_and_not_a_null_one():
    rng = np.random.default_rng(2)
    better, worse = rng.normal(1.0, 0.3, 10), rng.normal(0.0, 0.3, 10)
    assert stats.excludes_zero(stats.compare(better, worse)["diff_ci"])
    same = stats.compare(rng.normal(0, 1, 10), rng.normal(0, 1, 10))
    assert not stats.excludes_zero(same["diff_ci"])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="NaN"):
        stats.summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        stats.stratified_bootstrap([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError, match="verdict"):
        stats.write_results(
            "/tmp/x", title="t", claim="c", verdict="yes", reason="r", arms={}, metric="m"
        )


def test_write_results_and_plot(tmp_path):
    arms = {"a": stats.summarize([0.1, 0.2, 0.3]), "b": stats.summarize([0.5, 0.6, 0.7])}
    text = stats.write_results(
        str(tmp_path),
        title="T",
        claim="b beats a",
        verdict="reproduced",
        reason="r",
        arms=arms,
        metric="pass@1",
        extra={"compare": stats.compare([0.5, 0.6, 0.7], [0.1, 0.2])},
    )
    assert "| b | 3 | 0.600 [" in text
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["verdict"] == "reproduced" and payload["arms"]["a"]["n"] == 3
    stats.plot_bands(
        np.arange(4),
        {"a": np.ones((3, 4)), "b": np.random.rand(3, 4)},
        str(tmp_path / "p.png"),
        title="t",
        xlabel="x",
        ylabel="y",
    )
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_summarize_num_resamples():
    x = np.random.default_rng(0).normal(size=12)
    few = stats.summarize(x, num_resamples=200)
    full = stats.summarize(x)
    assert few["mean"] == full["mean"] and few["values"] == full["values"]
    # both intervals contain the mean and roughly agree (same data, fewer resamples)
    for s in (few, full):
        assert s["mean_ci"][0] < s["mean"] < s["mean_ci"][1]
    np.testing.assert_allclose(few["mean_ci"], full["mean_ci"], atol=0.2)
    with pytest.raises(ValueError, match="num_resamples"):
        stats.summarize(x, num_resamples=10)


def test_band_uses_the_seeds_defined_at_each_point():
    column = np.array([0.2, np.nan, 0.4, 0.6])
    centre, low, high = stats._band(column, seed=0)
    assert centre == pytest.approx(0.4) and 0.2 <= low <= centre <= high <= 0.6
    assert stats._band(np.array([np.nan, 0.3]), seed=0) == (0.3, 0.3, 0.3)
    assert all(np.isnan(stats._band(np.array([np.nan, np.nan]), seed=0)))


@pytest.mark.parametrize("shape", [(1,), (3,), (10,), (7, 3), (16, 2)])
def test_batched_bootstrap_equals_one_call_per_resample(shape):
    """mean and IQM run on all resamples at once; the interval is the same float as calling the
    statistic on each resample (a statistic without a batched form takes that path)."""
    x = np.random.default_rng(len(shape)).normal(size=shape)
    for statistic in (stats.mean, stats.iqm):
        looped = stats.stratified_bootstrap(x, lambda r, f=statistic: f(r), seed=3)
        assert stats.stratified_bootstrap(x, statistic, seed=3) == looped
