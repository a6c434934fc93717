import ml_collections
import pytest

from rljax import cli


def _config():
    c = ml_collections.ConfigDict()
    c.total = 1
    c.ppo = ml_collections.ConfigDict({"num_envs": 4, "hidden": (64, 64)})
    return c


def test_sets_nested_and_top_level_keys():
    c = cli.apply_overrides(_config(), {"total": 7, "ppo.num_envs": 16})
    assert (c.total, c.ppo.num_envs, c.ppo.hidden) == (7, 16, (64, 64))


@pytest.mark.parametrize("key", ["ppo.num_env", "pp.num_envs", "totl"])
def test_unknown_key_names_the_valid_ones(key):
    with pytest.raises(KeyError, match="valid: "):
        cli.apply_overrides(_config(), {key: 1})
