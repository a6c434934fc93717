"""Every learner follows the contract of rljax.agents: the members, and the shapes of their use."""

import dataclasses
import inspect

import pytest

from rljax import agents
from rljax.agents import dqn, grpo, mpo, offline, ppo, ppo_rnn, pqn, sac, sqirl, stale_grpo, td3


@pytest.mark.parametrize(
    "module",
    [ppo, ppo_rnn, dqn, pqn, sqirl, sac, td3, mpo, grpo, stale_grpo, offline],
    ids=lambda m: m.__name__,
)
def test_learner_modules_have_every_member_of_the_contract(module):
    for name in agents.MEMBERS:
        assert hasattr(module, name), f"{module.__name__} lacks {name}"
    assert dataclasses.is_dataclass(module.Config) and module.Config.__dataclass_params__.frozen
    assert hasattr(module.Hparams, "_fields") and hasattr(module.State, "_fields")
    assert "hparams" in module.State._fields
    # The second argument is the environment (gymnax) or the task data (RLVR): any name.
    init = list(inspect.signature(module.init).parameters)
    assert init[0] == "config" and init[2:4] == ["key", "hparams"]
    update = list(inspect.signature(module.update).parameters)
    assert update[0] == "config" and update[2] == "state" and len(update) == 3
    chunk = list(inspect.signature(module.train_chunk).parameters)
    assert chunk[0] == "config" and chunk[2:4] == ["state", "num_updates"]
