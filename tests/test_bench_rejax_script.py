"""scripts/bench_rejax.py: every rljax side of its table is a valid rljax config (no compile)."""

import importlib.util
import os

import pytest

from rljax import cli
from rljax.train import experiment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def modules(load_entry):
    return load_entry("scripts/bench_rejax.py"), load_entry("experiments/train.py")


@pytest.mark.parametrize("algo", ["ppo", "dqn", "pqn", "sac", "td3"])
def test_rljax_side_matches_rejax_budget_and_validates(modules, algo):
    bench, train = modules
    name, rejax_config = bench.ALGOS[algo]["rejax"]
    path, rljax_overrides = bench.ALGOS[algo]["rljax"]
    file, arg = path.split(":")
    spec = importlib.util.spec_from_file_location(f"config_{algo}", os.path.join(ROOT, file))
    config_file = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config_file)
    config = cli.apply_overrides(config_file.get_config(arg), dict(rljax_overrides))
    assert name == algo and config.learner == algo
    assert config.env_name == rejax_config["env"]
    assert config.total_timesteps == rejax_config["total_timesteps"]
    module, learner_config, run = train.to_dataclasses(config, "/tmp/unused", 1)
    experiment.validate_run(run, module, learner_config)  # raises on a bad field
