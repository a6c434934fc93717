"""rljax.agents.dpt: causality of the in-context transformer, pretraining learns, online acting."""

import jax
import numpy as np
import pytest

from rljax import bandits
from rljax.agents import dpt

CONFIG = dpt.Config(num_arms=3, horizon=12, d_model=16, num_heads=2, batch_size=16, lr=3e-3)


@pytest.mark.slow
def test_prediction_at_t_ignores_later_pulls():
    state = dpt.init(CONFIG, jax.random.PRNGKey(0))
    tokens, _, _ = bandits.pretraining_batch(jax.random.PRNGKey(1), 4, 3, 12)
    changed = tokens.at[:, 6:].set(jax.random.uniform(jax.random.PRNGKey(2), tokens[:, 6:].shape))
    net = dpt.network(CONFIG)
    a, b = net.apply(state.params, tokens), net.apply(state.params, changed)
    np.testing.assert_allclose(a[:, :6], b[:, :6], atol=1e-5)
    assert not np.allclose(a[:, 6:], b[:, 6:])


def test_validate_names_the_field():
    with pytest.raises(ValueError, match="dpt.d_model"):
        dpt.validate(dpt.Config(d_model=30, num_heads=4))
    with pytest.raises(ValueError, match="dpt.lr"):
        dpt.validate(dpt.Config(lr=0.0))


@pytest.mark.slow
def test_pretraining_beats_chance_and_online_acting_has_less_regret_than_uniform():
    state = dpt.init(CONFIG, jax.random.PRNGKey(0))
    state, metrics = jax.jit(lambda s: dpt.train_chunk(CONFIG, s, 300))(state)
    assert float(metrics["accuracy/last"][-50:].mean()) > 0.55  # chance 1/3
    means = bandits.sample_means(jax.random.PRNGKey(5), 256, 3)
    pol = lambda a, r, t, k: dpt.act(CONFIG, None, state, (a, r, t), k)  # noqa: E731
    r_dpt = bandits.run_online(pol, means, jax.random.PRNGKey(6), 12)[2]
    uni = lambda *a: bandits.uniform(*a, num_arms=3)  # noqa: E731
    r_uni = bandits.run_online(uni, means, jax.random.PRNGKey(6), 12)[2]
    assert float(r_dpt.sum(-1).mean()) < 0.8 * float(r_uni.sum(-1).mean())
