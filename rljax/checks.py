"""Boundary checks of hyperparameters that are concrete numbers (never of traced values).

Losses, returns and DP solvers take hyperparameters either as Python/NumPy numbers or as JAX
arrays (PPO sweeps pass them as vmapped array leaves, so inside the step they are tracers).
These helpers check only what is known on the host: a Python or NumPy number (or array) is
checked and rejected with a one-line ``ValueError`` naming the argument, the value and the
allowed range; a JAX array or tracer passes through untouched, so tracing, ``vmap`` and ``jit``
are never broken and nothing is synchronized with a device.

``check_int`` is the one integer validator of config fields, command-line flags and learner
configs (``rljax.cli.check_int`` is it, raising ``ConfigError``). This module imports jax only
inside ``check_increasing`` and ``check_distribution``, so ``rljax.cli`` can use it before
``rljax.xla_flags.set_flags``.
"""

import numpy as np


def concrete(value) -> np.ndarray | None:
    """``value`` as a float NumPy array if it is a Python/NumPy number or array, else ``None``."""
    if isinstance(value, bool | int | float | np.number | np.ndarray):
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return None
    return None


def check_int(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` if it is an ``int`` (not a bool) in ``[low, high]``, else ``ValueError``.

    Example: ``check_int("ppo.num_envs", 0, low=1)`` raises
    ``ValueError: ppo.num_envs=0 is invalid; allowed: an integer >= 1``.
    """
    is_int = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    if is_int and (low is None or value >= low) and (high is None or value <= high):
        return value
    if low is not None and high is not None:
        allowed = f"an integer in [{low}, {high}]"
    elif low is not None:
        allowed = f"an integer >= {low}"
    elif high is not None:
        allowed = f"an integer <= {high}"
    else:
        allowed = "an integer"
    raise ValueError(f"{name}={value!r} is invalid; allowed: {allowed}")


def _show(value) -> str:
    return repr(value.item()) if isinstance(value, np.ndarray) and value.size == 1 else repr(value)


def check_range(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Raises ``ValueError`` unless every element of a concrete ``value`` lies in the interval.

    NaN and ±inf are always rejected. ``low_open`` / ``high_open`` exclude the end points. Traced or
    JAX-array values are not checked.

    Example: ``check_range("lambda_", 1.5, low=0, high=1)`` raises
    ``ValueError: lambda_=1.5 is invalid; allowed: a number in [0, 1]``.
    """
    x = concrete(value)
    if x is None:
        return
    ok = np.isfinite(x)
    if low is not None:
        ok &= (x > low) if low_open else (x >= low)
    if high is not None:
        ok &= (x < high) if high_open else (x <= high)
    if np.all(ok):
        return
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    interval = f"{left}{lo}, {hi}{right}"
    raise ValueError(f"{name}={_show(value)} is invalid; allowed: a finite number in {interval}")


def check_increasing(name: str, support) -> None:
    """Raises ``ValueError`` if a concrete 1-D ``support`` is not strictly increasing or not finite.

    Checks Python/NumPy arrays and JAX arrays that are not tracers (a support is small, so the
    transfer is cheap); tracers pass through.
    """
    import jax  # here, not at the top: rljax.cli imports this module before jax may start

    if isinstance(support, jax.core.Tracer):
        return
    try:
        x = np.asarray(support, dtype=np.float64)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        return
    if x.ndim != 1:
        return  # the caller's rank check reports this
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has a non-finite atom ({x.tolist()}); allowed: finite atoms")
    steps = np.flatnonzero(np.diff(x) <= 0)
    if steps.size:
        i = int(steps[0])
        raise ValueError(
            f"{name} is not strictly increasing (atoms {i} and {i + 1}: {x[i]:g}, {x[i + 1]:g}); "
            "allowed: strictly increasing atoms"
        )


def check_distribution(name: str, probs, *, atol: float = 1e-4) -> None:
    """Raises ``ValueError`` unless concrete ``probs`` ``[..., N]`` are distributions on the
    last axis: finite, non-negative, each summing to 1 (within ``atol``).

    Checks Python/NumPy arrays and JAX arrays that are not tracers; tracers pass through (inside
    ``jit`` or ``vmap`` nothing is synchronized with a device).
    """
    import jax  # here, not at the top: rljax.cli imports this module before jax may start

    if isinstance(probs, jax.core.Tracer):
        return
    try:
        x = np.asarray(probs, dtype=np.float64)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        return
    if x.ndim == 0:
        return  # the caller's rank check reports this
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has a non-finite entry; allowed: finite probabilities >= 0")
    if np.any(x < 0):
        raise ValueError(
            f"{name} has a negative entry ({float(x.min()):g}); allowed: probabilities >= 0"
        )
    total = x.sum(-1)
    worst = float(total.reshape(-1)[np.argmax(np.abs(total - 1.0).reshape(-1))])
    if abs(worst - 1.0) > atol:
        raise ValueError(
            f"{name} sums to {worst:g} on its last axis; allowed: probabilities that sum to 1"
        )
