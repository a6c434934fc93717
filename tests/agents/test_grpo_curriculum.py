"""Prompt selection: the level index, bandit logits and TD(0) updates on hand-computed inputs;
draws by level; a uniform learner draws what it drew before curricula existed; curricula and
balanced filtering inside the learner's step; config errors."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.agents import grpo
from rljax.agents.grpo import curriculum, presets
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import TASKS, device_reward, make_split

MODEL = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=40)
B, G, STEPS = 4, 4, 2
# Module-level jits: one compile per config, shared by the tests.
_CHUNK = jax.jit(grpo.train_chunk, static_argnums=(0, 3))
_ROLLOUT = jax.jit(grpo._rollout, static_argnums=0)


def _first_rollout(config, data, state):
    k_prompts, k_sample, _, _ = jax.random.split(jax.random.fold_in(state.key, state.step), 4)
    return _ROLLOUT(config, data, state, k_prompts, k_sample), k_prompts


def test_level_index_groups_rows_by_level():
    index = curriculum.level_index(jnp.asarray([2, 1, 3, 1, 2]), 3)
    np.testing.assert_array_equal(index.order, [1, 3, 0, 4, 2])
    np.testing.assert_array_equal(index.start, [0, 2, 4])
    np.testing.assert_array_equal(index.count, [2, 2, 1])
    # a level above K is never reachable: level 2 ends before it
    index = curriculum.level_index(jnp.asarray([3, 2, 1, 2]), 2)
    np.testing.assert_array_equal(index.count, [1, 2])
    rows = {int(index.order[index.start[1] + i]) for i in range(2)}
    assert rows == {1, 3}


def test_level_logits_hand_computed():
    state = curriculum.CurriculumState(jnp.asarray([0.2, 0.5, 0.1]), jnp.asarray([10.0, 30.0, 0.0]))
    avail = jnp.asarray([True, True, False])
    kw = dict(temperature=jnp.asarray(0.5), ucb_c=jnp.asarray(1.0))
    sec = curriculum.level_logits(jnp.asarray(curriculum.SEC), state, avail, **kw)
    np.testing.assert_allclose(sec[:2], [0.4, 1.0], rtol=1e-6)
    assert sec[2] == -jnp.inf
    ucb = curriculum.level_logits(jnp.asarray(curriculum.UCB), state, avail, **kw)
    bonus = [math.sqrt(2 * math.log(40) / 10), math.sqrt(2 * math.log(40) / 30)]
    np.testing.assert_allclose(ucb[:2], [(0.2 + bonus[0]) / 0.5, (0.5 + bonus[1]) / 0.5], rtol=1e-6)
    uni = curriculum.level_logits(jnp.asarray(curriculum.UNIFORM), state, avail, **kw)
    np.testing.assert_array_equal(uni, [0.0, 0.0, -jnp.inf])
    # before any draw (N = 0) UCB has no bonus: it is SEC
    fresh = curriculum.init(3)
    a = curriculum.level_logits(jnp.asarray(curriculum.UCB), fresh, avail, **kw)
    np.testing.assert_array_equal(a, [0.0, 0.0, -jnp.inf])


def test_td0_update_hand_computed():
    state = curriculum.CurriculumState(jnp.asarray([0.2, 0.5, 0.1]), jnp.asarray([1.0, 2.0, 3.0]))
    level = jnp.asarray([0, 0, 2, 2, 2])
    reward = jnp.asarray([1.0, 0.0, 0.3, 0.6, 0.0])
    new = curriculum.update(state, level, reward, learning_rate=jnp.asarray(0.5))
    # level 1: mean 0.5, 0.2 + 0.5 (0.5 - 0.2); level 2: not drawn, kept; level 3: mean 0.3
    np.testing.assert_allclose(new.value, [0.35, 0.5, 0.2], rtol=1e-6)
    np.testing.assert_array_equal(new.count, [3.0, 2.0, 6.0])
    full = curriculum.update(state, level, reward, learning_rate=jnp.asarray(1.0))
    np.testing.assert_allclose(full.value, [0.5, 0.5, 0.3], rtol=1e-6)


def test_balanced_band():
    p = jnp.asarray([0.0, 0.125, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(curriculum.balanced(p, 0.25), [0, 0, 1, 1, 1, 0])
    assert bool(jnp.all(curriculum.balanced(p, 0.5)))


def test_draw_follows_the_level_distribution_and_is_uniform_within_a_level():
    level = jnp.asarray([1, 1, 1, 2, 2, 3, 1, 2])
    index = curriculum.level_index(level, 3)
    logits = jnp.log(jnp.asarray([0.5, 0.3, 0.2]))
    keys = jax.random.split(jax.random.PRNGKey(0), 20000)
    rows, lvl = jax.vmap(lambda k: curriculum.draw(k, logits, index))(keys)
    np.testing.assert_array_equal(level[rows] - 1, lvl)  # the row is of the drawn level
    np.testing.assert_allclose(np.bincount(lvl, minlength=3) / 20000, [0.5, 0.3, 0.2], atol=0.015)
    # within level 1 (rows 0, 1, 2, 6) each row has probability 1/4 (sd of a share ≈ 0.005)
    in_one = np.asarray(rows)[np.asarray(lvl) == 0]
    shares = np.bincount(in_one, minlength=8)[[0, 1, 2, 6]] / len(in_one)
    np.testing.assert_allclose(shares, 0.25, atol=0.02)
    only_three = jnp.asarray([-jnp.inf, -jnp.inf, 0.0])
    rows, _ = jax.vmap(lambda k: curriculum.draw(k, only_three, index))(keys[:50])
    assert set(np.asarray(rows).tolist()) == {5}


@pytest.fixture(scope="module")
def data():
    task = TASKS["arithmetic"]
    problems = make_split(task, num_per_level=8, seed=0)
    table = jax.tree.map(jnp.asarray, device_reward.make_table(task, problems))
    assert set(np.asarray(table.level).tolist()) == {1, 2, 3}
    return grpo.TaskData(init_params(MODEL, jax.random.key(0)), table, table)


def _config(num_levels=3, oversample=1):
    return grpo.Config(
        model=MODEL, reward_kind="final_int", completion_length=8, prompts_per_step=B,
        group_size=G, oversample=oversample, num_levels=num_levels,
    )  # fmt: skip


def _hp(preset="lite_ppo", **overrides):
    # The random reward makes rewards vary within groups of a random-init model.
    values = presets.resolve(preset, reward="random", **overrides)
    return grpo.make_hparams(presets.hparam_values(values))


def _run(config, data, hp, key=5, state=None):
    state = state if state is not None else grpo.init(config, data, jax.random.PRNGKey(key), hp)
    return _CHUNK(config, data, state, STEPS)


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
@pytest.mark.parametrize("preset,oversample", [("lite_ppo", 1), ("dapo", 2)])
def test_uniform_learner_is_the_learner_without_curricula(data, preset, oversample):
    """Same keys, same draws: a uniform learner with the level machinery compiled in (K = 3)
    trains exactly as with none (K = 0), and draws group g's problem as
    randint(fold_in(prompt key, g), 0, N), the draw of the learner before curricula."""
    hp = _hp(preset)
    with_levels, m1 = _run(_config(3, oversample), data, hp)
    without, m0 = _run(_config(0, oversample), data, hp)
    for a, b in zip(
        jax.tree.leaves(with_levels.params), jax.tree.leaves(without.params), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    for k, v in m0.items():
        np.testing.assert_array_equal(v, m1[k], err_msg=k)
    config = _config(3, oversample)
    ro, k_prompts = _first_rollout(config, data, grpo.init(config, data, jax.random.PRNGKey(5), hp))
    n = data.train.level.shape[0]
    drawn = [int(jax.random.randint(jax.random.fold_in(k_prompts, g), (), 0, n)) for g in range(8)]
    if oversample == 1:
        np.testing.assert_array_equal(ro.problem, drawn[:B])
    else:  # kept groups are drawn groups, in draw order
        assert set(np.asarray(ro.problem).tolist()) <= set(drawn)


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_sec_learner_draws_only_its_favoured_level_and_updates_its_values(data):
    config = _config()
    hp = _hp(curriculum="sec", curriculum_temp=0.01)
    state = grpo.init(config, data, jax.random.PRNGKey(1), hp)
    state = state._replace(curriculum=curriculum.CurriculumState(jnp.asarray([0.0, 0.0, 1.0]),
                                                                 jnp.zeros(3)))  # fmt: skip
    ro, _ = _first_rollout(config, data, state)
    assert set(np.asarray(data.train.level[ro.problem]).tolist()) == {3}
    np.testing.assert_array_equal(ro.level, [2] * B)
    new, metrics = _run(config, data, hp, state=state)
    np.testing.assert_array_equal(metrics["curriculum/level3"], [1.0] * STEPS)
    # each step moves the level-3 value half-way (α = 0.5) to the step's mean |A| (every group
    # is trained, so that is adv/abs_mean); the other levels keep theirs
    value = 1.0
    for a in np.asarray(metrics["adv/abs_mean"]):
        value += 0.5 * (a - value)
    np.testing.assert_allclose(new.curriculum.value, [0.0, 0.0, value], rtol=1e-5)
    np.testing.assert_array_equal(new.curriculum.count, [0, 0, STEPS * B])


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_population_of_curricula_equals_each_learner_alone(data):
    """vmapped uniform / sec / ucb learners (one with balanced filtering) == each run alone."""
    config = _config(3, oversample=2)
    hps = [
        _hp(),
        _hp(curriculum="sec"),
        _hp(curriculum="ucb", ucb_c=0.5),
        _hp("dapo", balance_delta=0.25),
    ]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *hps)
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(4))
    states = jax.vmap(lambda k, h: grpo.init(config, data, k, h))(keys, stacked)
    chunk = jax.vmap(lambda s: grpo.train_chunk(config, data, s, STEPS))
    pop, pop_metrics = jax.jit(chunk)(states)
    for i, hp in enumerate(hps):
        alone, metrics = _run(config, data, hp, key=i)
        np.testing.assert_allclose(pop.curriculum.value[i], alone.curriculum.value, rtol=1e-5)
        for k in ("reward/mean", "groups/kept_frac", "curriculum/level3", "tokens/generated"):
            np.testing.assert_allclose(pop_metrics[k][i], metrics[k], rtol=1e-5, err_msg=k)
    # the balanced learner samples all 2B drawn groups, the uniform one its first B
    assert float(pop_metrics["tokens/generated"][3].mean()) > float(
        pop_metrics["tokens/generated"][0].mean()
    )


def test_balanced_filter_keeps_only_groups_in_the_band(data):
    config = _config(3, oversample=2)
    hp = _hp("dapo", balance_delta=0.0)  # only p̂ = 1/2 passes
    kept = 0
    for seed in range(4):
        state = grpo.init(config, data, jax.random.PRNGKey(seed), hp)
        ro, _ = _first_rollout(config, data, state)
        rate = np.asarray(ro.correct).reshape(B, G).mean(1)
        valid = np.asarray(ro.group_valid) > 0
        np.testing.assert_array_equal(rate[valid], 0.5)
        kept += valid.sum()
    assert 0 < kept < 4 * B  # some groups pass the band, some are dropped


def test_config_errors():
    with pytest.raises(ValueError, match="rl.curriculum='easy_first' is unknown; valid: uniform"):
        presets.check(presets.resolve("grpo", curriculum="easy_first"))
    with pytest.raises(
        ValueError, match=r"rl.curriculum_temp=0.0 is invalid; allowed: a finite > 0"
    ):
        presets.check(presets.resolve("grpo", curriculum_temp=0.0))
    with pytest.raises(ValueError, match=r"rl.curriculum_lr=1.5 is invalid; allowed: in \(0, 1\]"):
        presets.check(presets.resolve("grpo", curriculum_lr=1.5))
    with pytest.raises(
        ValueError, match=r"rl.balance_delta=0.6 is invalid; allowed: in \[0, 0.5\]"
    ):
        presets.check(presets.resolve("dapo", balance_delta=0.6))
    with pytest.raises(ValueError, match="needs dynamic_sampling=1"):
        presets.check(presets.resolve("grpo", balance_delta=0.25))
    with pytest.raises(ValueError, match="rl.ucb_c=-1.0 is invalid"):
        presets.check(presets.resolve("grpo", ucb_c=-1.0))
    with pytest.raises(ValueError, match="num_levels=-1 is invalid"):
        grpo.validate(_config(num_levels=-1))
