"""One lock rule for every entry point: a workdir that a live run holds is refused to a second
run, fresh or resumed, whatever spelling of the folder it is given (a symbolic link, a trailing
slash, `..` components, a relative path); the lock is given back when a run fails; and a fresh
run moves the earlier run aside, also when its workdir is a symbolic link.

Parametrized over the entry points (`ENTRY_POINTS`): the next one is added there.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from test_math_rlvr import sample_files
from test_study import _toy

from rljax import cli
from rljax.io import fingerprint, workdir_lock
from rljax.train import experiment, lm_experiment, math_experiment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass(frozen=True)
class Entry:
    """An entry point: its script, a cheap command line, and what a resume needs."""

    script: str  # "" for a study (rljax.train.study), run in process through Study.main
    args: tuple[str, ...]  # flags besides --workdir and resume
    fingerprint: object = None  # parsed run -> (its fingerprint, its number of updates)
    fails_after_lock: tuple[object, str] | None = None  # (module, function) called once locked


ENTRY_POINTS = {
    "train": Entry(
        "experiments/train.py",
        (
            "--config=configs/ppo.py:CartPole-v1",
            "--config.total_timesteps=4096",
            "--config.ppo.num_envs=4",
            "--config.ppo.num_steps=16",
            "--config.progress=False",
        ),
        lambda parsed: (
            experiment.config_fingerprint(*parsed),
            experiment.num_updates(parsed[2], parsed[0], parsed[1]),
        ),
        (experiment, "_train"),
    ),  # fmt: skip
    "train_lm": Entry(
        "experiments/train_lm.py",
        ("--config=configs/grpo.py:arithmetic,tiny", "--config.progress=False"),
        lambda run: (lm_experiment.fingerprint_config(run), run.steps),
        (lm_experiment, "_train"),
    ),
    "train_math": Entry(
        "experiments/train_math.py",
        ("--config=configs/grpo_math.py:gsm8k,tiny", "--config.progress=False"),
        lambda run: (math_experiment.fingerprint_config(run), run.steps),
        (math_experiment, "_train_and_evaluate"),
    ),
    "study": Entry("", ()),
}
RESUMABLE = [name for name, e in ENTRY_POINTS.items() if e.fingerprint is not None]

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from rljax.io import workdir_lock
    workdir_lock.acquire(sys.argv[1])
    print("held", flush=True)
    time.sleep(600)
    """
)


@pytest.fixture(scope="module")
def held(tmp_path_factory):
    """A workdir `<tmp>/real/run` that another live process holds (as a running run does), and
    spellings of it: a link `<tmp>/link` to it and `<tmp>/real/x/` beside it."""
    tmp = tmp_path_factory.mktemp("locks")
    real = tmp / "real" / "run"
    real.mkdir(parents=True)
    (tmp / "real" / "x").mkdir()
    os.symlink(real, tmp / "link")
    data = tmp / "data"
    data.mkdir()
    train, test = sample_files(data)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(real)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    yield tmp, real, (train, test)
    holder.kill()
    holder.wait()


def _spelling(tmp, real, how: str) -> str:
    return {
        "symlink": str(tmp / "link"),
        "trailing_slash": str(real) + "/",
        "dotdot": str(tmp / "real" / "x" / ".." / "run"),
        "relative": os.path.relpath(real, ROOT),  # the entry points run from the repository
        "symlink_dotdot": str(tmp / "link" / ".." / "run") + "//",  # .. of the link's target
    }[how]


def _argv(name: str, workdir: str, resume: bool, data) -> list[str]:
    entry = ENTRY_POINTS[name]
    argv = [os.path.basename(entry.script), *entry.args, f"--workdir={workdir}"]
    if name == "train_math":
        argv += [f"--config.data.train_path={data[0]}", f"--config.data.test_path={data[1]}"]
    return [*argv, f"--config.resume={resume}"]


def _main(name: str, argv: list[str], load_entry):
    if name == "study":
        return _toy().main(["--workdir", argv[-2].split("=", 1)[1]])
    return load_entry(ENTRY_POINTS[name].script).main(argv)


SPELLINGS = ("symlink", "trailing_slash", "dotdot", "relative", "symlink_dotdot")
CASES = [(n, False) for n in ENTRY_POINTS] + [(n, True) for n in RESUMABLE]


