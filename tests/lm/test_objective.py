"""rljax.agents.grpo.objective: choices dispatch by name, so a choice added to the presets without
its
implementation fails loudly instead of training as another one."""

import jax.numpy as jnp
import numpy as np
import pytest

from rljax import returns
from rljax.agents.grpo import objective, presets


def _choice(**codes):
    values = presets.hparam_values(presets.resolve("grpo"))
    fields = {f: jnp.asarray(values[f]) for f in objective.Choice._fields}
    return objective.Choice(**{**fields, **{k: jnp.asarray(v) for k, v in codes.items()}})


def _micro(rows=4, length=3, group=2):
    rng = np.random.default_rng(0)
    f = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float32)  # noqa: E731
    mask = jnp.ones((rows, length))
    return objective.MicroBatch(
        f(rows, length), f(rows, length), f(rows, length), f(rows, length), f(rows, length),
        f(rows, length), mask, f(rows), jnp.asarray([1.0, 0.0, 0.0, 1.0]),
        jnp.full((rows,), 0.5), group,
    )  # fmt: skip


def test_select_picks_by_name_and_refuses_a_name_without_an_implementation():
    options = {"a": jnp.asarray(1.0), "b": jnp.asarray(2.0)}
    assert float(objective.select(jnp.asarray(1), options, ("a", "b"), "x")) == 2.0
    assert float(objective.select(jnp.asarray(0), options, ("b", "a"), "x")) == 2.0
    with pytest.raises(ValueError, match=r"x: no implementation of \['c'\]"):
        objective.select(jnp.asarray(0), options, ("a", "b", "c"), "x")
    with pytest.raises(ValueError, match=r"unknown names \['b'\]"):
        objective.select(jnp.asarray(0), options, ("a",), "x")


def test_an_added_policy_loss_without_implementation_cannot_train_as_another(monkeypatch):
    mb, norms = _micro(), objective.minibatch_norms(jnp.ones((4, 3)), 0)
    code = len(presets.POLICY_LOSSES)  # the new loss's code, one past the known ones
    monkeypatch.setattr(presets, "POLICY_LOSSES", (*presets.POLICY_LOSSES, "new_loss"))
    with pytest.raises(ValueError, match=r"policy_loss: no implementation of \['new_loss'\]"):
        objective.policy_loss(_choice(policy_loss=code), mb, norms, 3.0)


def test_an_added_sequence_loss_without_implementation_fails(monkeypatch):
    mb, norms = _micro(), objective.minibatch_norms(jnp.ones((4, 3)), 0)
    monkeypatch.setattr(presets, "POLICY_LOSSES", (*presets.POLICY_LOSSES, "seq_new"))
    monkeypatch.setattr(presets, "SEQUENCE_LOSSES", (*presets.SEQUENCE_LOSSES, "seq_new"))
    with pytest.raises(ValueError, match="sequence-level losses"):
        objective.policy_loss(_choice(), mb, norms, 3.0)


def test_an_added_advantage_without_implementation_fails(monkeypatch):
    monkeypatch.setattr(presets, "ADVANTAGES", (*presets.ADVANTAGES, "new_adv"))
    with pytest.raises(ValueError, match=r"advantage: no implementation of \['new_adv'\]"):
        objective.advantages(_choice(), jnp.ones((2, 2)), jnp.ones((2, 2)), 1.0)


@pytest.mark.parametrize("name", presets.ADVANTAGES)
def test_every_advantage_code_selects_its_named_estimator(name):
    rewards = jnp.asarray([[1.0, 0.0, 0.5], [0.0, 0.0, 1.0]])
    mask = jnp.ones_like(rewards)
    got = objective.advantages(
        _choice(advantage=presets.ADVANTAGES.index(name)), rewards, mask, 1.0
    )
    kwargs = {"r_max": 1.0} if name == "ngrpo" else {}
    want = getattr(returns, f"{name}_advantages")(rewards, mask, **kwargs)
    np.testing.assert_allclose(got, want)
