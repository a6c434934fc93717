"""rljax.train.rl_fields: the rl / sweep blocks every RLVR config shares, grid points from sweeps
or an explicit design, and the order in which a field's value is chosen."""

import pytest

from rljax.agents.grpo import presets
from rljax.train import rl_fields


def test_config_blocks_name_every_preset_field_unset():
    rl, sweep = rl_fields.config_blocks()
    assert set(rl) == set(presets.FIELDS) and all(rl[k] is None for k in rl)
    assert set(sweep) == {"preset", *presets.FIELDS} and all(sweep[k] == "" for k in sweep)


def test_grid_is_the_product_of_the_swept_values_in_order():
    points = rl_fields.grid(
        [("preset", "grpo,dapo"), ("learning_rate", "1e-3,3e-3"), ("kl_coef", "")]
    )
    assert points == [
        {"preset": "grpo", "learning_rate": 1e-3}, {"preset": "grpo", "learning_rate": 3e-3},
        {"preset": "dapo", "learning_rate": 1e-3}, {"preset": "dapo", "learning_rate": 3e-3},
    ]  # fmt: skip
    assert rl_fields.grid([("learning_rate", "")]) == [{}]  # nothing swept: one empty point
    assert rl_fields.grid([("num_epochs", "1,2")]) == [{"num_epochs": 1}, {"num_epochs": 2}]


def test_a_design_replaces_the_sweep():
    design = ((("preset", "grpo"), ("kl_coef", 0.0)), (("preset", "rloo"), ("kl_coef", 0.1)))
    assert rl_fields.grid([], design) == [
        {"preset": "grpo", "kl_coef": 0.0}, {"preset": "rloo", "kl_coef": 0.1},
    ]  # fmt: skip


@pytest.mark.parametrize(
    "sweep,design,match",
    [
        ([("lr", "1,2")], (), "sweep.lr cannot be swept; valid: preset"),
        ([("kl_coef", "0,1")], ((("kl_coef", 0.0),),), "together with an explicit design"),
        ([], ((("kl_coef", 0.0),), (("eps_low", 0.1),)), "every point must name the same"),
        ([], ((("lr", 0.1),),), "design point 0 names 'lr'"),
    ],
)
def test_bad_grids_are_one_line_errors(sweep, design, match):
    with pytest.raises(ValueError, match=match):
        rl_fields.grid(sweep, design)


def test_a_fields_value_is_the_points_then_rls_then_the_defaults_then_the_presets():
    preset = presets.resolve("grpo")
    rl = [("learning_rate", 5e-4), ("kl_coef", None)]
    defaults = {"learning_rate": 1e-6, "weight_decay": 0.0}
    points = [{}, {"learning_rate": 2e-4, "preset": "dapo"}]
    first, second = rl_fields.resolved_points("grpo", rl, points, defaults=defaults)
    assert first["learning_rate"] == 5e-4  # rl over the defaults
    assert first["weight_decay"] == 0.0  # the defaults over the preset
    assert first["kl_coef"] == preset["kl_coef"]  # None: the preset's
    assert second["learning_rate"] == 2e-4  # the grid point over everything
    assert second["policy_loss"] == presets.resolve("dapo")["policy_loss"]  # its own preset
    assert preset["weight_decay"] != 0.0  # the defaults did change something


def test_a_bad_resolved_value_names_the_field():
    with pytest.raises(ValueError, match="eps_low"):
        rl_fields.resolved_points("grpo", [("eps_low", -1.0)], [{}])
