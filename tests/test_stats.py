"""rljax.stats: IQM by hand, the t intervals (by hand and their coverage by simulation), the
stratified bootstrap, probability of improvement, results files."""

import json

import numpy as np
import pytest
from scipy import stats as scipy_stats

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


def test_summarize_intervals_are_the_t_intervals():
    x = np.random.default_rng(0).normal(size=12)
    s = stats.summarize(x)
    assert s["mean_ci"] == list(stats.mean_interval(x))
    assert s["iqm_ci"] == list(stats.iqm_interval(x))
    assert s["mean_ci"][0] < s["mean"] < s["mean_ci"][1]
    assert s["iqm_ci"][0] < s["iqm"] < s["iqm_ci"][1]


def test_band_uses_the_seeds_defined_at_each_point():
    column = np.array([0.2, np.nan, 0.4, 0.6])
    centre, low, high = stats._band(column)
    assert centre == pytest.approx(0.4)
    assert (low, high) == stats.mean_interval([0.2, 0.4, 0.6])  # the seeds defined there
    assert stats._band(np.array([np.nan, 0.3])) == (0.3, 0.3, 0.3)
    assert all(np.isnan(stats._band(np.array([np.nan, np.nan]))))


@pytest.mark.parametrize("shape", [(1,), (3,), (10,), (7, 3), (16, 2)])
def test_batched_bootstrap_equals_one_call_per_resample(shape):
    """mean and IQM run on all resamples at once; the interval is the same float as calling the
    statistic on each resample (a statistic without a batched form takes that path)."""
    x = np.random.default_rng(len(shape)).normal(size=shape)
    for statistic in (stats.mean, stats.iqm):
        looped = stats.stratified_bootstrap(x, lambda r, f=statistic: f(r), seed=3)
        assert stats.stratified_bootstrap(x, statistic, seed=3) == looped


# ---- the t intervals ------------------------------------------------------------------------


def test_t_intervals_by_hand():
    # darkroom's three seeds: the percentile bootstrap gave their range [3.52, 17.49]
    x = [4.76, 17.49, 3.52]
    m, sd = np.mean(x), np.std(x, ddof=1)
    half = 4.302652729749462 * sd / np.sqrt(3)  # t_{2}(0.975)
    np.testing.assert_allclose(stats.mean_interval(x), (m - half, m + half), rtol=1e-12)
    lo, hi = stats.stratified_bootstrap(x)
    assert (lo, hi) == (3.52, 17.49)  # the defect the t interval replaces
    # Welch: var_a/n_a + var_b/n_b on the Satterthwaite degrees of freedom
    a, b = np.array([1.0, 2.0, 4.0]), np.array([0.0, 0.5, 1.0, 2.0])
    va, vb = a.var(ddof=1) / 3, b.var(ddof=1) / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    half = scipy_stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    d = a.mean() - b.mean()
    np.testing.assert_allclose(stats.diff_interval(a, b), (d - half, d + half), rtol=1e-12)
    # Yuen at n = 8: g = 2 winsorized each side, h = 4 kept, 3 degrees of freedom
    y = np.array([0.0, 1, 2, 3, 4, 5, 6, 100])
    w = np.array([2.0, 2, 2, 3, 4, 5, 5, 5])
    se = w.std(ddof=1) * np.sqrt(7) / np.sqrt(4 * 3)
    half = scipy_stats.t.ppf(0.975, 3) * se
    np.testing.assert_allclose(stats.iqm_interval(y), (3.5 - half, 3.5 + half), rtol=1e-12)
    # [S, T]: the mean of the task means; two tasks of equal spread and S = 4 give 6 dof
    x2 = np.stack([np.array([0.0, 1, 2, 3]), np.array([10.0, 11, 12, 13])], 1)
    half = scipy_stats.t.ppf(0.975, 6) * np.sqrt(2 * np.var([0, 1, 2, 3], ddof=1) / (4 * 4))
    np.testing.assert_allclose(stats.mean_interval(x2), (6.5 - half, 6.5 + half), rtol=1e-12)


