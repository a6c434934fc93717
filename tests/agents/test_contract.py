"""Every learner module of rljax.agents is a `Learner`: it trains through `population.run` with its
own evaluation (`Spec(evaluate="learner")`), and its `act` has the one signature
`act(config, env, state, obs, key, *, greedy=False)` and returns valid actions."""

import dataclasses
import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import agents, envs
from rljax.agents import (
    dqn,
    grpo,
    mpo,
    offline,
    ppo,
    ppo_rnn,
    pqn,
    sac,
    sqirl,
    stale_grpo,
    td3,
)
from rljax.agents.grpo import presets
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import TASKS, arithmetic, device_reward
from rljax.lm.tasks.batches import completion_length, prompt_length
from rljax.nets import recurrent as rnn
from rljax.train import population
from tests.train.test_population import _bandit

LEARNERS = (ppo, ppo_rnn, dqn, pqn, sqirl, sac, td3, mpo, grpo, stale_grpo, offline)
TINY = {  # static configs small enough to compile and run in seconds
    ppo: ppo.Config(num_envs=2, num_steps=8, num_epochs=1, num_minibatches=2, hidden=(8,)),
    ppo_rnn: ppo_rnn.Config(num_envs=2, num_steps=8, num_epochs=1, num_minibatches=2,
                            embed_size=8, core_size=8, hidden=(8,)),
    dqn: dqn.Config(num_envs=2, rollout_steps=4, buffer_size=64, batch_size=8, learning_starts=8,
                    target_update_every=8, hidden=(8,)),
    pqn: pqn.Config(num_envs=2, rollout_steps=8, num_epochs=1, num_minibatches=2, hidden=(8,)),
    sqirl: sqirl.Config(num_envs=2, rollout_steps=8, mc_steps=4, buffer_size=64, batch_size=8,
                        grad_steps=2, eval_envs=2, eval_steps=8, hidden=(8,)),
    sac: sac.Config(num_envs=2, rollout_steps=4, buffer_size=64, batch_size=8, learning_starts=8,
                    hidden=(8,)),
    td3: td3.Config(num_envs=2, rollout_steps=4, buffer_size=64, batch_size=8, learning_starts=8,
                    hidden=(8,)),
    mpo: mpo.Config(num_envs=2, rollout_steps=4, buffer_size=64, batch_size=8, learning_starts=8,
                    num_samples=4, hidden=(8,)),
    offline: offline.Config(algo="bcq", num_actions=2, batch_size=16, hidden=(8,)),
}  # fmt: skip
ENV = {ppo_rnn: "CartPole-NoVel-v1", sac: "Pendulum-v1", td3: "Pendulum-v1", mpo: "Pendulum-v1"}


def _lm(module):
    """A one-layer model on eight level-1 arithmetic problems, and the learner's `Hparams`."""
    task = TASKS["arithmetic"]
    rng = np.random.default_rng(0)
    model = TransformerConfig(
        d_model=16, n_layers=1, n_heads=2, d_ff=32,
        max_len=prompt_length(task) + completion_length(task),
    )  # fmt: skip
    config = grpo.Config(
        model=model, reward_kind=device_reward.KINDS["arithmetic"],
        completion_length=completion_length(task), prompts_per_step=2, group_size=2,
        max_epochs=1, max_minibatches=1,
    )  # fmt: skip
    table = device_reward.make_table(task, [arithmetic.generate(rng, 1) for _ in range(8)])
    table = jax.tree.map(jnp.asarray, table)
    data = grpo.TaskData(init_params(model, jax.random.PRNGKey(0)), table, table)
    values = presets.hparam_values(presets.resolve("grpo"))
    if module is grpo:
        return config, data, grpo.make_hparams(values)
    values = presets.resolve("lite_ppo")
    return stale_grpo.Config(config, max_lag=1), data, stale_grpo.make_hparams(values, 1, "tis")


