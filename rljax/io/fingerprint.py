"""The config that made a run's checkpoints, stored next to them and checked on resume.

A run writes its whole config, as a flat JSON-able dict (``{"hparams.lr": 3e-4, ...}``), to
``<workdir>/config.json`` (``path``; its checkpoints live in ``<workdir>/checkpoints``) when it
starts. Resuming with a config that
differs in anything but the fields the caller declares mutable (the budget and logging fields)
is refused before anything compiles, with the list of changed fields.

    config = {"seed": 0, "hparams.lr": 3e-4, "total_timesteps": 500_000, "progress": True}
    MUTABLE = ("total_timesteps", "progress")
    # Before building or compiling anything (raises ConfigChangedError / ValueError):
    start = fingerprint.resume_point(workdir, config, mutable=MUTABLE, num_updates=total,
                                     resume=resume)
    # None: fresh start; == total: the run is finished, do nothing; else resume from `start`.
    fingerprint.save(workdir, config)  # once the workdir is ready (after archiving an old run)

The same functions serve any trainer: pass its own flat config and mutable field names.
"""

import dataclasses
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rljax import cli
from rljax.io import checkpoints

FILENAME = "config.json"


class ConfigChangedError(cli.ConfigError):
    """Resuming with a config that differs from the checkpoints' in a non-mutable field."""


def _canonical(value: Any) -> Any:
    """JSON's view of a value (tuples become lists, NaN becomes a string), for comparison."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _canonical(value.item())  # NumPy scalar
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__type__": type(value).__qualname__, **fields}
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))  # no memory addresses: stable across runs


def to_json(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with every value in its JSON form (as ``save`` writes and ``check`` compares)."""
    return {str(k): _canonical(v) for k, v in config.items()}


def path(directory: str) -> str:
    """Where the fingerprint of the run in ``directory`` lives."""
    return os.path.join(directory, FILENAME)


def save(directory: str, config: Mapping[str, Any]) -> None:
    """Writes ``config`` (flat, JSON-able values) to ``directory/config.json`` atomically."""
    os.makedirs(directory, exist_ok=True)
    tmp = path(directory) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(to_json(config), f, indent=1, sort_keys=True)
    os.replace(tmp, path(directory))


def load(directory: str) -> dict[str, Any] | None:
    """The stored fingerprint, or ``None`` if there is none (or it is unreadable)."""
    try:
        with open(path(directory)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _unreadable(file: str) -> str:
    """Why ``file`` gives no fingerprint: "missing" or "unreadable (<reason>)"."""
    if not os.path.exists(file):
        return "missing"
    try:
        with open(file) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return f"unreadable ({cli.one_line(e)})"
    return "unreadable (not a JSON object)" if not isinstance(data, dict) else "unreadable"


def changes(
    saved: Mapping[str, Any], config: Mapping[str, Any], mutable: Iterable[str] = ()
) -> list[str]:
    """Fields that differ, as ``"name: old -> new"`` (``<absent>`` for added/removed fields)."""
    mutable = set(mutable)
    new = {str(k): _canonical(v) for k, v in config.items()}
    out = []
    for key in sorted(set(saved) | set(new)):
        if key in mutable:
            continue
        old_v, new_v = saved.get(key, "<absent>"), new.get(key, "<absent>")
        if old_v != new_v:
            out.append(f"{key}: {json.dumps(old_v)} -> {json.dumps(new_v)}")
    return out


def check(directory: str, config: Mapping[str, Any], *, mutable: Iterable[str] = ()) -> bool:
    """Checks a resume against the stored fingerprint.

    Returns:
      ``True`` if a fingerprint exists and only ``mutable`` fields changed; ``False`` if there is
      no fingerprint (a run from before fingerprints, or none at all).

    Raises:
      ConfigChangedError: listing every changed non-mutable field, and which fields may change.
    """
    saved = load(directory)
    if saved is None:
        return False
    diff = changes(saved, config, mutable)
    if diff:
        allowed = ", ".join(sorted(mutable)) or "none"
        raise ConfigChangedError(
            f"cannot resume {directory}: the config differs from the one that made its "
            f"checkpoints in {len(diff)} field(s): {'; '.join(diff)}. Fields that may change on "
            f"resume: {allowed}. Start a fresh run (resume=False archives the old one) or use "
            "another workdir"
        )
    return True


def resume_point(
    workdir: str,
    config: Mapping[str, Any],
    *,
    mutable: Iterable[str],
    num_updates: int,
    resume: bool,
    checkpoint_dir: str | None = None,
    log: Callable[[str], None] = print,
) -> int | None:
    """Decides, before anything is built or compiled, where a run starts.

    Args:
      workdir: the run's directory (holds ``config.json``).
      config: the new run's flat config.
      mutable: fields that may differ from the stored config on resume.
      num_updates: the new run's total number of updates (its budget).
      resume: whether resuming was asked for.
      checkpoint_dir: where the checkpoints are (default ``workdir/checkpoints``).
      log: where the one-line notes go.

    Returns:
      ``None`` for a fresh start (``resume`` is false, or there is nothing to resume: said in
      one line); the step to resume from; ``num_updates`` when the run already finished (said in
      one line: the caller exits 0 having done nothing). A larger budget than the checkpoints'
      extends the run.

    Raises:
      ConfigChangedError: a non-mutable field changed (all of them are listed), or the stored
        config is missing or unreadable (nothing to check the resume against).
      ValueError: the newest checkpoint is beyond the new budget.
    """
    if not resume:
        return None
    checkpoint_dir = checkpoint_dir or os.path.join(workdir, "checkpoints")
    latest = checkpoints.latest_step(checkpoint_dir)
    if latest is None:
        log(f"[rljax] resume=True but {checkpoint_dir} holds no checkpoint; starting a fresh run")
        return None
    if not check(workdir, config, mutable=mutable):
        # Without the stored config a changed hyperparameter would resume silently: refuse.
        problem = _unreadable(path(workdir))
        raise ConfigChangedError(
            f"cannot resume {workdir}: its {FILENAME} is {problem}, so the config that made its "
            f"checkpoints cannot be checked; allowed: restore {path(workdir)}, or start a fresh "
            "run (resume=False archives the old one) or use another workdir"
        )
    else:
        mutable = set(mutable)
        changed = [c for c in changes(load(workdir), config) if c.split(":", 1)[0] in mutable]
        if changed:
            log(f"[rljax] resuming with changed {'; '.join(changed)}")
    if latest > num_updates:
        raise ValueError(
            f"cannot resume {workdir}: its checkpoint is at update {latest}, beyond the new "
            f"budget of {num_updates} updates; allowed: a budget of at least {latest} updates"
        )
    if latest == num_updates:
        log(f"[rljax] {workdir} already finished ({num_updates} updates); nothing to do")
    return latest
