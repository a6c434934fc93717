"""The import graph runs downward only, and importing rljax switches nothing on.

Layers (docs/pipeline.md): losses, returns, dp, envs, nets, parallel, io  <  lm  <  agents  <
train. Nothing under the library layers imports a learner or a front end; `rljax/lm` holds no
run driver (no module there writes a results file or owns a host loop).
"""

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOWER = ("lm", "parallel", "nets", "losses", "envs", "dp", "io")
UPPER = ("rljax.agents", "rljax.train")


def _imports(path: str) -> list[tuple[int, str]]:
    """Every module a file imports (absolute names), with its line."""
    tree = ast.parse(open(path).read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def _files(package: str):
    for folder, _, names in os.walk(os.path.join(ROOT, "rljax", package)):
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


@pytest.mark.parametrize("package", LOWER)
def test_library_layers_import_no_learner_and_no_front_end(package):
    upward = [
        f"{os.path.relpath(path, ROOT)}:{line} imports {name}"
        for path in _files(package)
        for line, name in _imports(path)
        if name.startswith(UPPER)
    ]
    assert not upward, "\n".join(upward)


def test_the_checker_finds_an_upward_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "import numpy\nfrom rljax.agents import grpo\n\ndef f():\n    import rljax.train.loop\n"
    )
    names = [name for _, name in _imports(str(path))]
    assert [n for n in names if n.startswith(UPPER)] == ["rljax.agents.grpo", "rljax.train.loop"]


def test_lm_holds_no_run_driver():
    """No module of rljax/lm runs a host loop or writes run files (metrics, results, plots)."""
    drivers = []
    for path in _files("lm"):
        text = open(path).read()
        for marker in ("metrics.jsonl", "results.json", "results.md", "rljax.train.loop", "tqdm"):
            if marker in text:
                drivers.append(f"{os.path.relpath(path, ROOT)} mentions {marker}")
    assert not drivers, "\n".join(drivers)


def test_importing_rljax_installs_nothing():
    """The Threefry kernel is switched on by entry points (`prng_kernel.install()`), not imports."""
    code = (
        "import rljax.agents, rljax.train, rljax.lm.model.sampling, rljax.envs, rljax.nets, "
        "rljax.dp\nfrom rljax import prng_kernel\nprint(prng_kernel.status())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=240
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