@pytest.mark.parametrize("how", SPELLINGS)
@pytest.mark.parametrize(
    "name, resume", CASES, ids=[f"{n}-{'resume' if r else 'fresh'}" for n, r in CASES]
)
def test_a_held_workdir_is_refused_under_any_spelling(
    held, name, resume, how, load_entry, monkeypatch
):
    tmp, real, data = held
    monkeypatch.chdir(ROOT)
    workdir = _spelling(tmp, real, how)
    assert os.path.realpath(workdir) == str(real)
    argv = _argv(name, workdir, resume, data)
    for child in real.iterdir():  # the holder's folder emptied of what the case before wrote
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    if resume:  # a checkpoint and the fingerprint of this very run: the resume gets to the lock
        entry = ENTRY_POINTS[name]
        parsed = load_entry(entry.script).parse(argv)
        config, updates = entry.fingerprint(parsed)
        assert updates > 1
        fingerprint.save(str(real), config)
        (real / "checkpoints" / "1").mkdir(parents=True)
    with pytest.raises((workdir_lock.WorkdirInUseError, cli.ConfigError)) as info:
        _main(name, argv, load_entry)
    message = str(info.value)
    assert "is in use by another run" in message and str(real) in message, message
    assert not os.path.exists(real / "metrics.jsonl")  # refused before anything ran
    assert not [p for p in [*tmp.iterdir(), *real.parent.iterdir()] if "-prev-" in p.name]
    assert sorted(p.name for p in real.parent.iterdir()) == [".run.lock", "run", "x"]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_a_run_that_fails_gives_its_lock_back(name, tmp_path, load_entry, monkeypatch):
    monkeypatch.chdir(ROOT)
    real = tmp_path / "run"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    workdir = str(tmp_path / "link") + "/"
    seen = []

    def broken(*args, **kwargs):
        seen.append(workdir_lock.held(str(real)))  # held, under its real path
        raise RuntimeError("a failure once the lock is held")

    entry = ENTRY_POINTS[name]
    if entry.fails_after_lock is None:  # the study: its own run fails
        with pytest.raises(RuntimeError, match="once the lock is held"):
            _toy(run=broken).main(["--workdir", workdir])
    else:
        module, function = entry.fails_after_lock
        monkeypatch.setattr(module, function, broken)
        data = sample_files(tmp_path) if name == "train_math" else None
        with pytest.raises(RuntimeError, match="once the lock is held"):
            _main(name, _argv(name, workdir, False, data), load_entry)
    assert seen == [True]
    assert not workdir_lock.held(str(real)) and not workdir_lock.held(workdir)
    workdir_lock.acquire(str(real))  # free for any other process too: this one takes it
    workdir_lock.release(str(real))


def test_a_lock_holder_can_be_waited_for(tmp_path):
    """`wait=True` (the SFT base cache's mode): blocks until the holder dies, saying for whom."""
    real = tmp_path / "base"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER.replace("600", "1.5"), str(real)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        lines = []
        assert workdir_lock.acquire(str(tmp_path / "." / "base") + "/", wait=True, log=lines.append)
        assert holder.poll() is not None  # it got the lock only once the holder had ended
        assert len(lines) == 1 and f"pid {holder.pid}" in lines[0] and "waiting" in lines[0]
    finally:
        holder.kill()
        holder.wait()
        workdir_lock.release(str(real))


# ---- a fresh run moves the earlier one aside, through a symbolic link too ---------------------

RERUN_FLAGS = {
    "train": ("--config.total_timesteps=128", "--config.ppo.num_envs=2",
              "--config.ppo.num_steps=16", "--config.chunk_updates=4"),
    "train_lm": ("--config.run.steps=2", "--config.run.chunk_steps=1", "--config.sft.steps=2",
                 "--config.sft.warmup_steps=1", "--config.eval.num_problems=2",
                 "--config.eval.num_samples=1", "--config.run.eval_problems=2"),
    "train_math": ("--config.run.steps=1", "--config.run.chunk_steps=1", "--config.sft.steps=0",
                   "--config.run.prompts_per_step=2", "--config.run.group_size=2",
                   "--config.run.eval_problems=2", "--config.eval.num_problems=2",
                   "--config.eval.num_samples=1"),
}  # fmt: skip


@pytest.mark.slow  # each entry point trains twice (~20-60 s each)
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", RESUMABLE)
def test_a_rerun_moves_the_earlier_run_aside_through_a_symlink(
    name, tmp_path, load_entry, monkeypatch
):
    monkeypatch.chdir(ROOT)
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    data = sample_files(tmp_path) if name == "train_math" else None
    argv = [*_argv(name, str(tmp_path / "link"), False, data), *RERUN_FLAGS[name]]
    if name == "train_lm":
        argv += [f"--config.data_dir={tmp_path}/data", f"--config.base_cache_dir={tmp_path}/base"]
    assert _main(name, argv, load_entry) == 0
    first = (real / "metrics.jsonl").read_text()
    (real / "marker").write_text("the first run")
    assert _main(name, argv, load_entry) == 0
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("real-prev-")]
    assert len(aside) == 1, sorted(os.listdir(tmp_path))
    assert (aside[0] / "marker").read_text() == "the first run"
    assert (aside[0] / "metrics.jsonl").read_text() == first  # moved, not rewritten
    assert os.path.islink(tmp_path / "link") and os.path.realpath(tmp_path / "link") == str(real)
    assert not (real / "marker").exists() and (real / "metrics.jsonl").exists()
    if name == "train_math":
        assert (aside[0] / "results.json").exists() and (real / "results.json").exists()
    rows = [json.loads(line) for line in (real / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == len(first.splitlines())  # the rerun's own rows, not appended to
