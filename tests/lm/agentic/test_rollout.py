"""rljax.lm.agentic.rollout: one turn without a tool is single-turn sampling; the KV-cache
continuation after observations equals the cache-free reference token for token."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.lm.agentic import calculator
from rljax.lm.agentic.env import EnvSpec, Observation
from rljax.lm.agentic.rollout import sample_episodes
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.sampling import sample

CFG = TransformerConfig(d_model=32, n_layers=2, n_heads=2, d_ff=64, max_len=48)
SEMI = tokenizer.encode(";")[0]


@pytest.fixture(scope="module")
def params():
    p = init_params(CFG, jax.random.key(0))
    # EOS and ';' likely, so turns end at different lengths and some episodes end early
    bump = lambda x: x.at[:, tokenizer.EOS].add(1.5).at[:, SEMI].add(2.5)  # noqa: E731
    return jax.tree_util.tree_map_with_path(
        lambda path, x: bump(x) if "head" in str(path) else x, p
    )


def _prompts():
    return tokenizer.encode_prompts(["1+2=", "3*4-5=", "9=", "7-7+7-7="], 10)


class _EchoState(NamedTuple):
    turns: jax.Array


@dataclasses.dataclass(frozen=True)
class EchoEnv:
    """Answers each turn with its action's first tokens reversed, as many as the action is long
    modulo the slot (0 too: an empty observation); ends the episode at EOS."""

    spec: EnvSpec

    def reset(self, key, problem):
        return _EchoState(jnp.asarray(0, jnp.int32))

    def step(self, state, action, action_mask):
        size = self.spec.observation_tokens
        n = jnp.sum(action_mask)
        length = n % (size + 1)
        idx = jnp.arange(size)
        tokens = jnp.where(idx < length, action[jnp.clip(length - 1 - idx, 0, None)], 0)
        tokens = jnp.where(tokens == tokenizer.EOS, tokenizer.BOS + 3, tokens)
        done = jnp.any((action == tokenizer.EOS) & (action_mask > 0))
        obs = Observation(tokens.astype(jnp.int32), (idx < length).astype(jnp.int32))
        return obs, _EchoState(state.turns + 1), jnp.asarray(1.0), done


_run = jax.jit(
    sample_episodes,
    static_argnums=(1, 2),
    static_argnames=("temperature", "top_p", "recompute"),
)
_sample = jax.jit(sample, static_argnums=1, static_argnames=("max_new_tokens", "temperature"))


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_one_turn_without_tool_is_single_turn_sampling(params, temperature):
    tokens, mask = _prompts()
    env = calculator.CalculatorEnv.make(action_tokens=8, tool=False)
    table = _table(len(tokens))
    for seed in range(3):
        key = jax.random.key(seed)
        ep = _run(params, CFG, env, tokens, mask, table, key, temperature=temperature)
        ref = _sample(params, CFG, tokens, mask, key, max_new_tokens=8, temperature=temperature)
        np.testing.assert_array_equal(ep.policy_mask, ref.mask)
        np.testing.assert_array_equal(np.where(ep.policy_mask, ep.tokens, 0), ref.tokens)
        np.testing.assert_array_equal(ep.mask, ep.policy_mask)  # no environment tokens
        assert (np.asarray(ep.turns) == 1).all()


def _table(n, target=3):
    class Rows(NamedTuple):
        target_int: jax.Array

    return Rows(jnp.full((n,), target, jnp.int32))


@pytest.mark.slow  # the reference re-runs the whole buffer after every token
@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_cache_continuation_after_observations_equals_recompute(params, temperature):
    tokens, mask = _prompts()
    env = EchoEnv(EnvSpec(max_turns=4, action_tokens=6, observation_tokens=4, call_ids=(SEMI,)))
    table = _table(len(tokens))
    saw_obs = saw_gap = False
    for seed in range(3):
        key = jax.random.key(seed)
        kw = dict(temperature=temperature)
        a = _run(params, CFG, env, tokens, mask, table, key, **kw)
        b = _run(params, CFG, env, tokens, mask, table, key, recompute=True, **kw)
        for field in ("tokens", "mask", "policy_mask", "turn", "rewards", "turns", "ended"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        env_tokens = np.asarray(a.mask) - np.asarray(a.policy_mask)
        saw_obs |= bool(env_tokens.sum() > 0)
        saw_gap |= bool((np.diff(np.asarray(a.mask), axis=1) > 0).any())  # a slot reused later
    assert saw_obs and saw_gap  # observations were prefilled after unused action slots


def test_episode_bookkeeping(params):
    tokens, mask = _prompts()
    env = EchoEnv(EnvSpec(max_turns=3, action_tokens=5, observation_tokens=3, call_ids=(SEMI,)))
    ep = _run(params, CFG, env, tokens, mask, _table(4), jax.random.key(1))
    m, pm, turn = (np.asarray(x) for x in (ep.mask, ep.policy_mask, ep.turn))
    assert ep.tokens.shape == (4, 3 * 5 + 2 * 3)
    assert (pm <= m).all() and ((turn >= 0) == (m > 0)).all()
    # rewards: 1 per turn taken (EchoEnv), 0 after the episode ended
    np.testing.assert_array_equal(np.asarray(ep.rewards).sum(1), np.asarray(ep.turns))
    for row in range(4):  # an action slot is filled from its start, stop token last
        for t in range(int(ep.turns[row])):
            slots = pm[row, t * 8 : t * 8 + 5]
            n = int(slots.sum())
            assert (slots[:n] == 1).all() and (slots[n:] == 0).all()


@pytest.mark.parametrize(
    "spec,match",
    [
        (EnvSpec(0, 4, 2), "max_turns"),
        (EnvSpec(2, 0, 2), "action_tokens"),
        (EnvSpec(2, 4, 0, (SEMI,)), "observation_tokens=0"),
        (EnvSpec(4, 8, 8, (SEMI,)), "exceeds the model's max_len=48"),
        (EnvSpec(2, 4, 2, (64,)), "outside the vocabulary"),
    ],
)
def test_invalid_limits_are_one_line_errors_before_compiling(params, spec, match):
    tokens, mask = _prompts()
    with pytest.raises(ValueError, match=match):
        sample_episodes(params, CFG, EchoEnv(spec), tokens, mask, _table(4), jax.random.key(0))


def test_guess_env_answers_probes_and_the_demonstrations_win():
    from rljax.lm.agentic.guess import GuessEnv
    from rljax.lm.tasks import device_reward, guess

    env = GuessEnv.make()
    problems = [
        guess.Problem(f"guess64:abc{c}", str(x), 2) for c, x in zip("abc", (1, 37, 64), strict=True)
    ]
    problems.append(guess.Problem("guess16:abcd", "9", 1))
    table = device_reward.make_table(guess.TASK, problems)
    step = jax.jit(env.step)
    for i, p in enumerate(problems):
        state = env.reset(jax.random.key(0), jax.tree.map(lambda x, i=i: x[i], table))
        turns = guess.demonstrate(p)
        assert len(turns) <= env.spec.max_turns
        for t, (action, observation) in enumerate(turns):
            ids = tokenizer.encode(action) + ([tokenizer.EOS] if t == len(turns) - 1 else [])
            tokens = np.zeros(env.spec.action_tokens, np.int32)
            tokens[: len(ids)] = ids
            obs, state, reward, done = step(state, tokens, (tokens > 0).astype(np.int32))
            if t < len(turns) - 1:
                assert tokenizer.decode(np.asarray(obs.tokens).tolist() + [2])[0] == observation
                assert not bool(done) and float(reward) == 0.0
        assert bool(done) and float(reward) == 1.0 and bool(env.success(state))
    # a probe that is not a number is answered "x" and costs nothing but the turn
    bad = np.asarray(tokenizer.encode("a;") + [0, 0], np.int32)
    obs, state, _, done = step(state, bad, (bad > 0).astype(np.int32))
    assert tokenizer.decode(np.asarray(obs.tokens).tolist() + [2])[0] == "x" and not bool(done)
