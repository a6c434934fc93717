"""scripts/bench_rejax.py: every rljax side of its table is a valid rljax config (no compile);
an interpreter that is missing or lacks rejax is one line saying how to get it."""

import importlib.util
import os
import subprocess
import sys

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


def _no_rejax(folder) -> str:
    """An executable that fails the way an interpreter without rejax does."""
    path = folder / "python"
    path.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'rejax'\" >&2\nexit 1\n"
    )
    path.chmod(0o755)
    return str(path)


def _not_executable(folder) -> str:
    path = folder / "python"
    path.write_text("not a program")
    return str(path)


# --rejax_python -> what the one line says (besides the flag and its value)
REJAX_PYTHONS = {
    "missing": (lambda folder: str(folder / "nope" / "python"), "does not exist; create it with"),
    "a folder": (str, "is not an executable file; create it with `python -m venv"),
    "not executable": (_not_executable, "is not an executable file; create it with"),
    "without rejax": (_no_rejax, "cannot import rejax and gymnax (ModuleNotFoundError: No module"),
}


@pytest.mark.parametrize("case", list(REJAX_PYTHONS))
def test_rejax_interpreter_is_checked_before_anything_runs(modules, case, tmp_path):
    bench, _ = modules
    make, expected = REJAX_PYTHONS[case]
    python = make(tmp_path)
    with pytest.raises(cli.ConfigError) as info:
        bench.check_rejax_python(python)
    message = str(info.value)
    assert f"--rejax_python={python!r}" in message and expected in message, message
    assert "rejax==0.1.3" in message and "\n" not in message  # how to get it


@pytest.mark.parametrize("case", ["missing", "without rejax"])
def test_bench_rejax_exits_with_one_line(case, tmp_path):
    """The script itself: exit 2, one `error:` line, no traceback, before any benchmark runs."""
    make, expected = REJAX_PYTHONS[case]
    done = subprocess.run(
        [sys.executable, "scripts/bench_rejax.py", f"--rejax_python={make(tmp_path)}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == cli.EXIT_USAGE, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert "machine:" not in done.stdout  # stopped before the first step
