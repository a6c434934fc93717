"""The learner fields of an RLVR run, one shape for every RLVR front end.

A config (configs/grpo.py, configs/grpo_math.py) has a `preset`, an `rl` block with one entry
per preset field (`rljax.agents.grpo.presets.FIELDS`, every field of `grpo.Hparams`; None: the
preset's value) and a `sweep` block with the same fields plus `preset` ("a,b,...": one grid
point per value; "": not swept). A front end turns them into grid points (`grid`) and every
grid point into its learner's full preset fields (`resolved_points`), each validated before
anything is built: an unknown name lists the valid ones, a bad value names the field, the value
and what is allowed (`presets.check`).

    c.rl, c.sweep = rl_fields.config_blocks()  # in get_config
    points = rl_fields.grid(sweep)  # [{"preset": "grpo", "learning_rate": 1e-6}, ...]
    values = rl_fields.resolved_points("grpo", rl, points, defaults=presets.PRETRAINED)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import ml_collections
from ml_collections import config_dict

from rljax.agents import grpo
from rljax.agents.grpo import presets
from rljax.train import sweep as sweep_lib

SWEEPABLE = ("preset", *presets.FIELDS)  # fields `sweep.<field>=a,b,...` may name


def kind(field: str) -> type:
    """The type of a field's values: names (presets, choices) are str, integer leaves int."""
    if field == "preset" or field in presets.CHOICES:
        return str
    return int if field in grpo.INT_FIELDS else float


def config_blocks() -> tuple[ml_collections.ConfigDict, ml_collections.ConfigDict]:
    """The `rl` block (every preset field, None = the preset's value) and the `sweep` block
    (`preset` and every preset field, "" = not swept) of an RLVR config file."""
    rl = ml_collections.ConfigDict()
    for field in presets.FIELDS:
        rl[field] = config_dict.placeholder(kind(field))
    sweep = ml_collections.ConfigDict()
    sweep.preset = ""
    for field in presets.FIELDS:
        sweep[field] = ""
    return rl, sweep


def grid(sweep: Iterable[tuple[str, str]], design=()) -> list[dict]:
    """Grid points: `design` if given, else one dict per combination of the swept values
    (`[{}]`, one point that sets nothing, when nothing is swept).

    Args:
      sweep: (field, "a,b,...") pairs; "" is not swept.
      design: explicit grid points (a fractional design), each (field, value) pairs naming the
        same fields; `sweep` must then be empty.
    """
    sweep = {k: sweep_lib.parse_values(k, v, kind(k)) for k, v in sweep if str(v).strip()}
    if design:
        return _design(design, sweep)
    unknown = sorted(set(sweep) - set(SWEEPABLE))
    if unknown:
        raise ValueError(f"sweep.{unknown[0]} cannot be swept; valid: {', '.join(SWEEPABLE)}")
    return [dict(zip(sweep, combo, strict=True)) for combo in itertools.product(*sweep.values())]


def _design(design, sweep: dict) -> list[dict]:
    if sweep:
        raise ValueError(
            f"sweep.{next(iter(sweep))} is set together with an explicit design; give one of them"
        )
    points = [dict(p) for p in design]
    for i, point in enumerate(points):
        unknown = sorted(set(point) - set(SWEEPABLE))
        if unknown:
            raise ValueError(
                f"design point {i} names {unknown[0]!r}; valid fields: {', '.join(SWEEPABLE)}"
            )
        if set(point) != set(points[0]):
            raise ValueError(
                f"design point {i} names {sorted(point)}, point 0 names {sorted(points[0])}; "
                "every point must name the same fields"
            )
    return points


def resolved_points(
    preset: str,
    rl: Iterable[tuple[str, object]],
    points: list[dict],
    defaults: Mapping[str, object] | None = None,
) -> list[dict]:
    """Every grid point's full preset fields (names), validated.

    A field's value is, first that applies: the grid point's, the `rl` override's (None: not
    set), `defaults`' (a front end's rule, e.g. `presets.PRETRAINED` for checkpoints), the
    preset's.
    """
    overrides = {**(defaults or {}), **{k: v for k, v in rl if v is not None}}
    out = []
    for point in points:
        fields = {**overrides, **{k: v for k, v in point.items() if k != "preset"}}
        values = presets.resolve(point.get("preset", preset), **fields)
        presets.check(values)
        out.append(values)
    return out
