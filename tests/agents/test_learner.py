"""rljax.agents.learner: what PPO, DQN and SQIRL share (chunked scan, lr annealing, configs)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.agents import dqn, learner, ppo, sqirl
from rljax.nets import q_heads


@pytest.mark.parametrize("agent", [ppo, dqn, sqirl])
def test_control_agents_have_what_the_population_runner_reads(agent):
    """Besides the learner contract: a rule per hyperparameter and the env steps per update."""
    assert set(agent.HPARAM_RULES) == set(agent.Hparams._fields)
    assert agent.env_steps_per_update(agent.Config()) >= 1


def test_train_chunk_equals_calling_update_in_a_loop():
    def update(config, env, state):
        new = state * config + env
        return new, {"x": new}

    state, metrics = learner.train_chunk(update, 2.0, 1.0, jnp.float32(1.0), 4)
    want = [3.0, 7.0, 15.0, 31.0]  # x <- 2x + 1
    np.testing.assert_allclose(metrics["x"], want)
    assert float(state) == 31.0


def test_annealed_lr_decays_linearly_to_zero_only_when_asked():
    lr = jnp.float32(1e-3)
    got = [float(learner.annealed_lr(lr, jnp.int32(s), 4, True)) for s in range(5)]
    np.testing.assert_allclose(got, [1e-3, 7.5e-4, 5e-4, 2.5e-4, 0.0], rtol=1e-6, atol=1e-12)
    assert float(learner.annealed_lr(lr, jnp.int32(3), 4, False)) == pytest.approx(1e-3)
    # Traced step inside jit: one compile for every step.
    jitted = jax.jit(lambda s: learner.annealed_lr(lr, s, 4, True))
    assert float(jitted(jnp.int32(2))) == pytest.approx(5e-4)


def test_config_from_dict_makes_tuples_and_names_unknown_fields():
    config = learner.config_from_dict(ppo.Config, "ppo", {"hidden": [32, 32], "num_envs": 2})
    assert config.hidden == (32, 32) and config.num_envs == 2
    with pytest.raises(ValueError, match=r"ppo.nope is not a field of rljax.agents.ppo.Config"):
        learner.config_from_dict(ppo.Config, "ppo", {"nope": 1})


def test_sqirl_config_gets_its_head_with_huber_delta():
    config = learner.config_from_dict(
        sqirl.Config, "sqirl", {"head": "huber", "huber_delta": 4.0, "num_bins": 11}
    )
    assert config.head == q_heads.Huber(delta=4.0)
    with pytest.raises(ValueError, match=r"sqirl.head='c51' is unknown"):
        sqirl.validate(learner.config_from_dict(sqirl.Config, "sqirl", {"head": "c51"}))
