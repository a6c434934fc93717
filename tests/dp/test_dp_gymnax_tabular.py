"""rljax.dp.gymnax_tabular: tabular versions of gymnax environments from their own dynamics."""

import numpy as np
import pytest

from rljax.dp import classic, gymnax_tabular
from rljax.dp import horizon as dp_horizon
from rljax.train import study_population


def _env(name, **kw):
    return study_population.make_env(name, **kw)


def test_catch_is_exact_and_zero_qvi_solvable():
    env = _env("Catch-bsuite")
    fields = ("ball_x", "ball_y", "paddle_x")
    mdp = gymnax_tabular.tabulate(env, fields, (range(5), range(10), range(5)), horizon=10)
    assert mdp.num_states == 5 * 10 * 5 + 1
    p = np.asarray(mdp.transitions)
    assert np.allclose(p.max(-1), 1.0)  # deterministic: one successor per (s, a)
    # The ball starts in row 0 in any of 5 columns, the paddle in the middle column.
    assert np.isclose(np.asarray(mdp.initial_dist).sum(), 1.0)
    assert np.count_nonzero(np.asarray(mdp.initial_dist)) == 5
    v_star = classic.initial_value(mdp, classic.value_iteration(mdp).values)
    assert np.isclose(float(v_star), 1.0, atol=1e-5)  # the paddle can always reach the ball
    assert int(dp_horizon.min_qvi_steps(mdp, 3)) == 0


def test_deep_sea_optimal_return_and_horizon_grows_with_size():
    h = []
    for size in (4, 6):
        env = _env("DeepSea-bsuite", size=size)
        grid = (range(size + 1), range(size + 1))
        mdp = gymnax_tabular.tabulate(env, ("row", "column"), grid, horizon=size, samples=2)
        v = float(classic.initial_value(mdp, classic.value_iteration(mdp).values))
        assert np.isclose(v, 0.99, atol=1e-4)  # 1 at the goal minus the move cost 0.01
        h.append(float(dp_horizon.effective_horizon(mdp, 4)))
    assert np.isfinite(h).all() and h[1] > h[0]


def test_jittered_aggregation_is_stochastic_and_valid():
    env = _env("MountainCar-v0")
    grids = (np.linspace(-1.2, 0.6, 8), np.linspace(-0.07, 0.07, 8))
    mdp = gymnax_tabular.tabulate(
        env, ("position", "velocity"), grids, horizon=20, samples=8, jitter=True
    )
    p = np.asarray(mdp.transitions)
    assert np.allclose(p.sum(-1), 1.0, atol=1e-5)
    assert (p.max(-1) < 1.0 - 1e-6).any()  # some cell splits over several successors


def test_bad_field_names_the_field():
    env = _env("Catch-bsuite")
    with pytest.raises(ValueError, match="nope"):
        gymnax_tabular.tabulate(env, ("nope",), (range(3),), horizon=3)
    with pytest.raises(ValueError, match="increasing"):
        gymnax_tabular.tabulate(env, ("ball_x",), ((2, 1),), horizon=3)
