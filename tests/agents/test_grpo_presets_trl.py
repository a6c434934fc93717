"""rljax.agents.grpo.presets: TRL's sapo / vespo / luspo presets and the per-learner options
`delta` (two-sided clip) and `mask_truncated_completions`: values, codes, one-line errors."""

import jax.numpy as jnp
import pytest

from configs import grpo as grpo_config
from rljax.agents import grpo
from rljax.agents.grpo import presets


def test_trl_presets_use_trls_aggregation_and_defaults():
    sapo, vespo, luspo = (presets.resolve(n) for n in ("sapo", "vespo", "luspo"))
    assert (sapo["policy_loss"], sapo["aggregation"]) == ("sapo", "seq_mean_token_mean")
    assert (vespo["policy_loss"], vespo["aggregation"]) == ("vespo", "token_mean")
    assert (luspo["policy_loss"], luspo["aggregation"]) == ("luspo", "seq_mean_token_sum")
    # TRL 1.16 GRPOConfig defaults (grpo_config.py)
    assert (sapo["sapo_tau_pos"], sapo["sapo_tau_neg"]) == (1.0, 1.05)
    k_lam = ("vespo_k_pos", "vespo_lambda_pos", "vespo_k_neg", "vespo_lambda_neg")
    assert tuple(vespo[k] for k in k_lam) == (2.0, 3.0, 3.0, 2.0)
    for name in presets.PRESETS:  # the options are off in every preset
        values = presets.resolve(name)
        assert values["delta"] == 0.0 and values["mask_truncated_completions"] == 0, name


def test_options_are_leaves_of_every_learners_hparams():
    values = presets.hparam_values(
        presets.resolve("dapo", delta=4.0, mask_truncated_completions=True)
    )
    hp = grpo.make_hparams(values)
    assert hp.mask_truncated_completions.dtype == jnp.int32 and int(hp.mask_truncated_completions)
    assert hp.delta.dtype == jnp.float32 and float(hp.delta) == 4.0
    choice = grpo._choice(hp)
    assert float(choice.delta) == 4.0 and float(choice.sapo_tau_neg) == pytest.approx(1.05)
    assert presets.POLICY_LOSSES.index("luspo") == int(
        grpo.make_hparams(presets.hparam_values(presets.resolve("luspo"))).policy_loss
    )


@pytest.mark.parametrize(
    "preset,field,value,message",
    [
        ("dapo", "delta", 0.5, r"rl.delta=0.5 is invalid; allowed: 0 \(no two-sided clip\) or a"),
        ("dapo", "delta", 1.0, "rl.delta=1.0 is invalid"),
        ("dapo", "delta", float("inf"), "rl.delta=inf is invalid"),
        ("dapo", "delta", float("nan"), "rl.delta=nan is invalid"),
        ("sapo", "delta", 2.0, r"rl.delta=2.0 with rl.policy_loss='sapo' would be ignored"),
        ("cispo", "delta", 2.0, "would be ignored; the two-sided clip caps ppo_clip, gspo, luspo"),
        ("grpo", "mask_truncated_completions", 2, "rl.mask_truncated_completions=2 is invalid"),
        ("sapo", "sapo_tau_neg", 0.0, "rl.sapo_tau_neg=0.0 is invalid; allowed: a finite > 0"),
        ("vespo", "vespo_k_pos", -1.0, "rl.vespo_k_pos=-1.0 is invalid; allowed: a finite >= 0"),
        ("vespo", "vespo_lambda_neg", 0.0, "rl.vespo_lambda_neg=0.0 is invalid"),
    ],
)
def test_bad_values_are_one_line_errors(preset, field, value, message):
    with pytest.raises(ValueError, match=message) as err:
        presets.check(presets.resolve(preset, **{field: value}))
    assert "\n" not in str(err.value)


def test_delta_is_accepted_on_the_losses_it_caps():
    for name in ("grpo", "dapo", "dr_grpo", "gspo", "luspo"):
        presets.check(presets.resolve(name, delta=1.5))


def test_config_has_the_new_fields_with_their_kinds():
    c = grpo_config.get_config("arithmetic,tiny")
    for field in ("delta", "mask_truncated_completions", "sapo_tau_pos", "vespo_lambda_neg"):
        assert c.rl[field] is None and c.sweep[field] == ""
    c.rl.mask_truncated_completions = 1  # an int placeholder
    c.rl.delta = 4.0  # a float one
    with pytest.raises(TypeError):
        c.rl.mask_truncated_completions = "yes"