def test_t_intervals_edge_cases():
    for interval in (stats.mean_interval, stats.iqm_interval):
        assert interval([3.0]) == (-np.inf, np.inf)  # one seed: no interval
        assert interval([3.0, 3.0, 3.0]) == (3.0, 3.0)
    assert stats.diff_interval([1.0], [0.0, 1.0]) == (-np.inf, np.inf)
    assert stats.diff_interval([1.0, 1.0], [0.0, 0.0]) == (1.0, 1.0)
    with pytest.raises(ValueError, match="confidence"):
        stats.mean_interval([1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError, match="tasks"):
        stats.diff_interval(np.zeros((3, 2)), np.zeros((3, 1)))


@pytest.mark.parametrize("shape", [(2,), (3,), (5,), (8, 3)])
def test_batched_t_intervals_equal_the_single_ones(shape):
    """The coverage test runs the intervals' batched forms; they are the public functions."""
    rng = np.random.default_rng(len(shape))
    x, y = rng.normal(size=(4, *shape)), rng.exponential(size=(4, shape[0] + 1, *shape[1:]))
    x3 = x.reshape(4, shape[0], -1)
    y3 = y.reshape(4, shape[0] + 1, -1)
    for r in range(4):
        lo, hi = stats._mean_interval_rows(x3)
        assert stats.mean_interval(x[r]) == (lo[r], hi[r])
        lo, hi = stats._diff_interval_rows(x3, y3)
        assert stats.diff_interval(x[r], y[r]) == (lo[r], hi[r])
        lo, hi = stats._iqm_interval_rows(x3.reshape(4, -1))
        assert stats.iqm_interval(x[r]) == (lo[r], hi[r])


_DRAWS = {  # seed distributions: (sampler, population mean, population IQM)
    "normal": (lambda rng, s: rng.normal(size=s), 0.0, scipy_stats.norm()),
    "exponential": (lambda rng, s: rng.exponential(size=s), 1.0, scipy_stats.expon()),
    "lognormal": (lambda rng, s: rng.lognormal(0.0, 1.0, size=s), np.exp(0.5),
                  scipy_stats.lognorm(1.0)),
}  # fmt: skip


def _population_iqm(dist) -> float:
    from scipy import integrate

    q1, q3 = dist.ppf([0.25, 0.75])
    return integrate.quad(lambda v: v * dist.pdf(v), q1, q3)[0] / 0.5


@pytest.mark.parametrize("kind", sorted(stats.COVERAGE))
@pytest.mark.parametrize("n", [3, 4, 5, 8])
def test_interval_coverage_is_as_stated(kind, n):
    """By simulation (20,000 seed sets): each 95% interval covers the population value as often
    as ``stats.COVERAGE`` states, for normal and skewed seed values, at the studies' seed counts;
    the percentile bootstrap it replaced falls below the stated range at n <= 5."""
    draws = 20_000
    rng = np.random.default_rng(100 * n + len(kind))
    for name, (sample, mu, dist) in _DRAWS.items():
        low, high = stats.COVERAGE[kind][name]
        x = sample(rng, (draws, n))
        if kind == "mean":
            lo, hi = stats._mean_interval_rows(x[..., None])
            truth = mu
        elif kind == "diff":  # arms of n and n + 1 seeds, the second shifted by 1
            y = sample(rng, (draws, n + 1)) + 1.0
            lo, hi = stats._diff_interval_rows(x[..., None], y[..., None])
            truth = -1.0
        else:
            lo, hi = stats._iqm_interval_rows(x)
            truth = _population_iqm(dist)
        covered = float(np.mean((lo < truth) & (truth < hi)))
        assert low <= covered <= high, (kind, name, n, covered)
    if kind == "mean" and n <= 5:  # the percentile bootstrap of the mean, normal seeds
        x = rng.normal(size=(2000, n))
        idx = rng.integers(0, n, size=(400, n))
        means = x[:, idx].mean(2)
        lo, hi = np.quantile(means, [0.025, 0.975], axis=1)
        assert float(np.mean((lo < 0) & (0 < hi))) < stats.COVERAGE["mean"]["normal"][0] - 0.08
