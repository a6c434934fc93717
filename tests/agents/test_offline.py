"""rljax.agents.offline: validation, the losses as the sum of their parts, acting, learning."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import offline_data
from rljax.agents import offline
from rljax.losses import offline as offline_losses

HP = offline.Hparams(lr=3e-3, gamma=0.9, cql_alpha=0.5, bcq_threshold=0.3, crr_beta=1.0)


def _bandit(n=512, seed=0) -> offline_data.Dataset:
    """One-step episodes: s ~ U[-1, 1]², uniform actions, reward 1 iff a = 1[s_0 > 0]."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    action = rng.integers(0, 2, n)
    reward = (action == (obs[:, 0] > 0)).astype(np.float32)
    return offline_data.Dataset(
        obs=jnp.asarray(obs), action=jnp.asarray(action, jnp.int32),
        reward=jnp.asarray(reward), next_obs=jnp.asarray(obs), terminated=jnp.ones(n),
        episode_return=jnp.asarray(reward), cdf=jnp.arange(1, n + 1) / n,
    )  # fmt: skip


@pytest.mark.parametrize(
    "field, value, match",
    [("algo", "iql", "algo='iql' is unknown"), ("batch_size", 0, "batch_size=0"),
     ("hidden", (), "hidden=()"), ("num_actions", 1, "num_actions=1")],
)  # fmt: skip
def test_validate_names_the_bad_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        offline.validate(dataclasses.replace(offline.Config(), **{field: value}))
    with pytest.raises(ValueError, match="crr_beta=0"):
        offline.validate_hparams({**HP._asdict(), "crr_beta": 0})


def test_cql_loss_is_dqn_loss_plus_alpha_times_the_penalty():
    data = _bandit(64)
    dqn, cql = offline.Config(algo="dqn"), offline.Config(algo="cql")
    state = offline.init(dqn, data, jax.random.PRNGKey(0), HP)
    batch = jax.tree.map(lambda x: x[:32], data)
    l_dqn, _ = offline.loss_fn(state.params, state.params, dqn, batch, HP)
    l_cql, m = offline.loss_fn(state.params, state.params, cql, batch, HP)
    q = offline.networks(cql)["q"].apply(state.params["q"], batch.obs)[..., 0]
    penalty = jnp.mean(offline_losses.cql_penalty(q, batch.action))
    np.testing.assert_allclose(float(l_cql), float(l_dqn + 0.5 * penalty), rtol=1e-5)
    np.testing.assert_allclose(float(m["loss/cql"]), float(penalty), rtol=1e-5)


def test_an_algorithm_is_a_table_row(monkeypatch):
    """A new combination of parts (CQL's regularizer on the QR-DQN head) is one ``ALGOS`` entry:
    it trains, its loss is QR-DQN's plus α times CQL's penalty, and an unknown name is refused
    naming the valid ones."""
    monkeypatch.setitem(offline.ALGOS, "qr_cql", offline.Algo(nets=("q",), head="qr", cql=True))
    data = _bandit(64)
    qr, qr_cql = offline.Config(algo="qr_dqn"), offline.Config(algo="qr_cql")
    offline.validate(qr_cql)
    state = offline.init(qr_cql, data, jax.random.PRNGKey(0), HP)
    batch = jax.tree.map(lambda x: x[:32], data)
    l_qr, _ = offline.loss_fn(state.params, state.params, qr, batch, HP)
    l_cql, m = offline.loss_fn(state.params, state.params, qr_cql, batch, HP)
    q = offline.head(qr_cql).q_values(
        offline.networks(qr_cql)["q"].apply(state.params["q"], batch.obs)
    )
    penalty = jnp.mean(offline_losses.cql_penalty(q, batch.action))
    np.testing.assert_allclose(float(l_cql), float(l_qr + 0.5 * penalty), rtol=1e-5)
    state, metrics = offline.train_chunk(qr_cql, data, state, 3)
    assert np.isfinite(metrics["loss/cql"]).all() and int(state.step) == 3
    with pytest.raises(ValueError, match=r"algo='qr_iql' is unknown; valid: bc, dqn, .*qr_cql"):
        offline.validate(offline.Config(algo="qr_iql"))


def test_bc_loss_is_the_mean_negative_log_likelihood():
    data = _bandit(16)
    config = offline.Config(algo="bc")
    state = offline.init(config, data, jax.random.PRNGKey(1), HP)
    loss, _ = offline.loss_fn(state.params, state.params, config, data, HP)
    logits = offline.networks(config)["pi"].apply(state.params["pi"], data.obs)[..., 0]
    logp = jax.nn.log_softmax(logits)[jnp.arange(16), data.action]
    np.testing.assert_allclose(float(loss), float(-jnp.mean(logp)), rtol=1e-5)


def test_bcq_acts_like_bc_at_tau_one_and_like_dqn_at_tau_zero():
    data = _bandit(64)
    config = offline.Config(algo="bcq", num_actions=3)
    state = offline.init(config, data, jax.random.PRNGKey(2), HP)
    nets = offline.networks(config)
    q = nets["q"].apply(state.params["q"], data.obs)[..., 0]
    logits = nets["pi"].apply(state.params["pi"], data.obs)[..., 0]
    for tau, want in ((1.0, jnp.argmax(logits, -1)), (0.0, jnp.argmax(q, -1))):
        got = offline.act(
            config, data, state._replace(hparams=HP._replace(bcq_threshold=tau)), data.obs, None
        )
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("algo", ["dqn", "qr_dqn", "iqn", "cql", "bcq", "crr"])
def test_learns_the_better_action_from_random_data(algo):
    """Every value-based learner finds the rewarded action of a contextual bandit (BC cannot:
    the data's actions are uniform)."""
    data = _bandit()
    config = offline.Config(algo=algo, batch_size=64, hidden=(32,), num_updates=300)
    offline.validate(config)
    state = offline.init(config, data, jax.random.PRNGKey(3), HP)
    chex.clear_trace_counter()
    chunk = jax.jit(chex.assert_max_traces(offline.train_chunk, n=1), static_argnums=(0, 3))
    state, metrics = chunk(config, data, state, 150)
    state, metrics = chunk(config, data, state, 150)  # no retrace
    assert np.all(np.isfinite(metrics["loss/total"]))
    test = _bandit(256, seed=9)
    acc = float(jnp.mean(offline.act(config, None, state, test.obs, None) == (test.obs[:, 0] > 0)))
    assert acc > 0.9, acc  # measured 0.95 (CRR) to 0.99; BC (not tested) 0.43


def test_vmapped_over_datasets_and_seeds_in_one_program():
    """Uniform and return-weighted versions of one dataset (a vmap axis) × 2 seeds."""
    data = _bandit(128)
    rw = offline_data.with_probs(
        data, offline_data.return_weights(data.episode_return, temperature=0.1)
    )
    both = jax.tree.map(lambda *x: jnp.stack(x), data, rw)
    config = offline.Config(algo="bc", batch_size=32, hidden=(8,))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    init = jax.vmap(jax.vmap(lambda d, k: offline.init(config, d, k, HP), (None, 0)), (0, None))
    run = jax.vmap(jax.vmap(lambda d, s: offline.train_chunk(config, d, s, 5), (None, 0)))
    state, metrics = jax.jit(run)(both, init(both, keys))
    assert metrics["loss/bc"].shape == (2, 2, 5) and state.step.shape == (2, 2)
    # Same seed, different sampling: different batches, so different parameters.
    p = jax.tree.leaves(state.params)[0]
    assert not np.allclose(p[0, 0], p[1, 0])
