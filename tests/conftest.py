"""Test-wide JAX set-up: 8 fake CPU devices, the scheduler flag that avoids the 2-core hang, and a
persistent compilation cache.

The flags must be in XLA_FLAGS before jax is imported, so they are set here, at the top of the
first module pytest imports. The compilation cache (`.pytest_cache/jax_compilation_cache`, shared
by the xdist workers, the scripts and notebooks the tests start, and the fast and slow tiers) lets
a program compiled once, by any of them, load instead of compiling again: tests and scripts build
the same tiny models many times. It changes no result: an entry is the executable XLA would
build, keyed on the program, the flags and the jax version. Set JAX_COMPILATION_CACHE_DIR to
choose another directory.

Each tier also sets how hard XLA's CPU backend (LLVM) optimizes: level 0 in the fast tier, whose
hundreds of tiny programs each run for milliseconds after a compile that takes most of their
time, and level 1 in the slow tier, whose learning runs execute long enough to need optimized
code (level 1 ran them as fast as the default, 2, and compiled 8% faster; level 0 compiled a
reproduction's `--quick` run 14% faster but ran the Pendulum learning tests 1.5x slower; 2-core
AMD EPYC, 2026-11-28). Both tiers also turn off XLA's newer MLIR fusion emitters
(`--xla_cpu_use_fusion_emitters=false`, the classic LLVM emitters instead): on the same machine
a reproduction's `--quick` compiled in 37 s instead of 54 s, the Pendulum learning tests ran in
77 s instead of 84 s, and the fast tier's `tests/lm` and `tests/agents` took 99 s instead of
148 s (2026-11-28, jax 0.10.2). Results agree to float rounding: code compiled at different
levels or by different emitters may round differently, never differently enough to fail a test.
"""

import os

_FLAGS = (
    "--xla_force_host_platform_device_count=8",
    "--xla_cpu_enable_concurrency_optimized_scheduler=false",
    "--xla_cpu_use_fusion_emitters=false",
)
_existing = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join([_existing, *(f for f in _FLAGS if f not in _existing)]).strip()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR", os.path.join(ROOT, ".pytest_cache", "jax_compilation_cache")
)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")


import pytest  # noqa: E402

# The slow tier's longest modules, longest first (seconds per module on the 2-core AMD EPYC,
# from a timed cold-cache slow-tier run at d7e3c28, 2026-11-27, and the modules changed since
# timed alone, 2026-11-28). xdist's `--dist loadfile` hands out whole modules; by default it
# starts those with the most tests first, which leaves the single-test 2-4 minute reproductions
# for the end, where one of them runs while the other worker idles. Starting the longest first
# (the classic longest-processing-time rule) ends the tier on short modules. The order changes
# no test.
SLOW_LONGEST_FIRST = (
    "tests/experiments/test_lm_reproductions.py",  # ~745 (8 reproductions' --quick)
    "tests/train/test_lm_experiment.py",  # ~300
    "tests/agents/test_grpo_curriculum.py",  # ~220
    "tests/experiments/test_compose_backtracking.py",  # ~170
    "tests/agents/test_offpolicy.py",  # ~170
    "tests/experiments/test_ablate_effective_horizon.py",  # ~165
    "tests/train/test_lm_lora.py",  # ~160
    "tests/agents/test_contract.py",  # ~160
    "tests/agents/test_ppo_rnn.py",  # ~160
    "tests/experiments/test_echo_chamber.py",  # ~160
    "tests/experiments/test_staleness_scalerl.py",  # ~145
    "tests/agents/test_grpo.py",  # ~140
    "tests/experiments/test_offline_data_quality.py",  # ~135
    "tests/notebooks/test_continuous_control_tour_notebook.py",  # ~130
    "tests/lm/test_pretrained_notebook.py",  # ~125
    "tests/train/test_math_sharded.py",  # ~120
    "tests/agents/test_offpolicy_learning.py",  # ~110
    "tests/parallel/test_parallel_lm.py",  # ~110
    "tests/lm/test_lm_model.py",  # ~105
    "tests/lm/test_hf_bpe_entry.py",  # ~105
    "tests/agents/test_dqn.py",  # ~100
    "tests/agents/test_dqn_notebook.py",  # ~95
)


def pytest_configure(config):
    slow_tier = (config.getoption("markexpr", "") or "").strip() == "slow"
    if slow_tier:
        config.option.loadscopereorder = False  # keep the order pytest_collection_modifyitems set
    # Before any test module imports jax; scripts and notebooks the tests start inherit it.
    level = f"--xla_backend_optimization_level={1 if slow_tier else 0}"
    if "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
        os.environ["XLA_FLAGS"] += " " + level
    from rljax import prng_kernel  # noqa: PLC0415 (imports jax: after the flags above)

    prng_kernel.install()  # as every entry point does: tests draw through the same kernel


def pytest_collection_modifyitems(config, items):
    """In the slow tier, the modules of `SLOW_LONGEST_FIRST` first, in its order (stable)."""
    if (config.getoption("markexpr", "") or "").strip() != "slow":
        return
    rank = {name: i for i, name in enumerate(SLOW_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture
def run_notebook(monkeypatch):
    """Executes ``notebooks/<name>`` top to bottom as a user would; returns its printed text.

    ``quick=True`` sets ``RLJAX_QUICK=1`` (the notebooks' tiny configs). The kernel imports this
    checkout's rljax even when it is not pip-installed.
    """
    import nbformat
    from nbclient import NotebookClient

    def run(name: str, *, timeout: int, quick: bool = True) -> str:
        if quick:
            monkeypatch.setenv("RLJAX_QUICK", "1")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": ROOT}}
        )
        client.execute()
        return "".join(
            o.get("text", "")
            for cell in nb.cells
            if cell.cell_type == "code"
            for o in cell.get("outputs", [])
        )

    return run


@pytest.fixture
def run_at_trainer_settings():
    """Runs Python ``code`` from the repository root in a fresh process with this tier's XLA flags
    minus the optimization level and the classic emitters, so that the code's
    ``xla_flags.set_flags(fast_compile=True)`` gives the trainer's settings (level 1, the default
    emitters); returns its stdout, and fails the test with its stderr if it fails."""
    import subprocess
    import sys

    def run(code: str, *, timeout: int) -> str:
        flags = [f for f in os.environ["XLA_FLAGS"].split() if "fusion_emitters" not in f]
        flags = " ".join(f for f in flags if "optimization_level" not in f)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, "XLA_FLAGS": flags},
                              timeout=timeout)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


@pytest.fixture(scope="module")
def load_entry():
    """Imports an entry-point script (``experiments/x.py``) as a module, from the repository root
    (config paths are relative to it, as in the README), so tests can call its ``parse``."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def load(relative_path: str):
        name = "entry_" + os.path.basename(relative_path).removesuffix(".py")
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative_path))
        module = importlib.util.module_from_spec(spec)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            spec.loader.exec_module(module)
        finally:
            os.chdir(cwd)
        return module

    return load


@pytest.fixture(scope="module")
def train_lm(load_entry):
    """experiments/train_lm.py as a module, with the working directory at the repository root
    while the module's tests run (config paths are relative to it, as in the README)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        yield load_entry("experiments/train_lm.py")
    finally:
        os.chdir(cwd)
