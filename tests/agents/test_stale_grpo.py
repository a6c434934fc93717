"""The stale GRPO learner: the corrections' weights on hand-made ratios, and the lag invariant
(update t samples with exactly the parameters of update max(t − k, 0)); bad inputs."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rljax.agents import grpo, stale_grpo
from rljax.agents.grpo import groups, presets
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.tasks import TASKS, device_reward, make_split

MODEL = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=40)


def _batch(old_logp, mu_shape):
    n, a = mu_shape
    ones = jnp.ones((n, a))
    zeros = jnp.zeros((n, a))
    return groups.Batch(
        jnp.zeros((n, 2), jnp.int32), jnp.ones((n, 2)), jnp.zeros((n, a), jnp.int32), ones,
        ones, old_logp, zeros, zeros, jnp.ones(n), jnp.ones(n), jnp.ones(n),
    )  # fmt: skip


def _hp(correction, lag=0, cap=2.0):
    preset = "cispo" if correction == "cispo" else "lite_ppo"
    # The random reward makes rewards vary within groups of a random-init model (a gradient).
    values = presets.resolve(preset, reward="random")
    return stale_grpo.make_hparams(values, lag, correction, cap)


def test_corrections_weigh_tokens_by_the_capped_or_masked_ratio():
    rho = np.asarray([[0.5, 1.5, 3.0]])
    mu = jnp.zeros((1, 3))
    batch = _batch(jnp.log(jnp.asarray(rho)), (1, 3))
    expect = {"none": [1, 1, 1], "tis": [0.5, 1.5, 2.0], "mis": [0.5, 1.5, 0.0], "cispo": [1, 1, 1]}
    for name, weights in expect.items():
        fixed, metrics = stale_grpo.correct(_hp(name), batch, mu)
        np.testing.assert_allclose(fixed.mask, [weights], rtol=1e-6, err_msg=name)
        old = mu if name == "cispo" else batch.old_logp  # CISPO's ratio is against the sampler
        np.testing.assert_allclose(fixed.old_logp, old, err_msg=name)
        np.testing.assert_allclose(metrics["stale/over_cap"], 1 / 3, rtol=1e-6)
        expect_abs = np.mean(np.abs(np.log(rho)))
        np.testing.assert_allclose(metrics["stale/abs_log_ratio"], expect_abs, rtol=1e-5)


def test_bad_inputs_fail_naming_the_field():
    with pytest.raises(ValueError, match="correction='ppo'"):
        _hp("ppo")
    with pytest.raises(ValueError, match="policy_loss"):
        stale_grpo.make_hparams(presets.resolve("cispo"), 0, "tis")
    with pytest.raises(ValueError, match="lag"):
        _hp("tis", lag=-1)
    with pytest.raises(ValueError, match="is_cap"):
        _hp("tis", cap=0.5)
    inner = grpo.Config(model=MODEL, reward_kind="final_int", completion_length=8)
    with pytest.raises(ValueError, match="sampler_dtype='fp8'.*bfloat16"):
        stale_grpo.validate(stale_grpo.Config(inner, sampler_dtype="fp8"))


@pytest.mark.slow  # compiles the step three times (~30 s on the 2-core CPU)
def test_update_t_samples_with_the_parameters_of_update_t_minus_k():
    """... and in the sampler's precision: a bf16 sampler at k = 0 is a mismatch of its own."""
    task = TASKS["arithmetic"]
    table = jax.tree.map(
        jnp.asarray, device_reward.make_table(task, make_split(task, num_per_level=8, seed=0))
    )
    data = grpo.TaskData(init_params(MODEL, jax.random.key(0)), table, table)
    inner = grpo.Config(
        model=MODEL, reward_kind="final_int", completion_length=8, prompts_per_step=4, group_size=4
    )
    update = jax.jit(stale_grpo.update, static_argnums=0)
    rollout = jax.jit(grpo._rollout, static_argnums=0)
    for lag, correction, dtype in ((2, "tis", ""), (0, "none", ""), (0, "tis", "bfloat16")):
        config = stale_grpo.Config(inner, max_lag=3, sampler_dtype=dtype)
        stale_grpo.validate(config)
        sampling = dataclasses.replace(inner, model=stale_grpo.sampler_model(config))
        assert sampling.model.dtype == (dtype or "float32")
        state = stale_grpo.init(config, data, jax.random.PRNGKey(3), _hp(correction, lag))
        before = []  # the parameters before each update
        for t in range(6):
            before.append(jax.tree.map(np.asarray, state.inner.params))
            keys = jax.random.split(jax.random.fold_in(state.inner.key, t), 4)
            source = max(t - lag, 0)
            ro = rollout(sampling, data, state.inner, keys[0], keys[1], before[source])
            state, m = update(config, data, state)
            assert float(m["stale/lag"]) == t - source
            norm = float(optax.tree.norm(before[source]))
            np.testing.assert_allclose(m["stale/sampler_norm"], norm, rtol=1e-6)
            # the batch trained on is the one the parameters of update t − k sample
            np.testing.assert_allclose(m["correct/mean"], np.mean(ro.verified), rtol=1e-6)
            length = np.mean(np.sum(ro.completion_mask, axis=1))
            np.testing.assert_allclose(m["response/length"], length, rtol=1e-6)
            if (t > 0 and lag > 0) or dtype:  # sampler and learner differ: the ratio is not 1
                assert float(m["stale/abs_log_ratio"]) > 1e-4
            if lag == 0 and not dtype:
                assert float(m["stale/abs_log_ratio"]) == 0.0
        norms = [float(optax.tree.norm(p)) for p in before]
        assert len(set(norms)) == len(norms)  # every update moved the parameters
