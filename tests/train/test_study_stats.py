"""rljax.train.study_stats: Spearman ρ, percentile intervals and the cells × seeds bootstrap."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rljax.train import study_stats


def test_spearman_matches_scipy_and_is_nan_on_a_constant_side():
    x, y = np.array([1.0, 2.0, 2.0, 5.0, 3.0]), np.array([0.1, 0.4, 0.3, 0.9, 0.2])
    assert study_stats.spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic)
    assert study_stats.spearman(x, -x) == pytest.approx(-1.0)
    assert np.isnan(study_stats.spearman(np.ones(4), np.arange(4)))


def test_interval_drops_nan_draws_and_says_when_none_is_left():
    draws = [float("nan")] + list(np.linspace(0.0, 1.0, 101))
    low, high = study_stats.interval(draws)
    assert low == pytest.approx(0.025) and high == pytest.approx(0.975)
    assert study_stats.interval([float("nan")], empty=None) == [None, None]
    assert all(np.isnan(study_stats.interval([])))


def test_cell_bootstrap_resamples_seeds_within_cells():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 6))
    low, high = study_stats.cell_bootstrap(lambda x: x.mean(), [a], num_resamples=500)
    assert low < a.mean() < high
    # constant seeds within each cell: every resample has the same mean
    flat = np.repeat(np.arange(4.0)[:, None], 6, 1)
    assert study_stats.cell_bootstrap(lambda x: x.mean(), [flat]) == [1.5, 1.5]
    # paired: seed i of both arrays is drawn together, so a − a is exactly 0
    diff = study_stats.cell_bootstrap(lambda x, y: (x - y).mean(), [a, a], paired=True)
    assert diff == [0.0, 0.0]
    unpaired = study_stats.cell_bootstrap(lambda x, y: (x - y).mean(), [a, a])
    assert unpaired[0] < 0 < unpaired[1]


def test_kendall_counts_concordant_minus_discordant_pairs():
    assert study_stats.kendall([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert study_stats.kendall([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # pairs (1,2) concordant, (1,3) concordant, (2,3) discordant; tau-a = (2 - 1) / 3
    assert study_stats.kendall([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # a tie counts 0
    assert study_stats.kendall([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3)
