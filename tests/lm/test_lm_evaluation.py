"""pass@k estimator against brute force; bootstrap intervals; summaries."""

import itertools
import math

import numpy as np
import pytest

from rljax.lm.tasks.evaluation import pass_at_k, pass_at_k_curve, summarize


@pytest.mark.parametrize("n", [1, 4, 7])
def test_pass_at_k_equals_brute_force_over_subsets(n):
    for c in range(n + 1):
        outcomes = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(outcomes, k))
            brute = sum(any(s) for s in subsets) / len(subsets)
            assert pass_at_k(n, np.array([c]), k)[0] == pytest.approx(brute, abs=1e-12)
            assert brute == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))


def test_pass_at_k_edge_cases_and_errors():
    np.testing.assert_allclose(pass_at_k(256, np.array([0, 256, 1]), 1), [0, 1, 1 / 256])
    assert pass_at_k(256, np.array([1]), 256)[0] == 1.0
    with pytest.raises(ValueError, match="k=0"):
        pass_at_k(4, np.array([1]), 0)
    with pytest.raises(ValueError, match="num_correct"):
        pass_at_k(4, np.array([5]), 1)


def test_curve_is_monotone_with_bands_around_the_mean():
    rng = np.random.default_rng(0)
    num_correct = rng.binomial(16, rng.uniform(size=200))
    curve = pass_at_k_curve(16, num_correct, num_bootstrap=200)
    assert np.all(np.diff(curve["pass"]) >= -1e-12)
    assert np.all(curve["low"] <= curve["pass"] + 1e-12)
    assert np.all(curve["pass"] <= curve["high"] + 1e-12)
    assert curve["pass"][0] == pytest.approx(num_correct.mean() / 16)


def test_summarize_counts_distinct_correct_answers_and_levels():
    correct = np.array([[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    answers = [["2*3", "3*2", "x", "2*3"], ["a", "b", "c", "d"], ["7", "7", "7", "7"]]
    s = summarize(correct, answers, np.array([1, 2, 2]))
    assert s["distinct_correct_per_problem"] == pytest.approx((2 + 0 + 1) / 3)
    assert s["pass@1_by_level"] == {1: 0.75, 2: 0.125}
    assert s["pass@1"] == pytest.approx(4 / 12)
    assert s["pass@4"] == pytest.approx(2 / 3)
