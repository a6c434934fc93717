"""Library functions refuse invalid distributions and degenerate scales with a one-line
ValueError naming the argument (concrete inputs; traced ones are not checked), and a NaN
reward does not cross an episode boundary in GAE."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import dp, offline_data, returns
from rljax.dp import functionals
from rljax.lm.model import sampling
from rljax.losses import distributional

ATOMS = jnp.array([0.0, 1.0])


@pytest.mark.parametrize(
    "probs, match",
    [
        ([-1.0, 2.0], "probs has a negative entry"),
        ([0.2, 0.2], "probs sums to 0.4"),
        ([np.nan, 1.0], "probs has a non-finite entry"),
    ],
)
def test_cvar_refuses_invalid_probs(probs, match):
    # CVaR_0.1 of atoms [0, 1] with probs [-1, 2] used to return -5
    with pytest.raises(ValueError, match=match):
        functionals.cvar(ATOMS, jnp.array(probs), 0.1)


def test_cvar_accepts_a_distribution_and_traced_probs():
    assert float(functionals.cvar(ATOMS, jnp.array([0.5, 0.5]), 0.5)) == pytest.approx(0.0)
    traced = jax.jit(lambda p: functionals.cvar(ATOMS, p, 1.0))(jnp.array([0.25, 0.75]))
    assert float(traced) == pytest.approx(0.75)


def test_wasserstein_and_cramer_refuse_invalid_probs():
    good = jnp.array([0.5, 0.5])
    with pytest.raises(ValueError, match="probs_a has a negative entry"):
        functionals.wasserstein_1(ATOMS, jnp.array([-1.0, 2.0]), ATOMS, good)
    with pytest.raises(ValueError, match="probs_b sums to 3"):
        functionals.wasserstein_1(ATOMS, good, ATOMS, jnp.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="probs_a"):
        functionals.cramer_distance(ATOMS, jnp.array([0.9, 0.9]), ATOMS, good)
    assert float(functionals.wasserstein_1(ATOMS, good, ATOMS, good)) == 0.0


def test_dp_categorical_projection_refuses_invalid_weights():
    atoms = jnp.linspace(0.0, 1.0, 5)
    with pytest.raises(ValueError, match="weights has a negative entry"):
        dp.categorical_projection(atoms, jnp.array([0.3, 0.6]), jnp.array([-0.5, 1.5]))
    with pytest.raises(ValueError, match="weights sums to 2"):
        dp.categorical_projection(atoms, jnp.array([0.3, 0.6]), jnp.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="atoms is not strictly increasing"):
        dp.categorical_projection(atoms[::-1], jnp.array([0.3]), jnp.array([1.0]))
    out = dp.categorical_projection(atoms, jnp.array([0.3, 0.6]), jnp.array([0.5, 0.5]))
    assert float(out.sum()) == pytest.approx(1.0)


def test_loss_categorical_projection_refuses_invalid_probs():
    support = jnp.linspace(0.0, 1.0, 5)
    with pytest.raises(ValueError, match="probs_next has a negative entry"):
        distributional.categorical_projection(support, jnp.array([-1.0, 2.0, 0, 0, 0]), support)
    with pytest.raises(ValueError, match="probs_next sums to"):
        distributional.categorical_projection(support, jnp.full(5, 0.5), support)


def test_choose_refuses_negative_temperature_and_bad_top_p():
    logits = jnp.array([[0.0, 5.0, -5.0]])
    keys = sampling.row_keys(jax.random.PRNGKey(0), 1)
    with pytest.raises(ValueError, match="temperature=-1"):
        sampling.choose(logits, keys, -1.0, 1.0)
    with pytest.raises(ValueError, match="top_p=0"):
        sampling.choose(logits, keys, 1.0, 0.0)
    assert int(sampling.choose(logits, keys, 0.0, 1.0)[0]) == 1


def test_trajectory_quality_refuses_a_zero_scale():
    # used to return -inf (or NaN) when the random return equals the expert return
    with pytest.raises(ValueError, match="expert_return=10.0 equals random_return"):
        offline_data.trajectory_quality([5.0, 6.0], 10.0, 10.0)
    with pytest.raises(ValueError, match="expert_return=nan"):
        offline_data.trajectory_quality([5.0], 0.0, float("nan"))
    assert offline_data.trajectory_quality([5.0], 0.0, 10.0) == pytest.approx(0.5)


def test_gae_nan_reward_does_not_cross_an_episode_boundary():
    # episode 1 ends at t=1 (done); the next episode's reward at t=2 is NaN
    r = jnp.array([[1.0], [1.0], [jnp.nan], [1.0]])
    discount = jnp.array([[0.9], [0.0], [0.9], [0.9]])
    v = jnp.zeros((4, 1))
    done = jnp.array([[0.0], [1.0], [0.0], [0.0]])
    adv = np.asarray(returns.gae(r, discount, v, v, done, lambda_=0.95))
    assert np.all(np.isfinite(adv[:2])), adv  # the earlier episode is untouched
    np.testing.assert_allclose(adv[:2, 0], [1.0 + 0.9 * 0.95 * 1.0, 1.0], rtol=1e-6)
    assert np.isnan(adv[2, 0])  # inside its own episode the NaN stays visible
    grads = jax.grad(lambda v: returns.gae(r, discount, v, v, done, lambda_=0.95)[:2].sum())(v)
    assert np.all(np.isfinite(np.asarray(grads)))
