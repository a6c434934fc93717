"""Per-environment config overrides: ``{"ppo.num_envs": 16, ...}`` applied to a ConfigDict."""

from typing import Any


def apply(config, overrides: dict[str, Any]):
    """Sets each dotted key of ``overrides`` on ``config`` (in place) and returns ``config``.

    Raises:
      KeyError: a key that the config does not define, naming the valid keys at that level.
    """
    for dotted, value in overrides.items():
        node = config
        *parents, leaf = dotted.split(".")
        for name in [*parents, leaf]:
            if name not in node:
                raise KeyError(f"override {dotted!r}: no key {name!r}; valid: {', '.join(node)}")
            if name != leaf:
                node = node[name]
        node[leaf] = value
    return config
