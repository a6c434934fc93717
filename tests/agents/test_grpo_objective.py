"""rljax.agents.grpo.objective: choices dispatch by name, so a choice added to the presets without
its
implementation fails loudly instead of training as another one."""

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import returns
from rljax.agents.grpo import objective, presets
from rljax.losses import policy_gradient as pg
from rljax.losses import reduce, sequence


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


# ------------------------------------------- TRL's loss types and options (sapo, vespo, luspo)
_OLD_PRESETS = (
    "grpo dr_grpo dapo lite_ppo ngrpo gspo rloo cispo nft pacs rover dph_fkl dph_js".split()
)
_REDUCE = {
    "token_mean": reduce.token_mean,
    "seq_mean_token_mean": reduce.seq_mean_token_mean,
    "seq_mean_token_sum": reduce.seq_mean_token_sum,
    "seq_mean_token_sum_norm": lambda x, m: reduce.seq_mean_token_sum_norm(x, m, max_len=5.0),
}


def _lm_micro(rows=6, length=5, seed=1, group=2):
    """Realistic log-probs, variable lengths, ratios both inside and far outside the clip."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, length + 1, size=rows)
    mask = (np.arange(length)[None] < lengths[:, None]).astype(np.float32)
    old = -rng.uniform(0.1, 2.0, size=(rows, length)) * mask
    logp = (old + rng.normal(scale=0.4, size=(rows, length))) * mask
    logp[0] += 0.8 * mask[0]  # a sequence ratio past δ = 1.5 ...
    adv = rng.normal(size=rows).astype(np.float32)
    adv[0] = -1.0  # ... with a negative advantage, where the two-sided cap acts
    zeros = jnp.zeros((rows, length))
    f = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    mb = objective.MicroBatch(
        f(logp), zeros, zeros, zeros, f(old), zeros, f(mask), f(adv),
        jnp.asarray(rng.integers(0, 2, size=rows), jnp.float32), jnp.full((rows,), 0.5), group,
    )  # fmt: skip
    return mb, lengths


def _loss_and_grad(choice, mb, norms, max_len=5.0):
    fn = lambda lp: objective.policy_loss(choice, mb._replace(logp=lp), norms, max_len)[0]  # noqa: E731
    return jax.jit(jax.value_and_grad(fn))(mb.logp)


@pytest.mark.parametrize("name", ["sapo", "vespo", "luspo"])
@pytest.mark.parametrize("aggregation", presets.AGGREGATIONS)
def test_each_new_policy_loss_code_is_its_function_under_each_aggregation(name, aggregation):
    values = presets.hparam_values(presets.resolve(name, aggregation=aggregation))
    choice = objective.Choice(**{f: jnp.asarray(values[f]) for f in objective.Choice._fields})
    mb, _ = _lm_micro()
    norms = objective.minibatch_norms(mb.mask, 0)
    adv_t = jnp.broadcast_to(mb.adv[:, None], mb.logp.shape)
    per_token = {
        "sapo": lambda lp: pg.sapo(lp, mb.old_logp, adv_t, tau_pos=1.0, tau_neg=1.05),
        "vespo": lambda lp: sequence.vespo(
            lp, mb.old_logp, mb.adv, mb.mask, k_pos=2.0, lambda_pos=3.0, k_neg=3.0, lambda_neg=2.0
        ),
        "luspo": lambda lp: sequence.luspo(
            lp, mb.old_logp, mb.adv, mb.mask, eps_low=values["eps_low"], eps_high=values["eps_high"]
        ),
    }[name]
    want = jax.value_and_grad(lambda lp: _REDUCE[aggregation](per_token(lp), mb.mask))(mb.logp)
    got = _loss_and_grad(choice, mb, norms)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)
    assert float(jnp.max(jnp.abs(want[1]))) > 1e-3  # a gradient that could differ


def test_luspo_preset_is_length_weighted_gspo_and_gspo_under_token_means():
    mb, lengths = _lm_micro(seed=2)
    norms = objective.minibatch_norms(mb.mask, 0)
    loss = {
        n: _loss_and_grad(_choice(**_codes(n)), mb, norms)
        for n in ("gspo", "luspo", "luspo_seq_mean")
    }
    gspo_seq = sequence.gspo(mb.logp, mb.old_logp, mb.adv, mb.mask, eps_low=3e-4, eps_high=4e-4)
    np.testing.assert_allclose(loss["luspo"][0], jnp.mean(gspo_seq * lengths), rtol=1e-5)
    # with seq_mean_token_mean the same per-token loss is GSPO again, value and gradient
    np.testing.assert_allclose(loss["luspo_seq_mean"][0], loss["gspo"][0], rtol=1e-6)
    np.testing.assert_allclose(loss["luspo_seq_mean"][1], loss["gspo"][1], rtol=1e-5, atol=1e-8)


def _codes(name):
    """Choice overrides of a preset (codes and values), from the presets table."""
    if name == "luspo_seq_mean":
        v = presets.hparam_values(presets.resolve("luspo", aggregation="seq_mean_token_mean"))
    else:
        v = presets.hparam_values(presets.resolve(name))
    return {f: v[f] for f in objective.Choice._fields}


def test_delta_caps_exactly_the_two_sided_losses():
    mb, _ = _lm_micro(seed=3)
    norms = objective.minibatch_norms(mb.mask, 0)
    for name in presets.POLICY_LOSSES:
        base = _codes("grpo") | {"policy_loss": presets.POLICY_LOSSES.index(name)}
        off = _loss_and_grad(_choice(**base), mb, norms)
        on = _loss_and_grad(_choice(**base | {"delta": 1.5}), mb, norms)
        changed = not (np.array_equal(off[0], on[0]) and np.array_equal(off[1], on[1]))
        assert changed == (name in presets.TWO_SIDED_LOSSES), name


def test_default_options_leave_every_existing_preset_bit_for_bit(monkeypatch):
    """delta = 0 and mask_truncated_completions = 0 are the maths from before the options:
    every preset's policy loss and gradient equal, bit for bit, those computed with `ppo_clip`
    as it was (no cap), and the truncation mask and sequence counts change nothing."""
    mb, _ = _lm_micro(seed=4)
    norms = objective.minibatch_norms(mb.mask, 0)
    got = {n: _loss_and_grad(_choice(**_codes(n)), mb, norms) for n in _OLD_PRESETS}
    uncapped = pg.ppo_clip
    monkeypatch.setattr(pg, "ppo_clip", lambda *a, delta=None, **k: uncapped(*a, **k))
    for n in _OLD_PRESETS:
        want = _loss_and_grad(_choice(**_codes(n)), mb, norms)
        np.testing.assert_array_equal(got[n][0], want[0], err_msg=n)
        np.testing.assert_array_equal(got[n][1], want[1], err_msg=n)
    assert all(_codes(n)["delta"] == 0.0 for n in presets.PRESETS)
    # mask_truncated_completions = 0 keeps every row, and seq_mask = mask changes no count
    tokens = jnp.asarray(np.random.default_rng(0).integers(3, 9, size=mb.mask.shape))
    kept = objective.loss_rows(jnp.asarray(0), tokens, mb.mask, (2,))
    np.testing.assert_array_equal(mb.mask * kept[:, None], mb.mask)
    np.testing.assert_array_equal(
        objective.minibatch_norms(mb.mask, 3, seq_mask=mb.mask),
        objective.minibatch_norms(mb.mask, 3),
    )


def test_loss_rows_drop_only_completions_without_a_stop_token():
    eos = (2, 7)
    tokens = jnp.asarray([[5, 2, 0, 0], [5, 6, 8, 7], [5, 6, 8, 9], [5, 6, 0, 2], [5, 6, 8, 9]])
    mask = jnp.asarray([[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]])
    # stopped early, stopped on the last slot (second stop id), truncated, an EOS id only past
    # the mask (truncated), an empty row (no stop token: dropped, it trains nothing anyway)
    got = objective.loss_rows(jnp.asarray(1), tokens, mask, eos)
    np.testing.assert_array_equal(got, [1.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(objective.loss_rows(jnp.asarray(0), tokens, mask, eos), 1.0)


@pytest.mark.parametrize("aggregation", presets.AGGREGATIONS)
def test_masking_truncated_rows_equals_slicing_them_out(aggregation):
    """Masked truncated rows: token normalizers as if the rows were sliced out, sequence
    normalizers still counting them (TRL's rule), so sequence means are the sliced loss
    scaled by kept / N."""
    mb, _ = _lm_micro(rows=8, seed=5, group=1)
    kept = jnp.asarray([1, 0, 1, 1, 0, 1, 1, 0], jnp.float32)
    codes = _codes("dapo") | {"aggregation": presets.AGGREGATIONS.index(aggregation)}
    choice = _choice(**codes)
    masked = mb._replace(mask=mb.mask * kept[:, None])
    norms = objective.minibatch_norms(masked.mask, 0, seq_mask=mb.mask)
    got = _loss_and_grad(choice, masked, norms)
    rows = np.flatnonzero(np.asarray(kept))
    sliced = jax.tree.map(lambda x: x[rows] if getattr(x, "ndim", 0) else x, mb)
    want = _loss_and_grad(choice, sliced, objective.minibatch_norms(sliced.mask, 0))
    scale = 1.0 if aggregation == "token_mean" else len(rows) / mb.mask.shape[0]
    np.testing.assert_allclose(got[0], scale * want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1][rows], scale * want[1], rtol=1e-5, atol=1e-8)
    np.testing.assert_array_equal(got[1][np.asarray(kept) == 0], 0.0)


def test_micro_schedule_counts_sequences_from_seq_mask():
    config = types.SimpleNamespace(
        prompts_per_step=4, group_size=2, max_epochs=1, max_minibatches=1, reference_samples=0
    )
    hp = types.SimpleNamespace(num_epochs=jnp.asarray(1), num_minibatches=jnp.asarray(1))
    seq_mask = jnp.ones((8, 3))
    mask = seq_mask.at[::2].set(0.0)  # half the rows truncated and masked
    _, _, norms, _, _ = objective.micro_schedule(config, hp, mask, jax.random.key(0), seq_mask)
    np.testing.assert_array_equal(norms.tokens, [12.0])
    np.testing.assert_array_equal(norms.sequences, [8.0])
    _, _, plain, _, _ = objective.micro_schedule(config, hp, mask, jax.random.key(0))
    np.testing.assert_array_equal(plain.sequences, [4.0])


@pytest.mark.parametrize("name", presets.POLICY_LOSSES)
def test_computing_only_the_used_losses_gives_the_same_loss(name):
    # Same maths, a smaller program: XLA may fuse it differently (PACS's gradient moves by one
    # float32 ulp); the default LM job's metrics stay bitwise the same.
    values = presets.hparam_values(presets.resolve("grpo", policy_loss=name))
    choice = objective.Choice(**{f: jnp.asarray(values[f]) for f in objective.Choice._fields})
    mb, _ = _lm_micro(seed=3)
    norms = objective.minibatch_norms(mb.mask, 0)
    every = _loss_and_grad(choice, mb, norms)
    only = jax.jit(
        jax.value_and_grad(
            lambda lp: objective.policy_loss(
                choice, mb._replace(logp=lp), norms, 5.0, used=(name,)
            )[0]
        )
    )(mb.logp)
    np.testing.assert_allclose(only[0], every[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(only[1], every[1], rtol=1e-6, atol=1e-8)
    other = next(n for n in presets.POLICY_LOSSES if n != name)
    unused = objective.policy_loss(choice, mb, norms, 5.0, used=(other,))[0]
    assert np.isnan(unused)  # a code outside `used` is loud (the NaN stop), never a zero loss


def test_used_policy_losses_and_their_validation():
    from rljax.agents import grpo

    values = [presets.resolve(p) for p in ("gspo", "grpo", "gspo")]
    assert grpo.used_policy_losses(values) == ("ppo_clip", "gspo")
    config = grpo.Config(model=None, reward_kind="host", completion_length=4, host_scorer=len)
    for bad in ((), ("ppo",)):
        with pytest.raises(ValueError, match="policy_losses="):
            grpo.validate(dataclasses.replace(config, policy_losses=bad))
