"""rljax.agents.dpt_darkroom: config checks, a pretraining step and online acting."""

import jax
import jax.numpy as jnp
import pytest

from rljax import darkroom
from rljax.agents import dpt_darkroom

TINY = dpt_darkroom.Config(side=3, horizon=4, context_episodes=1, d_model=8, num_layers=1,
                           num_heads=2, batch_size=4)  # fmt: skip


@pytest.mark.parametrize(
    "field, value", [("side", 1), ("d_model", 7), ("lr", 0.0), ("concentration", -1.0)]
)
def test_validate_names_the_field(field, value):
    import dataclasses

    with pytest.raises(ValueError, match=f"dpt_darkroom.{field}"):
        dpt_darkroom.validate(dataclasses.replace(TINY, **{field: value}))


def test_updates_advance_and_act_returns_valid_actions():
    state = dpt_darkroom.init(TINY, jax.random.PRNGKey(0))
    goals = jnp.arange(TINY.side**2, dtype=jnp.int32)
    state, metrics = dpt_darkroom.train_chunk(TINY, goals, state, 3)
    assert int(state.step) == 3
    assert bool(jnp.all(jnp.isfinite(metrics["loss/ce"])))
    B, T = 2, 2 * TINY.horizon
    history = tuple(jnp.zeros((B, T), d) for d in (jnp.int32, jnp.int32, jnp.float32, jnp.int32))
    for t in (0, TINY.horizon + 1):
        for greedy in (False, True):
            a = dpt_darkroom.act(TINY, state, jnp.zeros((B,), jnp.int32), history, t,
                                 jax.random.PRNGKey(t), greedy=greedy)  # fmt: skip
            assert a.shape == (B,) and a.dtype == jnp.int32
            assert bool(jnp.all((a >= 0) & (a < darkroom.NUM_ACTIONS)))
