"""Bad input to the experiments and scripts (dp_cvar, train_sharded, bench_scaling,
launch_multiprocess, bench_lm, memory_plan): one ``error:`` line, non-zero exit, nothing run.

In-process through each script's parser / validate function where it has one; one subprocess
per script family checks the real exit code and that no traceback reaches the user.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(relpath: str, name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sharded():
    return _load("scripts/train_sharded.py", "train_sharded_script")


@pytest.fixture(scope="module")
def dp_cvar():
    return _load("experiments/dp_cvar.py", "dp_cvar_script")


def _one_line_exit(fn, capsys) -> str:
    """Runs ``fn`` expecting a one-line ``error:`` on stderr and exit code 2; returns the line."""
    with pytest.raises(SystemExit) as info:
        fn()
    assert info.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


SHARDED_CASES = {
    "mesh too big": (["--mesh_shape=3,3", "--mesh_axes=seeds,data"], "needs 9 devices but 8"),
    "mesh axes mismatch": (["--mesh_shape=4,2", "--mesh_axes=seeds"], "must be non-empty and of"),
    "mesh axis unknown": (["--mesh_shape=8", "--mesh_axes=agents"], "mesh.axes has 'agents'"),
    "mesh -1 twice": (["--mesh_shape=-1,-1", "--mesh_axes=seeds,data"], "at most one -1"),
    "mesh -1 not dividing": (["--mesh_shape=3,-1", "--mesh_axes=seeds,data"], "do not divide"),
    "mesh not integers": (["--mesh_shape=4,x", "--mesh_axes=seeds,data"], "comma-separated"),
    "seeds not multiple": (["--mesh_shape=8", "--num_seeds=4"], "--num_seeds=4 is not a multiple"),
    "num_seeds 0": (["--num_seeds=0"], "--num_seeds=0 is invalid"),
    "num_envs 0": (["--num_envs=0"], "--num_envs=0 is invalid"),
    "minibatches do not divide": (["--num_minibatches=3"], "does not divide the batch"),
    "chunk_updates 0": (["--chunk_updates=0"], "--chunk_updates=0 is invalid"),
    "num_chunks 0": (["--num_chunks=0"], "--num_chunks=0 is invalid"),
    "env unknown": (["--env_name=Pong"], "--env_name='Pong' is unknown; valid: CartPole"),
    "hidden text": (["--hidden=16,a"], "must be comma-separated integers"),
    "hidden zero": (["--hidden=0"], "--hidden=0 is invalid"),
    "seed negative": (["--seed=-3"], "--seed=-3 is invalid"),
}


@pytest.mark.parametrize("case", list(SHARDED_CASES))
def test_train_sharded_validate(sharded, case, tmp_path):
    argv, expected = SHARDED_CASES[case]
    args = sharded.parse_args([*argv, f"--out={tmp_path}/out"])
    with pytest.raises(cli.ConfigError) as info:
        sharded.validate(args, num_devices=8)
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_train_sharded_parser_and_out(sharded, tmp_path, capsys):
    line = _one_line_exit(lambda: sharded.parse_args(["--num_seeds=four"]), capsys)
    assert "argument --num_seeds: invalid int value: 'four'" in line
    line = _one_line_exit(lambda: sharded.parse_args(["--rules=everything"]), capsys)
    assert "invalid choice: 'everything'" in line
    (tmp_path / "f").write_text("x")
    args = sharded.parse_args([f"--out={tmp_path}/f"])
    with pytest.raises(cli.ConfigError, match="--out=.* is a file"):
        sharded.validate(args, num_devices=8)
    good = ["--mesh_shape=4,-1", "--mesh_axes=seeds,data", "--num_seeds=8", f"--out={tmp_path}/o"]
    shape = sharded.validate(sharded.parse_args(good), num_devices=8)
    assert shape == (4, 2)


DP_CVAR_CASES = {  # argv -> the one line a bad flag exits with (rljax.train.study's parser)
    "episodes 0": (["--episodes=0"], "--episodes=0 is invalid; allowed: an integer >= 1"),
    "episodes text": (["--episodes=many"], "argument --episodes: invalid int value: 'many'"),
    "seed negative": (["--seed=-1"], "--seed=-1 is invalid"),
    "unknown flag": (["--alpha=0.1"], "unrecognized arguments: --alpha=0.1"),
}


@pytest.mark.parametrize("case", list(DP_CVAR_CASES))
def test_dp_cvar_flags(dp_cvar, case, capsys, tmp_path):
    argv, expected = DP_CVAR_CASES[case]
    message = _one_line_exit(lambda: dp_cvar.STUDY.parse([*argv, f"--outdir={tmp_path}/o"]), capsys)
    assert expected in message and "\n" not in message


def test_dp_cvar_outdir_is_a_file(dp_cvar, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    message = _one_line_exit(lambda: dp_cvar.STUDY.parse([f"--outdir={tmp_path}/f"]), capsys)
    assert "--outdir=" in message and "is a file" in message


@pytest.fixture(scope="module")
def memory_plan():
    return _load("scripts/memory_plan.py", "memory_plan_script")


def _memory_plan_cases() -> dict:
    """Every numeric flag of scripts/memory_plan.py just outside its range, NaN and infinities."""
    module = _load("scripts/memory_plan.py", "memory_plan_cases")
    cases = {
        f"{name} below {low}": ([f"--{name}={low - 1}"], f"--{name}={low - 1} is invalid; "
                                f"allowed: an integer >= {low}")
        for name, low in module.INT_FLAGS.items()
    }  # fmt: skip
    for value, shown in (("nan", "nan"), ("-80", "-80.0"), ("0", "0.0"), ("inf", "inf")):
        cases[f"device_gb {value}"] = (
            [f"--device_gb={value}"],
            f"--device_gb={shown} is invalid; allowed: a finite number in (0, inf)",
        )
    cases["micro_batches not dividing"] = (
        ["--prompts=8", "--micro_batches=3"],
        "--micro_batches=3 must divide --prompts=8",
    )
    cases["model unknown"] = (["--models=gpt9"], "--models has 'gpt9'; valid: qwen2.5-0.5b")
    return cases


MEMORY_PLAN_CASES = _memory_plan_cases()


@pytest.mark.parametrize("case", list(MEMORY_PLAN_CASES))
def test_memory_plan_refuses_bad_numbers_before_compiling(memory_plan, case, tmp_path):
    argv, expected = MEMORY_PLAN_CASES[case]
    with pytest.raises(cli.ConfigError) as info:
        memory_plan.main([*argv, f"--out={tmp_path}/plan"])
    assert expected in str(info.value) and "\n" not in str(info.value), str(info.value)
    assert not os.path.exists(tmp_path / "plan")  # nothing planned, nothing written


def test_memory_plan_flag_that_is_not_a_number(memory_plan, capsys):
    line = _one_line_exit(lambda: memory_plan.parse(["--device_gb=lots"]), capsys)
    assert "argument --device_gb: invalid float value: 'lots'" in line


def _script(*args, timeout=120):
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# One subprocess per script: the real exit code, one line, no traceback (each costs an import).
SUBPROCESS_CASES = {
    "train_sharded mesh": (
        ["scripts/train_sharded.py", "--cpu_devices=4", "--mesh_shape=3", "--mesh_axes=seeds"],
        "error: --mesh_shape/--mesh_axes: mesh.shape=(3,) needs 3 devices but 4",
    ),
    "dp_cvar episodes": (["experiments/dp_cvar.py", "--episodes=0"], "error: --episodes=0"),
    "bench_scaling agents": (
        ["scripts/bench_scaling.py", "--cpu_devices=2", "--devices=1,2", "--agents=3"],
        "error: --agents=3 is not divisible by 2 devices",
    ),
    "bench_lm size": (["scripts/bench_lm.py", "--sizes=1m,huge"], "error: --sizes entry='huge'"),
    "bench_lm breakdown": (
        ["scripts/bench_lm.py", "--breakdown=1,x"],
        "error: --breakdown='1,x' is invalid; allowed: comma-separated integers >= 1",
    ),
    "launch no command": (["scripts/launch_multiprocess.py"], "give the command to run after --"),
    "memory_plan device_gb": (
        ["scripts/memory_plan.py", "--device_gb=nan"],
        "error: --device_gb=nan is invalid; allowed: a finite number in (0, inf)",
    ),
    "launch processes": (
        ["scripts/launch_multiprocess.py", "--num_processes=0", "--", "true"],
        "error: --num_processes=0 is invalid",
    ),
}


@pytest.mark.parametrize("case", list(SUBPROCESS_CASES))
def test_scripts_as_subprocesses(case, tmp_path):
    argv, expected = SUBPROCESS_CASES[case]
    out = _script(*argv)
    assert out.returncode == cli.EXIT_USAGE, out.stderr[-1500:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], out.stderr[-1500:]
