"""Helpers for the reproduction scripts' tests: run a script's ``--quick`` mode in a subprocess.

A subprocess keeps each script's JAX flags and global state away from the rest of the suite.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def run_quick(tmp_path):
    def run(script: str, *extra: str, timeout: int = 240) -> dict:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        proc = subprocess.run(
            [sys.executable, str(ROOT / "experiments" / script), "--quick", "--workdir",
             str(tmp_path), *extra],
            capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        for name in ("results.md", "results.json"):
            assert (tmp_path / name).stat().st_size > 0, name
        assert list(tmp_path.glob("*.png")), "no plot written"
        results = json.loads((tmp_path / "results.json").read_text())
        assert results["verdict"] in ("reproduced", "partly", "not at this scale", "contradicted")
        for name, arm in results["arms"].items():
            assert arm["n"] >= 3, name
            assert np.all(np.isfinite([arm["mean"], *arm["mean_ci"], arm["iqm"]])), name
        return results

    return run


@pytest.fixture
def bad_flag():
    """Runs a script with bad flags, checks that it failed and returns its stderr."""

    def run(script: str, *args: str) -> str:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "experiments" / script), *args],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert proc.returncode != 0
        return proc.stderr

    return run
