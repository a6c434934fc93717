"""Hyperparameter grids that train in one program: grid points × seeds on one vmapped axis.

Agents are laid out grid-major: agent ``a`` is grid point ``a // num_seeds``, seed
``a % num_seeds``.
"""

import itertools


def parse_values(field: str, text: str, kind=float) -> tuple:
    """Parses ``"1e-4,3e-4"`` into ``kind`` values (float, int, str); "" means "not swept".

    An empty item (``"1e-3,,3e-4"``, a trailing comma) is refused, not skipped: it is a value
    the user meant to type.

    Raises:
      ValueError: naming the field and the bad text.
    """
    if not text.strip():
        return ()
    items = [v.strip() for v in text.split(",")]
    if "" in items:
        raise ValueError(
            f"sweep.{field}={text!r} has an empty item (item {items.index('') + 1} of "
            f"{len(items)}); allowed: comma-separated values, none empty (e.g. 1e-4,3e-4)"
        )
    try:
        return tuple(kind(v) for v in items)
    except ValueError:
        raise ValueError(
            f"sweep.{field}={text!r} is not a comma-separated list of numbers (e.g. 1e-4,3e-4)"
        ) from None


def grid(base: dict[str, float], sweep: dict[str, str]) -> list[dict[str, float]]:
    """Cartesian product of the swept values over ``base``; one dict per grid point.

    Args:
      base: every hyperparameter's default value.
      sweep: ``field -> "v1,v2,..."``; empty strings are not swept.

    Returns:
      Grid points in row-major order of the swept fields (a single point if nothing is swept).
    """
    unknown = sorted(set(sweep) - set(base))
    if unknown:
        raise ValueError(f"sweep fields {unknown} are unknown; valid: {sorted(base)}")
    swept = {k: parse_values(k, v) for k, v in sweep.items()}
    swept = {k: v for k, v in swept.items() if v}
    points = []
    for combo in itertools.product(*swept.values()):
        points.append({**base, **dict(zip(swept, combo, strict=True))})
    return points


def swept_fields(points: list[dict[str, float]]) -> list[str]:
    """Names of the fields whose value differs between grid points."""
    if len(points) < 2:
        return []
    return [k for k in points[0] if len({p[k] for p in points}) > 1]


def label(point: dict[str, float], fields: list[str]) -> str:
    """Short legend label such as ``"lr=0.0003 clip_eps=0.2"``."""
    return " ".join(
        f"{k}={point[k]:g}" if isinstance(point[k], float | int) else f"{k}={point[k]}"
        for k in fields
    )