def _spec(module) -> population.Spec:
    """One learner, two chunks of one update, evaluated by its own `evaluate` after each."""
    if module in (grpo, stale_grpo):
        config, data, hparams = _lm(module)
        stacked = jax.tree.map(lambda x: np.asarray(x)[None], hparams)
        return population.Spec(module, config, data, stacked, 2, 1, env_as_argument=True,
                               evaluate="learner")  # fmt: skip
    if module is offline:
        env, name = _bandit(), "offline"
        point = dict(lr=3e-3, gamma=0.9, cql_alpha=0.1, bcq_threshold=0.3, crr_beta=1.0)
    else:
        env, name = envs.make(ENV.get(module, "CartPole-v1")), module.__name__.rsplit(".")[-1]
        point = importlib.import_module(f"configs.{name}").get_config().hparams.to_dict()
    config = dataclasses.replace(TINY[module], num_updates=2)
    point = {k: point[k] for k in module.Hparams._fields}
    return population.Spec(
        module, config, env, population.grid_hparams(module, [point]), 2, 1, grid=(point,),
        evaluate="learner",
    )  # fmt: skip


def _observations(module, spec, key):
    """A batch of what `module.act` acts on."""
    if module in (grpo, stale_grpo):
        return spec.env.eval.prompt_tokens[:3], spec.env.eval.prompt_mask[:3]
    if module is offline:
        return spec.env.obs[:5]
    obs = envs.reset(spec.env, key, 5).obs
    if module is ppo_rnn:
        h = rnn.initial_state(ppo_rnn.network(spec.config, spec.env), 5)
        return ppo_rnn.Input(obs, h, jnp.ones((5,), bool))
    return obs


def _check_actions(module, spec, actions):
    if module in (grpo, stale_grpo):
        config = spec.config if module is grpo else spec.config.grpo
        assert actions.tokens.shape == (3, config.completion_length)
        vocab = config.model.vocab_size
        assert 0 <= int(actions.tokens.min()) and int(actions.tokens.max()) < vocab
        return
    if module is ppo_rnn:
        actions, h = actions
        assert h.shape == (5, spec.config.core_size) and bool(jnp.all(jnp.isfinite(h)))
    if module is offline or spec.env.discrete:
        num = spec.config.num_actions if module is offline else spec.env.num_actions
        assert actions.shape == (5,) and jnp.issubdtype(actions.dtype, jnp.integer)
        assert 0 <= int(actions.min()) and int(actions.max()) < num
    else:  # continuous: within the environment's bounds (PPO's Gaussian may leave them)
        assert actions.shape == (5, spec.env.num_actions)
        assert bool(jnp.all(jnp.isfinite(actions)))
        if module is not ppo:
            assert float(actions.min()) >= spec.env.action_low
            assert float(actions.max()) <= spec.env.action_high


def test_learner_lists_every_member_of_the_protocol():
    methods = {n for n in vars(agents.Learner) if not n.startswith("_")}
    assert methods | set(agents.Learner.__annotations__) == set(agents.MEMBERS)


@pytest.mark.slow
@pytest.mark.parametrize("module", LEARNERS, ids=lambda m: m.__name__.rsplit(".")[-1])
def test_every_learner_trains_evaluates_and_acts_through_the_pipeline(module, tmp_path):
    learner_module: agents.Learner = module  # the type the pipeline takes
    for name in agents.MEMBERS:
        assert hasattr(learner_module, name), f"{module.__name__} lacks {name}"
    spec = _spec(module)
    module.validate(spec.config)
    score = "loss/total" if module in (grpo, stale_grpo, offline) else "episode/return"
    result = population.run(
        spec, workdir=str(tmp_path), title="contract", checkpoint_every=2, resume=False,
        progress=False, count_key=None, score_key=score,
    )  # fmt: skip
    assert result.summary.updates_done == 2 and result.eval_updates == (1, 2)
    assert result.evaluations, "the learner's evaluate returned nothing"
    for name, value in result.evaluations.items():  # one scalar per learner and per chunk
        assert np.shape(value) == (1, 2), (name, np.shape(value))
        assert np.all(np.isfinite(value)), (name, value)
    state = jax.tree.map(lambda x: x[0], result.states)
    obs = _observations(module, spec, jax.random.PRNGKey(1))
    act = jax.jit(functools.partial(module.act, spec.config, spec.env), static_argnames="greedy")
    for greedy in (False, True):
        _check_actions(module, spec, act(state, obs, jax.random.PRNGKey(2), greedy=greedy))
