"""What the learners share, written once (train_chunk: all five; the rest: the control agents).

* ``train_chunk``: ``num_updates`` consecutive ``update`` calls of one agent as one ``lax.scan``
  (the unit the host loop compiles, vmaps over the population and calls between syncs);
* ``annealed_lr``: the linear learning-rate decay to 0 over the run;
* ``config_from_dict``: a config block (plain dict, e.g. from ``ml_collections``) to the agent's
  frozen ``Config``, with lists made tuples, unknown fields named, and the value-head name and its
  settings built into one ``rljax.nets.q_heads.Head`` (agents never branch on the name).
"""

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax

from rljax.nets import q_heads

State = TypeVar("State")
Config = TypeVar("Config")


def train_chunk(
    update: Callable[[Any, Any, State], tuple[State, dict[str, jax.Array]]],
    config,
    env,
    state: State,
    num_updates: int,
) -> tuple[State, dict[str, jax.Array]]:
    """``num_updates`` consecutive ``update(config, env, state)`` calls as one ``lax.scan``.

    Returns:
      The final state and the metrics of every update, each leaf ``[num_updates]``.
    """
    return jax.lax.scan(lambda s, _: update(config, env, s), state, None, length=num_updates)


def annealed_lr(lr: jax.Array, step: jax.Array, num_updates: int, anneal: bool) -> jax.Array:
    """``lr · (1 - step / num_updates)`` if ``anneal`` (linear decay to 0), else ``lr``.

    Args:
      lr: the (swept) base step size, scalar.
      step: updates done so far, scalar int.
      num_updates: updates of the whole run (static).
      anneal: static switch.
    """
    if not anneal:
        return lr
    return lr * (1.0 - step / num_updates)


def config_from_dict(config_cls: type[Config], block: str, values: Mapping[str, Any]) -> Config:
    """Builds the frozen agent ``Config`` from a config block; errors name ``block.field``.

    Lists become tuples. If ``config_cls`` has a ``head`` field, the block's ``head`` name and
    the head settings present in it (``q_heads.SETTINGS``: num_bins, v_min, v_max, huber_delta)
    become one ``q_heads.Head`` value.

    Raises:
      ValueError: for a key that is not a field, or a bad head name or head setting.
    """
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    fields = {f.name for f in dataclasses.fields(config_cls)}
    if "head" in fields:
        settings = {k: values.pop(k) for k in q_heads.SETTINGS if k in values}
        if "head" in values:
            try:
                values["head"] = q_heads.make(values["head"], **settings)
            except ValueError as e:
                raise ValueError(f"{block}.{e}") from None
        elif settings:
            raise ValueError(f"{block}: {', '.join(settings)} given without a head name")
    unknown = sorted(set(values) - fields)
    if unknown:
        where = f"{config_cls.__module__}.{config_cls.__qualname__}"
        raise ValueError(f"{block}.{unknown[0]} is not a field of {where}")
    return config_cls(**values)
