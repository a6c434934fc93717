"""The classic faults, through the real entry points: a sweep list with an empty item, a workdir
that is a file (experiments/train.py, train_lm.py, train_math.py), a torn last line of
metrics.jsonl on resume, and a file-size limit (EFBIG) during a checkpoint."""

import errno
import json
import os
import subprocess
import sys

import pytest

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _math_data(folder) -> list[str]:
    """GSM8K-layout train and test files of a few sums."""
    paths = []
    for name, pairs in (("train", [(1, 2), (3, 4), (2, 5), (6, 1)]), ("test", [(2, 2), (4, 1)])):
        path = folder / f"{name}.jsonl"
        with open(path, "w") as f:
            for a, b in pairs:
                question = f"Tom has {a} apples and finds {b} more. How many now?"
                f.write(json.dumps({"question": question, "answer": f"#### {a + b}"}) + "\n")
        paths.append(str(path))
    return [f"--config.data.train_path={paths[0]}", f"--config.data.test_path={paths[1]}"]


# entry point -> (its config flag, a sweepable field, extra flags given a data folder)
ENTRY_POINTS = {
    "experiments/train.py": ("--config=configs/ppo.py:CartPole-v1", "lr", lambda d: []),
    "experiments/train_lm.py": ("--config=configs/grpo.py:arithmetic", "kl_coef", lambda d: []),
    "experiments/train_math.py": (
        "--config=configs/grpo_math.py:gsm8k,tiny",
        "kl_coef",
        _math_data,
    ),
}


@pytest.fixture(scope="module")
def entries(load_entry):
    return {path: load_entry(path) for path in ENTRY_POINTS}


def _refusal(call, argv) -> str:
    with pytest.raises(cli.ConfigError) as info:
        call(argv)
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return message


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("values", ["1e-3,,3e-4", "1e-3,", ",1e-3"])
def test_a_sweep_list_with_an_empty_item_is_refused_naming_the_field(
    entries, entry, values, tmp_path, monkeypatch
):
    monkeypatch.chdir(ROOT)  # config paths are relative to the repository
    config, field, extra = ENTRY_POINTS[entry]
    argv = [entry, config, f"--workdir={tmp_path / 'run'}", *extra(tmp_path)]
    message = _refusal(entries[entry].parse, [*argv, f"--config.sweep.{field}={values}"])
    assert message.startswith(f"sweep.{field}={values!r} has an empty item"), message
    assert "allowed: comma-separated values, none empty" in message
    entries[entry].parse([*argv, f"--config.sweep.{field}=1e-3,3e-4"])  # without it: accepted


