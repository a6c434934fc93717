"""TD3's delayed actor: critic-only steps leave the actor and its Adam state untouched, the actor
(and the targets) move once per ``policy_delay`` critic steps, in both layouts of ``td3._learn``
(the static cycle when the delay divides ``grad_steps``, the gated step otherwise), alone and in a
vmapped population; ``offpolicy.population_any`` keeps a ``lax.cond`` a branch under ``vmap``."""

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import envs
from rljax.agents import offpolicy, td3

ENV = envs.make("Pendulum-v1")
HP = td3.Hparams(1e-3, 1e-3, 0.99, 0.05, 0.1, 0.2, 0.5)
# 8 env steps per update: learning starts with the first update.
TINY = td3.Config(num_envs=2, rollout_steps=4, buffer_size=64, batch_size=8, learning_starts=8,
                  hidden=(8,), grad_steps=1, policy_delay=2, num_updates=4)  # fmt: skip


def _counts(state) -> tuple[int, int, int]:
    """(critic steps applied, the critics' Adam count, the actor's Adam count)."""
    opt = state.opt_state
    return int(state.grad_step), int(opt["critic"].count), int(opt["actor"].count)


def _moved(a, b) -> bool:
    return max(jax.tree.leaves(jax.tree.map(lambda x, y: float(jnp.max(jnp.abs(x - y))), a, b))) > 0


def test_critic_steps_leave_the_actor_alone_and_the_cycle_steps_it_once():
    """One critic step moves the critics only; a cycle of ``policy_delay = 2`` critic steps and
    its actor step moves the actor, its Adam count by one, and the targets (one compile)."""
    config = dataclasses.replace(TINY, grad_steps=2)
    random = lambda p, obs, k: jnp.zeros((obs.shape[0], 1))  # noqa: E731 (explore replaces it)
    learning = jnp.bool_(True)

    @jax.jit
    def run(state):
        _, buffer, _ = offpolicy.collect(ENV, random, state.params, jax.random.PRNGKey(1),
                                         state.env, state.buffer, 4, learning)  # fmt: skip
        state = state._replace(buffer=buffer)
        after = td3._critic_step(config, ENV, state, jax.random.PRNGKey(2), learning)[0]
        one, metrics = td3._learn(config, ENV, state, jax.random.PRNGKey(3), learning)
        return state, after, one, metrics

    state, after, one, metrics = run(td3.init(config, ENV, jax.random.PRNGKey(0), HP))
    chex.assert_trees_all_equal(after.params["actor"], state.params["actor"])
    chex.assert_trees_all_equal(after.opt_state["actor"], state.opt_state["actor"])
    chex.assert_trees_all_equal(after.target_params, state.target_params)
    assert _moved(after.params["critic"], state.params["critic"])
    assert _counts(after) == (1, 1, 0)
    assert _counts(one) == (2, 2, 1) and float(metrics["actor/steps"]) == 1.0
    assert _moved(one.params["actor"], state.params["actor"])
    assert _moved(one.target_params, state.target_params)


@pytest.mark.slow  # a compile of the update per case: 9-19 s each on the loaded 2-core CPU
@pytest.mark.parametrize("grad_steps, delay", [(1, 2), (3, 2), (2, 1)])
def test_actor_steps_once_per_delay_critic_steps(grad_steps, delay):
    """Update by update: the actor's Adam count is ``critic steps // delay``; the actor and the
    targets change exactly in the updates whose critic steps cross a multiple of the delay."""
    config = dataclasses.replace(TINY, grad_steps=grad_steps, policy_delay=delay)
    update = jax.jit(functools.partial(td3.update, config, ENV))
    state = td3.init(config, ENV, jax.random.PRNGKey(0), HP)
    for u in range(1, 5):
        new, metrics = update(state)
        critic_steps, critic_count, actor_count = _counts(new)
        assert critic_steps == critic_count == u * grad_steps
        assert actor_count == critic_steps // delay
        actor_steps = actor_count - _counts(state)[2]
        assert float(metrics["actor/steps"]) == actor_steps
        assert _moved(new.params["actor"], state.params["actor"]) == (actor_steps > 0)
        assert _moved(new.target_params, state.target_params) == (actor_steps > 0)
        state = new


@pytest.mark.slow  # two compiles of a chunk: 54 s under load on the 2-core CPU
def test_population_members_step_their_actors_like_solo_runs():
    """The gated layout (delay 2, one critic step per update) under ``vmap``: every member's
    actor steps on alternate updates and the population equals its members run alone."""
    keys = jax.random.split(jax.random.PRNGKey(5), 2)
    chunk = functools.partial(td3.train_chunk, TINY, ENV, num_updates=4)
    init = jax.vmap(functools.partial(td3.init, TINY, ENV), in_axes=(0, None))(keys, HP)
    pop, metrics = jax.jit(jax.vmap(chunk))(init)
    assert np.asarray(metrics["actor/steps"]).tolist() == [[0, 1, 0, 1]] * 2
    assert np.asarray(pop.opt_state["actor"].count).tolist() == [2, 2]
    solo = jax.jit(chunk)
    for i, key in enumerate(keys):
        alone, _ = solo(td3.init(TINY, ENV, key, HP))
        member = jax.tree.map(lambda x: x[i], pop)  # noqa: B023
        chex.assert_trees_all_close(member.params, alone.params, rtol=2e-5, atol=2e-6)


@pytest.mark.slow  # a compile of the update: 19 s under load
def test_no_gradient_step_before_learning_starts():
    """Random-action updates change no network or optimizer state and report 0 losses."""
    config = dataclasses.replace(TINY, learning_starts=24)  # updates 1 and 2 only collect
    state = td3.init(config, ENV, jax.random.PRNGKey(0), HP)
    update = jax.jit(functools.partial(td3.update, config, ENV))
    for _ in range(2):
        new, metrics = update(state)
        for field in ("params", "target_params", "opt_state", "grad_step"):
            chex.assert_trees_all_equal(getattr(new, field), getattr(state, field))
        assert float(metrics["loss/value"]) == 0.0 and float(metrics["actor/steps"]) == 0.0
        state = new
    assert _counts(update(state)[0]) == (1, 1, 0)


def test_population_any_is_one_unbatched_value_under_vmap():
    flags = jnp.array([False, True, False])
    shared = jax.vmap(offpolicy.population_any)  # the one value, broadcast back to the members
    assert np.asarray(shared(flags)).tolist() == [True] * 3
    assert np.asarray(shared(jnp.zeros(3, bool))).tolist() == [False] * 3
    assert bool(offpolicy.population_any(jnp.bool_(True)))

    def gated(flag, x):  # a cond on the shared value stays a branch (a select computes both)
        return jax.lax.cond(offpolicy.population_any(flag), jnp.sin, jnp.cos, x)

    lowered = jax.jit(jax.vmap(gated)).lower(flags, jnp.ones(3)).as_text()
    assert "stablehlo.case" in lowered or "stablehlo.if" in lowered
    per_member = jax.jit(jax.vmap(lambda f, x: jax.lax.cond(f, jnp.sin, jnp.cos, x)))
    assert "stablehlo.case" not in per_member.lower(flags, jnp.ones(3)).as_text()
