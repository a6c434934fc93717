"""The RLVR trainer: every preset takes one step on a tiny model; dynamic sampling; resume."""

import chex
import jax
import numpy as np
import pytest

from rljax.lm import presets, rl_loop, rlvr
from rljax.lm.data import completion_length
from rljax.lm.model import TransformerConfig, init_params
from rljax.lm.rollout import generate_and_score
from rljax.lm.tasks import TASKS, make_split

TASK = TASKS["arithmetic"]
MODEL = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=32)


@pytest.fixture(scope="module")
def setup():
    problems = make_split(TASK, num_per_level=8, seed=0)
    params = init_params(MODEL, jax.random.key(0))
    scored = generate_and_score(
        params,
        MODEL,
        TASK,
        problems[:4],
        jax.random.key(1),
        group_size=4,
        temperature=1.0,
        top_p=1.0,
    )
    rewards = np.tile(np.array([[1.0, 0.0, 0.0, 1.0]], np.float32), (4, 1))  # varied groups
    batch = rlvr.RolloutBatch(*scored[:4], rewards, np.ones((4, 4), np.float32))
    return params, batch


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
def test_every_preset_runs_one_step(setup, preset):
    chex.clear_trace_counter()
    params, batch = setup
    cfg, _ = presets.make_rl_config(preset, completion_length=completion_length(TASK))
    state = rlvr.init(cfg, params)
    step = jax.jit(
        chex.assert_max_traces(lambda s, b, k: rlvr.update(s, b, k, cfg=cfg, model_cfg=MODEL), n=1)
    )
    new_state, metrics = step(state, batch, jax.random.key(0))
    assert int(new_state.step) == 1
    assert all(np.isfinite(float(v)) for v in metrics.values()), metrics
    moved = jax.tree.map(lambda a, b: float(np.abs(a - b).max()), new_state.params, params)
    assert max(jax.tree.leaves(moved)) > 0, preset  # a varied-reward batch changes the policy
    np.testing.assert_array_equal(  # the reference model stays frozen
        jax.tree.leaves(new_state.ref_params)[0], jax.tree.leaves(params)[0]
    )
    step(new_state, batch, jax.random.key(1))  # same shapes: no retrace


def test_zero_variance_batch_leaves_grpo_policy_unchanged(setup):
    params, batch = setup
    cfg, _ = presets.make_rl_config("dr_grpo", completion_length=completion_length(TASK))
    flat = batch._replace(rewards=np.ones_like(batch.rewards))
    new_state, metrics = rlvr.update(
        rlvr.init(cfg, params), flat, jax.random.key(0), cfg=cfg, model_cfg=MODEL
    )
    assert float(metrics["adv/abs_mean"]) == 0.0
    diff = jax.tree.map(lambda a, b: float(np.abs(a - b).max()), new_state.params, params)
    assert max(jax.tree.leaves(diff)) < 1e-6  # only weight decay-free Adam on zero gradients


def test_kl_in_reward_and_entropy_bonus_run(setup):
    params, batch = setup
    cfg, _ = presets.make_rl_config(
        "grpo",
        completion_length=completion_length(TASK),
        kl="k1",
        kl_in_reward=True,
        kl_coef=0.1,
        entropy_coef=0.01,
    )
    _, metrics = rlvr.update(
        rlvr.init(cfg, params), batch, jax.random.key(0), cfg=cfg, model_cfg=MODEL
    )
    assert abs(float(metrics["kl"])) < 1.0 and np.isfinite(float(metrics["entropy"]))


def test_preset_errors_name_the_field():
    with pytest.raises(ValueError, match="preset='ppo2'"):
        presets.make_rl_config("ppo2", completion_length=5)
    with pytest.raises(ValueError, match="advantage='nope'"):
        presets.make_rl_config("grpo", completion_length=5, advantage="nope")
    with pytest.raises(ValueError, match="override 'lr'"):
        presets.make_rl_config("grpo", completion_length=5, lr=1.0)
    with pytest.raises(ValueError, match="num_epochs=0"):
        presets.make_rl_config("grpo", completion_length=5, num_epochs=0)


def test_dynamic_sampling_keeps_varied_groups_and_masks_filler():
    rewards = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], np.float32)
    index, mask = rl_loop.select_groups(rewards, 3, dynamic=True)
    np.testing.assert_array_equal(index, [1, 3, 0])
    np.testing.assert_array_equal(mask, [[1, 1], [1, 1], [0, 0]])
    index, mask = rl_loop.select_groups(rewards, 3, dynamic=False)
    np.testing.assert_array_equal(index, [0, 1, 2])
    assert mask.all()


@pytest.mark.timeout(120)
def test_loop_resumes_from_checkpoint(tmp_path):
    problems = make_split(TASK, num_per_level=8, seed=0)
    params = init_params(MODEL, jax.random.key(0))
    cfg, dynamic = presets.make_rl_config("dapo", completion_length=completion_length(TASK))
    run = rl_loop.RunConfig(
        steps=2, prompts_per_step=4, group_size=2, eval_every=1, eval_problems=4, checkpoint_every=1
    )

    def train(run_config, workdir):
        return rl_loop.train(
            run_config, cfg, dynamic, MODEL, TASK, problems, problems, params,
            str(tmp_path / workdir), progress=False,
        )  # fmt: skip

    full, rows = train(run, "a")
    assert [r["update"] for r in rows] == [1, 2] and "eval/pass@1" in rows[-1]
    # Stop after one step, then resume to two: same parameters as the uninterrupted run.
    train(rl_loop.RunConfig(**{**run.__dict__, "steps": 1}), "b")
    resumed, rows_b = train(run, "b")
    assert [r["update"] for r in rows_b] == [1, 2]
    for a, b in zip(jax.tree.leaves(full.params), jax.tree.leaves(resumed.params), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
