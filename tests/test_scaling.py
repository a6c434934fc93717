"""The ScaleRL sigmoid fitter: it recovers known (A, B, C_mid) from exact and noisy curves, its
bootstrap intervals cover the truth, and bad input fails naming the argument."""

import numpy as np
import pytest

from rljax import scaling

C = np.geomspace(1e4, 1e7, 24)


@pytest.mark.parametrize("a,b,c_mid", [(0.8, 1.5, 3e5), (0.6, 0.7, 1e6), (0.95, 3.0, 5e4)])
def test_fit_recovers_exact_curves(a, b, c_mid):
    f = scaling.fit(C, scaling.sigmoid(C, a, b, c_mid, 0.3), r0=0.3)
    np.testing.assert_allclose([f.a, f.b, f.c_mid], [a, b, c_mid], rtol=2e-3)
    assert f.rmse < 1e-3 and f.r0 == 0.3


def test_bootstrap_interval_covers_the_truth_of_noisy_seeds():
    rng = np.random.default_rng(1)
    truth = (0.7, 1.2, 2e5)
    curves = scaling.sigmoid(C, *truth, 0.2) + rng.normal(0, 0.01, (5, C.size))
    out = scaling.bootstrap(C, curves, r0=0.2, num_resamples=30, grid=40, rounds=3)
    for key, value in zip(("a", "b", "c_mid"), truth, strict=True):
        lo, hi = out["ci"][key]
        assert lo <= out["fit"]._asdict()[key] <= hi
        assert lo * 0.9 <= value <= hi * 1.1, (key, value, lo, hi)
    assert out["samples"]["a"].shape == (30,)


def test_asymptote_is_capped_and_a_flat_curve_has_no_gain():
    f = scaling.fit(C, np.full(C.size, 0.3), r0=0.3)
    assert f.a == pytest.approx(0.3)
    f = scaling.fit(C, scaling.sigmoid(C, 1.4, 1.0, 1e5, 0.3), r0=0.3, a_max=1.0)
    assert f.a <= 1.0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="compute shape"):
        scaling.fit(C[:2], np.zeros(2), r0=0.0)
    with pytest.raises(ValueError, match="compute is invalid"):
        scaling.fit(-C, np.zeros(C.size), r0=0.0)
    with pytest.raises(ValueError, match="r0="):
        scaling.fit(C, np.zeros(C.size), r0=1.0)
    with pytest.raises(ValueError, match="curves shape"):
        scaling.bootstrap(C, np.zeros((1, C.size)), r0=0.0)