@pytest.mark.parametrize("entry", ["experiments/train_lm.py", "experiments/train_math.py"])
def test_a_preset_list_with_an_empty_item_is_refused(entries, entry, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    config, _, extra = ENTRY_POINTS[entry]
    argv = [entry, config, f"--workdir={tmp_path / 'run'}", *extra(tmp_path)]
    message = _refusal(entries[entry].parse, [*argv, "--config.sweep.preset=grpo,,dapo"])
    assert message.startswith("sweep.preset='grpo,,dapo' has an empty item"), message


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_workdir_that_is_a_file_is_one_line_before_anything_runs(
    entries, entry, tmp_path, monkeypatch
):
    monkeypatch.chdir(ROOT)
    config, _, extra = ENTRY_POINTS[entry]
    (tmp_path / "file").write_text("not a folder")
    for workdir, what in (
        (tmp_path / "file", "is a file"),
        (tmp_path / "file" / "run", "lies under"),
    ):
        argv = [entry, config, f"--workdir={workdir}", *extra(tmp_path)]
        message = _refusal(entries[entry].main, argv)  # main: nothing started before it
        assert message.startswith(f"--workdir={workdir} {what}"), message
        assert message.endswith("allowed: a directory path")


@pytest.mark.parametrize(
    "where, problem",
    [("file", "is a file"), ("file/run", "lies under a file")],
)
def test_a_folder_made_where_a_file_is_is_one_line(tmp_path, where, problem):
    """A folder the run makes itself (a default workdir, its checkpoints/) where a file is."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError) as info:
        os.makedirs(tmp_path / where, exist_ok=True)
    assert info.value.errno in (errno.EEXIST, errno.ENOTDIR)
    line = cli.os_error_line(info.value)
    assert line == f"cannot create the folder {tmp_path / where}: it {problem}; allowed: a " \
        "directory path"  # fmt: skip


TINY = [
    "--config=configs/ppo.py:CartPole-v1", "--config.num_seeds=2", "--config.ppo.num_envs=4",
    "--config.ppo.num_steps=16", "--config.ppo.hidden=(8,)", "--config.ppo.anneal_lr=False",
    "--config.progress=False", "--config.chunk_updates=1", "--config.checkpoint_every=1",
]  # fmt: skip


def _rows(workdir) -> list[dict]:
    with open(workdir / "metrics.jsonl") as f:
        return [json.loads(line) for line in f]


def _tear(workdir) -> None:
    """What a write cut short leaves: the last line loses its end (no newline)."""
    path = workdir / "metrics.jsonl"
    text = path.read_text()
    cut = len(text.splitlines()[-1]) // 2 + 1  # the newline and half the line
    path.write_text(text[:-cut])


@pytest.mark.slow  # three tiny PPO runs: about 25 s on the 2-core CPU
@pytest.mark.timeout(600)
def test_a_torn_last_metrics_line_loses_no_row_on_resume(load_entry, tmp_path, monkeypatch):
    """The torn row is the checkpoint's own last update: the resumed run, and a resume of the
    finished run, end with exactly the rows of an uninterrupted run."""
    monkeypatch.chdir(ROOT)
    train = load_entry("experiments/train.py")
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert (
        train.main(["train.py", *TINY, "--config.total_timesteps=512", f"--workdir={whole}"]) == 0
    )
    assert (
        train.main(["train.py", *TINY, "--config.total_timesteps=256", f"--workdir={split}"]) == 0
    )
    _tear(split)
    resume = ["train.py", *TINY, "--config.resume=True", f"--workdir={split}"]
    with pytest.warns(UserWarning, match="dropped a torn last line"):
        assert train.main([*resume, "--config.total_timesteps=512"]) == 0
    assert len(_rows(whole)) == 8 and _rows(split) == _rows(whole)
    _tear(split)
    assert train.main([*resume, "--config.total_timesteps=512"]) == 0  # finished: trains nothing
    assert _rows(split) == _rows(whole)
    with open(split / "metrics.csv") as f:
        assert len(f.read().splitlines()) == 1 + 8


# The child limits itself before it runs the script (a preexec_fn would fork this process, whose
# jax threads make a fork unsafe).
_SIZE_LIMITED = (
    "import resource, runpy, signal, sys; "
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "  # the write fails with EFBIG, no kill
    "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000)); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


@pytest.mark.slow  # a compile and a run in a subprocess: about 20 s on the 2-core CPU
@pytest.mark.timeout(300)
def test_a_file_size_limit_during_a_checkpoint_is_one_line(tmp_path):
    """A 100 kB file-size limit: metrics fit, the first checkpoint (about 3 MB) does not. Orbax's
    writer threads used to print 4-34 tracebacks before the error (2026-12-04)."""
    cmd = [
        sys.executable, "-c", _SIZE_LIMITED, "experiments/train.py", *TINY,
        "--config.ppo.hidden=(256,256)", "--config.total_timesteps=256", "--cpu_devices=1",
        f"--workdir={tmp_path / 'run'}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": ROOT, "JAX_COMPILATION_CACHE_DIR": ""}  # no cache writes
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert out.returncode == cli.EXIT_FAILED, out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [
        f"error: file too large writing {tmp_path / 'run' / 'checkpoints'} (a file-size limit: "
        "ulimit -f); raise the limit, then resume the run (resume=True)"
    ], out.stderr[-3000:]
