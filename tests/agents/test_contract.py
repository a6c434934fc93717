"""Every learner follows the contract of rljax.agents: the members, and the shapes of their use."""

import dataclasses
import inspect

import pytest

from rljax import agents
from rljax.agents import dqn, grpo, ppo, sqirl


@pytest.mark.parametrize("module", [ppo, dqn, sqirl, grpo], ids=lambda m: m.__name__)
def test_learner_modules_have_every_member_of_the_contract(module):
    for name in agents.MEMBERS:
        assert hasattr(module, name), f"{module.__name__} lacks {name}"
    assert dataclasses.is_dataclass(module.Config) and module.Config.__dataclass_params__.frozen
    assert hasattr(module.Hparams, "_fields") and hasattr(module.State, "_fields")
    assert "hparams" in module.State._fields
    assert list(inspect.signature(module.init).parameters)[:4] == [
        "config",
        "env",
        "key",
        "hparams",
    ]
    assert list(inspect.signature(module.update).parameters)[:3] == ["config", "env", "state"]
    chunk = list(inspect.signature(module.train_chunk).parameters)
    assert chunk[:4] == ["config", "env", "state", "num_updates"]
